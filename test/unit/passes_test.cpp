// Each pass writes exactly the fields the reference gives it, with those values.
#include "helpers.h"
#include "passes/registry.h"

#include <map>
#include <set>

using namespace qr;
using qr::test::compiler;
using qr::test::error_of;

namespace {

using Writes = std::map<std::string, std::string>; // path -> flow value ("<deleted>")

// Runs `setup` then `pass` on a model's base config; returns what `pass` wrote.
Writes writes_of(const std::string& pass, const std::string& setup = "",
                 const std::string& model = "qwen35_397b", const std::string& profile = "pinned") {
  auto schema = std::shared_ptr<const Schema>(&compiler().schema(), [](const Schema*) {});
  Config config(schema, profile,
                compiler().catalog().base_config(compiler().catalog().model(model), profile));
  Pipeline p = Pipeline::parse(setup.empty() ? pass : setup + "," + pass);
  p.bind(config, compiler().catalog());
  for (const PassInvocation& inv : p.passes()) {
    config.begin_step(inv.step());
    PassContext ctx(config, *inv.info, inv.args, compiler().catalog());
    inv.info->run(ctx);
  }
  Writes out;
  const StepId last = p.passes().back().step();
  for (const Write& w : config.writes())
    if (w.step == last)
      out[w.path] = w.after ? to_flow_yaml(*w.after) : "<deleted>";
  return out;
}

std::string modules(const std::vector<std::string>& names) {
  List l;
  for (const std::string& n : names)
    l.push_back(compiler().schema().enum_value("CudaGraphModule", n));
  return to_flow_yaml(l);
}

const Writes kNullTokenizer{{"tokenizer.tokenizer_type", "NullTokenizer"},
                            {"tokenizer.tokenizer_model", "null"},
                            {"tokenizer.vocab_size", "248320"},
                            {"tokenizer.use_tokenizer_vocab_size", "false"}};

Writes merged(Writes a, const Writes& b) {
  a.insert(b.begin(), b.end());
  return a;
}

} // namespace

TEST_CASE("vocab-null-tokenizer") {
  CHECK(writes_of("vocab-null-tokenizer") == kNullTokenizer);
}

TEST_CASE("vocab-null-tokenizer refuses a model without a vocabulary size") {
  CHECK_THAT(error_of([] { writes_of("vocab-null-tokenizer", "set{model.vocab_size=null}"); }),
             Catch::Contains("model.vocab_size is null"));
}

TEST_CASE("qwen35-vl-common") {
  CHECK(writes_of("qwen35-vl-common") ==
        merged(kNullTokenizer, {{"model.bias_activation_fusion", "true"},
                                {"model.recompute_granularity", "null"},
                                {"model.recompute_method", "null"},
                                {"model.recompute_num_layers", "null"},
                                {"model.recompute_modules", "[]"},
                                {"model.moe_router_fusion", "true"},
                                {"model.seq_length", "4096"},
                                {"dataset.seq_length", "4096"},
                                {"model.moe_router_force_load_balancing", "true"},
                                {"ddp.overlap_grad_reduce", "false"},
                                {"ddp.overlap_param_gather", "false"},
                                {"model.freeze_language_model", "false"},
                                {"model.freeze_vision_model", "false"}}));
}

TEST_CASE("qwen3-vl-common keeps the base's freeze flags and recompute modules") {
  const Writes w = writes_of("qwen3-vl-common", "", "qwen3_30b");
  CHECK(w.count("model.freeze_language_model") == 0);
  CHECK(w.count("model.freeze_vision_model") == 0);
  CHECK(w.count("model.recompute_modules") == 0);
  CHECK(w.at("optimizer.overlap_param_gather") == "false");
  CHECK(w.at("tokenizer.vocab_size") == "151936");
  CHECK(w.size() == 4 + 11);
}

TEST_CASE("benchmark-common writes, with the RNG tracker taken from the graphs at this point") {
  const Writes none = writes_of("benchmark-common", "dispatcher{type=flex,backend=hybridep}");
  CHECK(none == Writes{{"train.train_iters", "50"},
                       {"train.eval_iters", "0"},
                       {"train.manual_gc", "true"},
                       {"train.manual_gc_interval", "100"},
                       {"tokenizer.use_tokenizer_vocab_size", "false"},
                       {"checkpoint.save", "null"},
                       {"checkpoint.load", "null"},
                       {"logger.log_interval", "1"},
                       {"logger.tensorboard_dir", "null"},
                       {"ddp.check_for_nan_in_grad", "false"},
                       {"ddp.check_for_large_grads", "false"},
                       {"rerun_state_machine.check_for_nan_in_loss", "false"},
                       {"scheduler.lr_decay_iters", "50"},
                       {"scheduler.lr_warmup_iters", "10"},
                       {"model.apply_rope_fusion", "true"},
                       {"model.cross_entropy_fusion_impl", "te"},
                       {"model.cuda_graph_scope", "[]"},
                       {"rng.te_rng_tracker", "false"},
                       {"model.use_te_rng_tracker", "false"},
                       {"model.moe_hybridep_num_sms", "32"}});
  // Graphs on before it: tracker on, scope untouched; no hybridep: no SM count.
  const Writes te = writes_of("benchmark-common", "cuda-graphs{impl=transformer_engine}");
  CHECK(te.at("rng.te_rng_tracker") == "true");
  CHECK(te.at("model.use_te_rng_tracker") == "true");
  CHECK(te.count("model.cuda_graph_scope") == 0);
  CHECK(te.count("model.moe_hybridep_num_sms") == 0);
  // A precision block that is a config (not a string) gets fp32 grad reduction off.
  const Writes mp = writes_of("benchmark-common", "precision{p=bf16}");
  CHECK(mp.at("mixed_precision.grad_reduce_in_fp32") == "false");
  CHECK(mp.at("ddp.grad_reduce_in_fp32") == "false");
  // The TE op fuser is turned off only when it was on.
  CHECK(writes_of("benchmark-common", "fused-grouped-mlp")
            .at("model.use_transformer_engine_op_fuser") == "false");
}

TEST_CASE("the RNG tracker does not follow later graph changes (the timing quirk)") {
  auto r = qr::test::build_pipeline(
      "qwen35_397b", "gb300",
      "benchmark-common,cuda-graphs{impl=transformer_engine,modules=[attn]}",
      {"model.use_te_rng_tracker=true"});
  CHECK(qr::test::at(r, "rng.te_rng_tracker") == "false");
}

TEST_CASE("qwen35-vl-post") {
  CHECK(writes_of("qwen35-vl-post", "cuda-graphs{impl=transformer_engine,modules=[attn]}") ==
        Writes{{"model.apply_rope_fusion", "false"},
               {"model.cuda_graph_impl", "none"},
               {"model.cuda_graph_modules", "[]"},
               {"model.cuda_graph_scope", "null"},
               {"optimizer.overlap_param_gather", "false"}});
}

TEST_CASE("clear-cuda-graph-scope") {
  CHECK(writes_of("clear-cuda-graph-scope") == Writes{{"model.cuda_graph_scope", "[]"}});
}

TEST_CASE("partial-cuda-graphs") {
  CHECK(writes_of("partial-cuda-graphs") ==
        Writes{{"model.cuda_graph_impl", "transformer_engine"},
               {"model.cuda_graph_modules", modules({"attn", "moe_router", "moe_preprocess"})},
               {"model.cuda_graph_scope", "null"},
               {"model.use_te_rng_tracker", "true"},
               {"rng.te_rng_tracker", "true"}});
}

TEST_CASE("gdn-backend writes only where the profile has the field") {
  CHECK(writes_of("gdn-backend{backend=transformer_engine}").empty());
  CHECK(writes_of("gdn-backend{backend=transformer_engine}", "", "qwen35_397b", "gdn") ==
        Writes{{"model.gdn_kernel_backend", "transformer_engine"}});
}

TEST_CASE("finalize-qwen3-vl") {
  CHECK(writes_of("finalize-qwen3-vl", "comm-overlap{tp=true}", "qwen3_30b") ==
        Writes{{"tokenizer.tokenizer_type", "NullTokenizer"},
               {"tokenizer.tokenizer_model", "null"},
               {"tokenizer.vocab_size", "151936"},
               {"tokenizer.use_tokenizer_vocab_size", "false"},
               {"model.apply_rope_fusion", "false"},
               {"model.cuda_graph_impl", "transformer_engine"},
               {"model.cuda_graph_scope", "[moe_router, moe_preprocess]"},
               {"model.expert_tensor_parallel_size", "1"},
               {"comm_overlap.overlap_param_gather", "false"},
               {"comm_overlap.overlap_grad_reduce", "false"}});
  CHECK_THAT(error_of([] { writes_of("finalize-qwen3-vl", "", "qwen3_30b"); }),
             Catch::Contains("comm_overlap is null"));
}

TEST_CASE("moe-a2a-overlap, ncclep, fused-grouped-mlp") {
  CHECK(writes_of("moe-a2a-overlap", "comm-overlap{tp=true}") ==
        Writes{{"comm_overlap.overlap_moe_expert_parallel_comm", "true"},
               {"comm_overlap.delay_wgrad_compute", "true"},
               {"model.moe_shared_expert_overlap", "false"}});
  CHECK(writes_of("ncclep") == Writes{{"model.moe_token_dispatcher_type", "flex"},
                                      {"model.moe_flex_dispatcher_backend", "ncclep"}});
  CHECK(writes_of("fused-grouped-mlp") == Writes{{"model.use_transformer_engine_op_fuser", "true"},
                                                 {"model.moe_mlp_glu_interleave_size", "32"}});
}

TEST_CASE("overlap-param-gather-with-optimizer-step") {
  CHECK(writes_of("overlap-param-gather-with-optimizer-step") ==
        Writes{{"optimizer.overlap_param_gather_with_optimizer_step", "true"}});
  CHECK(writes_of("overlap-param-gather-with-optimizer-step", "comm-overlap{tp=true}") ==
        Writes{{"optimizer.overlap_param_gather_with_optimizer_step", "true"},
               {"comm_overlap.overlap_param_gather_with_optimizer_step", "true"}});
}

TEST_CASE("precision blocks") {
  const Writes bf16 = writes_of("precision{p=bf16}");
  REQUIRE(bf16.size() == 1);
  auto block = [](const std::string& p) {
    auto r = qr::test::build_pipeline("qwen35_397b", "gb300", "precision{p=" + p + "}");
    return r;
  };
  auto b = block("bf16");
  CHECK(qr::test::at(b, "mixed_precision.bf16") == "true");
  CHECK(qr::test::at(b, "mixed_precision.params_dtype") ==
        "{_call_: false, _target_: torch.bfloat16}");
  CHECK(qr::test::at(b, "mixed_precision.grad_reduce_in_fp32") == "false");
  CHECK(qr::test::at(b, "mixed_precision.fp8") == "null");
  auto cs = block("fp8cs");
  CHECK(qr::test::at(cs, "mixed_precision.fp8") == "hybrid");
  CHECK(qr::test::at(cs, "mixed_precision.fp8_recipe") == "tensorwise");
  CHECK(qr::test::at(cs, "mixed_precision.fp8_param_gather") == "true");
  CHECK(qr::test::at(cs, "mixed_precision.first_last_layers_bf16") == "false");
  auto mx = block("fp8mx");
  CHECK(qr::test::at(mx, "mixed_precision.fp8") == "e4m3");
  CHECK(qr::test::at(mx, "mixed_precision.fp8_recipe") == "mxfp8");
  CHECK(qr::test::at(mx, "mixed_precision.reuse_grad_buf_for_mxfp8_param_ag") == "true");
  auto fp4 = block("nvfp4");
  CHECK(qr::test::at(fp4, "mixed_precision.fp4") == "e2m1");
  CHECK(qr::test::at(fp4, "mixed_precision.fp4_recipe") == "nvfp4");
  CHECK(qr::test::at(fp4, "mixed_precision.fp4_param_gather") == "true");
  CHECK(qr::test::at(fp4, "mixed_precision.bf16") == "true");
}

TEST_CASE("recipe-setting passes write only what they are given") {
  CHECK(writes_of("parallelism{tp=2,sp=true}") ==
        Writes{{"model.tensor_model_parallel_size", "2"}, {"model.sequence_parallel", "true"}});
  CHECK(writes_of("batch{gbs=64}") == Writes{{"train.global_batch_size", "64"}});
  CHECK(writes_of("dispatcher{type=alltoall}") ==
        Writes{{"model.moe_token_dispatcher_type", "alltoall"}});
  CHECK(writes_of("set{model.hidden_size=1024}") == Writes{{"model.hidden_size", "1024"}});
  const Writes co = writes_of("comm-overlap{tp=true,moe_ep=true}");
  REQUIRE(co.size() == 3);
  auto r = qr::test::build_pipeline("qwen35_397b", "gb300", "comm-overlap{tp=true,moe_ep=true}");
  CHECK(qr::test::at(r, "comm_overlap.tp_comm_overlap") == "true");
  CHECK(qr::test::at(r, "comm_overlap.overlap_moe_expert_parallel_comm") == "true");
  CHECK(qr::test::at(r, "comm_overlap.delay_wgrad_compute") == "null");
  CHECK(writes_of("env{presets=[perf],A_VAR=x}").at("env_vars").find("A_VAR: x") !=
        std::string::npos);
}

TEST_CASE("qwen35-vl-35b-h100-exec") {
  const Writes w = writes_of("qwen35-vl-35b-h100-exec", "", "qwen35_35b");
  CHECK(w.at("model.num_layers_in_first_pipeline_stage") == "17");
  CHECK(w.at("model.num_layers_in_last_pipeline_stage") == "23");
  CHECK(w.at("model.moe_hybridep_num_sms") == "null");
  CHECK(w.at("model.moe_flex_dispatcher_num_sms") == "16");
  CHECK(w.at("model.vision_cuda_graph_scope") == "[attn, mlp]");
  CHECK(w.at("model.max_vision_cuda_graph_seq_length") == "784");
  CHECK(w.at("model.cuda_graph_modules") == modules({"attn", "moe_router", "moe_preprocess"}));
  CHECK(w.at("rng.te_rng_tracker") == "true");
}

TEST_CASE("a pass cannot write a field its registry entry does not declare") {
  PassInfo rogue{.name = "rogue",
                 .run = [](PassContext& ctx) { ctx.set("train.eval_iters", 1); },
                 .summary = "writes what it did not declare",
                 .writes = {"train.train_iters"}};
  auto schema = std::shared_ptr<const Schema>(&compiler().schema(), [](const Schema*) {});
  Config config(
      schema, "pinned",
      compiler().catalog().base_config(compiler().catalog().model("qwen3_30b"), "pinned"));
  PassArgs args;
  PassContext ctx(config, rogue, args, compiler().catalog());
  CHECK_THAT(
      error_of([&] { rogue.run(ctx); }),
      Catch::Contains(
          "pass 'rogue' wrote 'train.eval_iters', which its registry entry does not declare"));
}

// The run-time check stops a pass writing a field it does not declare; this is the other half:
// every declared write is one the pass makes, in some recipe build or in a setup below that
// reaches a write no recipe does.
TEST_CASE("every declared write is one the pass makes") {
  std::map<std::string, std::set<std::string>> written; // pass -> paths it wrote
  auto record = [&](const BuildResult& r) {
    for (const Write& w : r.config.writes())
      if (w.step.kind == StepId::Kind::Pass)
        written[w.step.pass].insert(w.path);
  };
  for (const RecipeSpec& s : compiler().catalog().all())
    for (const char* profile : {"pinned", "gdn"})
      record(qr::test::build(s.model->name, s.gpu->name, s.precision, {}, profile));
  for (const char* pipeline :
       {"vocab-null-tokenizer", "set{model.use_transformer_engine_op_fuser=true},benchmark-common"})
    record(qr::test::build_pipeline("qwen35_397b", "gb300", pipeline));
  for (const PassInfo& p : pass_registry())
    for (const std::string& w : p.declared_writes()) {
      CAPTURE(p.name, w);
      CHECK(written[p.name].count(w) == 1);
    }
}
