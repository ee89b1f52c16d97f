// The shared helpers every Qwen-VL perf recipe runs: the null tokenizer, the Qwen3.5 and
// Qwen3-VL common settings, and benchmark-common.
#include "config/error.h"
#include "passes/registry.h"

namespace qr {
namespace {

void null_tokenizer(PassContext& ctx) {
  const Value& vocab = ctx.get("model.vocab_size");
  if (vocab.is_null())
    throw Error("pass 'vocab-null-tokenizer': model.vocab_size is null; the null tokenizer takes "
                "its vocabulary size from the model");
  ctx.set("tokenizer.tokenizer_type", "NullTokenizer");
  ctx.set("tokenizer.tokenizer_model", Null{});
  ctx.set("tokenizer.vocab_size", vocab);
  ctx.set("tokenizer.use_tokenizer_vocab_size", false);
}

const std::vector<std::string> kTokenizerWrites{"tokenizer.tokenizer_type",
                                                "tokenizer.tokenizer_model", "tokenizer.vocab_size",
                                                "tokenizer.use_tokenizer_vocab_size"};

// The settings Qwen3.5 recipes take from `_qwen35_vl_common` and Qwen3-VL recipes write inline.
void common_settings(PassContext& ctx, bool qwen35) {
  null_tokenizer(ctx);
  ctx.set("model.bias_activation_fusion", true);
  ctx.set("model.recompute_granularity", Null{});
  ctx.set("model.recompute_method", Null{});
  ctx.set("model.recompute_num_layers", Null{});
  if (qwen35)
    ctx.set("model.recompute_modules", List{});
  ctx.set("model.moe_router_fusion", true);
  ctx.set("model.seq_length", 4096);
  ctx.set("dataset.seq_length", 4096);
  ctx.set("model.moe_router_force_load_balancing", true);
  ctx.set("ddp.overlap_grad_reduce", false);
  ctx.set("ddp.overlap_param_gather", false);
  if (qwen35) {
    ctx.set("model.freeze_language_model", false);
    ctx.set("model.freeze_vision_model", false);
  } else {
    ctx.set("optimizer.overlap_param_gather", false);
  }
}

std::vector<std::string> with_tokenizer(std::vector<std::string> writes) {
  writes.insert(writes.begin(), kTokenizerWrites.begin(), kTokenizerWrites.end());
  return writes;
}

void run_benchmark_common(PassContext& ctx) {
  ctx.set("train.train_iters", 50);
  ctx.set("train.eval_iters", 0);
  ctx.set("train.manual_gc", true);
  ctx.set("train.manual_gc_interval", 100);
  ctx.set("tokenizer.use_tokenizer_vocab_size", false);
  ctx.set("checkpoint.save", Null{});
  ctx.set("checkpoint.load", Null{});
  ctx.set("logger.log_interval", 1);
  ctx.set("logger.tensorboard_dir", Null{});
  ctx.set("ddp.check_for_nan_in_grad", false);
  ctx.set("ddp.check_for_large_grads", false);
  ctx.set("rerun_state_machine.check_for_nan_in_loss", false);
  ctx.set("scheduler.lr_decay_iters", ctx.get("train.train_iters"));
  ctx.set("scheduler.lr_warmup_iters", 10);
  if (const Value* fuser = ctx.find("model.use_transformer_engine_op_fuser");
      fuser != nullptr && fuser->is_bool() && fuser->as_bool())
    ctx.set("model.use_transformer_engine_op_fuser", false);
  ctx.set("model.apply_rope_fusion", true);
  ctx.set("model.cross_entropy_fusion_impl", "te");
  if (const Value* mp = ctx.find("mixed_precision"); mp != nullptr && mp->is_map()) {
    ctx.set("mixed_precision.grad_reduce_in_fp32", false);
    ctx.set("ddp.grad_reduce_in_fp32", false);
  }
  // The RNG tracker follows the CUDA-graph settings as they are *now*; later changes to the
  // graph impl do not update it, which is why partial-cuda-graphs sets the flags itself.
  const Value& impl = ctx.get("model.cuda_graph_impl");
  std::vector<std::string> scope_names;
  if (const Value* scope = ctx.find("model.cuda_graph_scope"); scope != nullptr && scope->is_list())
    for (const Value& s : scope->as_list()) {
      if (s.is_str())
        scope_names.push_back(s.as_str());
      else if (s.is_map() && s.as_map().find("_name_") != nullptr)
        scope_names.push_back(s.as_map().find("_name_")->as_str());
    }
  const bool full_iteration =
      std::find(scope_names.begin(), scope_names.end(), "full_iteration") != scope_names.end();
  const bool active = (impl.is_str() && impl.as_str() != "none") || full_iteration;
  if (impl.is_str() && impl.as_str() == "none")
    ctx.set("model.cuda_graph_scope", List{});
  if (!impl.is_null() || !scope_names.empty()) {
    ctx.set("rng.te_rng_tracker", active);
    ctx.set("model.use_te_rng_tracker", active);
  }
  if (const Value* be = ctx.find("model.moe_flex_dispatcher_backend");
      be != nullptr && be->is_str() && be->as_str() == "hybridep")
    ctx.set("model.moe_hybridep_num_sms", 32);
}

} // namespace

void run_null_tokenizer(PassContext& ctx) {
  null_tokenizer(ctx);
}

const PassInfo kVocabNullTokenizerPass{
    .name = "vocab-null-tokenizer",
    .summary = "use Megatron's NullTokenizer with the model's vocabulary size",
    .writes = kTokenizerWrites,
    .run = run_null_tokenizer,
    .description = "Megatron-Bridge `_use_model_vocab_null_tokenizer`. Fails when "
                   "`model.vocab_size` is null.",
};

const PassInfo kQwen35VlCommonPass{
    .name = "qwen35-vl-common",
    .summary = "Qwen3.5-VL common perf settings: null tokenizer, fusions, seq 4096, no recompute",
    .writes = with_tokenizer(
        {"model.bias_activation_fusion", "model.recompute_granularity", "model.recompute_method",
         "model.recompute_num_layers", "model.recompute_modules", "model.moe_router_fusion",
         "model.seq_length", "dataset.seq_length", "model.moe_router_force_load_balancing",
         "ddp.overlap_grad_reduce", "ddp.overlap_param_gather", "model.freeze_language_model",
         "model.freeze_vision_model"}),
    .after = {{"precision", "upstream recipes set the precision block first"}},
    .before = {{"benchmark-common", "benchmark-common builds on the common settings"}},
    .run = [](PassContext& ctx) { common_settings(ctx, true); },
    .description = "Megatron-Bridge `_qwen35_vl_common`: runs vocab-null-tokenizer, turns on "
                   "bias-activation and router fusion, clears recompute, forces sequence length "
                   "4096 and router load balancing, turns DDP overlap off and unfreezes the "
                   "language and vision models.",
};

const PassInfo kQwen3VlCommonPass{
    .name = "qwen3-vl-common",
    .summary = "Qwen3-VL common perf settings (the inline copy: keeps the base's freeze flags)",
    .writes = with_tokenizer({"model.bias_activation_fusion", "model.recompute_granularity",
                              "model.recompute_method", "model.recompute_num_layers",
                              "model.moe_router_fusion", "model.seq_length", "dataset.seq_length",
                              "model.moe_router_force_load_balancing", "ddp.overlap_grad_reduce",
                              "ddp.overlap_param_gather", "optimizer.overlap_param_gather"}),
    .after = {{"precision", "upstream recipes set the precision block first"}},
    .before = {{"benchmark-common", "benchmark-common builds on the common settings"}},
    .run = [](PassContext& ctx) { common_settings(ctx, false); },
    .description = "What Qwen3-VL recipes write inline instead of calling `_qwen35_vl_common`: "
                   "the same settings without `recompute_modules` and the freeze flags (so the "
                   "base's frozen language and vision models stay frozen, as upstream), plus "
                   "`optimizer.overlap_param_gather` off.",
};

const PassInfo kBenchmarkCommonPass{
    .name = "benchmark-common",
    .summary = "benchmark settings: 50 iterations, no checkpoints or NaN checks, TE cross-entropy, "
               "RNG tracker from the current CUDA-graph state",
    .writes = {"train.train_iters",
               "train.eval_iters",
               "train.manual_gc",
               "train.manual_gc_interval",
               "tokenizer.use_tokenizer_vocab_size",
               "checkpoint.save",
               "checkpoint.load",
               "logger.log_interval",
               "logger.tensorboard_dir",
               "ddp.check_for_nan_in_grad",
               "ddp.check_for_large_grads",
               "rerun_state_machine.check_for_nan_in_loss",
               "scheduler.lr_decay_iters",
               "scheduler.lr_warmup_iters",
               "model.use_transformer_engine_op_fuser",
               "model.apply_rope_fusion",
               "model.cross_entropy_fusion_impl",
               "mixed_precision.grad_reduce_in_fp32",
               "ddp.grad_reduce_in_fp32",
               "model.cuda_graph_scope",
               "rng.te_rng_tracker",
               "model.use_te_rng_tracker",
               "model.moe_hybridep_num_sms"},
    .after = {{"precision", "it reads the precision block"},
              {"parallelism", "it runs after the recipe's own settings"},
              {"batch", "it runs after the recipe's own settings"},
              {"dispatcher", "it reads the dispatcher backend (hybridep SMs)"},
              {"comm-overlap", "it runs after the recipe's CommOverlapConfig"}},
    .run = run_benchmark_common,
    .description =
        "Megatron-Bridge `_benchmark_common(cfg, cross_entropy_impl=\"te\")`: 50 training "
        "iterations, no eval, manual GC every 100, no checkpoint save/load, log every step, no "
        "NaN or large-grad checks, LR decay over the run with 10 warm-up steps, the TE op fuser "
        "off, rope fusion on, TE cross-entropy, fp32 grad reduction off. The TE RNG tracker "
        "(`rng.te_rng_tracker`, `model.use_te_rng_tracker`) is set from the CUDA-graph impl and "
        "scope *at this point*: later graph changes do not update it. With the hybridep "
        "dispatcher, `moe_hybridep_num_sms` is 32.",
};

} // namespace qr
