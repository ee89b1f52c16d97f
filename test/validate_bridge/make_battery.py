#!/usr/bin/env python3
"""The battery of configs that qwen-recipe validate and Megatron-Bridge judge side by side.

  python make_battery.py QWEN_RECIPE GOLDEN_DIR OUT_DIR

Writes OUT_DIR/manifest.json and one config per case: every pinned golden unmodified (each a
shipped recipe as qwen-recipe builds it), configs built from the catalogue with
`qwen-recipe build RECIPE OVERRIDES...` (only what build accepts), and edits of a golden that
reach each ported check and parallelism rule on both sides of its boundary and each of
Megatron-Bridge's rewrites (build refuses most of these, so they are the golden with the dotted
overrides set, as Hydra would set them). Deterministic: the same inputs give the same bytes.
"""
import json
import os
import subprocess
import sys

import yaml

B200_35B = "qwen35_35b-b200-bf16"  # TP 1 PP 1 CP 1 EP 8, 40 layers, 256 experts, 8 GPUs
B200_35B_FP8 = "qwen35_35b-b200-fp8cs"
H100_30B = "qwen3_30b-h100-bf16"  # Qwen3-VL MoE (no GatedDeltaNet)
B200_30B = "qwen3_30b-b200-bf16"
H100_235B = "qwen3_235b-h100-bf16"
GB200_397B = "qwen35_397b-gb200-bf16"
B200_122B = "qwen35_122b-b200-bf16"

# (name, golden, world size or None for the recipe's, overrides). Names say what each probes.
EDITS = [
    # world-size-divisible / DP
    ("world-8-tp2", B200_35B, 8, ["model.tensor_model_parallel_size=2"]),
    ("world-12-tp8", B200_35B, 12, ["model.tensor_model_parallel_size=8"]),
    ("world-6-pp4", B200_35B, 6, ["model.pipeline_model_parallel_size=4"]),
    ("world-16-pp4-cp2", B200_35B, 16, ["model.pipeline_model_parallel_size=4",
                                         "model.context_parallel_size=2", "ddp.average_in_collective=false"]),
    # expert-parallel-fits
    ("ep-fits-16", B200_35B, 16, ["model.expert_model_parallel_size=16"]),
    ("ep-too-big-16-on-8", B200_35B, 8, ["model.expert_model_parallel_size=16"]),
    ("ep-etp2-on-8", B200_35B, 8, ["model.expert_tensor_parallel_size=2"]),
    ("ep-etp-null-tp2", B200_35B, 8, ["model.tensor_model_parallel_size=2",
                                      "model.expert_tensor_parallel_size=null"]),
    ("ep-etp-null-tp2-ep8-on-16", B200_35B, 16, ["model.tensor_model_parallel_size=2",
                                                 "model.expert_tensor_parallel_size=null"]),
    # experts-divisible-by-ep
    ("experts-255-ep8", B200_35B, 8, ["model.num_moe_experts=255"]),
    ("experts-264-ep8", B200_35B, 8, ["model.num_moe_experts=264"]),
    # global-batch-divisible
    ("gbs-500", B200_35B, 8, ["train.global_batch_size=500"]),
    ("gbs-504", B200_35B, 8, ["train.global_batch_size=504"]),
    ("gbs-mbs2-516", B200_35B, 8, ["train.micro_batch_size=2", "train.global_batch_size=516"]),
    ("gbs-mbs2-528", B200_35B, 8, ["train.micro_batch_size=2", "train.global_batch_size=528"]),
    # pipeline-layers
    ("pp3-40-layers", B200_35B, 24, ["model.pipeline_model_parallel_size=3"]),
    ("pp4-40-layers", B200_35B, 32, ["model.pipeline_model_parallel_size=4"]),
    ("pp3-account-embedding-loss", B200_35B, 24, [
        "model.pipeline_model_parallel_size=3", "model.num_layers=40",
        "model.account_for_embedding_in_pipeline_split=true",
        "model.account_for_loss_in_pipeline_split=true"]),
    ("pp4-account-embedding", B200_35B, 32, ["model.pipeline_model_parallel_size=4",
                                             "model.account_for_embedding_in_pipeline_split=true"]),
    ("pp4-first-last-ok", B200_35B, 32, ["model.pipeline_model_parallel_size=4",
                                         "model.num_layers_in_first_pipeline_stage=8",
                                         "model.num_layers_in_last_pipeline_stage=8"]),
    ("pp4-first-last-uneven-middle", B200_35B, 32, ["model.pipeline_model_parallel_size=4",
                                                    "model.num_layers_in_first_pipeline_stage=9",
                                                    "model.num_layers_in_last_pipeline_stage=8"]),
    ("pp4-first-zero", B200_35B, 32, ["model.pipeline_model_parallel_size=4",
                                      "model.num_layers_in_first_pipeline_stage=0",
                                      "model.num_layers_in_last_pipeline_stage=8"]),
    ("pp2-first-last-no-middle", B200_35B, 16, ["model.pipeline_model_parallel_size=2",
                                                "model.num_layers_in_first_pipeline_stage=19",
                                                "model.num_layers_in_last_pipeline_stage=21"]),
    ("pp2-first-last-leftover", B200_35B, 16, ["model.pipeline_model_parallel_size=2",
                                               "model.num_layers_in_first_pipeline_stage=18",
                                               "model.num_layers_in_last_pipeline_stage=20"]),
    ("pp4-first-with-account", B200_35B, 32, ["model.pipeline_model_parallel_size=4",
                                              "model.num_layers_in_first_pipeline_stage=8",
                                              "model.num_layers_in_last_pipeline_stage=8",
                                              "model.account_for_loss_in_pipeline_split=true"]),
    # virtual pipeline
    ("vp2-pp1", B200_35B, 8, ["model.virtual_pipeline_model_parallel_size=2"]),
    ("vp2-pp2", B200_35B, 16, ["model.pipeline_model_parallel_size=2",
                               "model.virtual_pipeline_model_parallel_size=2"]),
    ("vp4-pp2", B200_35B, 16, ["model.pipeline_model_parallel_size=2",
                               "model.virtual_pipeline_model_parallel_size=4"]),
    ("vp3-pp2", B200_35B, 16, ["model.pipeline_model_parallel_size=2",
                               "model.virtual_pipeline_model_parallel_size=3"]),
    ("vp5-pp2", B200_35B, 16, ["model.pipeline_model_parallel_size=2",
                               "model.virtual_pipeline_model_parallel_size=5"]),
    ("vp2-first-last-odd", B200_35B, 32, ["model.pipeline_model_parallel_size=4",
                                          "model.virtual_pipeline_model_parallel_size=2",
                                          "model.num_layers_in_first_pipeline_stage=9",
                                          "model.num_layers_in_last_pipeline_stage=9"]),
    # attention heads, query groups, GDN heads
    ("tp3-heads", B200_35B, 24, ["model.tensor_model_parallel_size=3"]),
    ("tp4-groups-divide", B200_35B, 32, ["model.tensor_model_parallel_size=4",
                                         "model.sequence_parallel=true"]),
    ("tp2-groups-equal", B200_35B, 16, ["model.tensor_model_parallel_size=2",
                                        "model.sequence_parallel=true"]),
    ("groups-3-tp2", B200_35B, 16, ["model.tensor_model_parallel_size=2",
                                    "model.num_query_groups=3", "model.sequence_parallel=true"]),
    ("groups-4-tp8", H100_30B, 16, ["model.tensor_model_parallel_size=8",
                                    "model.num_query_groups=4"]),
    ("gdn-tp2-cp8", B200_35B, 128, ["model.tensor_model_parallel_size=2",
                                    "model.context_parallel_size=8",
                                    "model.sequence_parallel=true", "ddp.average_in_collective=false"]),
    ("gdn-tp4-cp8", B200_35B, 256, ["model.tensor_model_parallel_size=4",
                                    "model.context_parallel_size=8",
                                    "model.sequence_parallel=true", "ddp.average_in_collective=false"]),
    ("gdn-keys-12-tp8", B200_35B, 64, ["model.tensor_model_parallel_size=8",
                                       "model.sequence_parallel=true",
                                       "model.linear_num_key_heads=12",
                                       "model.linear_num_value_heads=24"]),
    # sequence parallel, its rewrites
    ("sp-tp1", B200_35B, 8, ["model.sequence_parallel=true"]),
    ("sp-tp1-qwen3", H100_30B, 16, ["model.sequence_parallel=true"]),
    ("sp-off-tp2-qwen3-moe", H100_30B, 16, ["model.tensor_model_parallel_size=2",
                                            "model.sequence_parallel=false"]),
    ("sp-off-tp2-qwen35", B200_35B, 16, ["model.tensor_model_parallel_size=2",
                                         "model.sequence_parallel=false"]),
    ("sp-provider-distribute-saved", H100_30B, 16, [
        "model.tensor_model_parallel_size=2", "model.sequence_parallel=false",
        "model.recompute_granularity=selective", "model.distribute_saved_activations=true"]),
    ("distribute-saved-tp2-qwen35", B200_35B, 16, [
        "model.tensor_model_parallel_size=2", "model.sequence_parallel=false",
        "model.recompute_granularity=selective", "model.distribute_saved_activations=true"]),
    # seq-length-cp-sp and the CP/SP padding multiple
    ("cp2-seq-4096", B200_35B, 16, ["model.context_parallel_size=2", "ddp.average_in_collective=false"]),
    ("cp3-seq-4098", H100_30B, 48, ["model.context_parallel_size=3", "model.seq_length=4098",
                                    "dataset.seq_length=4098", "ddp.average_in_collective=false"]),
    ("cp2-seq-4094", B200_35B, 16, ["model.context_parallel_size=2", "model.seq_length=4094",
                                    "dataset.seq_length=4094", "ddp.average_in_collective=false"]),
    ("tp2-sp-seq-4095", B200_35B, 16, ["model.tensor_model_parallel_size=2",
                                       "model.sequence_parallel=true", "model.seq_length=4095",
                                       "dataset.seq_length=4095"]),
    ("tp2-sp-seq-4094", B200_35B, 16, ["model.tensor_model_parallel_size=2",
                                       "model.sequence_parallel=true", "model.seq_length=4094",
                                       "dataset.seq_length=4094"]),
    ("eval-cp4-seq-4100", B200_35B, 16, ["model.context_parallel_size=2",
                                         "dist.eval_context_parallel_size=4",
                                         "model.seq_length=4100", "dataset.seq_length=4100", "ddp.average_in_collective=false"]),
    ("eval-cp4-seq-4104", B200_35B, 16, ["model.context_parallel_size=2",
                                         "dist.eval_context_parallel_size=4",
                                         "model.seq_length=4104", "dataset.seq_length=4104", "ddp.average_in_collective=false"]),
    ("eval-cp3-world", B200_35B, 16, ["dist.eval_context_parallel_size=3"]),
    ("seq-mismatch", B200_35B, 8, ["dataset.seq_length=2048"]),
    # context-parallel-sft-loss and the provider's forced per-token loss
    ("cp2-per-token-off", B200_35B, 16, ["model.context_parallel_size=2",
                                         "model.calculate_per_token_loss=false", "ddp.average_in_collective=false"]),
    ("cp2-average-in-collective", B200_35B, 16, ["model.context_parallel_size=2",
                                                 "model.calculate_per_token_loss=true",
                                                 "ddp.average_in_collective=true"]),
    ("cp2-sft-ok", B200_35B, 16, ["model.context_parallel_size=2",
                                  "model.calculate_per_token_loss=true",
                                  "ddp.average_in_collective=false"]),
    ("cp2-qwen3-per-token-off", H100_30B, 32, ["model.context_parallel_size=2",
                                               "model.calculate_per_token_loss=false",
                                               "ddp.average_in_collective=false"]),
    # cp-comm-type (a string or one per layer)
    ("cp-comm-list-40", B200_35B, 16, ["model.context_parallel_size=2",
                                       "model.calculate_per_token_loss=true",
                                       "ddp.average_in_collective=false",
                                       "model.cp_comm_type=[" + ",".join(["p2p"] * 40) + "]"]),
    ("cp-comm-list-39", B200_35B, 16, ["model.context_parallel_size=2",
                                       "model.calculate_per_token_loss=true",
                                       "ddp.average_in_collective=false",
                                       "model.cp_comm_type=[" + ",".join(["p2p"] * 39) + "]"]),
    ("cp-comm-a2a-p2p-no-sizes", B200_35B, 32, ["model.context_parallel_size=4",
                                                "model.calculate_per_token_loss=true",
                                                "ddp.average_in_collective=false",
                                                "model.cp_comm_type=a2a+p2p"]),
    ("cp-comm-a2a-p2p-sizes", B200_35B, 32, ["model.context_parallel_size=4",
                                             "model.calculate_per_token_loss=true",
                                             "ddp.average_in_collective=false",
                                             "model.cp_comm_type=a2a+p2p",
                                             "model.hierarchical_context_parallel_sizes=[2,2]"]),
    ("cp-comm-sizes-wrong", B200_35B, 32, ["model.context_parallel_size=4",
                                           "model.calculate_per_token_loss=true",
                                           "ddp.average_in_collective=false",
                                           "model.cp_comm_type=a2a+p2p",
                                           "model.hierarchical_context_parallel_sizes=[2,4]"]),
    # ddp-settings, and comm_overlap's bucket_size
    ("num-buckets-alone", B200_35B, 8, ["ddp.num_buckets=4"]),
    ("num-buckets-dp1", B200_35B, 1, ["ddp.num_buckets=4", "model.expert_model_parallel_size=1"]),
    ("num-buckets-and-size", B200_35B, 8, ["ddp.num_buckets=4", "ddp.bucket_size=1000000"]),
    ("num-buckets-no-overlap", B200_35B, 8, ["ddp.num_buckets=4", "comm_overlap=null"]),
    ("num-buckets-zero", B200_35B, 8, ["ddp.num_buckets=0", "comm_overlap=null"]),
    ("fsdp-version-3", B200_35B, 8, ["ddp.megatron_fsdp_version=3"]),
    ("fp32-accum-patterns", B200_35B, 8, ["ddp.param_name_patterns_for_fp32_local_accumulation=[bias]",
                                          "mixed_precision.grad_reduce_in_fp32=true"]),
    ("mxfp8-reuse-without-gather", B200_35B, 8, ["mixed_precision.reuse_grad_buf_for_mxfp8_param_ag=true"]),
    # optimizer-settings
    ("precision-aware-sgd", B200_35B, 8, ["optimizer.use_precision_aware_optimizer=true",
                                          "optimizer.optimizer=sgd"]),
    ("precision-aware-adam", B200_35B, 8, ["optimizer.use_precision_aware_optimizer=true"]),
    ("exp-avg-bf16", B200_35B, 8, ["optimizer.exp_avg_dtype={_target_: torch.bfloat16, _call_: false}"]),
    ("opt-overlap-with-mxfp8-reuse", "qwen35_35b-b200-fp8mx", 8,
     ["comm_overlap.overlap_param_gather_with_optimizer_step=true"]),
    # pipeline dtype and p2p
    ("pp2-pipeline-dtype-null", B200_35B, 16, ["model.pipeline_model_parallel_size=2",
                                               "mixed_precision.pipeline_dtype=null"]),
    ("pp2-pipeline-dtype-null-no-mp", B200_35B, 16, ["model.pipeline_model_parallel_size=2",
                                                     "mixed_precision=null",
                                                     "model.pipeline_dtype=null"]),
    ("defer-wgrad-pp1", B200_35B, 8, ["comm_overlap.defer_embedding_wgrad_compute=true"]),
    ("defer-wgrad-pp2-limit-default", B200_35B, 16, ["model.pipeline_model_parallel_size=2",
                                                     "comm_overlap.defer_embedding_wgrad_compute=true"]),
    ("defer-wgrad-pp2-limit-0", B200_35B, 16, ["model.pipeline_model_parallel_size=2",
                                               "comm_overlap.defer_embedding_wgrad_compute=true",
                                               "comm_overlap.wgrad_deferral_limit=0"]),
    ("warmup-flush-pp1", B200_35B, 8, ["model.overlap_p2p_comm_warmup_flush=true"]),
    ("warmup-flush-vp", B200_35B, 16, ["model.pipeline_model_parallel_size=2",
                                       "model.virtual_pipeline_model_parallel_size=2",
                                       "model.overlap_p2p_comm_warmup_flush=true"]),
    # precision
    ("model-fp16-with-mp", B200_35B, 8, ["model.fp16=true"]),
    ("optimizer-fp16-with-mp", B200_35B, 8, ["optimizer.fp16=true"]),
    ("mp-fp16-and-bf16", B200_35B, 8, ["mixed_precision.fp16=true"]),
    ("mp-fp4-and-fp8", B200_35B, 8, ["mixed_precision.fp4=e2m1", "mixed_precision.fp8=hybrid"]),
    ("mp-by-name", B200_35B, 8, ["mixed_precision=bf16_mixed"]),
    ("mp-by-bad-name", B200_35B, 8, ["mixed_precision=bf16_mixd"]),
    ("fp8-custom-no-factory", B200_35B_FP8, 8, ["mixed_precision.fp8_recipe=custom"]),
    ("first-last-bf16-delayed", B200_35B_FP8, 8, ["mixed_precision.fp8_recipe=delayed",
                                                  "mixed_precision.first_last_layers_bf16=true"]),
    ("first-last-bf16-too-many", B200_35B_FP8, 8, ["mixed_precision.first_last_layers_bf16=true",
                                                   "mixed_precision.num_layers_at_start_in_bf16=41"]),
    ("first-last-bf16-40", B200_35B_FP8, 8, ["mixed_precision.first_last_layers_bf16=true",
                                             "mixed_precision.num_layers_at_start_in_bf16=40"]),
    ("fp8-param-without-fp8", B200_35B, 8, ["mixed_precision.fp8_param_gather=true"]),
    ("fp8-output-proj-tensorwise", B200_35B_FP8, 8, ["model.fp8_output_proj=true"]),
    # gdn-settings and the gated_delta_net rename
    ("gdn-freq-null-old-name", B200_35B, 8, ["model.linear_attention_freq=null"]),
    ("gdn-freq-null-gdn", B200_35B, 8, ["model.linear_attention_freq=null",
                                        "model.experimental_attention_variant=gdn"]),
    ("gdn-freq-null-gdn2", B200_35B, 8, ["model.linear_attention_freq=null",
                                         "model.experimental_attention_variant=gdn2"]),
    ("gdn-values-not-multiple", B200_35B, 8, ["model.linear_num_value_heads=24"]),
    ("gdn-conv-null", B200_35B, 8, ["model.linear_conv_kernel_dim=null"]),
    ("gdn-rename-recompute-norm", B200_35B, 8, ["model.recompute_granularity=selective",
                                                "model.recompute_modules=[gdn_norm_out]"]),
    # moe-settings
    ("ep8-no-experts", B200_35B, 8, ["model.num_moe_experts=null"]),
    ("deepep-alltoall", B200_35B, 8, ["model.moe_enable_deepep=true"]),
    ("flex-deepep", B200_35B, 8, ["model.moe_token_dispatcher_type=flex",
                                  "model.moe_flex_dispatcher_backend=deepep"]),
    ("flex-deepep-capacity-pad", B200_35B, 8, ["model.moe_token_dispatcher_type=flex",
                                               "model.moe_flex_dispatcher_backend=deepep",
                                               "model.moe_expert_capacity_factor=1.0",
                                               "model.moe_pad_expert_input_to_capacity=true"]),
    ("capacity-pad-no-factor", B200_35B, 8, ["model.moe_pad_expert_input_to_capacity=true"]),
    ("capacity-sinkhorn", B200_35B, 8, ["model.moe_expert_capacity_factor=1.0",
                                        "model.moe_router_load_balancing_type=sinkhorn"]),
    ("expert-bias-softmax", B200_35B, 8, ["model.moe_router_enable_expert_bias=true",
                                          "model.moe_router_score_function=softmax"]),
    ("topk1-softmax", B200_35B, 8, ["model.moe_router_topk=1",
                                    "model.moe_router_score_function=softmax",
                                    "model.moe_router_pre_softmax=false"]),
    ("group-topk-no-groups", B200_35B, 8, ["model.moe_router_group_topk=2",
                                           "model.moe_router_num_groups=null"]),
    ("group-topk-groups-8", B200_35B, 8, ["model.moe_router_group_topk=2",
                                          "model.moe_router_num_groups=8"]),
    ("group-topk-above-groups", B200_35B, 8, ["model.moe_router_group_topk=9",
                                              "model.moe_router_num_groups=8"]),
    ("allgather-variable-seq", B200_35B, 8, ["model.moe_token_dispatcher_type=allgather",
                                             "model.variable_seq_lengths=true"]),
    ("allgather-fixed-seq", B200_35B, 8, ["model.moe_token_dispatcher_type=allgather"]),
    ("rank-capacity-alltoall", B200_35B, 8, ["model.moe_expert_rank_capacity_factor=1.5"]),
    ("shared-expert-overlap-allgather", B200_35B, 8, ["model.moe_token_dispatcher_type=allgather",
                                                      "model.moe_shared_expert_overlap=true"]),
    ("moe-bias-etp2", B200_35B, 16, ["model.add_bias_linear=true",
                                     "model.tensor_model_parallel_size=2",
                                     "model.sequence_parallel=true",
                                     "model.expert_tensor_parallel_size=2"]),
    ("moe-bias-etp-null-tp2", B200_35B, 16, ["model.add_bias_linear=true",
                                             "model.tensor_model_parallel_size=2",
                                             "model.sequence_parallel=true",
                                             "model.expert_tensor_parallel_size=null"]),
    # recompute
    ("recompute-full-no-layers", B200_35B, 8, ["model.recompute_granularity=full",
                                               "model.recompute_method=uniform"]),
    ("recompute-full-ok", B200_35B, 8, ["model.recompute_granularity=full",
                                        "model.recompute_method=uniform",
                                        "model.recompute_num_layers=1"]),
    ("recompute-selective-layers", B200_35B, 8, ["model.recompute_granularity=selective",
                                                 "model.recompute_num_layers=1"]),
    ("recompute-bad-granularity", B200_35B, 8, ["model.recompute_granularity=partial"]),
    ("recompute-unknown-module", B200_35B, 8, ["model.recompute_granularity=selective",
                                               "model.recompute_modules=[attention]"]),
    ("recompute-mla-up-proj", B200_35B, 8, ["model.recompute_granularity=selective",
                                            "model.recompute_modules=[mla_up_proj]"]),
    ("recompute-moe-act", B200_35B, 8, ["model.recompute_granularity=selective",
                                        "model.recompute_modules=[moe_act,layernorm]"]),
    ("cpu-offload-pp2", B200_35B, 16, ["model.cpu_offloading=true",
                                       "model.cpu_offloading_num_layers=1",
                                       "model.pipeline_model_parallel_size=2"]),
    # activation settings
    ("fused-bias-act-relu", B200_35B, 8, ["model.bias_activation_fusion=true",
                                          "model.activation_func={_target_: torch.nn.functional.relu, _call_: false}"]),
    ("swiglu-clamp-negative", B200_35B, 8, ["model.activation_func_clamp_value=-1.0"]),
    ("fused-single-qkv-rope-gate", B200_35B, 8, ["model.fused_single_qkv_rope=true"]),
    ("fused-single-qkv-rope-no-gate", H100_30B, 16, ["model.fused_single_qkv_rope=true"]),
    # moe-a2a-overlap
    ("a2a-overlap-pp1", B200_35B, 8, ["comm_overlap.overlap_moe_expert_parallel_comm=true"]),
    ("a2a-overlap-pp2-no-vp", B200_35B, 16, ["comm_overlap.overlap_moe_expert_parallel_comm=true",
                                             "model.pipeline_model_parallel_size=2"]),
    ("a2a-overlap-full-recompute", B200_35B, 8, ["comm_overlap.overlap_moe_expert_parallel_comm=true",
                                                 "model.recompute_granularity=full",
                                                 "model.recompute_method=uniform",
                                                 "model.recompute_num_layers=1"]),
    ("delay-wgrad-no-a2a", B200_35B, 8, ["comm_overlap.delay_wgrad_compute=true"]),
    ("a2a-overlap-no-comm-overlap-section", B200_35B, 8, ["comm_overlap=null",
                                                          "model.overlap_moe_expert_parallel_comm=true"]),
    # logger, train, scheduler, checkpoint, profiling, straggler
    ("mlflow-no-run-name", B200_35B, 8, ["logger.mlflow_experiment=exp"]),
    ("comet-no-name", B200_35B, 8, ["logger.comet_project=proj"]),
    ("train-iters-and-samples", B200_35B, 8, ["train.train_samples=1000"]),
    ("train-samples-only", B200_35B, 8, ["train.train_iters=null", "train.train_samples=25600",
                                         "scheduler.lr_decay_iters=null",
                                         "scheduler.lr_warmup_iters=0",
                                         "scheduler.lr_decay_samples=25600",
                                         "scheduler.lr_warmup_samples=512"]),
    ("train-samples-decay-default", B200_35B, 8, ["train.train_iters=null",
                                                  "train.train_samples=25600",
                                                  "scheduler.lr_decay_iters=null",
                                                  "scheduler.lr_warmup_iters=0"]),
    ("train-samples-decay-zero", B200_35B, 8, ["train.train_iters=null", "train.train_samples=25600",
                                               "scheduler.lr_decay_iters=null",
                                               "scheduler.lr_warmup_iters=0",
                                               "scheduler.lr_decay_samples=0"]),
    ("train-neither", B200_35B, 8, ["train.train_iters=null"]),
    ("num-epochs-mock-vlm", B200_35B, 8, ["train.train_iters=null", "train.num_epochs=1"]),
    ("max-steps-zero", B200_35B, 8, ["scheduler.max_steps=0"]),
    ("max-steps-below-iters", B200_35B, 8, ["scheduler.max_steps=10"]),
    ("decay-iters-zero", B200_35B, 8, ["scheduler.lr_decay_iters=0"]),
    ("decay-below-warmup", B200_35B, 8, ["scheduler.lr_decay_iters=5"]),
    ("weight-decay-backwards", B200_35B, 8, ["scheduler.start_weight_decay=0.1",
                                             "scheduler.end_weight_decay=0.01"]),
    ("warmup-fraction-and-iters", B200_35B, 8, ["scheduler.lr_warmup_fraction=0.1"]),
    ("scheduler-both-overrides", B200_35B, 8, ["scheduler.use_checkpoint_opt_param_scheduler=true"]),
    ("async-save-no-save", B200_35B, 8, ["checkpoint.async_save=true"]),
    ("async-save-torch", B200_35B, 8, ["checkpoint.async_save=true", "checkpoint.save=/ckpt",
                                       "checkpoint.ckpt_format=torch"]),
    ("ckpt-torch-distopt", B200_35B, 8, ["checkpoint.save=/ckpt", "checkpoint.ckpt_format=torch",
                                         "dist.use_gloo_process_groups=false"]),
    ("ckpt-fsdp-dtensor-no-fsdp", B200_35B, 8, ["checkpoint.save=/ckpt",
                                                "checkpoint.ckpt_format=fsdp_dtensor"]),
    ("verify-integrity-torch-dcp", B200_35B, 8, ["checkpoint.verify_integrity=true",
                                                 "checkpoint.ckpt_format=torch_dcp"]),
    ("ckpt-step-no-load", B200_35B, 8, ["checkpoint.ckpt_step=10"]),
    ("profilers-both", B200_35B, 8, ["profiling.use_nsys_profiler=true",
                                     "profiling.use_pytorch_profiler=true"]),
    ("profile-steps-backwards", B200_35B, 8, ["profiling.use_nsys_profiler=true",
                                              "profiling.profile_step_start=10",
                                              "profiling.profile_step_end=5"]),
    # container-level validate()
    ("eval-gbs-indivisible", B200_35B, 8, ["validation.eval_global_batch_size=12"]),
    ("fsdp-and-fsdp2", B200_35B, 8, ["dist.use_megatron_fsdp=true", "dist.use_torch_fsdp2=true"]),
    ("mxfp8-no-reuse", "qwen35_35b-b200-fp8mx", 8, ["mixed_precision.reuse_grad_buf_for_mxfp8_param_ag=false"]),
    ("deterministic-fused-ce", B200_35B, 8, ["model.deterministic_mode=true",
                                             "model.cross_entropy_loss_fusion=true"]),
    ("optimizer-bf16-fp16", B200_35B, 8, ["mixed_precision=null", "optimizer.bf16=true",
                                          "optimizer.fp16=true"]),
    ("offload-local-impl", B200_35B, 8, ["model.fine_grained_activation_offloading=true",
                                         "model.offload_modules=[core_attn]",
                                         "model.transformer_impl=local"]),
    ("full-iteration-nan-check", B200_35B, 8, ["model.cuda_graph_impl=local",
                                               "model.cuda_graph_scope=[full_iteration]",
                                               "rerun_state_machine.check_for_nan_in_loss=true"]),
    ("in-batch-packing-mbs1", B200_35B, 8, ["dataset.enable_in_batch_packing=true"]),
    ("in-batch-packing-mbs2", B200_35B, 8, ["dataset.enable_in_batch_packing=true",
                                            "train.micro_batch_size=2"]),
    ("mock-vlm-empty-prompt", B200_35B, 8, ["dataset.prompt=''"]),
    ("mock-vlm-image-size", B200_35B, 8, ["dataset.image_size=[256]"]),
    ("overlap-param-gather-step", H100_235B, None, ["comm_overlap.overlap_param_gather_with_optimizer_step=true"]),
]

# Built by `qwen-recipe build MODEL --gpu G --precision P OVERRIDES...` (accepted by build).
BUILDS = [
    ("build-35b-b200-iters20", "qwen35_35b", "b200", "bf16", ["train.train_iters=20"]),
    ("build-35b-b200-tp2-sp", "qwen35_35b", "b200", "bf16",
     ["model.tensor_model_parallel_size=2", "model.sequence_parallel=true"]),
    ("build-35b-b200-cp2", "qwen35_35b", "b200", "bf16",
     ["model.context_parallel_size=2", "model.expert_model_parallel_size=4",
      "ddp.average_in_collective=false"]),
    ("build-30b-h100-pp2", "qwen3_30b", "h100", "bf16",
     ["model.pipeline_model_parallel_size=2", "model.expert_model_parallel_size=8"]),
    ("build-30b-b200-mbs2", "qwen3_30b", "b200", "bf16", ["train.micro_batch_size=2"]),
    ("build-397b-gb200-fix-pipeline", "qwen35_397b", "gb200", "bf16",
     ["model.num_layers_in_first_pipeline_stage=8", "model.num_layers_in_last_pipeline_stage=4"]),
    ("build-235b-gb300-iters10", "qwen3_235b", "gb300", "bf16", ["train.train_iters=10"]),
    ("build-122b-gb200-fp8cs", "qwen35_122b", "gb200", "fp8cs", ["train.global_batch_size=256"]),
]


def set_dotted(doc, token, origin):
    key, sep, text = token.partition("=")
    if not sep:
        sys.exit(f"error: {origin}: override '{token}' is not KEY=VALUE")
    value = yaml.safe_load(text) if text else ""
    parts = key.split(".")
    node = doc
    for part in parts[:-1]:
        if not isinstance(node.get(part), dict):
            sys.exit(f"error: {origin}: '{key}' is not in the golden")
        node = node[part]
    node[parts[-1]] = value


def dump(header, doc):
    return header + yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=100)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    binary, golden_dir, out = sys.argv[1:]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(golden_dir, "manifest.yaml")) as f:
        goldens = yaml.safe_load(f)["goldens"]
    recipes = json.loads(subprocess.run([binary, "list", "recipes", "--format", "json"],
                                        check=True, capture_output=True).stdout)["recipes"]
    gpus_of = {r["spec"]: r["num_gpus"] for r in recipes}
    cases = []

    def write(name, text, num_gpus, how):
        with open(os.path.join(out, name + ".yaml"), "w") as f:
            f.write(text)
        cases.append({"name": name, "file": name + ".yaml", "num_gpus": num_gpus, "how": how})

    recipe_gpus = {}
    for g in goldens:
        if g["mcore"] != "pinned":
            continue  # the battery is Megatron-Bridge 067f987d on Megatron-Core 2a75ac12
        stem = os.path.splitext(os.path.basename(g["golden"]))[0]
        spec = g["spec"].split(":")[0]
        recipe_gpus[stem] = gpus_of[spec]
        with open(os.path.join(golden_dir, g["golden"])) as f:
            write("recipe-" + stem, f.read(), gpus_of[spec], "golden " + g["golden"])
    for name, stem, num_gpus, overrides in EDITS:
        with open(os.path.join(golden_dir, "pinned", stem + ".yaml")) as f:
            text = f.read()
        # The header names the world size where it is not the recipe's, as build writes it.
        world = num_gpus or recipe_gpus[stem]
        header = text.splitlines()[0]
        if world != recipe_gpus[stem]:
            header = header.replace(" --mcore ", f" --num-gpus {world} --mcore ")
        header += " " + " ".join(overrides) + "\n"
        doc = yaml.safe_load(text)
        for token in overrides:
            set_dotted(doc, token, name)
        write("edit-" + name, dump(header, doc), world,
              f"golden pinned/{stem}.yaml with " + " ".join(overrides))
    for name, model, gpu, precision, overrides in BUILDS:
        cmd = [binary, "-q", "build", model, "--gpu", gpu, "--precision", precision, *overrides]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"error: {name}: {' '.join(cmd[1:])} failed: {run.stderr.strip()}")
        write(name, run.stdout, gpus_of[f"{model}@{gpu}"], " ".join(["qwen-recipe"] + cmd[2:]))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"cases": cases}, f, indent=1)
        f.write("\n")
    print(f"{len(cases)} configs in {out}")


if __name__ == "__main__":
    main()
