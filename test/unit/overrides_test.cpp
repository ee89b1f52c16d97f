// Hydra-style overrides: grammar, struct mode, typing against the schema.
#include "helpers.h"
#include "overrides/overrides.h"

using namespace qr;
using qr::test::at;
using qr::test::build;
using qr::test::error_of;

TEST_CASE("override grammar") {
  CHECK(parse_override("a.b=1").op == Override::Op::Set);
  CHECK(parse_override("+a.b=1").op == Override::Op::Add);
  CHECK(parse_override("++a.b=1").op == Override::Op::Upsert);
  CHECK(parse_override("~a.b").op == Override::Op::Delete);
  CHECK(parse_override("~a.b=1").has_value);
  CHECK(parse_override("a.b=").value.empty());
  CHECK_THAT(error_of([] { parse_override("=x"); }), Catch::Contains("no key before '='"));
  CHECK_THAT(error_of([] { parse_override("a..b=1"); }),
             Catch::Contains("empty name between dots"));
  CHECK_THAT(error_of([] { parse_override(".a=1"); }), Catch::Contains("empty name at the start"));
  CHECK_THAT(error_of([] { parse_override("a.b"); }), Catch::Contains("missing '=value'"));
  CHECK_THAT(error_of([] { parse_override("a b=1"); }), Catch::Contains("bad key 'a b'"));
  CHECK_THAT(error_of([] { parse_override("a=1,2"); }),
             Catch::Contains("Hydra sweep") && Catch::Contains("a=[1,2]"));
  CHECK(to_token(parse_override("++x.y=[1, 2]")) == "++x.y=[1, 2]");
}

TEST_CASE("set, add, upsert and delete against a built recipe") {
  auto r = build("qwen35_397b", "gb300", "bf16",
                 {"train.micro_batch_size=2", "optimizer.lr=1e-4", "+env_vars.NCCL_DEBUG=INFO",
                  "++env_vars.USE_MNNVL=0", "~env_vars.NVTE_FWD_LAYERNORM_SM_MARGIN",
                  "model.cuda_graph_modules=[attn]", "dataset.prompt=yes",
                  "mixed_precision.params_dtype=float32", "logger.wandb_project="});
  CHECK(at(r, "train.micro_batch_size") == "2");
  CHECK(at(r, "optimizer.lr") == "0.0001");
  CHECK(at(r, "env_vars.NCCL_DEBUG") == "INFO");
  CHECK(at(r, "env_vars.USE_MNNVL") == "0");
  CHECK(at(r, "env_vars.NVTE_FWD_LAYERNORM_SM_MARGIN") == "<absent>");
  CHECK(at(r, "model.cuda_graph_modules") == "[{_args_: [1], _call_: true, _name_: attn, _target_: "
                                             "megatron.core.transformer.enums.CudaGraphModule}]");
  CHECK(at(r, "dataset.prompt") == "'yes'");
  CHECK(at(r, "mixed_precision.params_dtype") == "{_call_: false, _target_: torch.float32}");
  CHECK(at(r, "logger.wandb_project") == "''");
  // Overrides are recorded as their own step, after every pass.
  CHECK(r.config.writes().back().step == StepId::overrides());
}

TEST_CASE("struct mode: unknown keys fail with a suggestion, never silently created") {
  CHECK_THAT(
      error_of([] { build("qwen35_397b", "gb300", "bf16", {"model.tensor_paralel_size=2"}); }),
      Catch::Contains("could not override 'model.tensor_paralel_size': no such key") &&
          Catch::Contains("did you mean 'model.tensor_model_parallel_size'"));
  CHECK_THAT(error_of([] { build("qwen35_397b", "gb300", "bf16", {"+model.not_a_field=1"}); }),
             Catch::Contains("could not add 'model.not_a_field'"));
  CHECK_THAT(error_of([] { build("qwen35_397b", "gb300", "bf16", {"modle.hidden_size=1"}); }),
             Catch::Contains("did you mean 'model'"));
  CHECK_THAT(error_of([] { build("qwen35_397b", "gb300", "bf16", {"env_vars.NEW_VAR=1"}); }),
             Catch::Contains("to add it use +env_vars.NEW_VAR=1"));
  CHECK_THAT(error_of([] { build("qwen35_397b", "gb300", "bf16", {"+train.micro_batch_size=2"}); }),
             Catch::Contains("already exists") && Catch::Contains("train.micro_batch_size=2"));
  CHECK_THAT(error_of([] { build("qwen35_397b", "gb300", "bf16", {"~env_vars.NOPE"}); }),
             Catch::Contains("could not delete 'env_vars.NOPE': it is not in the config"));
  CHECK_THAT(error_of([] { build("qwen35_397b", "gb300", "bf16", {"~env_vars.USE_MNNVL=0"}); }),
             Catch::Contains("its value is 1, not 0"));
  CHECK_THAT(error_of([] { build("qwen35_397b", "gb300", "bf16", {"model.hidden_size=big"}); }),
             Catch::Contains("'model.hidden_size': expected int, got 'big'"));
  CHECK_THAT(
      error_of([] { build("qwen35_397b", "gb300", "bf16", {"model.gdn_kernel_backend=fla"}); }),
      Catch::Contains("not a field in Megatron-Core profile 'pinned'") &&
          Catch::Contains("--mcore gdn"));
  CHECK_THAT(
      error_of([] { build("qwen35_397b", "gb300", "bf16", {"train.micro_batch_size.x=1"}); }),
      Catch::Contains("is a int, not a section"));
}

TEST_CASE("a deleted field comes back with ++") {
  auto r = build("qwen3_30b", "gb300", "bf16", {"~model.seq_length", "++model.seq_length=8192"});
  CHECK(at(r, "model.seq_length") == "8192");
  CHECK_THAT(error_of([] {
               build("qwen3_30b", "gb300", "bf16", {"~model.seq_length", "model.seq_length=1"});
             }),
             Catch::Contains("restore a deleted field use ++model.seq_length=1"));
}
