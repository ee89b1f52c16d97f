#include "config/config.h"

#include "support/error.h"
#include "support/suggest.h"

namespace qr {

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '.') {
      if (i == start)
        throw Error("bad key '" + std::string(path) + "': empty name " +
                    (i == 0             ? "at the start"
                     : i == path.size() ? "at the end"
                                        : "between dots") +
                    "; keys look like section.field");
      parts.emplace_back(path.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

Config::Config(std::shared_ptr<const Schema> schema, std::string profile, Value root)
    : schema_(std::move(schema)), profile_(std::move(profile)), root_(std::move(root)) {}

const Value* Config::find(std::string_view path) const {
  return const_cast<Config*>(this)->find_mut(split_path(path));
}

const Value& Config::at(std::string_view path) const {
  const Value* v = find(path);
  if (v == nullptr)
    throw Error("config has no '" + std::string(path) + "'");
  return *v;
}

Value* Config::find_mut(const std::vector<std::string>& parts) {
  Value* cur = &root_;
  for (const std::string& p : parts) {
    if (!cur->is_map())
      return nullptr;
    cur = cur->as_map().find(p);
    if (cur == nullptr)
      return nullptr;
  }
  return cur;
}

std::optional<FieldRef> Config::resolve(std::string_view path, std::string* why) const {
  const std::vector<std::string> parts = split_path(path);
  const Value* cur = &root_;
  FieldRef ref;
  std::string walked;
  auto fail = [&](const std::string& msg) -> std::optional<FieldRef> {
    if (why != nullptr)
      *why = msg;
    return std::nullopt;
  };
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string& key = parts[i];
    const std::string here = join_path(walked, key);
    const ClassSpec* cls = cur != nullptr ? schema_->class_of(*cur) : nullptr;
    if (cls != nullptr) {
      const FieldSpec* f = cls->field(key);
      if (f == nullptr || !f->in_profile(profile_)) {
        if (f != nullptr)
          return fail("'" + here + "' is not a field in Megatron-Core profile '" + profile_ + "'" +
                      schema_->other_profile_hint(*cls, key));
        std::vector<std::string> names = schema_->field_names(*cls, profile_);
        for (std::string& n : names)
          n = join_path(walked, n);
        return fail("no such key '" + here + "'" + did_you_mean(here, names));
      }
      ref = {f->type.get(), cls, f, false};
    } else if (ref.type != nullptr && ref.type->find(Type::Kind::Map) != nullptr &&
               cur != nullptr && cur->is_map() && cur->target().empty()) {
      ref = {ref.type->find(Type::Kind::Map)->elem.get(), nullptr, nullptr, true};
    } else if (ref.type != nullptr && ref.type->kind == Type::Kind::Any && cur != nullptr &&
               cur->is_map()) {
      ref = {ref.type, nullptr, nullptr, true};
    } else if (cur == nullptr || cur->is_null()) {
      return fail("'" + walked + "' is null, so '" + here + "' does not exist; set '" + walked +
                  "' first");
    } else {
      return fail("'" + walked + "' is a " + std::string(kind_name(*cur)) + ", not a section; '" +
                  here + "' does not exist");
    }
    walked = here;
    cur = cur->is_map() ? cur->as_map().find(key) : nullptr;
  }
  return ref;
}

bool Config::has_field(std::string_view path) const {
  const auto ref = resolve(path, nullptr);
  return ref.has_value() && ref->field != nullptr;
}

void Config::set(std::string_view path, Value v) {
  std::string why;
  const auto ref = resolve(path, &why);
  if (!ref)
    throw Error(why);
  if (const std::string bad = schema_->check(v, *ref->type, profile_); !bad.empty())
    throw Error("'" + std::string(path) + "': " + bad);
  std::vector<std::string> parts = split_path(path);
  const std::string last = parts.back();
  parts.pop_back();
  Value* parent = find_mut(parts);
  if (parent == nullptr || !parent->is_map())
    throw Error("cannot set '" + std::string(path) + "': its parent is missing");
  Write w{step_, std::string(path), std::nullopt, v};
  if (const Value* old = parent->as_map().find(last))
    w.before = *old;
  parent->as_map().set(last, std::move(v));
  writes_.push_back(std::move(w));
}

bool Config::erase(std::string_view path) {
  std::vector<std::string> parts = split_path(path);
  const std::string last = parts.back();
  parts.pop_back();
  Value* parent = find_mut(parts);
  if (parent == nullptr || !parent->is_map())
    return false;
  const Value* old = parent->as_map().find(last);
  if (old == nullptr)
    return false;
  writes_.push_back({step_, std::string(path), *old, std::nullopt});
  parent->as_map().erase(last);
  return true;
}

} // namespace qr
