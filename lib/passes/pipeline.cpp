#include "passes/pipeline.h"

#include "passes/invariants.h"
#include "passes/registry.h"
#include "support/error.h"
#include "support/suggest.h"
#include "yaml/yaml_write.h"

#include <algorithm>
#include <map>
#include <set>
#include <spdlog/spdlog.h>

namespace qr {
namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return std::string(s);
}

// Splits at commas outside brackets and quotes; `what` names the text in errors.
std::vector<std::string> split_top_level(std::string_view text, const std::string& what) {
  std::vector<std::string> parts;
  std::vector<char> stack;
  char quote = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == quote)
        quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '{' || c == '[') {
      stack.push_back(c);
    } else if (c == '}' || c == ']') {
      const char open = c == '}' ? '{' : '[';
      if (stack.empty() || stack.back() != open)
        throw Error(what + ": unbalanced '" + std::string(1, c) + "' at offset " +
                    std::to_string(i) + " in '" + std::string(text) + "'");
      stack.pop_back();
    } else if (c == ',' && stack.empty()) {
      parts.emplace_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  if (quote != 0)
    throw Error(what + ": unterminated quote in '" + std::string(text) + "'");
  if (!stack.empty())
    throw Error(what + ": unbalanced '" + std::string(1, stack.back()) + "' in '" +
                std::string(text) + "' (missing '" + (stack.back() == '{' ? "}" : "]") + "')");
  parts.emplace_back(text.substr(start));
  return parts;
}

void parse_into(std::string_view text, std::vector<PassInvocation>& out, const std::string& via) {
  if (trim(text).empty())
    throw Error("pipeline: empty pipeline text; give passes separated by commas, e.g. "
                "'precision{p=bf16},qwen35-vl-common'");
  const std::vector<std::string> elements = split_top_level(text, "pipeline");
  for (std::size_t i = 0; i < elements.size(); ++i) {
    const std::string element = trim(elements[i]);
    const std::size_t index = out.size() + 1;
    if (element.empty()) {
      const char* where = elements.size() == 1       ? ""
                          : i == 0                   ? " (leading comma)"
                          : i + 1 == elements.size() ? " (trailing comma)"
                                                     : " (two commas in a row)";
      throw Error("pipeline: empty element at position " + std::to_string(index) + where);
    }
    const std::size_t brace = element.find('{');
    const std::string name = trim(element.substr(0, brace));
    if (name.empty() || name[0] == '-' ||
        name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos)
      throw Error("pipeline: bad pass name '" + name + "' at position " + std::to_string(index) +
                  "; names are lower-case words joined by '-'");
    std::string options_text;
    bool has_options = false;
    if (brace != std::string::npos) {
      if (element.back() != '}')
        throw Error("pipeline: text after '}' in '" + element + "' at position " +
                    std::to_string(index));
      options_text = element.substr(brace + 1, element.size() - brace - 2);
      has_options = true;
    }
    if (const NamedPipeline* named = find_named_pipeline(name)) {
      if (has_options)
        throw Error("pipeline: '" + name + "' (position " + std::to_string(index) +
                    ") is a named pipeline (" + named->expansion + ") and takes no options");
      parse_into(named->expansion, out, name);
      continue;
    }
    const PassInfo* info = find_pass(name);
    if (info == nullptr)
      throw Error("pipeline: unknown pass '" + name + "' at position " + std::to_string(index) +
                  did_you_mean(name, registered_names()) +
                  "; 'qwen-recipe list passes' shows them all");
    PassInvocation inv;
    inv.info = info;
    inv.via = via;
    if (has_options && !trim(options_text).empty()) {
      for (const std::string& opt :
           split_top_level(options_text, "pipeline: pass '" + name + "'")) {
        const std::string o = trim(opt);
        const std::size_t eq = o.find('=');
        if (o.empty())
          throw Error("pipeline: pass '" + name + "' (position " + std::to_string(index) +
                      ") has an empty option (stray comma?)");
        if (eq == std::string::npos || trim(o.substr(0, eq)).empty())
          throw Error("pipeline: option '" + o + "' of pass '" + name + "' (position " +
                      std::to_string(index) + ") needs the form key=value");
        inv.raw_options.emplace_back(trim(o.substr(0, eq)), trim(o.substr(eq + 1)));
      }
    }
    out.push_back(std::move(inv));
  }
}

std::string option_list(const PassInfo& info) {
  std::string out;
  for (const PassOption& o : info.options)
    out += (out.empty() ? "" : ", ") + o.name;
  return out.empty() ? "none" : out;
}

std::string format_option_value(const Value& v) {
  return to_flow_yaml(v, ",");
}

} // namespace

const Waiver* Waivers::find(Waiver::Kind kind, std::string_view name) const {
  auto it = std::find_if(listed.begin(), listed.end(),
                         [&](const Waiver& w) { return w.kind == kind && w.name == name; });
  return it == listed.end() ? nullptr : &*it;
}

std::string PassInvocation::text() const {
  if (raw_options.empty())
    return info->name;
  std::string out = info->name + "{";
  for (std::size_t i = 0; i < raw_options.size(); ++i) {
    if (i > 0)
      out += ",";
    const Value* typed = args.find(raw_options[i].first);
    out += raw_options[i].first + "=" +
           (typed != nullptr ? format_option_value(*typed) : raw_options[i].second);
  }
  return out + "}";
}

std::string PassInvocation::label() const {
  return "pass '" + info->name + "' (position " + std::to_string(position) + ")";
}

Pipeline Pipeline::parse(std::string_view text) {
  Pipeline p;
  parse_into(text, p.passes_, "");
  for (std::size_t i = 0; i < p.passes_.size(); ++i)
    p.passes_[i].position = static_cast<int>(i + 1);
  return p;
}

void Pipeline::bind(const Config& base, const Presets& presets) {
  for (PassInvocation& inv : passes_) {
    const PassInfo& info = *inv.info;
    if (info.bind_free_options) {
      std::set<std::string> seen;
      for (const auto& [k, v] : inv.raw_options)
        if (!seen.insert(k).second)
          throw Error("pipeline: " + inv.label() + " sets '" + k + "' twice");
      try {
        inv.args = info.bind_free_options(inv.raw_options, base, presets);
      } catch (const Error& e) {
        throw Error("pipeline: " + inv.label() + ": " + e.what());
      }
      continue;
    }
    std::vector<std::string> names;
    for (const PassOption& o : info.options)
      names.push_back(o.name);
    for (const auto& [key, text] : inv.raw_options) {
      auto it = std::find_if(info.options.begin(), info.options.end(),
                             [&key = key](const PassOption& o) { return o.name == key; });
      if (it == info.options.end())
        throw Error("pipeline: " + inv.label() + " has no option '" + key + "'" +
                    did_you_mean(key, names) + "; its options: " + option_list(info));
      if (inv.args.has(key))
        throw Error("pipeline: " + inv.label() + " sets option '" + key + "' twice");
      // `k=` is the empty string.
      inv.args.set(key, base.schema().parse_value(
                            text.empty() ? "''" : text, *parse_type(it->type), key, base.profile(),
                            "pipeline: " + inv.label() + " option '" + key + "=" + text + "'"));
    }
    for (const PassOption& o : info.options)
      if (o.required && !inv.args.has(o.name))
        throw Error("pipeline: " + inv.label() + " needs option '" + o.name + "' (" + o.help +
                    "), e.g. " + info.name + "{" + o.name + "=...}");
  }
  base_properties_.clear();
  for (const PassProperty& p : pass_properties())
    if (p.holds_in != nullptr && p.holds_in(base))
      base_properties_.insert(p.name);
}

namespace {

// "'a', 'b' or 'c'": the passes that provide `property`, for the fix in an error.
std::string quoted_providers(const std::string& property) {
  const std::vector<std::string> names = providers_of(property);
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + ("'" + names[i] + "'");
  return out;
}

std::string meaning_of(const std::string& property) {
  const PassProperty* p = find_property(property);
  if (p == nullptr)
    throw Error("internal: unknown pass property '" + property + "'");
  return p->meaning;
}

} // namespace

void Pipeline::check_order() const {
  check_pass_order(passes_, base_properties_);
}

void check_pass_order(const std::vector<PassInvocation>& passes, std::set<std::string> current) {
  std::map<std::string, const PassInvocation*> destroyed_by;
  auto provider = [&](const std::string& property, std::size_t from,
                      std::size_t to) -> const PassInvocation* {
    for (std::size_t i = from; i < to; ++i)
      if (passes[i].info->provides(property))
        return &passes[i];
    return nullptr;
  };
  auto must_run_after = [](const PassInvocation& a, const PassInvocation& b,
                           const std::string& why) {
    return Error("pipeline: " + a.label() + " must run after '" + b.info->name + "' (position " +
                 std::to_string(b.position) + "): " + why + "; move '" + a.info->name +
                 "' after '" + b.info->name + "'");
  };
  for (const PassInvocation& a : passes) {
    const auto here = static_cast<std::size_t>(a.position - 1);
    for (const PropertyRule& rule : a.info->after)
      if (const PassInvocation* b = provider(rule.property, here + 1, passes.size()))
        throw must_run_after(a, *b, rule.why);
    for (const PropertyRule& rule : a.info->required) {
      if (current.count(rule.property))
        continue;
      if (const PassInvocation* b = provider(rule.property, here + 1, passes.size()))
        throw must_run_after(a, *b, rule.why);
      const std::string lost = destroyed_by.count(rule.property)
                                   ? "which " + destroyed_by[rule.property]->label() + " destroys"
                                   : "which no pass before it provides";
      throw Error("pipeline: " + a.label() + " requires property '" + rule.property + "' (" +
                  meaning_of(rule.property) + "), " + lost + ": " + rule.why + "; add " +
                  quoted_providers(rule.property) + " before it");
    }
    for (const PropertyRule& rule : a.info->before)
      if (const PassInvocation* b = provider(rule.property, 0, here))
        throw Error("pipeline: " + a.label() + " must run before '" + b->info->name +
                    "' (position " + std::to_string(b->position) + "): " + rule.why + "; move '" +
                    a.info->name + "' before '" + b->info->name + "'");
    if (a.info->last && here + 1 != passes.size()) {
      const PassInvocation& next = passes[here + 1];
      throw Error("pipeline: " + a.label() + " must be the last pass, but " + next.label() +
                  " follows it; move '" + a.info->name + "' to the end");
    }
    for (const std::string& p : a.info->provided) {
      current.insert(p);
      destroyed_by.erase(p);
    }
    for (const std::string& p : a.info->destroyed)
      if (current.erase(p) > 0)
        destroyed_by[p] = &a;
  }
}

void Pipeline::insert(std::size_t index, const Pipeline& other) {
  passes_.insert(passes_.begin() + static_cast<std::ptrdiff_t>(index), other.passes_.begin(),
                 other.passes_.end());
  for (std::size_t i = 0; i < passes_.size(); ++i)
    passes_[i].position = static_cast<int>(i + 1);
}

std::optional<std::size_t> Pipeline::last_index_of(std::string_view pass) const {
  for (std::size_t i = passes_.size(); i-- > 0;)
    if (passes_[i].info->name == pass)
      return i;
  return std::nullopt;
}

std::string Pipeline::text() const {
  std::string out;
  for (const PassInvocation& inv : passes_)
    out += (out.empty() ? "" : ",") + inv.text();
  return out;
}

namespace {

void check_invariants(const Config& config, const std::vector<const InvariantInfo*>& which,
                      const Waivers& waivers, const std::string& where) {
  for (const InvariantInfo* inv : which) {
    const std::string problem = inv->check(config);
    if (problem.empty())
      continue;
    if (const Waiver* waived = waivers.find(Waiver::Kind::Invariant, inv->name)) {
      spdlog::warn("invariant '{}' does not hold {} (waived by the recipe: {}): {}", inv->name,
                   where, waived->reason, problem);
      continue;
    }
    throw Error("invariant '" + inv->name + "' failed " + where + ": " + problem);
  }
}

std::vector<const InvariantInfo*> invariants(bool include_final) {
  std::vector<const InvariantInfo*> out;
  for (const InvariantInfo& i : invariant_registry())
    if (i.when == InvariantInfo::When::Always || include_final)
      out.push_back(&i);
  return out;
}

} // namespace

void run_passes(const Pipeline& pipeline, const Waivers& waivers, Config& config,
                const Presets& presets, const RunHooks& hooks) {
  const auto always = invariants(false);
  check_invariants(config, always, waivers, "in the base config (pipeline start)");
  for (const PassInvocation& inv : pipeline.passes()) {
    config.begin_step(inv.step());
    const Value before = config.root();
    PassContext ctx(config, *inv.info, inv.args, presets);
    inv.info->run(ctx);
    auto to_check = always;
    for (const std::string& name : inv.info->ensures) {
      const InvariantInfo* i = find_invariant(name);
      if (i == nullptr)
        throw Error("internal: pass '" + inv.info->name + "' ensures unknown invariant '" + name +
                    "'");
      if (std::find(to_check.begin(), to_check.end(), i) == to_check.end())
        to_check.push_back(i);
    }
    check_invariants(config, to_check, waivers, "after " + inv.label());
    if (hooks.after_change && !(before == config.root()))
      hooks.after_change(inv.info->name + " (position " + std::to_string(inv.position) + ")",
                         config);
  }
}

void run_overrides(const std::vector<Override>& overrides, Config& config, const RunHooks& hooks) {
  config.begin_step(StepId::overrides());
  const Value before = config.root();
  for (const Override& o : overrides)
    apply_override(config, o);
  if (hooks.after_change && !overrides.empty() && !(before == config.root()))
    hooks.after_change("overrides", config);
}

void check_final_invariants(const Pipeline& pipeline, const std::vector<Override>& overrides,
                            const Waivers& waivers, const Config& config, bool shortcuts) {
  const std::string where =
      !overrides.empty() ? std::string("after overrides")
      : shortcuts        ? std::string("after the shortcuts")
      : pipeline.passes().empty()
          ? std::string("in the base config")
          : "at the end of the pipeline (after " + pipeline.passes().back().label() + ")";
  check_invariants(config, invariants(true), waivers, where);
}

} // namespace qr
