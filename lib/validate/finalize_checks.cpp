// The start-up checks ported from Megatron-Bridge's ConfigContainer.validate() (training/config.py
// at 067f987d), the finalize() methods it calls, and the Megatron-Core __post_init__ methods those
// run (TransformerConfig, ModelParallelConfig, OptimizerConfig, DistributedDataParallelConfig at
// the pinned 2a75ac12): those that depend only on config fields. They run in the order
// runtime_config_update() and validate() run them, and read the config as validate() sees it:
// after MixedPrecisionConfig.setup() and CommOverlapConfig.setup() have copied their fields onto
// the model, optimizer and DDP configs. docs/validate.md lists them and the ones left out.
#include "support/suggest.h"
#include "validate/check_kit.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <set>

namespace qr::check_kit {
namespace {

const char* const kMixed =
    "Megatron-Bridge training/mixed_precision.py MixedPrecisionConfig.finalize";
const char* const kTransformer =
    "Megatron-Core transformer/transformer_config.py TransformerConfig.__post_init__";
const char* const kParallel =
    "Megatron-Core model_parallel_config.py ModelParallelConfig.__post_init__";
const char* const kOptimizer =
    "Megatron-Core optimizer/optimizer_config.py OptimizerConfig.__post_init__";
const char* const kDdp = "Megatron-Core distributed/distributed_data_parallel_config.py "
                         "DistributedDataParallelConfig.__post_init__";

bool section_present(const Config& c, std::string_view name) {
  const Value* v = c.find(name);
  return v != nullptr && v->is_map();
}

// What CommOverlapConfig.setup() (training/comm_overlap.py) writes over a model, optimizer or DDP
// field before validate() runs: the comm_overlap section's value where it gives one, else its
// default. Null when the field is the config's own.
const Value* comm_overlap_value(const Config& c, const std::string& section,
                                const std::string& field) {
  static const Value kTrue{true}, kFalse{false}, kNoLimit{std::int64_t{-1}};
  if (!section_present(c, "comm_overlap"))
    return nullptr;
  const Value* user = c.find("comm_overlap." + field);
  const bool given = user != nullptr && !user->is_null();
  if (section == "model") {
    // _get_model_comm_overlap_cfgs: these start disabled; the user's value wins.
    if (field == "overlap_moe_expert_parallel_comm" || field == "delay_wgrad_compute" ||
        field == "defer_embedding_wgrad_compute")
      return given ? user : &kFalse;
    if (field == "wgrad_deferral_limit")
      return given ? user : &kNoLimit;
    if (field == "overlap_p2p_comm" || field == "batch_p2p_comm") {
      if (given)
        return user;
      const Value* pp = c.find("model.pipeline_model_parallel_size");
      const Value* vp = c.find("model.virtual_pipeline_model_parallel_size");
      const bool pipelined = pp != nullptr && pp->is_int() && pp->as_int() > 1;
      const bool interleaved = vp != nullptr && vp->is_int() && vp->as_int() > 1;
      if (!pipelined)
        return &kFalse;
      return (field == "overlap_p2p_comm") == interleaved ? &kTrue : &kFalse;
    }
    return nullptr;
  }
  // _get_optimizer_overlap_cfgs, applied with the distributed optimizer only. The other fields
  // it sets depend on the data-parallel size; this one does not.
  const Value* distributed = c.find("ddp.use_distributed_optimizer");
  if ((section == "optimizer" || section == "ddp") && distributed != nullptr &&
      distributed->is_bool() && distributed->as_bool() &&
      field == "overlap_param_gather_with_optimizer_step")
    return given ? user : &kFalse;
  return nullptr;
}

// Megatron-Bridge's named mixed-precision recipes (training/mixed_precision.py), for a
// `mixed_precision` given as a name: the fields each sets over MixedPrecisionConfig's defaults.
struct NamedPrecision {
  const char* name;
  const char* base; // a recipe it starts from, or ""
  std::vector<std::pair<const char*, Value>> fields;
};

const std::vector<NamedPrecision>& named_precisions() {
  const auto dt = [](const char* torch) { return Schema::dtype_value(torch); };
  static const std::vector<NamedPrecision> all{
      {"bf16_mixed",
       "",
       {{"bf16", true},
        {"params_dtype", dt("torch.bfloat16")},
        {"pipeline_dtype", dt("torch.bfloat16")},
        {"grad_reduce_in_fp32", true}}},
      {"fp16_mixed",
       "",
       {{"fp16", true},
        {"params_dtype", dt("torch.float16")},
        {"pipeline_dtype", dt("torch.float16")},
        {"grad_reduce_in_fp32", false}}},
      {"bf16_with_fp8_delayed_scaling_mixed",
       "bf16_mixed",
       {{"fp8", "hybrid"},
        {"fp8_recipe", "delayed"},
        {"fp8_margin", 0},
        {"fp8_amax_history_len", 1024},
        {"fp8_amax_compute_algo", "max"},
        {"fp8_param_gather", true}}},
      {"fp16_with_fp8_delayed_scaling_mixed",
       "fp16_mixed",
       {{"fp8", "hybrid"},
        {"fp8_recipe", "delayed"},
        {"fp8_margin", 0},
        {"fp8_amax_history_len", 1024},
        {"fp8_amax_compute_algo", "max"},
        {"fp8_param_gather", true}}},
      {"bf16_with_mxfp8_mixed",
       "bf16_mixed",
       {{"fp8", "e4m3"},
        {"fp8_recipe", "mxfp8"},
        {"fp8_param_gather", true},
        {"reuse_grad_buf_for_mxfp8_param_ag", true}}},
      {"fp16_with_mxfp8_mixed",
       "fp16_mixed",
       {{"fp8", "e4m3"},
        {"fp8_recipe", "mxfp8"},
        {"fp8_param_gather", true},
        {"reuse_grad_buf_for_mxfp8_param_ag", true}}},
      {"bf16_with_fp8_current_scaling_mixed",
       "bf16_mixed",
       {{"fp8", "hybrid"},
        {"fp8_recipe", "tensorwise"},
        {"first_last_layers_bf16", true},
        {"num_layers_at_start_in_bf16", 1},
        {"num_layers_at_end_in_bf16", 1},
        {"fp8_param_gather", true}}},
      {"nemotron_h_bf16_with_fp8_current_scaling_mixed",
       "bf16_mixed",
       {{"fp8", "hybrid"},
        {"fp8_recipe", "tensorwise"},
        {"first_last_layers_bf16", true},
        {"num_layers_at_start_in_bf16", 2},
        {"num_layers_at_end_in_bf16", 2},
        {"fp8_param_gather", true}}},
      {"nanov2_bf16_with_fp8_current_scaling_mixed",
       "bf16_mixed",
       {{"fp8", "hybrid"},
        {"fp8_recipe", "blockwise"},
        {"first_last_layers_bf16", true},
        {"num_layers_at_start_in_bf16", 2},
        {"num_layers_at_end_in_bf16", 2},
        {"fp8_param_gather", true}}},
      {"fp16_with_fp8_current_scaling_mixed",
       "fp16_mixed",
       {{"fp8", "hybrid"},
        {"fp8_recipe", "tensorwise"},
        {"first_last_layers_bf16", true},
        {"num_layers_at_start_in_bf16", 1},
        {"num_layers_at_end_in_bf16", 1},
        {"fp8_param_gather", true}}},
      {"bf16_with_fp8_subchannel_scaling_mixed",
       "bf16_mixed",
       {{"fp8", "hybrid"}, {"fp8_recipe", "blockwise"}, {"fp8_param_gather", false}}},
      {"fp16_with_fp8_subchannel_scaling_mixed",
       "fp16_mixed",
       {{"fp8", "hybrid"}, {"fp8_recipe", "blockwise"}, {"fp8_param_gather", false}}},
      {"bf16_with_nvfp4_mixed",
       "bf16_mixed",
       {{"fp8", Value()},
        {"fp4", "e2m1"},
        {"fp4_recipe", "nvfp4"},
        {"fp8_param_gather", false},
        {"fp4_param_gather", true}}},
      {"nemotron_3_super_bf16_with_nvfp4_mixed",
       "bf16_with_nvfp4_mixed",
       {{"first_last_layers_bf16", true}, {"num_layers_at_end_in_bf16", 14}}},
  };
  return all;
}

const NamedPrecision* find_named_precision(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_'); // get_mixed_precision_config takes both
  for (const NamedPrecision& n : named_precisions())
    if (name == n.name)
      return &n;
  return nullptr;
}

// The MixedPrecisionConfig a named recipe builds, as a section (null for an unknown name).
const Value* named_precision_section(const Config& c, const std::string& name) {
  // `check` validates entries in threads: the cache is shared. Entries are never erased, so the
  // pointers handed out stay valid.
  static std::mutex lock;
  static std::map<std::string, Value> built;
  const std::lock_guard<std::mutex> hold(lock);
  const std::string key = name + "@" + c.profile();
  if (auto it = built.find(key); it != built.end())
    return &it->second;
  const NamedPrecision* n = find_named_precision(name);
  const ClassSpec* cls =
      c.schema().class_by_target("megatron.bridge.training.mixed_precision.MixedPrecisionConfig");
  if (n == nullptr || cls == nullptr)
    return nullptr;
  Value section = c.schema().instantiate(*cls, c.profile());
  std::vector<const NamedPrecision*> chain{n};
  while (chain.back()->base[0] != '\0')
    chain.push_back(find_named_precision(chain.back()->base));
  for (auto it = chain.rbegin(); it != chain.rend(); ++it)
    for (const auto& [field, value] : (*it)->fields)
      section.as_map().set(field, value);
  return &built.emplace(key, std::move(section)).first->second;
}

// The mixed_precision section validate() applies: the config's own, or the one its name builds.
const Value* mixed_precision_section(const Config& c) {
  const Value* v = c.find("mixed_precision");
  if (v != nullptr && v->is_str())
    return named_precision_section(c, v->as_str());
  return v != nullptr && v->is_map() ? v : nullptr;
}

// The value at `path` as Megatron-Bridge's validate() sees it. runtime_config_update() first runs
// MixedPrecisionConfig.setup(), which copies every MixedPrecisionConfig field onto the model,
// optimizer and DDP configs that have it (fp8_param/fp4_param defaulting to the *_param_gather
// flag, as MixedPrecisionConfig.finalize() sets them), then CommOverlapConfig.setup()
// (comm_overlap_value); a model field as the model's finalize() leaves it (finalized_value).
const Value* setup_value(const Config& c, const std::string& section, const std::string& field,
                         const Value* own) {
  if (const Value* overlap = comm_overlap_value(c, section, field))
    return overlap;
  const Value* precision = mixed_precision_section(c);
  if ((section == "model" || section == "optimizer" || section == "ddp") && precision != nullptr &&
      field != "_target_") {
    const Value* mp = precision->as_map().find(field);
    if (mp == nullptr)
      return own;
    // MixedPrecisionConfig.__setattr__ keeps fp8_param (fp4_param) equal to fp8_param_gather
    // (fp4_param_gather): the later field, so it wins as the config is built.
    if (field == "fp8_param" || field == "fp4_param")
      if (const Value* gather = precision->as_map().find(field + "_gather"))
        return gather;
    return mp;
  }
  return own;
}

const Value* seen(const Config& c, std::string_view path);

// What the model's finalize() sets before Megatron-Core's __post_init__ checks the field:
// Megatron-Bridge's models/transformer_config.py finalize (pipeline dtype from the params dtype
// with PP > 1, sequence parallelism off with TP 1, ETP 1 with EP > 1), the Qwen-VL providers'
// finalize (per-token loss with CP > 1; the Qwen3-VL MoE provider's sequence parallelism with
// TP > 1), and __post_init__'s own renaming of experimental_attention_variant gated_delta_net.
const Value* finalized_value(const Config& c, const std::string& field, const Value* v) {
  static const Value kTrue{true}, kFalse{false}, kOne{std::int64_t{1}}, kGdn{"gdn"};
  const auto size = [&](const char* f) { return int_at(c, std::string("model.") + f).value_or(1); };
  const Value* model = c.find("model");
  const bool qwen_vl = model != nullptr && model->is_map() &&
                       model->target().find(".qwen_vl.") != std::string_view::npos;
  if (field == "calculate_per_token_loss" && qwen_vl && size("context_parallel_size") > 1)
    return &kTrue;
  if (field == "sequence_parallel") {
    if (size("tensor_model_parallel_size") <= 1)
      return &kFalse;
    if (ends_with_target(c, "model", "Qwen3VLMoEModelProvider"))
      return &kTrue;
  }
  if (field == "pipeline_dtype" && (v == nullptr || v->is_null()) &&
      size("pipeline_model_parallel_size") > 1)
    return seen(c, "model.params_dtype");
  if (field == "expert_tensor_parallel_size" && (v == nullptr || v->is_null()) &&
      size("expert_model_parallel_size") > 1)
    return &kOne;
  if (field == "experimental_attention_variant" && v != nullptr && v->is_str() &&
      v->as_str() == "gated_delta_net")
    return &kGdn;
  return v;
}

const Value* seen(const Config& c, std::string_view path) {
  const Value* own = c.find(path);
  const std::size_t dot = path.find('.');
  if (dot == std::string_view::npos)
    return own;
  const std::string section(path.substr(0, dot));
  const std::string field(path.substr(dot + 1));
  if (section == "mixed_precision") {
    const Value* precision = mixed_precision_section(c);
    if (precision != nullptr && (field == "fp8_param" || field == "fp4_param"))
      return precision->as_map().find(field + "_gather");
    return precision != nullptr ? precision->as_map().find(field) : own;
  }
  if (own == nullptr)
    return own;
  const Value* v = setup_value(c, section, field, own);
  return section == "model" ? finalized_value(c, field, v) : v;
}

// Python truthiness of a value (None, False, 0, "" and empty lists are false).
bool truthy(const Value* v) {
  if (v == nullptr || v->is_null())
    return false;
  if (v->is_bool())
    return v->as_bool();
  if (v->is_int())
    return v->as_int() != 0;
  if (v->is_float())
    return v->as_float() != 0.0;
  if (v->is_str())
    return !v->as_str().empty();
  if (v->is_list())
    return !v->as_list().empty();
  return true;
}

bool on(const Config& c, std::string_view path) {
  return truthy(seen(c, path));
}

bool set(const Config& c, std::string_view path) {
  const Value* v = seen(c, path);
  return v != nullptr && !v->is_null();
}

std::optional<double> number(const Config& c, std::string_view path) {
  const Value* v = seen(c, path);
  if (v != nullptr && v->is_int())
    return static_cast<double>(v->as_int());
  if (v != nullptr && v->is_float())
    return v->as_float();
  return std::nullopt;
}

std::optional<std::int64_t> integer(const Config& c, std::string_view path) {
  const Value* v = seen(c, path);
  return v != nullptr && v->is_int() ? std::optional(v->as_int()) : std::nullopt;
}

std::string text(const Config& c, std::string_view path) {
  const Value* v = seen(c, path);
  return v != nullptr && v->is_str() ? v->as_str() : std::string();
}

// The `_target_` of a class-valued field: a torch dtype ("torch.float32") or a function
// ("torch.nn.functional.silu"); "" when the field holds none.
std::string target_of(const Config& c, std::string_view path) {
  const Value* v = seen(c, path);
  return v != nullptr && v->is_map() ? std::string(v->target()) : std::string();
}

// "train.train_iters=50", as the config holds it.
std::string shown(const Config& c, std::string_view path) {
  const Value* v = seen(c, path);
  return std::string(path) + "=" + (v == nullptr ? std::string("null") : brief(*v));
}

// Megatron-Bridge's finite SFT datasets (the CP/SP padding and CP loss rules apply to them).
bool sft_dataset(const Config& c) {
  for (const char* cls : {"GPTSFTDatasetConfig", "DirectHFSFTDatasetConfig", "EnergonDatasetConfig",
                          "MockVLMSFTDatasetConfig"})
    if (ends_with_target(c, "dataset", cls))
      return true;
  return false;
}

std::set<std::string> names_in(const Value* v) {
  std::set<std::string> out;
  if (v == nullptr)
    return out;
  if (v->is_str())
    out.insert(v->as_str());
  if (v->is_list()) {
    for (const Value& item : v->as_list()) {
      if (item.is_str())
        out.insert(item.as_str());
      else if (item.is_map() && item.as_map().find("_name_") != nullptr &&
               item.as_map().find("_name_")->is_str())
        out.insert(item.as_map().find("_name_")->as_str());
    }
  }
  return out;
}

// Collects "problem (source)" lines.
struct Problems {
  explicit Problems(const char* upstream_source) : source(upstream_source) {}
  const char* source;
  Outcome out;
  void add(const std::string& what) { out.problems.push_back(what + " (" + source + ")"); }
};

// --- runtime_config_update: MixedPrecisionConfig.finalize -----------------------------------

Outcome mixed_precision_name(const Ctx& x) {
  const Value* v = x.config.find("mixed_precision");
  if (v == nullptr || !v->is_str())
    return not_applicable();
  Problems p{"Megatron-Bridge training/mixed_precision.py get_mixed_precision_config"};
  if (find_named_precision(v->as_str()) == nullptr) {
    std::vector<std::string> names;
    for (const NamedPrecision& n : named_precisions())
      names.push_back(n.name);
    std::string list;
    for (const std::string& n : names)
      list += (list.empty() ? "" : ", ") + n;
    p.add("mixed_precision='" + v->as_str() + "' is no mixed-precision recipe" +
          did_you_mean(v->as_str(), names) + "; recipes: " + list);
  }
  return p.out;
}

Outcome mixed_precision_fp4_fp8(const Ctx& x) {
  if (mixed_precision_section(x.config) == nullptr)
    return not_applicable();
  Problems p{kMixed};
  if (on(x.config, "mixed_precision.fp4") && on(x.config, "mixed_precision.fp8"))
    p.add(shown(x.config, "mixed_precision.fp4") + " and " +
          shown(x.config, "mixed_precision.fp8") +
          " cannot be used together: choose one (set the other to null)");
  return p.out;
}

// --- runtime_config_update: CommOverlapConfig.setup -----------------------------------------

Outcome comm_overlap_setup(const Ctx& x) {
  const Config& c = x.config;
  if (!section_present(c, "comm_overlap"))
    return not_applicable();
  Problems p{
      "Megatron-Bridge training/comm_overlap.py CommOverlapConfig._get_model_comm_overlap_cfgs"};
  // The rules Megatron-Core repeats are moe-a2a-overlap's; these two are Megatron-Bridge's own.
  if (on(c, "comm_overlap.overlap_moe_expert_parallel_comm") &&
      integer(c, "model.num_moe_experts").value_or(0) <= 1)
    p.add("comm_overlap.overlap_moe_expert_parallel_comm=true needs more than one expert, but " +
          shown(c, "model.num_moe_experts"));
  if (on(c, "comm_overlap.delay_wgrad_compute")) {
    const Value* modules = c.find("model.cuda_graph_modules");
    const Value* scope = c.find("model.cuda_graph_scope");
    auto graphed = [&](const char* m) {
      return names_in(modules).count(m) > 0 || names_in(scope).count(m) > 0;
    };
    const bool attn = graphed("attn");
    const bool router_with_shared = graphed("moe_router") &&
                                    set(c, "model.moe_shared_expert_intermediate_size") &&
                                    !on(c, "model.moe_shared_expert_overlap");
    if ((attn || router_with_shared) && !on(c, "model.gradient_accumulation_fusion"))
      p.add("comm_overlap.delay_wgrad_compute=true with CUDA graphs of " +
            std::string(attn ? "attn" : "moe_router (with shared experts)") +
            " needs model.gradient_accumulation_fusion=true (graphs need static gradient "
            "buffers)");
    if (attn && (on(c, "model.add_bias_linear") || on(c, "model.add_qkv_bias")))
      p.add("comm_overlap.delay_wgrad_compute=true with an attn CUDA graph does not work with "
            "attention bias (model.add_bias_linear, model.add_qkv_bias)");
  }
  return p.out;
}

// --- ConfigContainer.validate, before the finalize() calls ------------------------------------

Outcome num_epochs_dataset(const Ctx& x) {
  if (!set(x.config, "train.num_epochs"))
    return not_applicable();
  Problems p{"Megatron-Bridge training/config.py ConfigContainer.validate"};
  if (!ends_with_target(x.config, "dataset", "GPTSFTDatasetConfig"))
    p.add(shown(x.config, "train.num_epochs") +
          " needs a finite GPTSFTDatasetConfig dataset, but dataset is " +
          std::string(x.config.find("dataset") != nullptr ? x.config.find("dataset")->target()
                                                          : "unset") +
          ": set train.train_iters instead");
  if (text(x.config, "dataset.dataloader_type") != "batch")
    p.add(shown(x.config, "train.num_epochs") + " needs dataset.dataloader_type=batch, but " +
          shown(x.config, "dataset.dataloader_type"));
  return p.out;
}

Outcome mock_vlm_dataset(const Ctx& x) {
  const Config& c = x.config;
  if (!ends_with_target(c, "dataset", "MockVLMSFTDatasetConfig"))
    return not_applicable();
  Problems p{"Megatron-Bridge data/builders/mock_vlm_sft.py MockVLMSFTDatasetConfig.validate"};
  for (const char* f :
       {"dataset.seq_length", "dataset.num_base_examples", "dataset.pad_to_multiple_of",
        "dataset.in_batch_packing_pad_to_multiple_of"})
    if (integer(c, f).value_or(1) <= 0)
      p.add(shown(c, f) + " must be greater than 0");
  if (integer(c, "dataset.num_images").value_or(0) < 0)
    p.add(shown(c, "dataset.num_images") + " must be at least 0");
  for (const char* f : {"dataset.hf_processor_path", "dataset.prompt"})
    if (text(c, f).find_first_not_of(" \t\n") == std::string::npos)
      p.add(shown(c, f) + " must be a non-empty string");
  const Value* size = seen(c, "dataset.image_size");
  bool size_ok = size != nullptr && size->is_list() && size->as_list().size() == 2;
  if (size_ok)
    for (const Value& d : size->as_list())
      size_ok = size_ok && d.is_int() && d.as_int() > 0;
  if (!size_ok)
    p.add(shown(c, "dataset.image_size") + " must be two positive dimensions");
  return p.out;
}

// What CommOverlapConfig.setup() (applied with the distributed optimizer) writes over
// ddp.bucket_size: the comm_overlap section's bucket_size, else 128 MiB with DP > 1, else None.
// Nullopt when it does not run or DP is unknown (ddp.bucket_size stands); "" when it writes None;
// else what it writes, said for a message.
std::optional<std::string> overlap_bucket_size(const Ctx& x) {
  const Config& c = x.config;
  if (!section_present(c, "comm_overlap") || !on(c, "ddp.use_distributed_optimizer"))
    return std::nullopt;
  if (set(c, "comm_overlap.bucket_size"))
    return "Megatron-Bridge's CommOverlapConfig.setup copies " +
           shown(c, "comm_overlap.bucket_size") + " onto ddp.bucket_size";
  const Layout& l = x.layout;
  const std::int64_t model = l.tp * l.pp * l.cp;
  if (!x.options.world_size || model <= 0 || *x.options.world_size % model != 0)
    return std::nullopt;
  const std::int64_t dp = *x.options.world_size / model;
  if (dp <= 1)
    return std::string();
  return "Megatron-Bridge's CommOverlapConfig.setup sets ddp.bucket_size=134217728 (128 MiB) "
         "with DP " +
         std::to_string(dp) +
         " > 1 (training/comm_overlap.py _get_optimizer_overlap_cfgs): set "
         "comm_overlap.bucket_size instead of ddp.num_buckets, or drop the comm_overlap section";
}

// --- DistributedDataParallelConfig.finalize (Megatron-Core __post_init__) ---------------------

Outcome ddp_finalize(const Ctx& x) {
  if (!section_present(x.config, "ddp"))
    return not_applicable();
  const Config& c = x.config;
  Problems p{kDdp};
  const auto version = integer(c, "ddp.megatron_fsdp_version");
  if (version && *version != 1 && *version != 2)
    p.add(shown(c, "ddp.megatron_fsdp_version") + " must be 1 or 2");
  if (on(c, "ddp.reuse_grad_buf_for_mxfp8_param_ag") && !on(c, "ddp.fp8_param_gather"))
    p.add("ddp.reuse_grad_buf_for_mxfp8_param_ag is on (from mixed_precision when it is set) but "
          "ddp.fp8_param_gather is off: reuse the grad buffer only when keeping params in MXFP8 "
          "(set mixed_precision.fp8_param_gather=true)");
  if (on(c, "ddp.param_name_patterns_for_fp32_local_accumulation") &&
      on(c, "ddp.grad_reduce_in_fp32"))
    p.add("ddp.param_name_patterns_for_fp32_local_accumulation is set but ddp.grad_reduce_in_fp32 "
          "is on (from mixed_precision when it is set): the main grads are fp32 already; clear the "
          "patterns");
  if (set(c, "ddp.num_buckets")) {
    const std::optional<std::string> overlap = overlap_bucket_size(x);
    if (overlap && !overlap->empty())
      p.add(shown(c, "ddp.num_buckets") + " cannot be set with a bucket size, and " + *overlap);
    else if (!overlap && set(c, "ddp.bucket_size"))
      p.add(shown(c, "ddp.num_buckets") + " and " + shown(c, "ddp.bucket_size") +
            " cannot both be set");
    if (integer(c, "ddp.num_buckets").value_or(1) <= 0)
      p.add(shown(c, "ddp.num_buckets") + " must be greater than 0");
  }
  return p.out;
}

// --- OptimizerConfig.finalize (Megatron-Core __post_init__) -----------------------------------

Outcome optimizer_finalize(const Ctx& x) {
  if (!section_present(x.config, "optimizer"))
    return not_applicable();
  const Config& c = x.config;
  Problems p{kOptimizer};
  if (on(c, "optimizer.reuse_grad_buf_for_mxfp8_param_ag") &&
      on(c, "optimizer.overlap_param_gather_with_optimizer_step"))
    p.add("optimizer.overlap_param_gather_with_optimizer_step is not supported with "
          "reuse_grad_buf_for_mxfp8_param_ag (from mixed_precision when it is set): turn one off");
  if (on(c, "optimizer.use_precision_aware_optimizer")) {
    if (text(c, "optimizer.optimizer") != "adam")
      p.add("optimizer.use_precision_aware_optimizer=true works only with adam, but " +
            shown(c, "optimizer.optimizer"));
    if (!on(c, "optimizer.use_distributed_optimizer"))
      p.add("optimizer.use_precision_aware_optimizer=true needs "
            "optimizer.use_distributed_optimizer=true");
  } else {
    for (const char* f : {"optimizer.main_grads_dtype", "optimizer.main_params_dtype",
                          "optimizer.exp_avg_dtype", "optimizer.exp_avg_sq_dtype"}) {
      const std::string d = target_of(c, f);
      if (!d.empty() && d != "torch.float32")
        p.add(std::string(f) + " is " + d +
              "; only torch.float32 without optimizer.use_precision_aware_optimizer=true");
    }
  }
  return p.out;
}

// --- the model's finalize (Megatron-Core TransformerConfig / ModelParallelConfig) -------------

Outcome pipeline_dtype_with_pp(const Ctx& x) {
  if (x.layout.pp <= 1)
    return not_applicable();
  Problems p{kParallel};
  if (!set(x.config, "model.pipeline_dtype"))
    p.add("model.pipeline_model_parallel_size=" + std::to_string(x.layout.pp) +
          " needs model.pipeline_dtype (mixed_precision.pipeline_dtype when it is set), but it is "
          "null");
  return p.out;
}

Outcome defer_embedding_wgrad(const Ctx& x) {
  const Config& c = x.config;
  Problems p{kParallel};
  if (on(c, "model.defer_embedding_wgrad_compute")) {
    if (x.layout.pp == 1)
      p.add("embedding wgrad deferral (model.defer_embedding_wgrad_compute, or comm_overlap's when "
            "that section is set) needs pipeline parallelism, but "
            "model.pipeline_model_parallel_size=1");
    if (!on(c, "model.gradient_accumulation_fusion"))
      p.add("embedding wgrad deferral needs model.gradient_accumulation_fusion=true");
    if (integer(c, "model.wgrad_deferral_limit").value_or(0) < 0)
      p.add("embedding wgrad deferral needs a wgrad deferral limit of at least 0, but it is " +
            brief(*seen(c, "model.wgrad_deferral_limit")) +
            (section_present(c, "comm_overlap")
                 ? " (comm_overlap.wgrad_deferral_limit, -1 when null)"
                 : " (model.wgrad_deferral_limit)"));
  }
  if (on(c, "model.overlap_p2p_comm_warmup_flush") &&
      (!on(c, "model.overlap_p2p_comm") || on(c, "model.batch_p2p_comm")))
    p.add("model.overlap_p2p_comm_warmup_flush=true needs overlap_p2p_comm on and batch_p2p_comm "
          "off (with a comm_overlap section: its values, or PP > 1 with VP > 1)");
  return p.out;
}

Outcome precision_flags(const Ctx& x) {
  const Config& c = x.config;
  Problems p{kTransformer};
  if (on(c, "model.fp16") && on(c, "model.bf16"))
    p.add("model.fp16 and model.bf16 are both true (from mixed_precision when it is set): only one "
          "may be");
  const bool fp8 = on(c, "model.fp8");
  const bool fp4 = on(c, "model.fp4");
  if (fp8 && on(c, "model.first_last_layers_bf16") && text(c, "model.fp8_recipe") == "delayed")
    p.add("model.first_last_layers_bf16=true does not work with model.fp8_recipe=delayed");
  if (fp8 && on(c, "model.first_last_layers_bf16") && x.layout.pp > 0) {
    const std::int64_t per_stage = integer(c, "model.num_layers").value_or(0) / x.layout.pp;
    for (const char* f : {"model.num_layers_at_start_in_bf16", "model.num_layers_at_end_in_bf16"}) {
      const auto n = integer(c, f);
      if (n && (*n < 0 || *n > per_stage))
        p.add(shown(c, f) + " must be between 0 and the " + std::to_string(per_stage) +
              " layers of a pipeline stage");
    }
  }
  if (on(c, "model.fp8_param") && !fp8)
    p.add("model.fp8_param is on (mixed_precision.fp8_param or fp8_param_gather) without fp8: set "
          "mixed_precision.fp8 or turn fp8_param_gather off");
  if (on(c, "model.fp8_output_proj")) {
    if (!fp8)
      p.add("model.fp8_output_proj=true needs fp8");
    else if (text(c, "model.fp8_recipe") != "mxfp8")
      p.add("model.fp8_output_proj=true needs model.fp8_recipe=mxfp8, but " +
            shown(c, "model.fp8_recipe"));
  }
  if (fp8 && text(c, "model.fp8_recipe") == "custom" && !on(c, "model.fp8_quantizer_factory"))
    p.add("model.fp8_recipe=custom needs model.fp8_quantizer_factory (a Python import path)");
  if (fp4 && text(c, "model.fp4_recipe") == "custom" && !on(c, "model.fp4_quantizer_factory"))
    p.add("model.fp4_recipe=custom needs model.fp4_quantizer_factory (a Python import path)");
  if (on(c, "model.fp4_param") && !fp4)
    p.add("model.fp4_param is on (mixed_precision.fp4_param or fp4_param_gather) without fp4");
  if (fp4 && fp8)
    p.add(shown(c, "model.fp4") + " and " + shown(c, "model.fp8") + " cannot be used together");
  return p.out;
}

Outcome gdn_settings(const Ctx& x) {
  const Config& c = x.config;
  const std::string variant = text(c, "model.experimental_attention_variant");
  if (variant != "gdn" && variant != "gdn2" && variant != "gated_delta_net")
    return not_applicable();
  Problems p{kTransformer};
  if (variant == "gdn" && !set(c, "model.linear_attention_freq"))
    p.add("model.linear_attention_freq must be set for experimental_attention_variant=gdn");
  for (const char* f :
       {"model.linear_conv_kernel_dim", "model.linear_key_head_dim", "model.linear_value_head_dim",
        "model.linear_num_key_heads", "model.linear_num_value_heads"})
    if (!set(c, f))
      p.add(std::string(f) + " must be set for GatedDeltaNet");
  const auto keys = integer(c, "model.linear_num_key_heads");
  const auto values = integer(c, "model.linear_num_value_heads");
  if (keys && values && (*keys <= 0 || *values % *keys != 0))
    p.add(shown(c, "model.linear_num_value_heads") + " must be a multiple of " +
          shown(c, "model.linear_num_key_heads"));
  return p.out;
}

Outcome moe_settings(const Ctx& x) {
  const Config& c = x.config;
  Problems p{kTransformer};
  const bool moe = set(c, "model.num_moe_experts");
  if (x.layout.ep > 1 && !moe)
    p.add("model.expert_model_parallel_size=" + std::to_string(x.layout.ep) +
          " needs model.num_moe_experts, but it is null");
  if (moe && integer(c, "model.num_moe_experts").value_or(1) <= 0)
    p.add(shown(c, "model.num_moe_experts") + " must be positive (or null for a dense model)");
  const std::string dispatcher = text(c, "model.moe_token_dispatcher_type");
  const std::string backend = text(c, "model.moe_flex_dispatcher_backend");
  if (on(c, "model.moe_enable_deepep")) {
    if (dispatcher != "flex")
      p.add("model.moe_enable_deepep=true needs model.moe_token_dispatcher_type=flex, but " +
            shown(c, "model.moe_token_dispatcher_type"));
    if (backend == "hybridep")
      p.add("model.moe_enable_deepep=true conflicts with model.moe_flex_dispatcher_backend="
            "hybridep: the flex dispatcher takes one backend");
  }
  if (dispatcher == "allgather" && true_at(c, "model.variable_seq_lengths"))
    p.add("model.moe_token_dispatcher_type=allgather does not support "
          "model.variable_seq_lengths=true: use the alltoall dispatcher");
  const bool deepep = on(c, "model.moe_enable_deepep") || backend == "deepep";
  if (dispatcher == "flex" && deepep && on(c, "model.moe_pad_expert_input_to_capacity"))
    p.add("the flex dispatcher's deepep backend does not support "
          "model.moe_pad_expert_input_to_capacity=true");
  if (backend == "ncclep" && dispatcher != "flex")
    p.add("model.moe_flex_dispatcher_backend=ncclep needs model.moe_token_dispatcher_type=flex, "
          "but " +
          shown(c, "model.moe_token_dispatcher_type"));
  if (set(c, "model.moe_shared_expert_intermediate_size")) {
    if (integer(c, "model.moe_shared_expert_intermediate_size").value_or(1) <= 0)
      p.add(shown(c, "model.moe_shared_expert_intermediate_size") + " must be positive");
    if (on(c, "model.moe_shared_expert_overlap") && dispatcher != "alltoall" &&
        dispatcher != "flex")
      p.add("model.moe_shared_expert_overlap=true works only with the alltoall or flex "
            "dispatcher, but " +
            shown(c, "model.moe_token_dispatcher_type"));
  }
  const auto capacity = number(c, "model.moe_expert_capacity_factor");
  static const std::set<std::string> capacity_balancing{"aux_loss", "seq_aux_loss",
                                                        "global_aux_loss", "none"};
  // Megatron-Core turns a negative factor into None, but checks the balancing type first.
  if (capacity)
    for (const std::string& t : names_in(seen(c, "model.moe_router_load_balancing_type")))
      if (!capacity_balancing.count(t))
        p.add("model.moe_expert_capacity_factor works only with aux_loss, seq_aux_loss, "
              "global_aux_loss or none load balancing, but model.moe_router_load_balancing_type "
              "is " +
              t);
  // A negative capacity factor means none (Megatron-Core sets it to None).
  if (on(c, "model.moe_pad_expert_input_to_capacity") && (!capacity || *capacity < 0))
    p.add("model.moe_pad_expert_input_to_capacity=true needs model.moe_expert_capacity_factor");
  if (set(c, "model.moe_expert_rank_capacity_factor")) {
    if (backend != "hybridep" && backend != "ncclep")
      p.add("model.moe_expert_rank_capacity_factor needs model.moe_flex_dispatcher_backend "
            "hybridep or ncclep, but " +
            shown(c, "model.moe_flex_dispatcher_backend"));
    else if (backend == "hybridep" && !on(c, "model.use_transformer_engine_op_fuser"))
      p.add("model.moe_expert_rank_capacity_factor with the hybridep backend needs "
            "model.use_transformer_engine_op_fuser=true");
  }
  if (moe && on(c, "model.add_bias_linear") && x.layout.etp != 1)
    p.add("MoE with model.add_bias_linear=true needs expert tensor parallelism 1, but " +
          x.layout.etp_text());
  if (on(c, "model.moe_router_enable_expert_bias")) {
    const std::string score = text(c, "model.moe_router_score_function");
    if (score != "sigmoid" && score != "sqrtsoftplus")
      p.add("model.moe_router_enable_expert_bias=true needs model.moe_router_score_function "
            "sigmoid or sqrtsoftplus, but " +
            shown(c, "model.moe_router_score_function"));
  }
  if (on(c, "model.moe_router_padding_for_quantization") ||
      on(c, "model.moe_router_padding_for_fp8")) {
    if (!set(c, "model.fp8") && !set(c, "model.fp4"))
      p.add("MoE router padding for quantization needs fp8 or fp4");
    if (dispatcher == "allgather" || dispatcher == "alltoall_seq")
      p.add("MoE router padding for quantization does not work with " +
            shown(c, "model.moe_token_dispatcher_type"));
  }
  if (moe && integer(c, "model.moe_router_topk") == 1 &&
      text(c, "model.moe_router_score_function") == "softmax" &&
      !on(c, "model.moe_router_pre_softmax") &&
      text(c, "model.moe_router_load_balancing_type") != "sinkhorn")
    p.add("model.moe_router_topk=1 with the softmax score function needs "
          "model.moe_router_pre_softmax=true");
  if (on(c, "model.moe_single_grouped_weight") || on(c, "model.moe_single_grouped_bias")) {
    if (!on(c, "model.moe_grouped_gemm"))
      p.add("model.moe_single_grouped_weight / moe_single_grouped_bias need "
            "model.moe_grouped_gemm=true");
  }
  if (on(c, "model.moe_single_grouped_weight")) {
    if ((on(c, "model.fp8") && text(c, "model.fp8_recipe") != "mxfp8") ||
        (on(c, "model.fp4") && text(c, "model.fp4_recipe") != "nvfp4"))
      p.add("model.moe_single_grouped_weight=true works with high-precision weights, "
            "fp8_recipe=mxfp8 or fp4_recipe=nvfp4 only");
    if (on(c, "model.fp4") && !on(c, "model.fp4_param"))
      p.add("model.moe_single_grouped_weight=true with fp4 needs fp4_param (fp4_param_gather)");
    if (!on(c, "model.use_transformer_engine_op_fuser"))
      p.add("model.moe_single_grouped_weight=true needs "
            "model.use_transformer_engine_op_fuser=true");
  }
  if (on(c, "model.moe_single_grouped_bias") && !on(c, "model.add_bias_linear"))
    p.add("model.moe_single_grouped_bias=true needs model.add_bias_linear=true");
  const Value* balancing = seen(c, "model.moe_router_load_balancing_type");
  if (balancing != nullptr && balancing->is_list()) {
    const Value* coeff = seen(c, "model.moe_aux_loss_coeff");
    if (coeff == nullptr || !coeff->is_list() ||
        coeff->as_list().size() != balancing->as_list().size())
      p.add("model.moe_router_load_balancing_type is a list of " +
            std::to_string(balancing->as_list().size()) +
            ", so model.moe_aux_loss_coeff must be a list of as many");
  }
  if (!set(c, "model.moe_flex_dispatcher_num_sms") && set(c, "model.moe_deepep_num_sms") &&
      set(c, "model.moe_hybridep_num_sms") &&
      brief(*seen(c, "model.moe_deepep_num_sms")) != brief(*seen(c, "model.moe_hybridep_num_sms")))
    p.add(shown(c, "model.moe_deepep_num_sms") + " and " + shown(c, "model.moe_hybridep_num_sms") +
          " (both deprecated) conflict: set model.moe_flex_dispatcher_num_sms instead");
  if (on(c, "model.moe_router_group_topk")) {
    const auto groups = integer(c, "model.moe_router_num_groups");
    if (on(c, "model.moe_router_topk_limited_devices"))
      p.add("model.moe_router_topk_limited_devices is replaced by model.moe_router_group_topk "
            "and model.moe_router_num_groups: unset it");
    if (!groups || *groups == 0)
      p.add("model.moe_router_group_topk needs model.moe_router_num_groups");
    else {
      if (integer(c, "model.num_moe_experts").value_or(0) % *groups != 0)
        p.add(shown(c, "model.num_moe_experts") + " is not divisible by " +
              shown(c, "model.moe_router_num_groups"));
      if (integer(c, "model.moe_router_group_topk").value_or(0) > *groups)
        p.add(shown(c, "model.moe_router_group_topk") + " is larger than " +
              shown(c, "model.moe_router_num_groups"));
    }
  }
  return p.out;
}

Outcome recompute_settings(const Ctx& x) {
  const Config& c = x.config;
  Problems p{kTransformer};
  const auto layers = integer(c, "model.num_layers").value_or(0);
  if (on(c, "model.cpu_offloading")) {
    const auto n = integer(c, "model.cpu_offloading_num_layers").value_or(0);
    if (n < 0 || n >= layers)
      p.add(shown(c, "model.cpu_offloading_num_layers") + " must be at least 0 and below " +
            shown(c, "model.num_layers"));
    if (x.layout.pp > 1)
      p.add("model.cpu_offloading=true does not work with pipeline parallelism");
    if (set(c, "model.recompute_granularity"))
      p.add("model.cpu_offloading=true does not work with activation recomputation (" +
            shown(c, "model.recompute_granularity") + ")");
  }
  if (!set(c, "model.recompute_granularity"))
    return p.out;
  const std::string granularity = text(c, "model.recompute_granularity");
  if (granularity != "full" && granularity != "selective")
    p.add(shown(c, "model.recompute_granularity") + " must be full or selective");
  const std::string method = text(c, "model.recompute_method");
  if (set(c, "model.recompute_method")) {
    if (method != "block" && method != "uniform")
      p.add(shown(c, "model.recompute_method") + " must be block or uniform");
  } else if (granularity != "selective") {
    p.add(shown(c, "model.recompute_granularity") +
          " needs model.recompute_method block or uniform");
  }
  if (granularity != "selective" && !set(c, "model.recompute_num_layers"))
    p.add(shown(c, "model.recompute_granularity") + " needs model.recompute_num_layers");
  else if (granularity == "selective" && set(c, "model.recompute_num_layers"))
    p.add("model.recompute_granularity=selective needs model.recompute_num_layers=null, but " +
          shown(c, "model.recompute_num_layers"));
  if (on(c, "model.distribute_saved_activations") && on(c, "model.sequence_parallel"))
    p.add("model.distribute_saved_activations=true does not work with sequence parallelism" +
          std::string(x.layout.sp ? ""
                                  : " (model.sequence_parallel=false, but Megatron-Bridge's "
                                    "Qwen3VLMoEModelProvider turns it on with TP > 1)"));
  return p.out;
}

// The modules selective recompute covers: recompute_modules (core_attn when null), plus moe with
// the deprecated moe_layer_recompute.
std::set<std::string> recompute_modules(const Config& c) {
  const Value* v = seen(c, "model.recompute_modules");
  std::set<std::string> out =
      v == nullptr || v->is_null() ? std::set<std::string>{"core_attn"} : names_in(v);
  if (on(c, "model.moe_layer_recompute"))
    out.insert("moe");
  return out;
}

Outcome recompute_modules_check(const Ctx& x) {
  const Config& c = x.config;
  Problems p{kTransformer};
  const std::set<std::string> modules = recompute_modules(c);
  if (on(c, "model.moe_layer_recompute") && text(c, "model.recompute_granularity") == "full")
    p.add("model.moe_layer_recompute=true does not work with model.recompute_granularity=full");
  const bool selective =
      text(c, "model.recompute_granularity") == "selective" || on(c, "model.moe_layer_recompute");
  if (!selective)
    return p.out;
  static const std::set<std::string> allowed{"core_attn",      "moe_act",     "layernorm",
                                             "mla_up_proj",    "mlp",         "moe",
                                             "shared_experts", "gdn_norm_out"};
  for (const std::string& m : modules)
    if (!allowed.count(m))
      p.add("'" + m +
            "' in model.recompute_modules is not one of core_attn, moe_act, layernorm, "
            "mla_up_proj, mlp, moe, shared_experts, gdn_norm_out");
  if (modules.count("moe_act") && !on(c, "model.moe_grouped_gemm"))
    p.add("moe_act in model.recompute_modules needs model.moe_grouped_gemm=true");
  if (modules.count("mla_up_proj") && !on(c, "model.multi_latent_attention"))
    p.add("mla_up_proj in model.recompute_modules needs model.multi_latent_attention=true");
  const std::string variant = text(c, "model.experimental_attention_variant");
  if (modules.count("gdn_norm_out") && variant != "gdn" && variant != "gdn2" &&
      variant != "gated_delta_net")
    p.add("gdn_norm_out in model.recompute_modules needs a GatedDeltaNet model");
  if (modules.count("shared_experts") && set(c, "model.moe_shared_expert_intermediate_size") &&
      on(c, "model.moe_shared_expert_overlap"))
    p.add("shared_experts in model.recompute_modules does not work with "
          "model.moe_shared_expert_overlap=true");
  if (on(c, "model.fp8") && (modules.count("moe_act") || modules.count("layernorm")) &&
      text(c, "model.fp8_recipe") == "delayed")
    p.add("moe_act and layernorm recompute do not work with fp8_recipe=delayed");
  return p.out;
}

Outcome activation_offload_modules(const Ctx& x) {
  const Config& c = x.config;
  Problems p{kTransformer};
  const std::set<std::string> offload = names_in(seen(c, "model.offload_modules"));
  if (on(c, "model.fine_grained_activation_offloading")) {
    if (on(c, "model.cpu_offloading"))
      p.add("model.fine_grained_activation_offloading=true does not work with "
            "model.cpu_offloading=true");
    if (offload.empty())
      p.add("model.fine_grained_activation_offloading=true needs model.offload_modules");
    static const std::set<std::string> allowed{"core_attn",       "attn_proj", "expert_fc1",
                                               "fused_group_mlp", "moe_act",   "attn_norm",
                                               "mlp_norm",        "qkv_linear"};
    for (const std::string& m : offload)
      if (!allowed.count(m))
        p.add("'" + m +
              "' in model.offload_modules is not one of core_attn, attn_proj, "
              "expert_fc1, fused_group_mlp, moe_act, attn_norm, mlp_norm, qkv_linear");
    if (offload.count("attn_proj") && !offload.count("core_attn"))
      p.add("attn_proj in model.offload_modules needs core_attn too (its input is core_attn's "
            "output)");
    const bool moe_recompute = (text(c, "model.recompute_granularity") == "selective" ||
                                on(c, "model.moe_layer_recompute")) &&
                               recompute_modules(c).count("moe");
    if (moe_recompute)
      for (const char* m : {"moe_act", "expert_fc1", "fused_group_mlp"})
        if (offload.count(m))
          p.add(std::string(m) + " cannot be offloaded while the whole MoE layer is recomputed "
                                 "(moe in model.recompute_modules)");
    if (number(c, "model.min_offloaded_tensor_size").value_or(0) < 0)
      p.add(shown(c, "model.min_offloaded_tensor_size") + " must be at least 0");
    const auto fraction = number(c, "model.activation_offload_fraction");
    if (fraction && (*fraction < 0 || *fraction > 1))
      p.add(shown(c, "model.activation_offload_fraction") + " must be between 0 and 1");
    if (number(c, "model.delta_offload_bytes_across_pp_ranks").value_or(0) < 0)
      p.add(shown(c, "model.delta_offload_bytes_across_pp_ranks") + " must be at least 0");
    if (offload.count("fused_group_mlp")) {
      if (!on(c, "model.use_transformer_engine_op_fuser"))
        p.add("fused_group_mlp in model.offload_modules needs "
              "model.use_transformer_engine_op_fuser=true");
      if (offload.count("expert_fc1") || offload.count("moe_act"))
        p.add("fused_group_mlp in model.offload_modules cannot be combined with expert_fc1 or "
              "moe_act");
    }
  }
  for (const std::string& m : names_in(seen(c, "model.gtp_remat_opt_in_modules")))
    if (m != "moe_latent_proj")
      p.add("'" + m + "' in model.gtp_remat_opt_in_modules is not moe_latent_proj");
  if (on(c, "model.moe_paged_stash")) {
    if (on(c, "model.cpu_offloading"))
      p.add("model.moe_paged_stash=true does not work with model.cpu_offloading=true");
    if (!set(c, "model.moe_expert_rank_capacity_factor"))
      p.add("model.moe_paged_stash=true needs model.moe_expert_rank_capacity_factor");
    for (const char* m : {"expert_fc1", "moe_act", "fused_group_mlp"})
      if (offload.count(m))
        p.add(std::string(m) + " in model.offload_modules does not work with "
                               "model.moe_paged_stash=true (the stash covers it)");
  }
  return p.out;
}

// The activation a `_target_` function names: silu, gelu, relu, quick_gelu or other.
std::string activation(const Config& c) {
  const std::string t = target_of(c, "model.activation_func");
  if (t == "torch.nn.functional.silu" || t == "torch.nn.functional.gelu" ||
      t == "torch.nn.functional.relu")
    return t.substr(t.rfind('.') + 1);
  if (t.ends_with(".quick_gelu"))
    return "quick_gelu";
  return t.empty() ? std::string() : "other";
}

Outcome activation_settings(const Ctx& x) {
  const Config& c = x.config;
  const std::string act = activation(c);
  if (act.empty())
    return not_applicable();
  Problems p{kTransformer};
  const bool glu = on(c, "model.gated_linear_unit");
  const bool offset = number(c, "model.glu_linear_offset").value_or(0) != 0;
  if (on(c, "model.bias_activation_fusion")) {
    if (act != "gelu" && act != "silu" && act != "quick_gelu")
      p.add("model.bias_activation_fusion=true needs a gelu, silu or quick_gelu activation, but "
            "model.activation_func is " +
            target_of(c, "model.activation_func"));
    if (act == "gelu" && !glu && !on(c, "model.add_bias_linear"))
      p.add("model.bias_activation_fusion=true with gelu and no gated linear unit needs "
            "model.add_bias_linear=true");
    if (act == "quick_gelu" && !glu)
      p.add("model.bias_activation_fusion=true with quick_gelu needs "
            "model.gated_linear_unit=true");
    if (offset && act != "quick_gelu")
      p.add("model.bias_activation_fusion=true with a non-zero model.glu_linear_offset needs "
            "quick_gelu");
    if (on(c, "model.use_te_activation_func"))
      p.add("model.bias_activation_fusion and model.use_te_activation_func cannot both be true");
  }
  if (on(c, "model.fused_residual_rmsnorm") && text(c, "model.normalization") != "RMSNorm")
    p.add("model.fused_residual_rmsnorm=true needs model.normalization=RMSNorm, but " +
          shown(c, "model.normalization"));
  if (on(c, "model.use_te_activation_func") && act != "gelu" && act != "silu" && act != "relu")
    p.add("model.use_te_activation_func=true needs a gelu, silu or relu activation");
  if (on(c, "model.activation_func_fp8_input_store") && (act != "silu" || !glu))
    p.add("model.activation_func_fp8_input_store=true works only with SwiGLU (silu and "
          "model.gated_linear_unit=true)");
  const auto clamp = number(c, "model.activation_func_clamp_value");
  if (clamp && act == "silu" && glu) {
    if (!std::isfinite(*clamp) || *clamp <= 0)
      p.add(shown(c, "model.activation_func_clamp_value") + " must be finite and above 0");
    if (!set(c, "model.num_moe_experts"))
      p.add("model.activation_func_clamp_value for SwiGLU needs an MoE model");
    if (offset)
      p.add("model.activation_func_clamp_value for SwiGLU needs model.glu_linear_offset=0");
    if (on(c, "model.use_te_activation_func"))
      p.add("model.activation_func_clamp_value for SwiGLU needs "
            "model.use_te_activation_func=false");
  }
  return p.out;
}

Outcome fused_qkv_rope(const Ctx& x) {
  if (!on(x.config, "model.fused_single_qkv_rope"))
    return not_applicable();
  Problems p{kTransformer};
  if (on(x.config, "model.attention_output_gate"))
    p.add("model.fused_single_qkv_rope=true does not support gated attention "
          "(model.attention_output_gate=true)");
  return p.out;
}

Outcome moe_a2a_overlap(const Ctx& x) {
  const Config& c = x.config;
  Problems p{kTransformer};
  const bool overlap = on(c, "model.overlap_moe_expert_parallel_comm");
  if (overlap) {
    const std::string why = " with model.overlap_moe_expert_parallel_comm=true";
    if (x.layout.pp > 1 && !x.layout.vp)
      p.add("pipeline parallelism" + why + " needs model.virtual_pipeline_model_parallel_size");
    if (x.layout.ep <= 1)
      p.add("expert parallelism > 1 is needed" + why +
            ", but model.expert_model_parallel_size=" + std::to_string(x.layout.ep));
    const std::string dispatcher = text(c, "model.moe_token_dispatcher_type");
    if (dispatcher != "alltoall" && dispatcher != "flex")
      p.add("the alltoall or flex dispatcher is needed" + why + ", but " +
            shown(c, "model.moe_token_dispatcher_type"));
    if (text(c, "model.recompute_granularity") == "full")
      p.add("full recomputation does not work" + why);
    if (set(c, "model.recompute_method"))
      p.add("model.recompute_method must be null" + why);
    if (set(c, "model.recompute_num_layers"))
      p.add("model.recompute_num_layers must be null" + why);
    if (recompute_modules(c).count("moe"))
      p.add("moe must not be in model.recompute_modules" + why);
    if (!on(c, "model.bf16") && !on(c, "model.fp16"))
      p.add("a bf16 or fp16 model is needed" + why + " (mixed_precision.bf16 when it is set)");
    if (on(c, "model.moe_shared_expert_overlap"))
      p.add("model.moe_shared_expert_overlap must be false" + why);
    if (integer(c, "model.mtp_num_layers").value_or(0) > 1)
      p.add(shown(c, "model.mtp_num_layers") + " is more than the one MTP layer allowed" + why);
    if (text(c, "model.cuda_graph_impl") == "transformer_engine") {
      const std::set<std::string> modules = names_in(seen(c, "model.cuda_graph_modules"));
      const std::set<std::string> scope = names_in(seen(c, "model.cuda_graph_scope"));
      for (const char* m : {"moe", "mlp"})
        if (modules.count(m) || scope.count(m))
          p.add(std::string("the ") + m + " CUDA graph does not work" + why);
    }
  }
  if (on(c, "model.delay_wgrad_compute") && !overlap)
    p.add("model.delay_wgrad_compute=true needs model.overlap_moe_expert_parallel_comm=true (set "
          "through comm_overlap when that section is set)");
  if (on(c, "model.overlap_dispatch_backward_with_experts_wgrad")) {
    if (overlap)
      p.add("model.overlap_dispatch_backward_with_experts_wgrad=true and "
            "model.overlap_moe_expert_parallel_comm=true cannot be used together");
    if (on(c, "model.delay_wgrad_compute"))
      p.add("model.overlap_dispatch_backward_with_experts_wgrad=true and "
            "model.delay_wgrad_compute=true cannot be used together");
  }
  if (on(c, "model.ep_overlap_early_attn_memory_release") && !overlap)
    p.add("model.ep_overlap_early_attn_memory_release=true needs "
          "model.overlap_moe_expert_parallel_comm=true");
  return p.out;
}

Outcome no_rope_freq(const Ctx& x) {
  const Config& c = x.config;
  const Value* freq = seen(c, "model.no_rope_freq");
  if (!truthy(freq))
    return not_applicable();
  Problems p{kTransformer};
  const auto layers = integer(c, "model.num_layers").value_or(0);
  if (on(c, "model.flash_decode"))
    p.add("model.no_rope_freq does not work with model.flash_decode=true");
  // -1 divides everything (and INT64_MIN % -1 is undefined in C++).
  if (freq->is_int() && freq->as_int() != -1 && layers % freq->as_int() != 0)
    p.add(shown(c, "model.no_rope_freq") + " does not divide " + shown(c, "model.num_layers"));
  else if (freq->is_list() && static_cast<std::int64_t>(freq->as_list().size()) != layers)
    p.add("model.no_rope_freq lists " + std::to_string(freq->as_list().size()) + " layers but " +
          shown(c, "model.num_layers"));
  return p.out;
}

// --- finalize() of the other sections, in validate()'s order ---------------------------------

Outcome logger_finalize(const Ctx& x) {
  const Config& c = x.config;
  Problems p{"Megatron-Bridge training/config.py LoggerConfig.finalize"};
  if (on(c, "logger.mlflow_experiment") && !on(c, "logger.mlflow_run_name"))
    p.add("logger.mlflow_experiment is set but logger.mlflow_run_name is not: set it");
  if (on(c, "logger.comet_project") && !on(c, "logger.comet_experiment_name"))
    p.add("logger.comet_project is set but logger.comet_experiment_name is not: set it");
  return p.out;
}

Outcome train_length(const Ctx& x) {
  const Config& c = x.config;
  if (!section_present(c, "train"))
    return not_applicable();
  Problems p{"Megatron-Bridge training/config.py TrainingConfig.finalize"};
  std::vector<std::string> given;
  for (const char* f : {"train.train_iters", "train.train_samples", "train.num_epochs"})
    if (set(c, f))
      given.push_back(shown(c, f));
  if (given.empty())
    p.add("none of train.train_iters, train.train_samples and train.num_epochs is set: set one");
  else if (given.size() > 1) {
    std::string list;
    for (const std::string& g : given)
      list += (list.empty() ? "" : " and ") + g;
    p.add(list + " are set; set exactly one of train.train_iters, train.train_samples and "
                 "train.num_epochs");
  }
  for (const char* f : {"train.num_epochs", "train.train_samples"}) {
    if (!set(c, f))
      continue;
    if (number(c, f).value_or(0) <= 0)
      p.add(shown(c, f) + " must be positive");
    if (set(c, "train.rampup_batch_size"))
      p.add(std::string(f) + " does not work with train.rampup_batch_size: set it to null");
    if (!set(c, "train.global_batch_size"))
      p.add(std::string(f) + " needs train.global_batch_size");
  }
  return p.out;
}

Outcome scheduler_finalize(const Ctx& x) {
  const Config& c = x.config;
  if (!section_present(c, "scheduler"))
    return not_applicable();
  Problems p{"Megatron-Bridge training/config.py SchedulerConfig.finalize"};
  if (set(c, "scheduler.max_steps") && integer(c, "scheduler.max_steps").value_or(1) <= 0)
    p.add(shown(c, "scheduler.max_steps") + " must be positive");
  const auto start = number(c, "scheduler.start_weight_decay");
  if (start) {
    if (*start < 0)
      p.add(shown(c, "scheduler.start_weight_decay") + " must be at least 0");
    const auto end = number(c, "scheduler.end_weight_decay");
    if (!end || *end < *start)
      p.add(shown(c, "scheduler.end_weight_decay") + " is below " +
            shown(c, "scheduler.start_weight_decay") + "; weight decay may only grow");
  }
  if (on(c, "scheduler.override_opt_param_scheduler") &&
      on(c, "scheduler.use_checkpoint_opt_param_scheduler"))
    p.add("scheduler.override_opt_param_scheduler and "
          "scheduler.use_checkpoint_opt_param_scheduler are both true: set one false");
  const bool iter_fields = set(c, "scheduler.lr_decay_iters") ||
                           number(c, "scheduler.lr_warmup_iters").value_or(0) != 0 ||
                           set(c, "scheduler.lr_wsd_decay_iters");
  const bool sample_fields = set(c, "scheduler.lr_decay_samples") ||
                             number(c, "scheduler.lr_warmup_samples").value_or(0) != 0 ||
                             set(c, "scheduler.lr_wsd_decay_samples");
  if (iter_fields && sample_fields)
    p.add("iteration-based (scheduler.lr_decay_iters, lr_warmup_iters, lr_wsd_decay_iters) and "
          "sample-based (lr_decay_samples, lr_warmup_samples, lr_wsd_decay_samples) scheduler "
          "fields are both set: use one kind");
  if (set(c, "scheduler.lr_warmup_fraction") &&
      (number(c, "scheduler.lr_warmup_iters").value_or(0) != 0 ||
       number(c, "scheduler.lr_warmup_samples").value_or(0) != 0))
    p.add(shown(c, "scheduler.lr_warmup_fraction") + " cannot be combined with " +
          shown(c, "scheduler.lr_warmup_iters") + " or " + shown(c, "scheduler.lr_warmup_samples") +
          ": use one");
  return p.out;
}

Outcome checkpoint_finalize(const Ctx& x) {
  const Config& c = x.config;
  if (!section_present(c, "checkpoint"))
    return not_applicable();
  Problems p{"Megatron-Bridge training/config.py CheckpointConfig.finalize"};
  if (on(c, "checkpoint.load_main_params_from_ckpt") && on(c, "checkpoint.load_optim"))
    p.add("checkpoint.load_main_params_from_ckpt=true needs checkpoint.load_optim=false");
  if (on(c, "checkpoint.async_save")) {
    if (!set(c, "checkpoint.save"))
      p.add("checkpoint.async_save=true but checkpoint.save is not set: set it to a path");
    if (!on(c, "checkpoint.use_persistent_ckpt_worker"))
      p.add("checkpoint.async_save=true needs checkpoint.use_persistent_ckpt_worker=true");
  }
  if (on(c, "checkpoint.also_save_hf_checkpoint")) {
    if (text(c, "checkpoint.ckpt_format") == "fsdp_dtensor")
      p.add("checkpoint.also_save_hf_checkpoint=true does not work with "
            "checkpoint.ckpt_format=fsdp_dtensor: use torch_dist");
    if (text(c, "checkpoint.non_persistent_ckpt_type") == "local")
      p.add("checkpoint.also_save_hf_checkpoint=true does not work with "
            "checkpoint.non_persistent_ckpt_type=local");
  }
  // Megatron-LM's CheckpointConfig.__post_init__, run while from_yaml builds the config.
  if (const std::string strategy = text(c, "checkpoint.async_strategy");
      !strategy.empty() && strategy != "nvrx" && strategy != "mcore")
    p.add(shown(c, "checkpoint.async_strategy") +
          " is not nvrx or mcore (Megatron-LM "
          "training/config CheckpointConfig.__post_init__)");
  if (on(c, "checkpoint.verify_integrity") && text(c, "checkpoint.ckpt_format") != "torch_dist")
    p.add("checkpoint.verify_integrity=true works only with checkpoint.ckpt_format=torch_dist, "
          "but " +
          shown(c, "checkpoint.ckpt_format") +
          " (Megatron-LM training/config CheckpointConfig.__post_init__)");
  if (set(c, "checkpoint.ckpt_step") && !set(c, "checkpoint.load"))
    p.add(shown(c, "checkpoint.ckpt_step") + " needs checkpoint.load (the base checkpoint "
                                             "directory)");
  if (on(c, "checkpoint.dist_ckpt_optim_fully_reshardable") &&
      on(c, "checkpoint.distrib_optim_fully_reshardable_mem_efficient"))
    p.add("checkpoint.distrib_optim_fully_reshardable_mem_efficient=true does not work with "
          "checkpoint.dist_ckpt_optim_fully_reshardable=true");
  return p.out;
}

Outcome profiling_finalize(const Ctx& x) {
  const Config& c = x.config;
  if (!section_present(c, "profiling"))
    return not_applicable();
  Problems p{"Megatron-Bridge training/config.py ProfilingConfig.finalize"};
  if (on(c, "profiling.use_pytorch_profiler") && on(c, "profiling.use_nsys_profiler"))
    p.add("profiling.use_pytorch_profiler and profiling.use_nsys_profiler are both true: enable "
          "one");
  const auto start = integer(c, "profiling.profile_step_start");
  const auto end = integer(c, "profiling.profile_step_end");
  if (start && *start < 0)
    p.add(shown(c, "profiling.profile_step_start") + " must be at least 0");
  if (end && *end < 0)
    p.add(shown(c, "profiling.profile_step_end") + " must be at least 0");
  if (start && end && *end < *start)
    p.add(shown(c, "profiling.profile_step_end") + " is before " +
          shown(c, "profiling.profile_step_start"));
  return p.out;
}

Outcome nvrx_straggler_finalize(const Ctx& x) {
  const Config& c = x.config;
  if (!section_present(c, "nvrx_straggler") || !on(c, "nvrx_straggler.enabled"))
    return not_applicable();
  Problems p{"Megatron-Bridge training/config.py NVRxStragglerDetectionConfig.finalize"};
  // A field the section leaves out has its dataclass default.
  auto flag = [&](const char* f) { return c.find(f) == nullptr || on(c, f); };
  if (!flag("nvrx_straggler.calc_relative_gpu_perf") &&
      !flag("nvrx_straggler.calc_individual_gpu_perf"))
    p.add("nvrx_straggler needs calc_relative_gpu_perf or calc_individual_gpu_perf");
  if (number(c, "nvrx_straggler.report_time_interval").value_or(1) <= 0)
    p.add(shown(c, "nvrx_straggler.report_time_interval") + " must be positive");
  for (const char* f : {"nvrx_straggler.gpu_relative_perf_threshold",
                        "nvrx_straggler.gpu_individual_perf_threshold"}) {
    const auto v = number(c, f);
    if (v && (*v < 0 || *v > 1))
      p.add(shown(c, f) + " must be between 0.0 and 1.0");
  }
  return p.out;
}

// --- ConfigContainer.validate, after the finalize() calls -------------------------------------

Outcome eval_batch_divisible(const Ctx& x) {
  const Config& c = x.config;
  const auto gbs = integer(c, "validation.eval_global_batch_size")
                       ? integer(c, "validation.eval_global_batch_size")
                       : integer(c, "train.global_batch_size");
  const auto mbs = integer(c, "validation.eval_micro_batch_size")
                       ? integer(c, "validation.eval_micro_batch_size")
                       : integer(c, "train.micro_batch_size");
  if (!gbs || !mbs)
    return not_applicable();
  if (!x.options.world_size)
    return skipped(kNoWorld);
  const std::int64_t cp = integer(c, "dist.eval_context_parallel_size").value_or(x.layout.cp);
  const std::int64_t model = x.layout.tp * x.layout.pp * cp;
  Problems p{"Megatron-Bridge training/config.py ConfigContainer.validate"};
  if (model <= 0 || *x.options.world_size % model != 0) {
    // Without an evaluation CP this is world-size-divisible's failure.
    if (!set(c, "dist.eval_context_parallel_size"))
      return skipped("the data-parallel size is undefined (see world-size-divisible)");
    p.add("world size " + std::to_string(*x.options.world_size) +
          " is not divisible by TP x PP x " + shown(c, "dist.eval_context_parallel_size") + " = " +
          std::to_string(model));
    return p.out;
  }
  const std::int64_t dp = *x.options.world_size / model;
  // gbs divisible by mbs x dp, without the product (which may overflow).
  if (*mbs <= 0 || *gbs % *mbs != 0 || (*gbs / *mbs) % dp != 0)
    p.add("the evaluation global batch " + std::to_string(*gbs) +
          " (validation.eval_global_batch_size, else train.global_batch_size) is not divisible "
          "by the evaluation micro batch " +
          std::to_string(*mbs) + " x evaluation DP " + std::to_string(dp));
  return p.out;
}

Outcome fsdp_settings(const Ctx& x) {
  const Config& c = x.config;
  Problems p{"Megatron-Bridge training/config.py ConfigContainer.validate"};
  if (on(c, "dist.use_megatron_fsdp") && on(c, "dist.use_torch_fsdp2"))
    p.add("dist.use_megatron_fsdp and dist.use_torch_fsdp2 are both true: choose one");
  if (!on(c, "dist.use_megatron_fsdp") && !on(c, "ddp.use_megatron_fsdp"))
    return p.out;
  // Megatron-FSDP version 1 (_validate_and_apply_megatron_fsdp_v1_configs).
  if (integer(c, "ddp.megatron_fsdp_version").value_or(1) != 1)
    return p.out;
  if ((set(c, "checkpoint.save") || set(c, "checkpoint.load")) &&
      text(c, "checkpoint.ckpt_format") != "fsdp_dtensor")
    p.add("Megatron-FSDP saves and loads only checkpoint.ckpt_format=fsdp_dtensor, but " +
          shown(c, "checkpoint.ckpt_format"));
  if (text(c, "env_vars.CUDA_DEVICE_MAX_CONNECTIONS") == "1" ||
      integer(c, "env_vars.CUDA_DEVICE_MAX_CONNECTIONS") == 1)
    p.add("Megatron-FSDP needs CUDA_DEVICE_MAX_CONNECTIONS > 1 or unset, but "
          "env_vars.CUDA_DEVICE_MAX_CONNECTIONS=1");
  if (!on(c, "ddp.nccl_ub") && on(c, "ddp.fsdp_manual_registration"))
    p.add("ddp.fsdp_manual_registration=true needs ddp.nccl_ub=true");
  if (text(c, "ddp.data_parallel_sharding_strategy") == "optim_grads_params" &&
      set(c, "train.check_weight_hash_across_dp_replicas_interval"))
    p.add("train.check_weight_hash_across_dp_replicas_interval does not work with "
          "Megatron-FSDP's optim_grads_params sharding");
  if (on(c, "dist.use_tp_pp_dp_mapping"))
    p.add("dist.use_tp_pp_dp_mapping=true does not work with Megatron-FSDP");
  return p.out;
}

Outcome mxfp8_param_gather(const Ctx& x) {
  const Config& c = x.config;
  if (mixed_precision_section(c) == nullptr || on(c, "dist.use_megatron_fsdp") ||
      on(c, "ddp.use_megatron_fsdp"))
    return not_applicable();
  Problems p{"Megatron-Bridge training/config.py ConfigContainer.validate"};
  if (on(c, "mixed_precision.fp8_param_gather") &&
      text(c, "mixed_precision.fp8_recipe") == "mxfp8" &&
      !on(c, "mixed_precision.reuse_grad_buf_for_mxfp8_param_ag"))
    p.add("mixed_precision.fp8_param_gather=true with fp8_recipe=mxfp8 needs "
          "mixed_precision.reuse_grad_buf_for_mxfp8_param_ag=true");
  return p.out;
}

Outcome deterministic_mode(const Ctx& x) {
  if (!on(x.config, "model.deterministic_mode"))
    return not_applicable();
  Problems p{
      "Megatron-Bridge training/config.py ConfigContainer._validate_and_apply_deterministic_mode"};
  if (on(x.config, "model.cross_entropy_loss_fusion"))
    p.add("model.deterministic_mode=true needs model.cross_entropy_loss_fusion=false (the fused "
          "cross entropy is not deterministic)");
  return p.out;
}

Outcome precision_consistency(const Ctx& x) {
  const Config& c = x.config;
  Problems p{"Megatron-Bridge training/config.py _validate_mixed_precision_consistency"};
  if (on(c, "optimizer.bf16") && on(c, "optimizer.fp16"))
    p.add("optimizer.bf16 and optimizer.fp16 are both true (from mixed_precision when it is set): "
          "set only one");
  if (on(c, "optimizer.use_precision_aware_optimizer")) {
    const bool bf16 = on(c, "model.bf16"), fp16 = on(c, "model.fp16");
    if (bf16 && !on(c, "optimizer.bf16"))
      p.add("model.bf16=true with optimizer.use_precision_aware_optimizer=true needs "
            "optimizer.bf16=true");
    if (fp16 && !on(c, "optimizer.fp16"))
      p.add("model.fp16=true with optimizer.use_precision_aware_optimizer=true needs "
            "optimizer.fp16=true");
    if (!bf16 && !fp16 && (on(c, "optimizer.bf16") || on(c, "optimizer.fp16")))
      p.add("an fp32 model (model.bf16 and model.fp16 false) with "
            "optimizer.use_precision_aware_optimizer=true needs optimizer.bf16 and "
            "optimizer.fp16 false");
  }
  return p.out;
}

Outcome activation_offloading(const Ctx& x) {
  if (!on(x.config, "model.fine_grained_activation_offloading"))
    return not_applicable();
  Problems p{"Megatron-Bridge training/config.py _validate_fine_grained_activation_offloading"};
  if (text(x.config, "model.transformer_impl") != "transformer_engine")
    p.add("model.fine_grained_activation_offloading=true needs "
          "model.transformer_impl=transformer_engine, but " +
          shown(x.config, "model.transformer_impl"));
  return p.out;
}

Outcome full_iteration_no_nan_check(const Ctx& x) {
  const Config& c = x.config;
  const bool full = text(c, "model.cuda_graph_impl") == "full_iteration" ||
                    (text(c, "model.cuda_graph_impl") == "local" &&
                     (names_in(seen(c, "model.cuda_graph_modules")).count("full_iteration") ||
                      names_in(seen(c, "model.cuda_graph_scope")).count("full_iteration")));
  if (!full)
    return not_applicable();
  Problems p{"Megatron-Bridge training/config.py ConfigContainer.validate"};
  if (on(c, "rerun_state_machine.check_for_nan_in_loss"))
    p.add("a full-iteration CUDA graph needs rerun_state_machine.check_for_nan_in_loss=false");
  return p.out;
}

Outcome modelopt_no_grad_fusion(const Ctx& x) {
  if (!on(x.config, "model.restore_modelopt_state"))
    return not_applicable();
  Problems p{"Megatron-Bridge training/config.py ConfigContainer.validate"};
  if (on(x.config, "model.gradient_accumulation_fusion"))
    p.add("model.restore_modelopt_state=true (a ModelOpt/quantized model) needs "
          "model.gradient_accumulation_fusion=false");
  return p.out;
}

Outcome checkpoint_container(const Ctx& x) {
  const Config& c = x.config;
  if (!section_present(c, "checkpoint"))
    return not_applicable();
  Problems p{"Megatron-Bridge training/config.py ConfigContainer.validate"};
  if (on(c, "checkpoint.also_save_hf_checkpoint") && !on(c, "checkpoint.hf_source_path") &&
      !on(c, "model.hf_model_id") && !on(c, "tokenizer.tokenizer_model"))
    p.add("checkpoint.also_save_hf_checkpoint=true needs an HF source: set "
          "checkpoint.hf_source_path, model.hf_model_id or tokenizer.tokenizer_model");
  const bool saving = set(c, "checkpoint.save") || set(c, "checkpoint.load");
  const std::string format = text(c, "checkpoint.ckpt_format");
  if (saving && format == "fsdp_dtensor" &&
      (!on(c, "ddp.use_megatron_fsdp") || on(c, "dist.use_torch_fsdp2")))
    p.add("checkpoint.ckpt_format=fsdp_dtensor works only with Megatron-FSDP "
          "(ddp.use_megatron_fsdp=true, dist.use_torch_fsdp2=false)");
  if (on(c, "checkpoint.async_save") && format != "torch_dist" && format != "fsdp_dtensor")
    p.add("checkpoint.async_save=true works only with checkpoint.ckpt_format torch_dist or "
          "fsdp_dtensor, but " +
          shown(c, "checkpoint.ckpt_format"));
  if (on(c, "dist.use_decentralized_pg") && on(c, "dist.use_gloo_process_groups"))
    p.add("dist.use_decentralized_pg=true works only with NCCL: set "
          "dist.use_gloo_process_groups=false");
  // validate() has synced the distributed-optimizer flags by now: either on turns both on.
  const bool distributed =
      on(c, "optimizer.use_distributed_optimizer") || on(c, "ddp.use_distributed_optimizer");
  if (!on(c, "dist.use_gloo_process_groups") && distributed && format != "torch_dist" &&
      format != "fsdp_dtensor")
    p.add("without Gloo process groups the distributed optimizer needs checkpoint.ckpt_format "
          "torch_dist or fsdp_dtensor, but " +
          shown(c, "checkpoint.ckpt_format"));
  return p.out;
}

Outcome training_scheduler(const Ctx& x) {
  const Config& c = x.config;
  if (!section_present(c, "scheduler") || !section_present(c, "train"))
    return not_applicable();
  Problems p{"Megatron-Bridge training/config.py "
             "ConfigContainer._validate_training_scheduler_compatibility"};
  const bool warmup_fraction = set(c, "scheduler.lr_warmup_fraction");
  if (set(c, "train.train_samples")) {
    if (set(c, "scheduler.max_steps"))
      p.add("scheduler.max_steps works only with iteration-based training, but "
            "train.train_samples is set");
    if (set(c, "scheduler.lr_decay_iters"))
      p.add("sample-based training (train.train_samples) takes scheduler.lr_decay_samples, not "
            "scheduler.lr_decay_iters");
    if (number(c, "scheduler.lr_warmup_iters").value_or(0) != 0)
      p.add("sample-based training (train.train_samples) takes scheduler.lr_warmup_samples, not "
            "scheduler.lr_warmup_iters");
    if (warmup_fraction && number(c, "scheduler.lr_warmup_samples").value_or(0) != 0)
      p.add("scheduler.lr_warmup_fraction and scheduler.lr_warmup_samples are both set");
  } else {
    if (set(c, "scheduler.lr_decay_samples"))
      p.add("iteration-based training takes scheduler.lr_decay_iters, not "
            "scheduler.lr_decay_samples");
    if (number(c, "scheduler.lr_warmup_samples").value_or(0) != 0)
      p.add("iteration-based training takes scheduler.lr_warmup_iters, not "
            "scheduler.lr_warmup_samples");
    if (warmup_fraction && number(c, "scheduler.lr_warmup_iters").value_or(0) != 0)
      p.add("scheduler.lr_warmup_fraction and scheduler.lr_warmup_iters are both set");
  }
  return p.out;
}

Outcome scheduler_steps(const Ctx& x) {
  const Config& c = x.config;
  const auto iters = integer(c, "train.train_iters");
  const auto samples = integer(c, "train.train_samples");
  if ((!iters && !samples) || !section_present(c, "scheduler"))
    return not_applicable();
  Problems p{"Megatron-Bridge training/config.py ConfigContainer._calculate_scheduler_steps"};
  if (samples) {
    // Sample-based: TrainingConfig.finalize() derives train_iters, then the decay steps are the
    // decay samples (train_samples when unset).
    const std::int64_t decay = integer(c, "scheduler.lr_decay_samples").value_or(*samples);
    if (decay <= 0)
      p.add("the learning-rate decay steps of sample-based training (" + std::to_string(decay) +
            ", from scheduler.lr_decay_samples or train.train_samples) must be positive");
    return p.out;
  }
  const auto max_steps = integer(c, "scheduler.max_steps");
  if (max_steps && *max_steps < *iters)
    p.add(shown(c, "scheduler.max_steps") + " is below " + shown(c, "train.train_iters"));
  const std::int64_t decay_iters =
      max_steps ? *max_steps : integer(c, "scheduler.lr_decay_iters").value_or(*iters);
  const std::int64_t gbs = integer(c, "train.global_batch_size").value_or(1);
  if (p.out.problems.empty() && (decay_iters <= 0 || gbs <= 0))
    p.add("the learning-rate decay steps (" + std::to_string(decay_iters) +
          " decay iterations, from scheduler.max_steps, scheduler.lr_decay_iters or "
          "train.train_iters, x train.global_batch_size " +
          std::to_string(gbs) + ") must be positive");
  return p.out;
}

Outcome context_parallel_sft(const Ctx& x) {
  const Config& c = x.config;
  if (x.layout.cp <= 1 || !sft_dataset(c))
    return not_applicable();
  Problems p{"Megatron-Bridge training/config.py ConfigContainer.validate"};
  if (!on(c, "model.calculate_per_token_loss"))
    p.add("context parallelism (model.context_parallel_size=" + std::to_string(x.layout.cp) +
          ") on an SFT dataset needs model.calculate_per_token_loss=true");
  else if (!true_at(c, "model.calculate_per_token_loss"))
    p.out.rewrites.push_back(
        "model.calculate_per_token_loss=false with model.context_parallel_size=" +
        std::to_string(x.layout.cp) + ": Megatron-Bridge's " +
        std::string(c.find("model")->target().substr(c.find("model")->target().rfind('.') + 1)) +
        " turns per-token loss on with CP > 1 (Megatron-Bridge models/qwen_vl provider finalize); "
        "set model.calculate_per_token_loss=true to say so");
  if (on(c, "ddp.average_in_collective"))
    p.add("context parallelism (model.context_parallel_size=" + std::to_string(x.layout.cp) +
          ") on an SFT dataset needs ddp.average_in_collective=false");
  return p.out;
}

Outcome cp_comm_type(const Ctx& x) {
  const Config& c = x.config;
  Problems p{"Megatron-Bridge training/config.py ConfigContainer._validate_cp_comm_type"};
  const Value* type = seen(c, "model.cp_comm_type");
  const Value* hcp = seen(c, "model.hierarchical_context_parallel_sizes");
  std::vector<std::string> types;
  if (type != nullptr && type->is_list()) {
    const auto layers = integer(c, "model.num_layers").value_or(0);
    if (x.layout.cp > 1 && static_cast<std::int64_t>(type->as_list().size()) != layers)
      p.add("model.cp_comm_type lists " + std::to_string(type->as_list().size()) + " types but " +
            shown(c, "model.num_layers"));
    for (const Value& t : type->as_list())
      types.push_back(t.is_str() ? t.as_str() : std::string());
  } else {
    types.push_back(type != nullptr && type->is_str() ? type->as_str() : "p2p");
  }
  const bool has_hcp = hcp != nullptr && !hcp->is_null();
  if (!has_hcp && std::any_of(types.begin(), types.end(), [](const std::string& t) {
        return t.find("a2a+p2p") != std::string::npos;
      }))
    p.add("model.cp_comm_type a2a+p2p needs model.hierarchical_context_parallel_sizes (without "
          "them CP communication is silently off)");
  if (has_hcp && hcp->is_list()) {
    std::int64_t product = 1;
    bool overflow = false;
    for (const Value& v : hcp->as_list())
      overflow = overflow || __builtin_mul_overflow(product, v.is_int() ? v.as_int() : 0, &product);
    if (overflow || product != x.layout.cp)
      p.add("model.hierarchical_context_parallel_sizes " + brief(*hcp) + " multiply to " +
            (overflow ? std::string("more than 2^63") : std::to_string(product)) +
            ", not model.context_parallel_size=" + std::to_string(x.layout.cp));
  }
  return p.out;
}

Outcome in_batch_packing(const Ctx& x) {
  if (!on(x.config, "dataset.enable_in_batch_packing"))
    return not_applicable();
  Problems p{"Megatron-Bridge training/config.py ConfigContainer.validate"};
  if (integer(x.config, "train.micro_batch_size") == 1)
    p.add("dataset.enable_in_batch_packing=true needs train.micro_batch_size > 1 (it packs "
          "several sequences into a micro batch)");
  return p.out;
}

Outcome peft_checkpoint(const Ctx& x) {
  if (!section_present(x.config, "peft"))
    return not_applicable();
  Problems p{"Megatron-Bridge training/config.py ConfigContainer.validate"};
  if (!set(x.config, "checkpoint.pretrained_checkpoint"))
    p.add("peft needs checkpoint.pretrained_checkpoint");
  return p.out;
}

Outcome seq_length_match(const Ctx& x) {
  const auto model = integer(x.config, "model.seq_length");
  const auto data = integer(x.config, "dataset.seq_length");
  // Only Megatron-Bridge's own dataset configs; a DatasetProvider may have no sequence length.
  if (!model || !data ||
      !(sft_dataset(x.config) || ends_with_target(x.config, "dataset", "GPTDatasetConfig")))
    return not_applicable();
  Problems p{"Megatron-Bridge training/config.py ConfigContainer.validate"};
  if (*model != *data)
    p.add(shown(x.config, "model.seq_length") + " and " + shown(x.config, "dataset.seq_length") +
          " differ: set both to the same length");
  return p.out;
}

} // namespace

const std::vector<CheckEntry>& finalize_checks() {
  static const std::vector<CheckEntry> all{
      {{"mixed-precision-name",
        "a mixed_precision given by name is one of Megatron-Bridge's recipes",
        "Megatron-Bridge training/mixed_precision.py get_mixed_precision_config"},
       mixed_precision_name},
      {{"mixed-precision-fp4-xor-fp8", "mixed_precision never turns on fp4 and fp8 together",
        kMixed},
       mixed_precision_fp4_fp8},
      {{"comm-overlap-moe",
        "EP all-to-all overlap has several experts; delayed wgrad under attention or router "
        "graphs has gradient accumulation fusion and no attention bias",
        "Megatron-Bridge training/comm_overlap.py CommOverlapConfig._get_model_comm_overlap_cfgs"},
       comm_overlap_setup},
      {{"num-epochs-needs-sft-dataset",
        "train.num_epochs only with a finite GPTSFTDatasetConfig and dataloader_type batch",
        "Megatron-Bridge training/config.py ConfigContainer.validate"},
       num_epochs_dataset},
      {{"mock-vlm-dataset-settings",
        "the mock VLM dataset: positive lengths and counts, a processor path, a prompt, two image "
        "dimensions",
        "Megatron-Bridge data/builders/mock_vlm_sft.py MockVLMSFTDatasetConfig.validate"},
       mock_vlm_dataset},
      {{"ddp-settings",
        "DDP: Megatron-FSDP version 1 or 2, MXFP8 grad-buffer reuse with fp8 param gather, fp32 "
        "accumulation patterns, buckets",
        kDdp},
       ddp_finalize},
      {{"optimizer-settings",
        "optimizer: the precision-aware optimizer is adam and distributed, else fp32 state; no "
        "MXFP8 grad-buffer reuse with param-gather overlap",
        kOptimizer},
       optimizer_finalize},
      {{"pipeline-dtype-with-pp", "pipeline parallelism has a pipeline dtype", kParallel},
       pipeline_dtype_with_pp},
      {{"pipeline-comm-settings",
        "deferred embedding wgrad needs PP > 1, gradient accumulation fusion, a limit >= 0; "
        "p2p warmup/flush overlap needs overlapped, unbatched p2p",
        kParallel},
       defer_embedding_wgrad},
      {{"precision-flags",
        "model precision: not both fp16 and bf16; fp8/fp4 param, output-proj and BF16 first/last "
        "layers only with their mode",
        kTransformer},
       precision_flags},
      {{"gdn-settings",
        "GatedDeltaNet: head dims, head counts and conv kernel set; value heads a multiple of key "
        "heads",
        kTransformer},
       gdn_settings},
      {{"moe-settings",
        "MoE: EP needs experts; dispatcher backends, capacity, shared experts, router options "
        "agree",
        kTransformer},
       moe_settings},
      {{"recompute-settings",
        "recompute granularity, method and layer count agree; CPU offloading without PP or "
        "recompute",
        kTransformer},
       recompute_settings},
      {{"recompute-modules", "selective recompute modules are known and come with what they need",
        kTransformer},
       recompute_modules_check},
      {{"activation-offload-modules",
        "fine-grained offloading modules, fractions and sizes; GTP remat modules; the MoE paged "
        "stash",
        kTransformer},
       activation_offload_modules},
      {{"activation-settings",
        "fused bias activation, TE activation, FP8 input store and SwiGLU clamp fit the "
        "activation; fused residual RMSNorm needs RMSNorm",
        kTransformer},
       activation_settings},
      {{"fused-qkv-rope", "the fused single-QKV RoPE comes without gated attention", kTransformer},
       fused_qkv_rope},
      {{"moe-a2a-overlap",
        "EP all-to-all overlap, delayed wgrad and early attention release come with what they "
        "need",
        kTransformer},
       moe_a2a_overlap},
      {{"no-rope-freq", "the no-RoPE pattern fits the layers, without flash decode", kTransformer},
       no_rope_freq},
      {{"logger-settings", "MLflow and Comet runs are named",
        "Megatron-Bridge training/config.py LoggerConfig.finalize"},
       logger_finalize},
      {{"train-length", "exactly one of train_iters, train_samples, num_epochs, and positive",
        "Megatron-Bridge training/config.py TrainingConfig.finalize"},
       train_length},
      {{"scheduler-settings",
        "max_steps positive, weight decay never shrinks, iteration or sample fields, one warmup",
        "Megatron-Bridge training/config.py SchedulerConfig.finalize"},
       scheduler_finalize},
      {{"checkpoint-settings",
        "async save has a path and the persistent worker; HF export, ckpt_step, resharding agree",
        "Megatron-Bridge training/config.py CheckpointConfig.finalize"},
       checkpoint_finalize},
      {{"profiling-settings", "one profiler; profile steps >= 0 and in order",
        "Megatron-Bridge training/config.py ProfilingConfig.finalize"},
       profiling_finalize},
      {{"nvrx-straggler-settings", "NVRx straggler detection has a score, an interval, thresholds",
        "Megatron-Bridge training/config.py NVRxStragglerDetectionConfig.finalize"},
       nvrx_straggler_finalize},
      {{"eval-batch-divisible",
        "the evaluation global batch is divisible by its micro batch x evaluation DP",
        "Megatron-Bridge training/config.py ConfigContainer.validate"},
       eval_batch_divisible},
      {{"fsdp-settings", "one FSDP; Megatron-FSDP's checkpoint format, connections, registration",
        "Megatron-Bridge training/config.py ConfigContainer.validate"},
       fsdp_settings},
      {{"mxfp8-param-gather-reuses-grad-buffer",
        "MXFP8 param gather without FSDP reuses the grad buffer",
        "Megatron-Bridge training/config.py ConfigContainer.validate"},
       mxfp8_param_gather},
      {{"deterministic-mode", "deterministic mode without the fused cross entropy",
        "Megatron-Bridge training/config.py "
        "ConfigContainer._validate_and_apply_deterministic_mode"},
       deterministic_mode},
      {{"precision-consistency",
        "the optimizer is not both bf16 and fp16, and matches the model with the precision-aware "
        "optimizer",
        "Megatron-Bridge training/config.py _validate_mixed_precision_consistency"},
       precision_consistency},
      {{"activation-offloading-needs-te",
        "fine-grained activation offloading with the transformer_engine implementation",
        "Megatron-Bridge training/config.py _validate_fine_grained_activation_offloading"},
       activation_offloading},
      {{"full-iteration-graph-no-nan-check",
        "a full-iteration CUDA graph without the NaN-in-loss check",
        "Megatron-Bridge training/config.py ConfigContainer.validate"},
       full_iteration_no_nan_check},
      {{"modelopt-no-grad-accumulation-fusion",
        "a ModelOpt model without gradient accumulation fusion",
        "Megatron-Bridge training/config.py ConfigContainer.validate"},
       modelopt_no_grad_fusion},
      {{"checkpoint-format",
        "HF export has a source; fsdp_dtensor with Megatron-FSDP; async save and Gloo-less "
        "distributed optimizer in torch_dist or fsdp_dtensor",
        "Megatron-Bridge training/config.py ConfigContainer.validate"},
       checkpoint_container},
      {{"training-scheduler-compatible",
        "iteration-based training uses iteration scheduler fields, sample-based sample fields",
        "Megatron-Bridge training/config.py "
        "ConfigContainer._validate_training_scheduler_compatibility"},
       training_scheduler},
      {{"scheduler-steps", "scheduler.max_steps covers train_iters; decay steps are positive",
        "Megatron-Bridge training/config.py ConfigContainer._calculate_scheduler_steps"},
       scheduler_steps},
      {{"context-parallel-sft-loss",
        "CP on an SFT dataset uses per-token loss and no averaging in the collective",
        "Megatron-Bridge training/config.py ConfigContainer.validate"},
       context_parallel_sft},
      {{"cp-comm-type",
        "cp_comm_type lists one type a layer; a2a+p2p has hierarchical sizes whose product is CP",
        "Megatron-Bridge training/config.py ConfigContainer._validate_cp_comm_type"},
       cp_comm_type},
      {{"in-batch-packing-micro-batch", "in-batch packing with micro batches above 1",
        "Megatron-Bridge training/config.py ConfigContainer.validate"},
       in_batch_packing},
      {{"peft-needs-pretrained-checkpoint", "PEFT starts from a pretrained checkpoint",
        "Megatron-Bridge training/config.py ConfigContainer.validate"},
       peft_checkpoint},
      {{"seq-length-match", "model.seq_length equals dataset.seq_length",
        "Megatron-Bridge training/config.py ConfigContainer.validate"},
       seq_length_match},
  };
  return all;
}

} // namespace qr::check_kit
