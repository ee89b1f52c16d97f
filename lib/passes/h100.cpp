// qwen35-vl-35b-h100-exec: the execution settings of the H100 Qwen3.5 35B-A3B bf16 recipe.
#include "passes/registry.h"

namespace qr {

void run_qwen35_vl_35b_h100_exec(PassContext& ctx) {
  ctx.set("model.tensor_model_parallel_size", 1);
  ctx.set("model.pipeline_model_parallel_size", 2);
  ctx.set("model.pipeline_dtype", Schema::dtype_value("torch.bfloat16"));
  ctx.set("model.context_parallel_size", 1);
  ctx.set("model.virtual_pipeline_model_parallel_size", Null{});
  ctx.set("model.num_layers_in_first_pipeline_stage", 17);
  ctx.set("model.num_layers_in_last_pipeline_stage", 23);
  ctx.set("model.expert_model_parallel_size", 8);
  ctx.set("model.expert_tensor_parallel_size", 1);
  ctx.set("model.sequence_parallel", false);
  ctx.set("model.recompute_granularity", Null{});
  ctx.set("model.recompute_method", Null{});
  ctx.set("model.recompute_num_layers", Null{});
  ctx.set("model.recompute_modules", List{});
  ctx.set("model.apply_rope_fusion", false);
  ctx.set("model.moe_token_dispatcher_type", "flex");
  ctx.set("model.moe_flex_dispatcher_backend", "hybridep");
  ctx.set("model.moe_hybridep_num_sms", Null{});
  ctx.set("model.moe_flex_dispatcher_num_sms", 16);
  ctx.set("model.moe_hybridep_num_sms_preprocessing", 16);
  ctx.set("model.moe_permute_fusion", true);
  ctx.set("model.moe_permute_fusion_into_hybridep", true);
  ctx.set("model.moe_shared_expert_overlap", false);
  ctx.set("model.overlap_dispatch_backward_with_experts_wgrad", true);
  ctx.set("model.batch_p2p_sync", false);
  ctx.set("model.cuda_graph_impl", "transformer_engine");
  List modules;
  for (const char* m : {"attn", "moe_router", "moe_preprocess"})
    modules.push_back(ctx.schema().enum_value("CudaGraphModule", m));
  ctx.set("model.cuda_graph_modules", std::move(modules));
  ctx.set("model.cuda_graph_scope", Null{});
  ctx.set("model.vision_cuda_graph_impl", "transformer_engine");
  ctx.set("model.vision_cuda_graph_scope", List{Value("attn"), Value("mlp")});
  ctx.set("model.max_vision_cuda_graph_seq_length", 784);
  ctx.set("model.use_te_rng_tracker", true);
  ctx.set("rng.te_rng_tracker", true);
  ctx.set("ddp.overlap_grad_reduce", false);
  ctx.set("ddp.overlap_param_gather", false);
  ctx.set("optimizer.overlap_param_gather", false);
  ctx.set("optimizer.overlap_param_gather_with_optimizer_step", false);
  ctx.set("comm_overlap", ctx.schema().instantiate(*ctx.schema().class_named("CommOverlapConfig"),
                                                   ctx.config().profile()));
  for (const char* f : {"tp_comm_overlap", "overlap_grad_reduce", "overlap_param_gather",
                        "overlap_param_gather_with_optimizer_step",
                        "overlap_moe_expert_parallel_comm", "delay_wgrad_compute"})
    ctx.set(std::string("comm_overlap.") + f, false);
}

} // namespace qr
