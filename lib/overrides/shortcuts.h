// The perf launcher's shortcuts: `--tp --pp --cp --ep --etp --vp --mbs --gbs`, as Megatron-Bridge's
// scripts/performance/run_script.py takes `-tp -pp -cp -ep -et -vp -mb -gb`. They are one build
// step, after the passes and before the dotlist (which can still change anything they set), and
// they set what depends on them as upstream's scripts/performance/utils/overrides.py does:
// `set_user_overrides` (the fields; sequence parallelism on exactly when TP > 1) and
// `_apply_flat_cli_environment_compatibility` (env_vars: CUDA_DEVICE_MAX_CONNECTIONS when TP or
// CP is given, HybridEP's ranks per NVLink domain when EP is, NCCL_P2P_NET_CHUNKSIZE dropped when
// PP is). docs/build.md lists every write.
#pragma once

#include "config/config.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qr {

struct ShortcutInfo {
  const char* name;  // the option without dashes: "tp"
  const char* field; // the field it sets
  bool nullable;     // takes None (upstream's `-vp None`, `-et` with no value): the field null
  const char* help;
};

// Every shortcut, in the order they are applied.
const std::vector<ShortcutInfo>& shortcut_table();

struct Shortcut {
  const ShortcutInfo* info = nullptr;
  std::optional<std::int64_t> value; // empty: None
};

// `--tp` and its text: a whole number from 1 up, or None (none) where the field takes null.
// Throws qr::Error naming the option and the text.
Shortcut parse_shortcut(std::string_view name, std::string_view text);

// The shortcut as command-line words: "--tp 2".
std::string shortcut_words(const Shortcut& s);

// Applies the shortcuts (table order; a name given twice: the last wins) and their dependents to
// `config`, each write logged under its own step ("--tp 2"). `gpu` is the recipe's GPU (empty
// with --base), which picks the CUDA_DEVICE_MAX_CONNECTIONS rule and the NVLink domain when the
// config has no env_vars.NVLINK_DOMAIN_SIZE. Throws qr::Error where upstream refuses (EP over a
// 72-GPU NVLink domain with HybridEP). What it leaves alone for want of a GPU is logged as a note.
void apply_shortcuts(Config& config, const std::vector<Shortcut>& shortcuts, std::string_view gpu);

} // namespace qr
