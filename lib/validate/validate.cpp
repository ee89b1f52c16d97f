#include "validate/validate.h"

#include "diff/diff.h"
#include "passes/invariants.h"
#include "support/error.h"
#include "support/input.h"
#include "support/script_text.h"
#include "support/suggest.h"
#include "validate/check_kit.h"
#include "yaml/yaml_read.h"

#include <algorithm>
#include <fstream>
#include <numeric>
#include <sstream>

namespace qr {
namespace {

using namespace check_kit;

// --- parallelism ------------------------------------------------------------------------------

std::string tp_pp_cp(const Layout& l) {
  return named("model.tensor_model_parallel_size", l.tp) + " x " +
         named("model.pipeline_model_parallel_size", l.pp) + " x " +
         named("model.context_parallel_size", l.cp);
}

Outcome world_divisible(const Ctx& x) {
  if (!x.options.world_size)
    return skipped(kNoWorld);
  const std::int64_t w = *x.options.world_size;
  const std::int64_t model = x.layout.tp * x.layout.pp * x.layout.cp;
  Outcome o;
  if (model <= 0 || w % model != 0)
    o.problems.push_back("world size " + std::to_string(w) +
                         " is not divisible by TP x PP x CP = " + tp_pp_cp(x.layout) + " = " +
                         std::to_string(model) +
                         "; Megatron-Core's initialize_model_parallel refuses it");
  return o;
}

Outcome expert_parallel_fits(const Ctx& x) {
  if (!x.options.world_size)
    return skipped(kNoWorld);
  const Layout& l = x.layout;
  const std::int64_t w = *x.options.world_size;
  const std::int64_t group = l.etp * l.ep * l.pp;
  Outcome o;
  if (group <= 0 || w % group != 0)
    o.problems.push_back(
        "ETP x EP x PP = " + l.etp_text() + " x " +
        named("model.expert_model_parallel_size", l.ep) + " x " +
        named("model.pipeline_model_parallel_size", l.pp) + " = " + std::to_string(group) +
        " does not divide world size " + std::to_string(w) +
        ", so EP x ETP does not fit the TP x CP x DP ranks of a pipeline stage; Megatron-Core "
        "needs whole expert-data-parallel groups (world / (ETP x EP x PP))");
  return o;
}

Outcome experts_divisible(const Ctx& x) {
  const auto experts = int_at(x.config, "model.num_moe_experts");
  if (!experts || *experts <= 0)
    return not_applicable();
  Outcome o;
  if (x.layout.ep <= 0 || *experts % x.layout.ep != 0)
    o.problems.push_back(named("model.num_moe_experts", *experts) + " is not divisible by " +
                         named("model.expert_model_parallel_size", x.layout.ep) +
                         "; every expert-parallel rank holds the same number of experts "
                         "(Megatron-Core MoELayer)");
  return o;
}

Outcome global_batch_divisible(const Ctx& x) {
  const auto gbs = int_at(x.config, "train.global_batch_size");
  const auto mbs = int_at(x.config, "train.micro_batch_size");
  if (!gbs || !mbs)
    return not_applicable();
  if (!x.options.world_size)
    return skipped(kNoWorld);
  const std::int64_t model = x.layout.tp * x.layout.pp * x.layout.cp;
  if (model <= 0 || *x.options.world_size % model != 0)
    return skipped("data-parallel size undefined (world size not divisible by TP x PP x CP)");
  const std::int64_t dp = *x.options.world_size / model;
  Outcome o;
  if (*mbs <= 0 || *gbs % (*mbs * dp) != 0)
    o.problems.push_back(named("train.global_batch_size", *gbs) + " is not divisible by " +
                         named("train.micro_batch_size", *mbs) + " x DP " + std::to_string(dp) +
                         " = " + std::to_string(*mbs * dp) +
                         "; Megatron-Core's microbatch calculator needs whole micro-batches on "
                         "every data-parallel rank");
  return o;
}

// The pipeline split as Megatron-Core's TransformerConfig and get_num_layers_to_build do it.
struct Split {
  std::int64_t layers = 0;
  std::optional<std::int64_t> first, last;
  bool embedding = false, loss = false;
  bool layout_given = false;

  explicit Split(const Config& c) {
    layers = int_at(c, "model.num_layers").value_or(0);
    first = int_at(c, "model.num_layers_in_first_pipeline_stage");
    last = int_at(c, "model.num_layers_in_last_pipeline_stage");
    embedding = true_at(c, "model.account_for_embedding_in_pipeline_split");
    loss = true_at(c, "model.account_for_loss_in_pipeline_split");
    layout_given = present(c, "model.pipeline_model_parallel_layout") != nullptr;
  }
  [[nodiscard]] std::int64_t middle_layers() const {
    return layers - first.value_or(0) - last.value_or(0);
  }
  [[nodiscard]] std::int64_t middle_stages(std::int64_t pp) const {
    return pp - (first ? 1 : 0) - (last ? 1 : 0);
  }
  // Layers plus the embedding and loss stand-ins, when they count in the split.
  [[nodiscard]] std::int64_t counted() const {
    return layers + (embedding ? 1 : 0) + (loss ? 1 : 0);
  }
  [[nodiscard]] std::string counted_text() const {
    std::string t = named("model.num_layers", layers);
    if (embedding)
      t += " + 1 (model.account_for_embedding_in_pipeline_split)";
    if (loss)
      t += " + 1 (model.account_for_loss_in_pipeline_split)";
    return t;
  }
};

const char* const kFirst = "model.num_layers_in_first_pipeline_stage";
const char* const kLast = "model.num_layers_in_last_pipeline_stage";
const char* const kPp = "model.pipeline_model_parallel_size";
const char* const kVp = "model.virtual_pipeline_model_parallel_size";

Outcome pipeline_layers(const Ctx& x) {
  const Split s(x.config);
  const std::int64_t pp = x.layout.pp;
  if (s.layout_given)
    return skipped("model.pipeline_model_parallel_layout is set; Megatron-Core checks the layout "
                   "itself");
  if (pp <= 1 && !s.first && !s.last)
    return not_applicable();
  Outcome o;
  if (!s.first && !s.last) {
    if (s.counted() % pp != 0)
      o.problems.push_back(s.counted_text() + " is not divisible by " + named(kPp, pp) +
                           "; Megatron-Core's get_num_layers_to_build asserts an even split: set " +
                           kFirst + " and " + kLast + " or a pipeline layout");
    return o;
  }
  if (s.embedding || s.loss) {
    o.problems.push_back(std::string(kFirst) + "/" + kLast +
                         " cannot be combined with model.account_for_embedding_in_pipeline_split "
                         "or model.account_for_loss_in_pipeline_split (Megatron-Core "
                         "TransformerConfig)");
    return o;
  }
  for (const auto& [path, v] : {std::pair{kFirst, s.first}, std::pair{kLast, s.last}})
    if (v && *v <= 0)
      o.problems.push_back(named(path, *v) + " must be larger than 0 (Megatron-Core)");
  if (!o.problems.empty())
    return o;
  const std::int64_t stages = s.middle_stages(pp);
  const std::int64_t rest = s.middle_layers();
  std::string given;
  if (s.first)
    given += named(kFirst, *s.first);
  if (s.last)
    given += (given.empty() ? std::string() : std::string(" and ")) + named(kLast, *s.last);
  if (stages < 0) {
    o.problems.push_back(given + " need " + std::to_string(-stages + pp) + " pipeline stages but " +
                         named(kPp, pp) + "; Megatron-Core refuses the uneven split");
  } else if ((rest != 0) != (stages != 0)) {
    o.problems.push_back(
        given + " leave " + std::to_string(rest) + " of " + named("model.num_layers", s.layers) +
        " for " + std::to_string(stages) + " middle stages of " + named(kPp, pp) +
        "; Megatron-Core needs middle layers exactly when there are middle stages");
  } else if (stages > 0 && rest % stages != 0) {
    o.problems.push_back(given + " leave " + std::to_string(rest) + " of " +
                         named("model.num_layers", s.layers) + " for " + std::to_string(stages) +
                         " middle stages of " + named(kPp, pp) +
                         ", which does not divide evenly (Megatron-Core TransformerConfig)");
  }
  return o;
}

Outcome vp_needs_pp(const Ctx& x) {
  if (!x.layout.vp)
    return not_applicable();
  Outcome o;
  if (x.layout.pp <= 1)
    o.problems.push_back(named(kVp, *x.layout.vp) + " needs " + kPp + " > 1, but it is " +
                         std::to_string(x.layout.pp) +
                         "; Megatron-Core's interleaved schedule refuses it: set " + kVp + "=null");
  return o;
}

Outcome vp_layers(const Ctx& x) {
  const Split s(x.config);
  const std::int64_t pp = x.layout.pp;
  if (!x.layout.vp || pp <= 1 || s.layout_given)
    return not_applicable();
  const std::int64_t vp = *x.layout.vp;
  Outcome o;
  if (vp <= 0) {
    o.problems.push_back(named(kVp, vp) + " must be positive");
    return o;
  }
  if (!s.first && !s.last) {
    // An uneven split is pipeline-layers' failure; a virtual split of it means nothing.
    if (s.counted() % pp != 0)
      return skipped("the pipeline split is already uneven (see pipeline-layers)");
    const std::int64_t per_stage = s.counted() / pp;
    if (per_stage % vp != 0)
      o.problems.push_back(s.counted_text() + " over " + named(kPp, pp) + " gives " +
                           std::to_string(per_stage) + " layers per stage, not divisible by " +
                           named(kVp, vp) +
                           "; Megatron-Core's get_num_layers_to_build asserts the same number of "
                           "layers in every virtual stage");
    return o;
  }
  for (const auto& [path, v] : {std::pair{kFirst, s.first}, std::pair{kLast, s.last}})
    if (v && *v > 0 && *v % vp != 0)
      o.problems.push_back(named(path, *v) + " is not divisible by " + named(kVp, vp) +
                           " (Megatron-Core TransformerConfig)");
  const std::int64_t stages = s.middle_stages(pp);
  const std::int64_t rest = s.middle_layers();
  if (stages > 0 && rest % stages == 0 && (rest / stages) % vp != 0)
    o.problems.push_back("the " + std::to_string(rest / stages) +
                         " layers of each middle pipeline stage are not divisible by " +
                         named(kVp, vp) + " (Megatron-Core TransformerConfig)");
  return o;
}

Outcome heads_divisible(const Ctx& x) {
  const auto heads = int_at(x.config, "model.num_attention_heads");
  if (!heads)
    return not_applicable();
  Outcome o;
  if (x.layout.tp <= 0 || *heads % x.layout.tp != 0)
    o.problems.push_back(named("model.num_attention_heads", *heads) + " is not divisible by " +
                         named("model.tensor_model_parallel_size", x.layout.tp) +
                         " (Megatron-Core TransformerConfig)");
  return o;
}

Outcome query_groups_fit(const Ctx& x) {
  const auto heads = int_at(x.config, "model.num_attention_heads");
  const auto groups = int_at(x.config, "model.num_query_groups");
  if (!groups && !heads)
    return not_applicable();
  const std::int64_t g = groups.value_or(heads.value_or(0));
  const std::int64_t tp = x.layout.tp;
  Outcome o;
  if (g <= 0 || tp <= 0 || (g % tp != 0 && tp % g != 0))
    o.problems.push_back((groups ? named("model.num_query_groups", g)
                                 : "model.num_query_groups=null (so model.num_attention_heads, " +
                                       std::to_string(g) + ")") +
                         " is neither a multiple nor a divisor of " +
                         named("model.tensor_model_parallel_size", tp) +
                         " (Megatron-Core TransformerConfig)");
  return o;
}

Outcome gdn_heads_divisible(const Ctx& x) {
  const std::string variant = str_at(x.config, "model.experimental_attention_variant");
  // Megatron-Core's is_gated_delta_net_variant, with the deprecated spelling.
  if (variant != "gdn" && variant != "gdn2" && variant != "gated_delta_net")
    return not_applicable();
  const std::int64_t tp_cp = x.layout.tp * x.layout.cp;
  Outcome o;
  for (const char* path : {"model.linear_num_key_heads", "model.linear_num_value_heads"}) {
    const auto heads = int_at(x.config, path);
    if (heads && (tp_cp <= 0 || *heads % tp_cp != 0))
      o.problems.push_back(named(path, *heads) + " is not divisible by TP x CP = " +
                           named("model.tensor_model_parallel_size", x.layout.tp) + " x " +
                           named("model.context_parallel_size", x.layout.cp) + " = " +
                           std::to_string(tp_cp) +
                           "; GatedDeltaNet splits its heads over both (Megatron-Core "
                           "TransformerConfig)");
  }
  return o;
}

// Megatron-Bridge's finalize() (models/transformer_config.py) turns sequence parallelism off with
// TP 1 before Megatron-Core's ModelParallelConfig could refuse it; the Qwen3-VL MoE provider's
// finalize() turns it on with TP > 1. Both are said, not refused.
Outcome sp_needs_tp(const Ctx& x) {
  const bool qwen3_moe = ends_with_target(x.config, "model", "Qwen3VLMoEModelProvider");
  if (!x.layout.sp && !(qwen3_moe && x.layout.tp > 1))
    return not_applicable();
  Outcome o;
  if (x.layout.sp && x.layout.tp <= 1)
    o.rewrites.push_back("model.sequence_parallel=true with " +
                         named("model.tensor_model_parallel_size", x.layout.tp) +
                         ": Megatron-Bridge turns sequence parallelism off before Megatron-Core "
                         "checks it (Megatron-Bridge models/transformer_config.py finalize); set "
                         "model.sequence_parallel=false to say so");
  if (!x.layout.sp && qwen3_moe && x.layout.tp > 1)
    o.rewrites.push_back("model.sequence_parallel=false with " +
                         named("model.tensor_model_parallel_size", x.layout.tp) +
                         ": Megatron-Bridge's Qwen3VLMoEModelProvider turns sequence parallelism "
                         "on with TP > 1, and the model-level checks see it on (Megatron-Bridge "
                         "models/qwen_vl/qwen3_vl_provider.py Qwen3VLMoEModelProvider.finalize)");
  return o;
}

// Megatron-Bridge's SFT dataset classes, whose sequences validate() pads to the CP/SP multiple.
bool padded_dataset(const Config& c) {
  for (const char* cls :
       {"DirectHFSFTDatasetConfig", "EnergonDatasetConfig", "MockVLMSFTDatasetConfig"})
    if (ends_with_target(c, "dataset", cls))
      return true;
  return false;
}

Outcome seq_length_fits(const Ctx& x) {
  const Layout& l = x.layout;
  // validate() pads sequences to the lcm, over the training CP and dist.eval_context_parallel_size,
  // of 2 x CP (CP > 1: load-balanced chunks) and TP x CP with SP (SP splits a rank's share over
  // TP), using the SP setting as given (before the model's finalize() rewrites it).
  std::vector<std::int64_t> cp_sizes{l.cp};
  const auto eval_cp = int_at(x.config, "dist.eval_context_parallel_size");
  if (eval_cp && *eval_cp != l.cp)
    cp_sizes.push_back(*eval_cp);
  std::int64_t multiple = 1;
  std::string why;
  for (std::size_t i = 0; i < cp_sizes.size(); ++i) {
    const std::int64_t cp = cp_sizes[i];
    const std::string cp_name = i == 0 ? named("model.context_parallel_size", cp)
                                       : named("dist.eval_context_parallel_size", cp);
    if (cp > 1 && multiple % (2 * cp) != 0) {
      multiple = std::lcm(multiple, 2 * cp);
      why += std::string(why.empty() ? "" : " and ") + "2 x " + cp_name;
    }
    if (l.sp && l.tp > 1 && multiple % (l.tp * cp) != 0) {
      multiple = std::lcm(multiple, l.tp * cp);
      why += std::string(why.empty() ? "" : " and ") + "TP x CP with model.sequence_parallel (" +
             std::to_string(l.tp) + " x " + std::to_string(cp) + ")";
    }
  }
  if (multiple == 1 && l.cp <= 1)
    return not_applicable();
  Outcome o;
  // validate() asserts model.seq_length divisible by 2 x CP, and pads a Bridge SFT dataset's
  // dataset.seq_length to the whole multiple.
  if (const auto len = int_at(x.config, "model.seq_length");
      len && l.cp > 1 && *len % (2 * l.cp) != 0)
    o.problems.push_back(named("model.seq_length", *len) + " is not a multiple of 2 x " +
                         named("model.context_parallel_size", l.cp) +
                         " (Megatron-Bridge ConfigContainer.validate)");
  if (const auto len = int_at(x.config, "dataset.seq_length");
      len && padded_dataset(x.config) && multiple > 1 && *len % multiple != 0)
    o.problems.push_back(named("dataset.seq_length", *len) + " is not a multiple of " +
                         std::to_string(multiple) + " (" + why +
                         "; Megatron-Bridge ConfigContainer.validate)");
  return o;
}

// --- cuDNN GDN packages (the GDN branch's validate_cudnn_gdn_stack) ---------------------------

std::string dotted(const std::vector<int>& v) {
  std::string out;
  for (int p : v) {
    if (!out.empty())
      out += '.';
    out += std::to_string(p);
  }
  return out;
}

// True when `version` parses and is below `floor`; unparsable versions pass, as upstream.
bool below(const std::string& version, const std::vector<int>& floor) {
  const std::vector<int> v = release_tuple(version);
  return !v.empty() && v < floor;
}

// model.fp8 / model.fp4 as Megatron-Bridge sees them when it validates: a MixedPrecisionConfig
// section has already been copied onto the model by then.
bool precision_set(const Config& c, std::string_view field) {
  const Value* mp = c.find("mixed_precision");
  const Value* v = mp != nullptr && mp->is_map() && mp->as_map().contains(field)
                       ? mp->as_map().find(field)
                       : c.find("model." + std::string(field));
  if (v == nullptr || v->is_null())
    return false;
  if (v->is_bool())
    return v->as_bool();
  if (v->is_str())
    return !v->as_str().empty();
  return true;
}

const std::vector<int> kTeGdn{2, 19, 0};
const std::vector<int> kTeFp8Fixed{2, 20, 2};
const std::vector<int> kFrontendGdn{1, 27, 0};
const std::vector<int> kFrontendNanFree{1, 29, 0};
const std::vector<int> kCutlassDsl{4, 7, 0};

Outcome gdn_packages(const Ctx& x) {
  if (str_at(x.config, "model.gdn_kernel_backend") != "transformer_engine")
    return not_applicable();
  if (!x.options.env)
    return skipped("no environment (give --env with `pip freeze` output or a YAML of package: "
                   "version) to check transformer-engine, nvidia-cudnn-frontend and "
                   "nvidia-cutlass-dsl");
  const PackageEnv& env = *x.options.env;
  std::vector<std::string> issues;
  const std::string* te = env.version("transformer-engine");
  if (te == nullptr)
    te = env.version("transformer-engine-torch");
  // Megatron-Core's HAVE_TE_GDN, judged by version: GatedDeltaNetAttention came in 2.19.
  if (te == nullptr)
    issues.push_back("transformer-engine is not installed, so Megatron-Core will fail to build the "
                     "model (GatedDeltaNetAttention needs transformer-engine 2.19)");
  else if (below(*te, kTeGdn))
    issues.push_back("transformer-engine " + *te +
                     " has no GatedDeltaNetAttention (added in 2.19), so Megatron-Core will fail "
                     "to build the model");
  const std::string* frontend = env.version("nvidia-cudnn-frontend");
  if (frontend == nullptr) {
    issues.push_back(
        "nvidia-cudnn-frontend is not installed, so the first GatedDeltaNet forward will fail");
  } else if (below(*frontend, kFrontendGdn)) {
    issues.push_back("nvidia-cudnn-frontend " + *frontend +
                     " has no cudnn.linear_attention (added in 1.27.0), so the first "
                     "GatedDeltaNet forward will fail");
  } else if (below(*frontend, kFrontendNanFree)) {
    issues.push_back("nvidia-cudnn-frontend " + *frontend +
                     " is older than 1.29.0, and its GatedDeltaNet kernels can return NaN");
  } else {
    // cuDNN frontend 1.29 runs GDN on CuTe DSL only when the `cutlass` module (from either
    // distribution) is there and the public wheel is new enough; internal builds pass.
    const std::string* dsl = env.version("nvidia-cutlass-dsl");
    const std::string* internal = env.version("nvidia-cutlass-dsl-internal");
    if (dsl == nullptr && internal == nullptr)
      issues.push_back("the CuTe DSL package cutlass (nvidia-cutlass-dsl) is not installed, so "
                       "cuDNN frontend runs GatedDeltaNet on its cuTile engine, which is slower "
                       "than FLA");
    else if (dsl != nullptr && below(*dsl, kCutlassDsl))
      issues.push_back("nvidia-cutlass-dsl " + *dsl +
                       " is older than 4.7.0, so cuDNN frontend runs GatedDeltaNet on its cuTile "
                       "engine, which is slower than FLA");
  }
  const bool fp8 = precision_set(x.config, "fp8");
  const bool fp4 = precision_set(x.config, "fp4");
  if ((fp8 || fp4) && te != nullptr) {
    const std::vector<int> v = release_tuple(*te);
    if (v.size() >= 2 && v[0] == 2 && v[1] == 19)
      issues.push_back("transformer-engine " + *te +
                       "'s GatedDeltaNetAttention raises under FP8 autocast, which " +
                       (fp8 ? "model.fp8" : "model.fp4") +
                       " turns on (transformer-engine 2.20.2 and later ignore it)");
  }
  Outcome o;
  if (!issues.empty()) {
    std::string msg = "model.gdn_kernel_backend='transformer_engine' cannot run GatedDeltaNet on "
                      "cuDNN's fast kernels in this environment (" +
                      env.source + "): ";
    for (std::size_t i = 0; i < issues.size(); ++i)
      msg += (i == 0 ? std::string() : std::string("; ")) + issues[i];
    msg += ". Install transformer-engine>=" + dotted(fp8 || fp4 ? kTeFp8Fixed : kTeGdn) +
           ", nvidia-cudnn-frontend>=" + dotted(kFrontendNanFree) +
           " and nvidia-cutlass-dsl[cu13]>=" + dotted(kCutlassDsl) +
           ", or set model.gdn_kernel_backend=fla";
    o.problems.push_back(std::move(msg));
  }
  return o;
}

const std::vector<CheckEntry>& entries() {
  static const std::vector<CheckEntry> all = [] {
    std::vector<CheckEntry> v{
        {{"world-size-divisible",
          "the world size is divisible by TP x PP x CP (DP is the quotient)",
          "Megatron-Core initialize_model_parallel"},
         world_divisible},
        {{"expert-parallel-fits",
          "EP x ETP fits the expert-data-parallel group: world divisible by ETP x EP x PP",
          "Megatron-Core initialize_model_parallel"},
         expert_parallel_fits},
        {{"experts-divisible-by-ep", "the number of experts is divisible by EP",
          "Megatron-Core MoELayer"},
         experts_divisible},
        {{"global-batch-divisible", "the global batch is divisible by micro batch x DP",
          "Megatron-Core num_microbatches_calculator"},
         global_batch_divisible},
        {{"pipeline-layers",
          "layers split evenly over PP, honouring the first/last-stage layer counts",
          "Megatron-Core TransformerConfig, get_num_layers_to_build"},
         pipeline_layers},
        {{"virtual-pipeline-needs-pp", "virtual pipeline stages only with PP > 1",
          "Megatron-Core initialize_model_parallel"},
         vp_needs_pp},
        {{"virtual-pipeline-layers", "every virtual pipeline stage holds the same number of layers",
          "Megatron-Core TransformerConfig, get_num_layers_to_build"},
         vp_layers},
        {{"attention-heads-divisible-by-tp", "attention heads are divisible by TP",
          "Megatron-Core TransformerConfig"},
         heads_divisible},
        {{"query-groups-fit-tp", "query groups are a multiple or a divisor of TP",
          "Megatron-Core TransformerConfig"},
         query_groups_fit},
        {{"gdn-heads-divisible", "GatedDeltaNet key and value heads are divisible by TP x CP",
          "Megatron-Core TransformerConfig"},
         gdn_heads_divisible},
        {{"sequence-parallel-needs-tp", "sequence parallelism only with TP > 1",
          "Megatron-Core ModelParallelConfig"},
         sp_needs_tp},
        {{"seq-length-cp-sp", "sequence lengths are multiples of 2 x CP, and of TP x CP with SP",
          "Megatron-Bridge ConfigContainer.validate"},
         seq_length_fits},
        {{"gdn-packages",
          "the environment can run the transformer_engine GDN backend on cuDNN's fast kernels "
          "(warnings only)",
          "GDN branch validate_cudnn_gdn_stack"},
         gdn_packages,
         true},
    };
    const std::vector<CheckEntry>& ported = finalize_checks();
    v.insert(v.end(), ported.begin(), ported.end());
    return v;
  }();
  return all;
}

std::string layout_text(const Ctx& x) {
  const Layout& l = x.layout;
  std::string out;
  const std::string sizes = "TP " + std::to_string(l.tp) + " x PP " + std::to_string(l.pp) +
                            " x CP " + std::to_string(l.cp);
  const std::int64_t model = l.tp * l.pp * l.cp;
  if (x.options.world_size && model > 0 && *x.options.world_size % model == 0)
    out = "world " + std::to_string(*x.options.world_size) + " = " + sizes + " x DP " +
          std::to_string(*x.options.world_size / model);
  else if (x.options.world_size)
    out = "world " + std::to_string(*x.options.world_size) + ", " + sizes;
  else
    out = sizes + " (world size unknown)";
  if (l.vp)
    out += ", VP " + std::to_string(*l.vp);
  if (l.sp)
    out += ", SP";
  if (int_at(x.config, "model.num_moe_experts").value_or(0) > 0) {
    out += "; experts: EP " + std::to_string(l.ep) + " x ETP " + std::to_string(l.etp);
    const std::int64_t group = l.etp * l.ep * l.pp;
    if (x.options.world_size && group > 0 && *x.options.world_size % group == 0)
      out += " (expert DP " + std::to_string(*x.options.world_size / group) + ")";
  }
  return out;
}

std::string normalize_name(std::string_view name) {
  std::string out;
  bool sep = false;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      sep = true;
      continue;
    }
    if (sep && !out.empty())
      out += '-';
    sep = false;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos)
    return {};
  const auto e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

} // namespace

const std::vector<CheckInfo>& check_registry() {
  static const std::vector<CheckInfo> infos = [] {
    std::vector<CheckInfo> out;
    for (const CheckEntry& e : entries())
      out.push_back(e.info);
    return out;
  }();
  return infos;
}

const CheckInfo* find_check(std::string_view name) {
  for (const CheckInfo& c : check_registry())
    if (c.name == name)
      return &c;
  return nullptr;
}

const std::string* PackageEnv::version(std::string_view name) const {
  auto it = versions.find(normalize_name(name));
  return it == versions.end() ? nullptr : &it->second;
}

std::vector<int> release_tuple(std::string_view version) {
  const std::string_view release = version.substr(0, version.find('+'));
  std::vector<int> parts;
  std::size_t start = 0;
  while (parts.size() < 3 && start <= release.size()) {
    const std::size_t dot = std::min(release.find('.', start), release.size());
    const std::string_view comp = release.substr(start, dot - start);
    std::size_t digits = 0;
    while (digits < comp.size() && digits < 9 &&
           std::isdigit(static_cast<unsigned char>(comp[digits])))
      ++digits;
    if (digits == 0)
      break;
    parts.push_back(std::stoi(std::string(comp.substr(0, digits))));
    start = dot + 1;
  }
  if (!parts.empty())
    parts.resize(3, 0);
  return parts;
}

PackageEnv parse_package_env(std::string_view text, const std::string& source) {
  PackageEnv env;
  env.source = source;
  // A YAML mapping of package -> version. Versions are taken as written (`2.19` stays "2.19").
  std::shared_ptr<YamlDoc> doc;
  try {
    doc = parse_yaml(text, source);
  } catch (const Error&) {
    // Not YAML (pip freeze output with `name @ url` lines often is not): read it as pip freeze.
  }
  if (doc != nullptr && doc->root != nullptr && doc->root->kind == YamlNode::Kind::Mapping) {
    for (const auto& [k, v] : doc->root->entries) {
      if (v->kind != YamlNode::Kind::Scalar && v->kind != YamlNode::Kind::Null)
        throw Error(doc->where(*v) + ": package '" + k->text + "' needs a version string, e.g. '" +
                    k->text + ": 1.29.0'");
      env.versions[normalize_name(k->text)] = v->kind == YamlNode::Kind::Scalar ? v->text : "";
    }
    return env;
  }
  std::istringstream in{std::string(text)};
  std::string raw;
  for (int line = 1; std::getline(in, raw); ++line) {
    std::string s = trim(raw.substr(0, raw.find('#')));
    // Empty lines and pip options (`-e ...`, `--index-url ...`) carry no installed version.
    if (s.empty() || s[0] == '-')
      continue;
    std::size_t end = 0;
    while (end < s.size() && name_char(s[end]))
      ++end;
    if (end == 0)
      throw Error(source + ":" + std::to_string(line) + ": '" + s +
                  "' is neither a pip freeze line (name==version) nor part of a YAML mapping of "
                  "package: version");
    const std::string name = normalize_name(s.substr(0, end));
    std::string rest = s.substr(end);
    if (!rest.empty() && rest[0] == '[') // extras: name[cu13]==4.7.0
      rest = rest.substr(std::min(rest.find(']'), rest.size() - 1) + 1);
    rest = trim(rest);
    std::string version;
    if (rest.starts_with("==="))
      version = trim(rest.substr(3));
    else if (rest.starts_with("=="))
      version = trim(rest.substr(2));
    else if (!rest.empty() && rest[0] != '@')
      throw Error(source + ":" + std::to_string(line) + ": '" + s +
                  "' is not a pip freeze line; expected name==version or name @ url");
    env.versions[name] = version.substr(0, version.find(';'));
  }
  return env;
}

PackageEnv read_package_env(const std::string& path) {
  if (!std::ifstream(path, std::ios::binary))
    throw Error(escaped_for_message(path) + ": cannot read the environment file (no such file?)");
  // Bounded as a --base file is (64 MiB), so that --env /dev/zero fails fast.
  return parse_package_env(read_input_file(path), path);
}

std::size_t ValidationReport::count(Finding::Level level) const {
  return static_cast<std::size_t>(std::count_if(
      findings.begin(), findings.end(), [&](const Finding& f) { return f.level == level; }));
}

Waivers classify_waivers(std::vector<Waiver> waivers) {
  for (Waiver& w : waivers) {
    if (find_invariant(w.name) != nullptr) {
      w.kind = Waiver::Kind::Invariant;
    } else if (find_check(w.name) != nullptr) {
      w.kind = Waiver::Kind::Check;
    } else {
      std::vector<std::string> names;
      for (const InvariantInfo& i : invariant_registry())
        names.push_back(i.name);
      for (const CheckInfo& c : check_registry())
        names.push_back(c.name);
      throw Error(
          "waives unknown invariant or check '" + w.name + "'" + did_you_mean(w.name, names) +
          "; 'qwen-recipe list invariants' lists the invariants, docs/validate.md the checks");
    }
  }
  return {std::move(waivers)};
}

ValidationReport validate_config(const Config& config, const ValidateOptions& options) {
  const Ctx ctx{config, options, Layout(config)};
  ValidationReport report;
  report.layout = layout_text(ctx);
  report.world_size = options.world_size;
  report.strict = options.strict;
  auto add_problems = [&](const std::string& name, const std::vector<std::string>& problems,
                          bool warn_only, Waiver::Kind kind) {
    const Waiver* waived = options.waivers.find(kind, name);
    for (const std::string& p : problems) {
      if (warn_only)
        report.findings.push_back({Finding::Level::Warning, name, p});
      else if (waived != nullptr)
        report.findings.push_back(
            {Finding::Level::Warning, name, "(waived by the recipe: " + waived->reason + ") " + p});
      else
        report.findings.push_back({Finding::Level::Error, name, p});
    }
  };
  // The invariants first: a build checks them before its start-up checks.
  if (options.invariants)
    for (const InvariantInfo& inv : invariant_registry()) {
      ++report.checks;
      const std::string problem = inv.check(config);
      if (!problem.empty())
        add_problems(inv.name, {problem}, false, Waiver::Kind::Invariant);
    }
  for (const CheckEntry& e : entries()) {
    const Outcome o = e.run(ctx);
    if (!o.applies)
      continue;
    if (!o.skipped.empty()) {
      report.findings.push_back({Finding::Level::Skipped, e.info.name, o.skipped});
      continue;
    }
    ++report.checks;
    for (const std::string& r : o.rewrites)
      report.findings.push_back({Finding::Level::Warning, e.info.name, r});
    add_problems(e.info.name, o.problems, e.warn_only, Waiver::Kind::Check);
  }
  for (const Advisory& a : options.advisories) {
    std::string fields;
    for (const std::string& path : a.when)
      if (const Value* v = config.find(path); v != nullptr && v->is_bool() && v->as_bool())
        fields += (fields.empty() ? "" : " and ") + path + "=true";
    if (!fields.empty())
      report.findings.push_back(
          {Finding::Level::Warning, a.id,
           fields + ": " + a.upstream + " " + a.summary + "; to follow it: " + a.fix});
  }
  if (options.strict)
    for (Finding& f : report.findings)
      if (f.level == Finding::Level::Warning) {
        f.level = Finding::Level::Error;
        f.message = "(--strict) " + f.message;
      }
  return report;
}

std::vector<Advisory> parse_advisories(const YamlDoc& doc) {
  const auto fail = [&](const YamlNode& n, const std::string& what) {
    return Error(doc.where(n) + ": " + what);
  };
  const auto text_of = [&](const YamlNode& entry, const char* key) {
    for (const auto& [k, v] : entry.entries)
      if (k->text == key) {
        if (v->kind != YamlNode::Kind::Scalar || v->text.empty())
          throw fail(*v, std::string("an advisory's '") + key + "' is a non-empty string");
        return v->text;
      }
    throw fail(entry, std::string("an advisory needs '") + key + "'");
  };
  const YamlNode* list = nullptr;
  if (doc.root != nullptr && doc.root->kind == YamlNode::Kind::Mapping)
    for (const auto& [k, v] : doc.root->entries)
      if (k->text == "advisories")
        list = v;
  if (list == nullptr || list->kind != YamlNode::Kind::Sequence)
    throw Error(doc.source + ": expected 'advisories:' with a list of advisories");
  std::vector<Advisory> out;
  for (const YamlNode* entry : list->items) {
    if (entry->kind != YamlNode::Kind::Mapping)
      throw fail(*entry, "an advisory is a mapping with id, upstream, summary, when and fix");
    Advisory a{text_of(*entry, "id"),
               text_of(*entry, "upstream"),
               text_of(*entry, "summary"),
               text_of(*entry, "fix"),
               {}};
    for (const auto& [k, v] : entry->entries) {
      if (k->text != "when")
        continue;
      if (v->kind != YamlNode::Kind::Sequence || v->items.empty())
        throw fail(*v, "an advisory's 'when' is a list of fields");
      for (const YamlNode* f : v->items) {
        if (f->kind != YamlNode::Kind::Scalar || f->text.find('.') == std::string::npos)
          throw fail(*f, "an advisory's 'when' lists fields such as optimizer.name");
        a.when.push_back(f->text);
      }
    }
    if (a.when.empty())
      throw fail(*entry, "an advisory needs 'when'");
    out.push_back(std::move(a));
  }
  return out;
}

std::string advisories_text(const std::vector<Advisory>& advisories) {
  std::string out;
  for (const Advisory& a : advisories) {
    std::string when;
    for (const std::string& f : a.when)
      when += (when.empty() ? "" : " or ") + f + "=true";
    out += a.id + ": " + a.upstream + "\n  " + a.summary + "\n  warns when: " + when +
           "\n  to follow it: " + a.fix + "\n";
  }
  return out;
}

std::string advisories_json(const std::vector<Advisory>& advisories) {
  std::string out = "{\"advisories\": [";
  bool first = true;
  for (const Advisory& a : advisories) {
    std::string when;
    for (const std::string& f : a.when)
      when += (when.empty() ? "" : ", ") + json_string(f);
    out += std::string(first ? "\n" : ",\n") + "  {\"id\": " + json_string(a.id) +
           ", \"upstream\": " + json_string(a.upstream) +
           ", \"summary\": " + json_string(a.summary) + ", \"when\": [" + when +
           "], \"fix\": " + json_string(a.fix) + "}";
    first = false;
  }
  return out + (first ? "]}\n" : "\n]}\n");
}

std::string check_source(std::string_view check) {
  if (const CheckInfo* c = find_check(check))
    return c->source;
  if (const InvariantInfo* i = find_invariant(check))
    return i->source;
  return {};
}

namespace {

std::string plural(std::size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::vector<std::string> skipped_checks(const ValidationReport& report) {
  std::vector<std::string> names;
  for (const Finding& f : report.findings)
    if (f.level == Finding::Level::Skipped)
      names.push_back(f.check);
  return names;
}

const char* level_name(Finding::Level level) {
  switch (level) {
  case Finding::Level::Error:
    return "error";
  case Finding::Level::Warning:
    return "warning";
  case Finding::Level::Skipped:
    return "skipped";
  }
  return "";
}

} // namespace

std::string report_text(const ValidationReport& report, const std::string& label) {
  std::string out = label + ": " + report.layout +
                    (report.world_source.empty() ? "" : " (" + report.world_source + ")") + "\n";
  for (const Finding& f : report.findings)
    out += format_finding(f) + "\n";
  out += label + ": " + plural(report.count(Finding::Level::Error), "error") + ", " +
         plural(report.count(Finding::Level::Warning), "warning") + ", " +
         std::to_string(report.count(Finding::Level::Skipped)) + " skipped";
  const std::vector<std::string> skipped = skipped_checks(report);
  for (std::size_t i = 0; i < skipped.size(); ++i)
    out += (i == 0 ? " (" : ", ") + skipped[i] + (i + 1 == skipped.size() ? ")" : "");
  out += "; " + std::to_string(report.checks) + " checks ran" +
         (report.strict ? " (--strict: warnings are errors)" : "") + "\n";
  return out;
}

std::string report_json(const ValidationReport& report, const std::string& label) {
  std::string out =
      "{\"config\": " + json_string(label) + ", \"layout\": " + json_string(report.layout) +
      ", \"world_size\": " + (report.world_size ? std::to_string(*report.world_size) : "null") +
      ", \"world_size_from\": " +
      (report.world_source.empty() ? std::string("null") : json_string(report.world_source)) +
      ", \"strict\": " + (report.strict ? "true" : "false") + ",\n \"findings\": [";
  bool first = true;
  for (const Finding& f : report.findings) {
    out += std::string(first ? "\n" : ",\n") + "  {\"level\": \"" + level_name(f.level) +
           "\", \"check\": " + json_string(f.check) +
           ", \"source\": " + json_string(check_source(f.check)) +
           ", \"message\": " + json_string(f.message) + "}";
    first = false;
  }
  out += first ? "],\n" : "\n ],\n";
  const std::size_t errors = report.count(Finding::Level::Error);
  out += " \"errors\": " + std::to_string(errors) +
         ", \"warnings\": " + std::to_string(report.count(Finding::Level::Warning)) +
         ", \"skipped\": " + std::to_string(report.count(Finding::Level::Skipped)) +
         ", \"checks_ran\": " + std::to_string(report.checks) +
         ", \"ok\": " + (errors == 0 ? "true" : "false") + "}\n";
  return out;
}

std::string format_finding(const Finding& f) {
  switch (f.level) {
  case Finding::Level::Error:
    return "error: check '" + f.check + "' failed: " + f.message;
  case Finding::Level::Warning:
    return "warning: check '" + f.check + "': " + f.message;
  case Finding::Level::Skipped:
    return "skipped: check '" + f.check + "': " + f.message;
  }
  return {};
}

Config load_config_text(const Schema& schema, std::string_view text, const std::string& source,
                        const std::string& profile) {
  auto doc = parse_yaml(text, source);
  if (doc->root == nullptr || doc->root->kind != YamlNode::Kind::Mapping)
    throw Error(source + ": expected a mapping (a Megatron-Bridge config)");
  std::vector<std::string> candidates;
  if (!profile.empty()) {
    (void)schema.profile(profile);
    candidates.push_back(profile);
  } else {
    candidates.push_back(schema.default_profile());
    for (const ProfileSpec& p : schema.profiles())
      if (p.name != schema.default_profile())
        candidates.push_back(p.name);
  }
  // Not owning: the caller keeps the schema alive (it belongs to the Compiler).
  const std::shared_ptr<const Schema> ref(std::shared_ptr<const Schema>{}, &schema);
  std::optional<Error> first_error;
  for (const std::string& p : candidates) {
    try {
      Value root = schema.instantiate(schema.root(), p);
      TypingContext ctx{doc.get(), p, true, true};
      schema.overlay(root, *doc->root, "", ctx);
      if (root.as_map().find("model") == nullptr)
        throw Error(source + ": no 'model' section; a config needs model._target_ and its fields");
      return Config(ref, p, std::move(root));
    } catch (const Error& e) {
      if (!first_error)
        first_error = e;
    }
  }
  throw *first_error;
}

} // namespace qr
