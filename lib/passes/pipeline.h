// Pipelines are text: `precision{p=fp8mx},qwen35-vl-common,gdn-backend{backend=fla}`.
// Parsing names every error's element and offending text; ordering is checked over the whole
// list before any pass runs, by simulating the passes' properties (passes.def); invariants are
// checked after each pass, and after overrides.
#pragma once

#include "overrides/overrides.h"
#include "passes/pass.h"

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qr {

struct PassInvocation {
  const PassInfo* info = nullptr;
  RawOptions raw_options; // key, value text
  PassArgs args;          // typed by bind()
  int position = 0;       // 1-based, after expansion
  std::string via;        // named pipeline, if expanded

  // The step its writes are logged under.
  [[nodiscard]] StepId step() const { return StepId::of_pass(info->name, position); }

  // `name{k=v,...}`, options in the order given.
  [[nodiscard]] std::string text() const;
  // "pass 'x' (position N)"
  [[nodiscard]] std::string label() const;
};

// A recipe may waive an invariant or a start-up check that its upstream original breaks, with
// the reason; the build then warns instead of failing.
struct Waiver {
  enum class Kind { Invariant, Check }; // a check: a start-up check of lib/validate
  std::string name;
  std::string reason;
  Kind kind = Kind::Invariant;
};

// A recipe's waivers in the order it lists them, each classified once when the catalogue loads
// (classify_waivers, lib/validate).
struct Waivers {
  std::vector<Waiver> listed;

  [[nodiscard]] const Waiver* find(Waiver::Kind kind, std::string_view name) const;
};

class Pipeline {
public:
  // Parses and expands named pipelines; throws qr::Error for bad syntax or unknown passes.
  static Pipeline parse(std::string_view text);

  // Types every pass's options (against the base config for `set`/`env`), and notes the
  // properties the base config already has.
  void bind(const Config& base, const Presets& presets);
  // Simulates the passes' properties in order (GCC: a pass's `required` must hold; then
  // current = (current | provided) - destroyed) and checks the `after`/`before`/`last` rules.
  // Throws when one is broken, naming the passes, their positions, the property and the fix.
  void check_order() const;

  // Inserts `other`'s passes before position `index` (0-based) and renumbers.
  void insert(std::size_t index, const Pipeline& other);
  // The 0-based index of the last invocation of `pass`, if any.
  [[nodiscard]] std::optional<std::size_t> last_index_of(std::string_view pass) const;

  [[nodiscard]] const std::vector<PassInvocation>& passes() const { return passes_; }
  // Canonical one-line text (parses back to the same pipeline).
  [[nodiscard]] std::string text() const;

private:
  std::vector<PassInvocation> passes_;
  std::set<std::string> base_properties_; // what the base config has (bind)
};

// The check behind Pipeline::check_order, over any invocations (positions 1..n in order) and
// the properties that hold before the first.
void check_pass_order(const std::vector<PassInvocation>& passes, std::set<std::string> current);

struct RunHooks {
  // Called after each step that changed the config (`--print-after-all`).
  std::function<void(const std::string& step, const Config&)> after_change;
};

// The steps that write the config, each logged under its StepId and reported to `hooks`: the
// passes in order, invariants checked after each (the `always` ones and the pass's `ensures`),
// then the overrides as one more step. The final invariants (all of them) come after the last.
void run_passes(const Pipeline& pipeline, const Waivers& waivers, Config& config,
                const Presets& presets, const RunHooks& hooks = {});
void run_overrides(const std::vector<Override>& overrides, Config& config,
                   const RunHooks& hooks = {});
// Every invariant on the finished config; an error says where the build stood: after the
// overrides, after the launcher shortcuts (`shortcuts`: they ran), or after the pipeline's last
// pass.
void check_final_invariants(const Pipeline& pipeline, const std::vector<Override>& overrides,
                            const Waivers& waivers, const Config& config, bool shortcuts = false);

} // namespace qr
