#include "overrides/shortcuts.h"

#include "support/error.h"
#include "support/suggest.h"

#include <algorithm>
#include <spdlog/spdlog.h>

namespace qr {
namespace {

const Value* env_var(const Config& c, std::string_view name) {
  return c.find("env_vars." + std::string(name));
}

std::string str_of(const Value* v) {
  return v != nullptr && v->is_str() ? v->as_str() : std::string();
}

std::int64_t int_or(const Value* v, std::int64_t fallback) {
  return v != nullptr && v->is_int() ? v->as_int() : fallback;
}

// Upstream's GPU families (utils/overrides.py): 8-GPU HGX nodes and 72-GPU NVL72 racks.
bool is_hgx(std::string_view gpu) {
  return gpu == "h100" || gpu == "b200" || gpu == "b300";
}
bool is_nvl72(std::string_view gpu) {
  return gpu == "gb200" || gpu == "gb300" || gpu == "vr200";
}

} // namespace

const std::vector<ShortcutInfo>& shortcut_table() {
  static const std::vector<ShortcutInfo> table = {
      {"tp", "model.tensor_model_parallel_size", false,
       "tensor parallel size; model.sequence_parallel follows (true when > 1)"},
      {"pp", "model.pipeline_model_parallel_size", false, "pipeline parallel size"},
      {"cp", "model.context_parallel_size", false, "context parallel size"},
      {"ep", "model.expert_model_parallel_size", false,
       "expert parallel size; HybridEP's ranks per NVLink domain follow"},
      {"etp", "model.expert_tensor_parallel_size", true,
       "expert tensor parallel size (None: null, the TP size)"},
      {"vp", "model.virtual_pipeline_model_parallel_size", true,
       "virtual pipeline parallel size (None: null, no interleaving)"},
      {"mbs", "train.micro_batch_size", false, "micro batch size"},
      {"gbs", "train.global_batch_size", false, "global batch size"},
  };
  return table;
}

Shortcut parse_shortcut(std::string_view name, std::string_view text) {
  const auto& table = shortcut_table();
  const auto it = std::find_if(table.begin(), table.end(),
                               [&](const ShortcutInfo& i) { return name == i.name; });
  if (it == table.end()) {
    std::vector<std::string> names;
    for (const ShortcutInfo& i : table)
      names.emplace_back(i.name);
    throw Error("unknown shortcut '--" + std::string(name) + "'" +
                did_you_mean(std::string(name), names));
  }
  Shortcut s{&*it, std::nullopt};
  if (it->nullable && (text == "None" || text == "none" || text == "null"))
    return s;
  const std::string option = "--" + std::string(name);
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || text.find_first_not_of('0') == std::string::npos || text[0] == '0' ||
      text.size() > 9)
    throw Error(option + " '" + std::string(text) + "': expected a whole number from 1 to " +
                "999999999 without leading zeros" +
                (it->nullable ? std::string(", or None for null") : std::string()) +
                (text.find_first_of(",(") != std::string_view::npos
                     ? "; to sweep it, give --multirun --out-dir DIR"
                     : ""));
  s.value = std::stoll(std::string(text));
  return s;
}

std::string shortcut_words(const Shortcut& s) {
  return "--" + std::string(s.info->name) + " " + (s.value ? std::to_string(*s.value) : "None");
}

void apply_shortcuts(Config& config, const std::vector<Shortcut>& shortcuts, std::string_view gpu) {
  if (shortcuts.empty())
    return;
  const auto& table = shortcut_table();
  std::vector<const Shortcut*> chosen(table.size(), nullptr);
  for (const Shortcut& s : shortcuts)
    chosen[static_cast<std::size_t>(s.info - table.data())] = &s;
  auto given = [&](std::string_view name) -> const Shortcut* {
    for (std::size_t i = 0; i < table.size(); ++i)
      if (name == table[i].name)
        return chosen[i];
    return nullptr;
  };
  auto note = [](const std::string& text) { spdlog::info("shortcuts: {}", text); };
  // What upstream's flat runner reads as the recipe's own, before any shortcut changes it.
  const std::string backend = str_of(config.find("model.moe_flex_dispatcher_backend"));
  const Value* a2a = config.find("comm_overlap.overlap_moe_expert_parallel_comm");
  const bool moe_a2a_overlap = a2a != nullptr && a2a->is_bool() && a2a->as_bool();

  for (const Shortcut* s : chosen) {
    if (s == nullptr)
      continue;
    config.begin_step(StepId::shortcut(shortcut_words(*s)));
    config.set(s->info->field, s->value ? Value(*s->value) : Value(Null{}));
    // set_user_overrides: `recipe.model.sequence_parallel = bool(tp > 1)`.
    if (std::string_view(s->info->name) == "tp")
      config.set("model.sequence_parallel", *s->value > 1);
  }

  const Value* env = config.find("env_vars");
  const bool has_env = env != nullptr && env->is_map();
  const Shortcut* tp = given("tp");
  const Shortcut* cp = given("cp");
  if ((tp != nullptr || cp != nullptr) && has_env) {
    config.begin_step(StepId::shortcut(tp != nullptr ? shortcut_words(*tp) : shortcut_words(*cp)));
    const std::int64_t tp_size = int_or(config.find("model.tensor_model_parallel_size"), 1);
    const std::int64_t cp_size = int_or(config.find("model.context_parallel_size"), 1);
    // Every GPU but H100 gets 32; H100 one connection for TP or CP without MoE a2a overlap.
    std::int64_t connections = backend == "deepep" || backend == "hybridep" ? 32 : 8;
    if (gpu != "h100")
      connections = 32;
    else if ((tp_size > 1 || cp_size > 1) && !moe_a2a_overlap)
      connections = 1;
    if (gpu.empty())
      note("CUDA_DEVICE_MAX_CONNECTIONS left as it is: a --base build names no GPU, and the value "
           "upstream sets depends on it");
    else
      config.set("env_vars.CUDA_DEVICE_MAX_CONNECTIONS", connections);
  }

  const Shortcut* ep = given("ep");
  if (ep != nullptr && backend == "hybridep" && has_env) {
    config.begin_step(StepId::shortcut(shortcut_words(*ep)));
    // The NVLink domain the recipe's HybridEP environment names, else the GPU's.
    const Value* domain_var = env_var(config, "NVLINK_DOMAIN_SIZE");
    std::int64_t domain = int_or(domain_var, is_hgx(gpu) ? 8 : is_nvl72(gpu) ? 72 : 0);
    if (domain_var != nullptr && domain_var->is_str()) {
      try {
        domain = std::stoll(domain_var->as_str());
      } catch (const std::exception&) {
        domain = 0;
      }
    }
    if (domain <= 0) {
      note("env_vars.NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN left as it is: no "
           "env_vars.NVLINK_DOMAIN_SIZE and no GPU to take the NVLink domain from");
    } else {
      const std::int64_t ep_size = *ep->value;
      // An NVL72 rack is one domain that EP must fit in; an HGX node caps the ranks at 8.
      if (domain >= 72 && ep_size > domain)
        throw Error(shortcut_words(*ep) + ": HybridEP's expert parallel size must not exceed the " +
                    std::to_string(domain) + "-GPU NVLink domain (env_vars.NVLINK_DOMAIN_SIZE)");
      config.set("env_vars.NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN", std::min(ep_size, domain));
    }
  }

  const Shortcut* pp = given("pp");
  if (pp != nullptr && has_env && env_var(config, "NCCL_P2P_NET_CHUNKSIZE") != nullptr) {
    // Upstream keeps the larger chunk only for Llama 3 70B / 405B pretraining and Llama SFT.
    config.begin_step(StepId::shortcut(shortcut_words(*pp)));
    config.erase("env_vars.NCCL_P2P_NET_CHUNKSIZE");
  }
}

} // namespace qr
