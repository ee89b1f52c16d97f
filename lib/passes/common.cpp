// The shared helpers every Qwen-VL perf recipe runs: the null tokenizer, the Qwen3.5 and
// Qwen3-VL common settings, and benchmark-common.
#include "passes/registry.h"
#include "support/error.h"

#include <algorithm>

namespace qr {
namespace {

// The settings Qwen3.5 recipes take from `_qwen35_vl_common` and Qwen3-VL recipes write inline.
void common_settings(PassContext& ctx, bool qwen35) {
  run_vocab_null_tokenizer(ctx);
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

} // namespace

void run_qwen35_vl_common(PassContext& ctx) {
  common_settings(ctx, true);
}

void run_qwen3_vl_common(PassContext& ctx) {
  common_settings(ctx, false);
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

void run_vocab_null_tokenizer(PassContext& ctx) {
  const Value& vocab = ctx.get("model.vocab_size");
  if (vocab.is_null())
    throw Error("pass 'vocab-null-tokenizer': model.vocab_size is null; the null tokenizer takes "
                "its vocabulary size from the model");
  ctx.set("tokenizer.tokenizer_type", "NullTokenizer");
  ctx.set("tokenizer.tokenizer_model", Null{});
  ctx.set("tokenizer.vocab_size", vocab);
  ctx.set("tokenizer.use_tokenizer_vocab_size", false);
}

std::vector<std::string> null_tokenizer_writes(std::vector<std::string> more) {
  std::vector<std::string> writes{"tokenizer.tokenizer_type", "tokenizer.tokenizer_model",
                                  "tokenizer.vocab_size", "tokenizer.use_tokenizer_vocab_size"};
  writes.insert(writes.end(), more.begin(), more.end());
  return writes;
}

} // namespace qr
