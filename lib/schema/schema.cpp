#include "schema/schema.h"

#include "support/error.h"
#include "support/suggest.h"
#include "yaml/scalars.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <set>
#include <unordered_set>

namespace qr {

// ---------------------------------------------------------------------------------------------
// Types

bool Type::accepts_null() const {
  return kind == Kind::Any || find(Kind::Null) != nullptr;
}

const Type* Type::find(Kind k) const {
  if (kind == k)
    return this;
  if (kind == Kind::Union)
    for (const TypePtr& a : alts)
      if (a->kind == k)
        return a.get();
  return nullptr;
}

namespace {

class TypeParser {
public:
  explicit TypeParser(std::string_view text) : s_(text) {}

  TypePtr parse() {
    TypePtr t = union_type();
    skip_ws();
    if (pos_ != s_.size())
      fail("unexpected '" + std::string(s_.substr(pos_)) + "'");
    return t;
  }

private:
  std::string_view s_;
  std::size_t pos_ = 0;

  [[noreturn]] void fail(const std::string& why) const {
    throw Error("schema type '" + std::string(s_) + "': " + why);
  }
  void skip_ws() {
    while (pos_ < s_.size() && s_[pos_] == ' ')
      ++pos_;
  }
  bool eat(char c) {
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c))
      fail(std::string("expected '") + c + "'");
  }
  std::string ident() {
    skip_ws();
    const std::size_t start = pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
      ++pos_;
    if (start == pos_)
      fail("expected a name at offset " + std::to_string(start));
    return std::string(s_.substr(start, pos_ - start));
  }

  // A string choice: any text up to '|' or '}', trimmed (`off-by-one` is a valid choice).
  std::string choice() {
    skip_ws();
    const std::size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != '|' && s_[pos_] != '}')
      ++pos_;
    std::string_view c = s_.substr(start, pos_ - start);
    while (!c.empty() && c.back() == ' ')
      c.remove_suffix(1);
    if (c.empty())
      fail("empty choice at offset " + std::to_string(start));
    return std::string(c);
  }

  TypePtr union_type() {
    const std::size_t start = pos_;
    std::vector<TypePtr> alts;
    do
      for (TypePtr a : alternative())
        alts.push_back(std::move(a));
    while (eat('|'));
    if (alts.size() == 1)
      return alts[0];
    auto u = std::make_shared<Type>();
    u->kind = Type::Kind::Union;
    u->alts = std::move(alts);
    u->text = std::string(s_.substr(start, pos_ - start));
    return u;
  }

  // One alternative; `T?` is T or null.
  std::vector<TypePtr> alternative() {
    TypePtr t = primary();
    if (eat('?')) {
      auto null = std::make_shared<Type>();
      null->kind = Type::Kind::Null;
      null->text = "null";
      return {t, null};
    }
    return {t};
  }

  TypePtr primary() {
    skip_ws();
    const std::size_t start = pos_;
    auto t = std::make_shared<Type>();
    if (eat('\'')) {
      const std::size_t end = s_.find('\'', pos_);
      if (end == std::string_view::npos)
        fail("unterminated literal");
      t->kind = Type::Kind::Literal;
      t->name = std::string(s_.substr(pos_, end - pos_));
      pos_ = end + 1;
    } else {
      const std::string word = ident();
      static const std::map<std::string, Type::Kind> simple{
          {"any", Type::Kind::Any},     {"null", Type::Kind::Null},
          {"bool", Type::Kind::Bool},   {"int", Type::Kind::Int},
          {"float", Type::Kind::Float}, {"str", Type::Kind::Str},
          {"dtype", Type::Kind::Dtype}, {"callable", Type::Kind::Callable}};
      if (auto it = simple.find(word); it != simple.end()) {
        t->kind = it->second;
        if (t->kind == Type::Kind::Str && eat('{')) {
          do
            t->choices.push_back(choice());
          while (eat('|'));
          expect('}');
        }
      } else if (word == "list" || word == "map") {
        t->kind = word == "list" ? Type::Kind::List : Type::Kind::Map;
        expect('<');
        t->elem = union_type();
        expect('>');
      } else if (word == "enum" || word == "section") {
        t->kind = word == "enum" ? Type::Kind::Enum : Type::Kind::Section;
        expect('<');
        t->name = ident();
        expect('>');
      } else {
        fail("unknown type '" + word + "'");
      }
    }
    t->text = std::string(s_.substr(start, pos_ - start));
    return t;
  }
};

} // namespace

TypePtr parse_type(std::string_view text) {
  return TypeParser(text).parse();
}

// ---------------------------------------------------------------------------------------------
// Classes

bool FieldSpec::in_profile(std::string_view profile) const {
  return profiles.empty() || std::find(profiles.begin(), profiles.end(), profile) != profiles.end();
}

bool ClassSpec::is_a(const ClassSpec& other) const {
  for (const ClassSpec* c = this; c != nullptr; c = c->base)
    if (c == &other)
      return true;
  return false;
}

const FieldSpec* ClassSpec::field(std::string_view name) const {
  for (const ClassSpec* c = this; c != nullptr; c = c->base)
    if (auto it = c->own_fields.find(name); it != c->own_fields.end())
      return &it->second;
  return nullptr;
}

std::vector<const FieldSpec*> ClassSpec::all_fields() const {
  std::map<std::string_view, const FieldSpec*> seen;
  for (const ClassSpec* c = this; c != nullptr; c = c->base)
    for (const auto& [name, f] : c->own_fields)
      seen.emplace(name, &f); // the most derived declaration wins
  std::vector<const FieldSpec*> out;
  for (const auto& [name, f] : seen)
    out.push_back(f);
  return out;
}

std::string join_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

namespace {

const YamlNode* get(const YamlNode& map, std::string_view key) {
  for (const auto& [k, v] : map.entries)
    if (k->kind == YamlNode::Kind::Scalar && k->text == key)
      return v;
  return nullptr;
}

std::string text_of(const YamlNode& n) {
  switch (n.kind) {
  case YamlNode::Kind::Null:
    return "null";
  case YamlNode::Kind::Scalar:
    return "'" + clip(n.text) + "'";
  case YamlNode::Kind::Sequence:
    return "a list";
  case YamlNode::Kind::Mapping:
    return "a mapping";
  }
  return "?";
}

std::string require_str(const YamlDoc& doc, const YamlNode& map, std::string_view key) {
  const YamlNode* n = get(map, key);
  if (n == nullptr || n->kind != YamlNode::Kind::Scalar)
    throw Error(doc.where(map) + ": expected '" + std::string(key) + "' (a string)");
  return n->text;
}

const std::set<std::string>& bool_true() {
  static const std::set<std::string> s{"true", "True", "TRUE", "yes", "Yes",
                                       "YES",  "on",   "On",   "ON"};
  return s;
}
const std::set<std::string>& bool_false() {
  static const std::set<std::string> s{"false", "False", "FALSE", "no", "No",
                                       "NO",    "off",   "Off",   "OFF"};
  return s;
}

std::optional<std::int64_t> parse_int(const std::string& text) {
  return parse_decimal_int(text);
}

std::optional<double> parse_float(const std::string& text) {
  return parse_float_text(text);
}

const std::vector<std::string>& torch_dtypes() {
  static const std::vector<std::string> names{
      "torch.float32",       "torch.float16",     "torch.bfloat16", "torch.float64",
      "torch.float8_e4m3fn", "torch.float8_e5m2", "torch.int8",     "torch.uint8",
      "torch.int32",         "torch.int64",       "torch.bool"};
  return names;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Loading

std::shared_ptr<const Schema> Schema::load(const DataSource& data) {
  auto schema = std::make_shared<Schema>();
  Schema& s = *schema;

  std::vector<std::shared_ptr<YamlDoc>> docs; // keep nodes alive until defaults are typed
  auto load_doc = [&](const std::string& path) -> const YamlDoc& {
    docs.push_back(data.parse(path));
    if (docs.back()->root->kind != YamlNode::Kind::Mapping)
      throw Error(data.describe(path) + ": expected a mapping");
    return *docs.back();
  };

  // Profiles
  {
    const YamlDoc& doc = load_doc("schema/profiles.yaml");
    s.default_profile_ = require_str(doc, *doc.root, "default");
    const YamlNode* list = get(*doc.root, "profiles");
    if (list == nullptr || list->kind != YamlNode::Kind::Mapping)
      throw Error(doc.source + ": expected 'profiles' (a mapping)");
    for (const auto& [k, v] : list->entries)
      s.profiles_.push_back({k->text, v->kind == YamlNode::Kind::Scalar ? v->text : ""});
    (void)s.profile(s.default_profile_);
  }
  // Enums
  {
    const YamlDoc& doc = load_doc("schema/enums.yaml");
    const YamlNode* enums = get(*doc.root, "enums");
    if (enums == nullptr || enums->kind != YamlNode::Kind::Mapping)
      throw Error(doc.source + ": expected 'enums' (a mapping)");
    for (const auto& [k, v] : enums->entries) {
      EnumSpec e{k->text, require_str(doc, *v, "target"), {}};
      const YamlNode* members = get(*v, "members");
      if (members == nullptr || members->kind != YamlNode::Kind::Mapping)
        throw Error(doc.where(*v) + ": enum '" + e.name + "' needs 'members'");
      for (const auto& [mk, mv] : members->entries) {
        const auto value = parse_int(mv->text);
        if (!value)
          throw Error(doc.where(*mv) + ": enum member value must be an int");
        e.members.emplace_back(mk->text, *value);
      }
      s.enums_.push_back(std::move(e));
    }
  }
  // Classes, in two passes: declare, then type fields (types and defaults refer to classes).
  struct Pending {
    ClassSpec* cls;
    const YamlDoc* doc;
    const YamlNode* node;
  };
  std::vector<Pending> pending;
  for (const std::string& path : data.list("schema")) {
    if (path == "schema/profiles.yaml" || path == "schema/enums.yaml")
      continue;
    const YamlDoc& doc = load_doc(path);
    const YamlNode* classes = get(*doc.root, "classes");
    if (classes == nullptr || classes->kind != YamlNode::Kind::Sequence)
      throw Error(doc.source + ": expected 'classes' (a list)");
    for (const YamlNode* c : classes->items) {
      auto cls = std::make_unique<ClassSpec>();
      cls->name = require_str(doc, *c, "name");
      if (const YamlNode* a = get(*c, "abstract"))
        cls->abstract = a->text == "true";
      if (!cls->abstract)
        cls->target = require_str(doc, *c, "target");
      cls->file = path;
      if (s.class_named(cls->name) != nullptr)
        throw Error(doc.where(*c) + ": class '" + cls->name + "' is declared twice");
      pending.push_back({cls.get(), &doc, c});
      s.classes_.push_back(std::move(cls));
    }
  }
  for (const Pending& p : pending) {
    if (const YamlNode* ext = get(*p.node, "extends")) {
      p.cls->base = s.class_named(ext->text);
      if (p.cls->base == nullptr)
        throw Error(p.doc->where(*ext) + ": unknown base class '" + ext->text + "'");
    }
    const YamlNode* fields = get(*p.node, "fields");
    if (fields == nullptr || fields->kind != YamlNode::Kind::Mapping)
      throw Error(p.doc->where(*p.node) + ": class '" + p.cls->name + "' needs 'fields'");
    for (const auto& [k, v] : fields->entries) {
      FieldSpec f;
      f.name = k->text;
      f.owner = p.cls;
      f.type = parse_type(require_str(*p.doc, *v, "type"));
      if (const YamlNode* prof = get(*v, "profiles"))
        for (const YamlNode* item : prof->items) {
          (void)s.profile(item->text);
          f.profiles.push_back(item->text);
        }
      p.cls->own_fields.emplace(f.name, std::move(f));
    }
  }
  s.root_ = s.class_named("ConfigContainer");
  if (s.root_ == nullptr)
    throw Error("schema: no class 'ConfigContainer'");
  // Check every referenced class and enum exists, then type the defaults.
  std::function<void(const Type&, const std::string&)> check_refs = [&](const Type& t,
                                                                        const std::string& where) {
    if (t.kind == Type::Kind::Section && s.class_named(t.name) == nullptr)
      throw Error(where + ": unknown class '" + t.name + "'");
    if (t.kind == Type::Kind::Enum && s.enum_named(t.name) == nullptr)
      throw Error(where + ": unknown enum '" + t.name + "'");
    if (t.elem)
      check_refs(*t.elem, where);
    for (const TypePtr& a : t.alts)
      check_refs(*a, where);
  };
  for (const Pending& p : pending) {
    const YamlNode* fields = get(*p.node, "fields");
    for (const auto& [k, v] : fields->entries) {
      FieldSpec& f = p.cls->own_fields.at(k->text);
      const std::string where = p.doc->where(*v) + ": field '" + p.cls->name + "." + f.name + "'";
      check_refs(*f.type, where);
      const YamlNode* d = get(*v, "default");
      if (d == nullptr) {
        f.has_default = false;
        continue;
      }
      // A section default of {} means "the class defaults", built on demand per profile.
      const Type* section = f.type->find(Type::Kind::Section);
      if (section != nullptr && d->kind == YamlNode::Kind::Mapping && d->entries.empty()) {
        f.default_value = Map{};
        continue;
      }
      // `initial_loss_scale: float = 2**32` keeps its int default.
      TypingContext ctx{p.doc, s.default_profile_, true, true};
      f.default_value = s.coerce(*d, *f.type, p.cls->name + "." + f.name, ctx);
    }
  }
  return schema;
}

const ClassSpec* Schema::class_named(std::string_view name) const {
  for (const auto& c : classes_)
    if (c->name == name)
      return c.get();
  return nullptr;
}

const ClassSpec* Schema::class_by_target(std::string_view target) const {
  for (const auto& c : classes_)
    if (!c->abstract && c->target == target)
      return c.get();
  return nullptr;
}

const EnumSpec* Schema::enum_named(std::string_view name) const {
  for (const EnumSpec& e : enums_)
    if (e.name == name)
      return &e;
  return nullptr;
}

const ProfileSpec& Schema::profile(std::string_view name) const {
  for (const ProfileSpec& p : profiles_)
    if (p.name == name)
      return p;
  std::vector<std::string> names;
  for (const ProfileSpec& p : profiles_)
    names.push_back(p.name);
  std::string list;
  for (const std::string& n : names)
    list += (list.empty() ? "" : ", ") + n;
  throw Error("unknown Megatron-Core profile '" + std::string(name) + "'" +
              did_you_mean(name, names) + "; profiles: " + list);
}

const ClassSpec* Schema::class_of(const Value& section) const {
  const std::string_view t = section.target();
  return t.empty() ? nullptr : class_by_target(t);
}

std::vector<std::string> Schema::field_names(const ClassSpec& cls, std::string_view profile) const {
  std::vector<std::string> out;
  for (const FieldSpec* f : cls.all_fields())
    if (f->in_profile(profile))
      out.push_back(f->name);
  return out;
}

std::string Schema::other_profile_hint(const ClassSpec& cls, std::string_view field) const {
  const FieldSpec* f = cls.field(field);
  if (f == nullptr || f->profiles.empty())
    return {};
  std::string list;
  for (const std::string& p : f->profiles)
    list += (list.empty() ? "" : " or ") + ("--mcore " + p);
  return "; it exists only in Megatron-Core profile " + list;
}

Value Schema::instantiate(const ClassSpec& cls, std::string_view profile) const {
  Map m;
  m.set("_target_", cls.target);
  for (const FieldSpec* f : cls.all_fields()) {
    if (!f->in_profile(profile) || !f->has_default)
      continue;
    const Type* section = f->type->find(Type::Kind::Section);
    if (section != nullptr && f->default_value.is_map() && f->default_value.as_map().empty())
      m.set(f->name, instantiate(*class_named(section->name), profile));
    else
      m.set(f->name, f->default_value);
  }
  return m;
}

Value Schema::enum_value(std::string_view enum_name, std::string_view member) const {
  const EnumSpec* e = enum_named(enum_name);
  if (e == nullptr)
    throw Error("unknown enum '" + std::string(enum_name) + "'");
  for (const auto& [name, value] : e->members)
    if (name == member) {
      Map m;
      m.set("_args_", List{Value(value)});
      m.set("_call_", true);
      m.set("_name_", name);
      m.set("_target_", e->target);
      return m;
    }
  throw Error("enum " + e->name + " has no member '" + std::string(member) + "'");
}

Value Schema::dtype_value(std::string_view torch_name) {
  Map m;
  m.set("_call_", false);
  m.set("_target_", std::string(torch_name));
  return m;
}

// ---------------------------------------------------------------------------------------------
// Typing YAML nodes

Value Schema::parse_value(std::string_view text, const Type& type, const std::string& path,
                          std::string_view profile, const std::string& source) const {
  auto doc = parse_yaml(text, source);
  doc->has_positions = false;
  const TypingContext ctx{doc.get(), std::string(profile), true};
  return coerce(*doc->root, type, path, ctx);
}

Value Schema::coerce(const YamlNode& node, const Type& type, const std::string& path,
                     const TypingContext& ctx) const {
  const YamlDoc& doc = *ctx.doc;
  auto mismatch = [&]() -> Error {
    return Error(doc.where(node) + ": '" + path + "': expected " + type.text + ", got " +
                 text_of(node));
  };
  if (!node.tag.empty() && node.tag != "tag:yaml.org,2002:str" && type.kind != Type::Kind::Any)
    throw Error(doc.where(node) + ": '" + path + "': unsupported YAML tag '" + node.tag +
                "'; remove the tag");
  switch (type.kind) {
  case Type::Kind::Any:
    return to_untyped_value(doc, node);
  case Type::Kind::Union: {
    if (node.kind == YamlNode::Kind::Null) {
      if (type.accepts_null())
        return Null{};
      throw mismatch();
    }
    // A quoted scalar means a string wherever a string is allowed: '1' in `int | str`.
    if (node.kind == YamlNode::Kind::Scalar && !node.plain)
      if (const Type* str = type.find(Type::Kind::Str))
        return coerce(node, *str, path, ctx);
    for (const TypePtr& alt : type.alts) {
      if (alt->kind == Type::Kind::Null)
        continue;
      const bool shape_fits =
          (node.kind == YamlNode::Kind::Scalar &&
           (alt->kind != Type::Kind::List && alt->kind != Type::Kind::Map &&
            alt->kind != Type::Kind::Section)) ||
          (node.kind == YamlNode::Kind::Sequence && alt->kind == Type::Kind::List) ||
          (node.kind == YamlNode::Kind::Mapping &&
           (alt->kind == Type::Kind::Map || alt->kind == Type::Kind::Section ||
            alt->kind == Type::Kind::Enum || alt->kind == Type::Kind::Dtype ||
            alt->kind == Type::Kind::Callable || alt->kind == Type::Kind::Any));
      if (!shape_fits)
        continue;
      try {
        return coerce(node, *alt, path, ctx);
      } catch (const Error&) {
        if (node.kind != YamlNode::Kind::Scalar)
          throw; // a list or mapping that fails inside: report the inner error
      }
    }
    throw mismatch();
  }
  case Type::Kind::Null:
    if (node.kind == YamlNode::Kind::Null)
      return Null{};
    throw mismatch();
  case Type::Kind::List: {
    if (node.kind != YamlNode::Kind::Sequence)
      throw mismatch();
    List l;
    for (std::size_t i = 0; i < node.items.size(); ++i)
      l.push_back(coerce(*node.items[i], *type.elem, path + "[" + std::to_string(i) + "]", ctx));
    return l;
  }
  case Type::Kind::Map: {
    if (node.kind != YamlNode::Kind::Mapping)
      throw mismatch();
    Map m;
    std::unordered_set<std::string> seen; // a set, so that a big mapping reads in linear time
    for (const auto& [k, v] : node.entries) {
      if (k->kind != YamlNode::Kind::Scalar)
        throw Error(doc.where(*k) + ": '" + path + "': mapping keys must be scalars");
      Key key{k->text, false};
      if (k->plain && parse_int(k->text))
        key = {std::to_string(*parse_int(k->text)), true};
      if (!seen.insert(key.text).second)
        throw Error(doc.where(*k) + ": '" + join_path(path, k->text) + "': duplicate key" +
                    duplicate_key_hint(node, *k));
      m.append(key, coerce(*v, *type.elem, join_path(path, k->text), ctx));
    }
    return m;
  }
  case Type::Kind::Section: {
    const ClassSpec* declared = class_named(type.name);
    if (node.kind != YamlNode::Kind::Mapping)
      throw mismatch();
    return coerce_section(node, *declared, path, ctx);
  }
  case Type::Kind::Enum:
  case Type::Kind::Dtype:
  case Type::Kind::Callable:
    if (node.kind == YamlNode::Kind::Mapping) {
      // The serialized form, as in our own output: check it and keep it.
      Value v = to_untyped_value(doc, node);
      const std::string why = check(v, type, ctx.profile);
      if (!why.empty())
        throw Error(doc.where(node) + ": '" + path + "': " + why);
      return v;
    }
    [[fallthrough]];
  default:
    if (node.kind != YamlNode::Kind::Scalar)
      throw mismatch();
    return coerce_scalar(node, type, path, ctx);
  }
}

Value Schema::coerce_scalar(const YamlNode& node, const Type& type, const std::string& path,
                            const TypingContext& ctx) const {
  const YamlDoc& doc = *ctx.doc;
  const std::string& t = node.text;
  auto fail = [&](const std::string& extra = "") -> Error {
    return Error(doc.where(node) + ": '" + path + "': expected " + type.text + ", got '" + clip(t) +
                 "'" + extra);
  };
  switch (type.kind) {
  case Type::Kind::Bool:
    if (bool_true().count(t))
      return true;
    if (bool_false().count(t))
      return false;
    throw fail();
  case Type::Kind::Int:
    if (auto v = parse_int(t))
      return *v;
    if (node.plain) {
      Value r = resolve_plain_scalar(t); // hex, octal, binary
      if (r.is_int())
        return r;
    }
    throw fail();
  case Type::Kind::Float:
    if (ctx.ints_stay_ints && node.plain)
      if (auto i = parse_int(t))
        return *i;
    if (auto v = parse_float(t))
      return *v;
    throw fail();
  case Type::Kind::Str:
    if (!type.choices.empty() &&
        std::find(type.choices.begin(), type.choices.end(), t) == type.choices.end()) {
      std::string list;
      for (const std::string& c : type.choices)
        list += (list.empty() ? "" : ", ") + c;
      throw Error(doc.where(node) + ": '" + path + "': '" + clip(t) + "' is not one of " + list +
                  did_you_mean(t, type.choices));
    }
    return t;
  case Type::Kind::Literal:
    if (t == type.name)
      return t;
    throw fail();
  case Type::Kind::Enum: {
    const EnumSpec& e = *enum_named(type.name);
    std::string member = t;
    // Accept `attn`, `CudaGraphModule.attn` and the full class path.
    if (const std::size_t dot = member.rfind('.'); dot != std::string::npos) {
      const std::string prefix = member.substr(0, dot);
      if (prefix == e.name || prefix == e.target)
        member = member.substr(dot + 1);
    }
    std::vector<std::string> names;
    for (const auto& [name, value] : e.members) {
      if (name == member)
        return enum_value(e.name, name);
      names.push_back(name);
    }
    std::string list;
    for (const std::string& n : names)
      list += (list.empty() ? "" : ", ") + n;
    throw Error(doc.where(node) + ": '" + path + "': '" + clip(t) + "' is not a member of " +
                e.name + " (" + list + ")" + did_you_mean(member, names));
  }
  case Type::Kind::Dtype: {
    const std::string name = t.starts_with("torch.") ? t : "torch." + t;
    const auto& known = torch_dtypes();
    if (std::find(known.begin(), known.end(), name) != known.end())
      return dtype_value(name);
    throw Error(doc.where(node) + ": '" + path + "': '" + clip(t) + "' is not a torch dtype" +
                did_you_mean(name, known));
  }
  case Type::Kind::Callable: {
    bool dotted = t.find('.') != std::string::npos;
    for (std::size_t start = 0, dot = 0; dotted && start <= t.size(); start = dot + 1) {
      dot = std::min(t.find('.', start), t.size());
      dotted = is_identifier(std::string_view(t).substr(start, dot - start));
    }
    if (!dotted)
      throw Error(doc.where(node) + ": '" + path +
                  "': expected a dotted Python path (module.name), got '" + clip(t) + "'");
    Map m;
    m.set("_call_", false);
    m.set("_target_", t);
    return m;
  }
  default:
    throw fail();
  }
}

Value Schema::coerce_section(const YamlNode& node, const ClassSpec& declared,
                             const std::string& path, const TypingContext& ctx) const {
  const YamlDoc& doc = *ctx.doc;
  const ClassSpec* cls = &declared;
  if (const YamlNode* t = get(node, "_target_")) {
    cls = class_by_target(t->text);
    if (cls == nullptr || !cls->is_a(declared)) {
      std::vector<std::string> targets;
      for (const auto& c : classes_)
        if (!c->abstract && c->is_a(declared))
          targets.push_back(c->target);
      std::string list;
      for (const std::string& x : targets)
        list += (list.empty() ? "" : ", ") + x;
      throw Error(doc.where(*t) + ": '" + join_path(path, "_target_") + "': class '" +
                  clip(t->text) + "' is not a " + declared.name + " this schema knows (" + list +
                  ")" + did_you_mean(t->text, targets));
    }
  } else if (declared.abstract) {
    throw Error(doc.where(node) + ": '" + path + "': needs '_target_' to say which " +
                declared.name + " it is");
  }
  Value section = ctx.fill_defaults ? instantiate(*cls, ctx.profile) : Value(Map{});
  if (!ctx.fill_defaults)
    section.as_map().set("_target_", cls->target);
  overlay(section, node, path, ctx);
  return section;
}

void Schema::overlay(Value& section, const YamlNode& node, const std::string& path,
                     const TypingContext& ctx) const {
  const YamlDoc& doc = *ctx.doc;
  if (node.kind != YamlNode::Kind::Mapping)
    throw Error(doc.where(node) + ": '" + path + "': expected a mapping, got " + text_of(node));
  const ClassSpec* cls = class_of(section);
  if (cls == nullptr)
    throw Error(doc.where(node) + ": '" + path + "': no section class here");
  std::set<std::string> seen;
  for (const auto& [k, v] : node.entries) {
    if (k->kind != YamlNode::Kind::Scalar)
      throw Error(doc.where(*k) + ": '" + path + "': keys must be plain scalars");
    const std::string& key = k->text;
    if (!seen.insert(key).second)
      throw Error(doc.where(*k) + ": '" + join_path(path, key) + "': duplicate key" +
                  duplicate_key_hint(node, *k));
    if (key == "_target_") {
      if (v->text != cls->target)
        throw Error(doc.where(*v) + ": '" + join_path(path, key) + "': expected '" + cls->target +
                    "' here, got '" + clip(v->text) + "'");
      continue;
    }
    const FieldSpec* f = cls->field(key);
    if (f == nullptr || !f->in_profile(ctx.profile)) {
      std::string hint = f != nullptr
                             ? other_profile_hint(*cls, key) + " (this is " + ctx.profile + ")"
                             : did_you_mean(key, field_names(*cls, ctx.profile));
      throw Error(doc.where(*k) + ": '" + join_path(path, key) + "': " + cls->name +
                  " has no field '" + key + "'" + (hint.empty() ? "; remove it" : hint));
    }
    const std::string field_path = join_path(path, key);
    Map& m = section.as_map();
    Value* current = m.find(key);
    // A mapping over an existing section or map merges into it; anything else replaces.
    if (v->kind == YamlNode::Kind::Mapping && current != nullptr && current->is_map()) {
      const ClassSpec* inner = class_of(*current);
      const YamlNode* t = get(*v, "_target_");
      if (inner != nullptr && (t == nullptr || t->text == inner->target)) {
        overlay(*current, *v, field_path, ctx);
        continue;
      }
      const Type* map_type = f->type->find(Type::Kind::Map);
      if (inner == nullptr && map_type != nullptr) {
        Value add = coerce(*v, *map_type, field_path, ctx);
        current->as_map().merge(std::move(add.as_map()));
        continue;
      }
    }
    m.set(key, coerce(*v, *f->type, field_path, ctx));
  }
}

// ---------------------------------------------------------------------------------------------
// Checking built values

std::string Schema::check(const Value& v, const Type& type, std::string_view profile) const {
  auto expected = [&]() {
    return "expected " + type.text + ", got " + std::string(kind_name(v)) + " " + brief(v, 60);
  };
  switch (type.kind) {
  case Type::Kind::Any:
    return {};
  case Type::Kind::Union:
    // Cheap shape test first: only alternatives that could hold this kind of value are checked.
    for (const TypePtr& alt : type.alts) {
      const Type::Kind k = alt->kind;
      const bool could =
          k == Type::Kind::Any || (v.is_null() && k == Type::Kind::Null) ||
          (v.is_bool() && k == Type::Kind::Bool) ||
          (v.is_int() && (k == Type::Kind::Int || k == Type::Kind::Float)) ||
          (v.is_float() && k == Type::Kind::Float) ||
          (v.is_str() && (k == Type::Kind::Str || k == Type::Kind::Literal)) ||
          (v.is_list() && k == Type::Kind::List) ||
          (v.is_map() && (k == Type::Kind::Map || k == Type::Kind::Enum || k == Type::Kind::Dtype ||
                          k == Type::Kind::Callable || k == Type::Kind::Section));
      if (could && check(v, *alt, profile).empty())
        return {};
    }
    return expected();
  case Type::Kind::Null:
    return v.is_null() ? "" : expected();
  case Type::Kind::Bool:
    return v.is_bool() ? "" : expected();
  case Type::Kind::Int:
    return v.is_int() ? "" : expected();
  case Type::Kind::Float:
    return v.is_float() || v.is_int() ? "" : expected(); // Python floats accept ints
  case Type::Kind::Str:
    if (!v.is_str())
      return expected();
    if (!type.choices.empty() &&
        std::find(type.choices.begin(), type.choices.end(), v.as_str()) == type.choices.end())
      return "'" + v.as_str() + "' is not one of " + type.text;
    return {};
  case Type::Kind::Literal:
    return v.is_str() && v.as_str() == type.name ? "" : expected();
  case Type::Kind::List:
    if (!v.is_list())
      return expected();
    for (const Value& item : v.as_list())
      if (std::string why = check(item, *type.elem, profile); !why.empty())
        return why;
    return {};
  case Type::Kind::Map:
    if (!v.is_map() || !v.target().empty())
      return expected();
    for (const auto& [k, item] : v.as_map())
      if (std::string why = check(item, *type.elem, profile); !why.empty())
        return why;
    return {};
  case Type::Kind::Enum: {
    const EnumSpec& e = *enum_named(type.name);
    if (!v.is_map() || v.target() != e.target)
      return expected();
    const Value* name = v.as_map().find("_name_");
    if (name == nullptr || !name->is_str())
      return expected();
    try {
      return enum_value(e.name, name->as_str()) == v ? "" : "inconsistent " + e.name + " value";
    } catch (const Error& err) {
      return err.what();
    }
  }
  case Type::Kind::Dtype:
  case Type::Kind::Callable: {
    if (!v.is_map() || v.target().empty() || v.as_map().size() != 2)
      return expected();
    const Value* call = v.as_map().find("_call_");
    if (call == nullptr || !call->is_bool() || call->as_bool())
      return expected();
    if (type.kind == Type::Kind::Dtype) {
      const auto& known = torch_dtypes();
      if (std::find(known.begin(), known.end(), v.target()) == known.end())
        return "'" + std::string(v.target()) + "' is not a torch dtype";
    }
    return {};
  }
  case Type::Kind::Section: {
    const ClassSpec* cls = class_of(v);
    const ClassSpec* declared = class_named(type.name);
    if (cls == nullptr || !cls->is_a(*declared))
      return expected();
    for (const auto& [k, item] : v.as_map()) {
      if (k.text == "_target_")
        continue;
      const FieldSpec* f = cls->field(k.text);
      if (f == nullptr || !f->in_profile(profile))
        return cls->name + " has no field '" + k.text + "'";
      if (std::string why = check(item, *f->type, profile); !why.empty())
        return k.text + ": " + why;
    }
    return {};
  }
  }
  return {};
}

} // namespace qr
