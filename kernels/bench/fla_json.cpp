// A small recursive-descent JSON reader, enough for gdn_fla_bench.py's results.json: objects,
// arrays, strings (escapes kept verbatim except \" and \\), numbers, true / false / null.
#include "fla_json.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

namespace qr::gdn {
namespace {

struct Value {
  enum Kind { null, boolean, number, string, array, object } kind = null;
  double num = 0;
  std::string str;
  std::vector<Value> items;
  std::map<std::string, Value> fields;

  const Value* get(const std::string& key) const {
    auto it = fields.find(key);
    return kind == object && it != fields.end() ? &it->second : nullptr;
  }
};

class Parser {
public:
  explicit Parser(const std::string& s) : s_(s) {}

  std::string parse(Value& v) {
    if (!value(v))
      return error_;
    ws();
    if (i_ != s_.size())
      fail("trailing characters");
    return error_;
  }

private:
  const std::string& s_;
  size_t i_ = 0;
  std::string error_;

  bool fail(const std::string& what) { // records the first error; always false
    if (error_.empty())
      error_ = what + " at offset " + std::to_string(i_);
    return false;
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r'))
      ++i_;
  }
  bool eat(char c) {
    ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (s_.compare(i_, w.size(), w) != 0)
      return false;
    i_ += w.size();
    return true;
  }
  bool str(std::string& out) {
    if (!eat('"'))
      return fail("expected a string");
    while (i_ < s_.size() && s_[i_] != '"') {
      if (s_[i_] == '\\' && i_ + 1 < s_.size()) {
        const char c = s_[++i_];
        out += (c == '"' || c == '\\' || c == '/') ? std::string(1, c) : std::string("\\") + c;
      } else {
        out += s_[i_];
      }
      ++i_;
    }
    if (i_ >= s_.size())
      return fail("unterminated string");
    ++i_;
    return true;
  }
  bool value(Value& v) {
    ws();
    if (i_ >= s_.size())
      return fail("unexpected end");
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      v.kind = Value::object;
      if (eat('}'))
        return true;
      do {
        std::string key;
        if (!str(key) || !eat(':'))
          return fail("expected a key and ':'");
        if (!value(v.fields[key]))
          return false;
      } while (eat(','));
      return eat('}') || fail("expected '}'");
    }
    if (c == '[') {
      ++i_;
      v.kind = Value::array;
      if (eat(']'))
        return true;
      do {
        v.items.emplace_back();
        if (!value(v.items.back()))
          return false;
      } while (eat(','));
      return eat(']') || fail("expected ']'");
    }
    if (c == '"') {
      v.kind = Value::string;
      return str(v.str);
    }
    if (literal("true") || literal("false")) {
      v.kind = Value::boolean;
      v.num = s_[i_ - 1] == 'e' && s_[i_ - 2] == 'u'; // "true" ends in "ue", "false" in "se"
      return true;
    }
    if (literal("null") || literal("NaN") || literal("Infinity") || literal("-Infinity"))
      return true; // Python's json writes NaN / Infinity; they read as null here
    char* end = nullptr;
    v.num = std::strtod(s_.c_str() + i_, &end);
    if (end == s_.c_str() + i_)
      return fail("unexpected character");
    v.kind = Value::number;
    i_ = end - s_.c_str();
    return true;
  }
};

double number(const Value* v, double fallback = -1) {
  return v && v->kind == Value::number ? v->num : fallback;
}

} // namespace

const FlaTiming* FlaResults::find(int b, int t, int hk, int hv, int d) const {
  for (const FlaTiming& f : shapes)
    if (f.batch == b && f.seq_len == t && f.key_heads == hk && f.value_heads == hv &&
        f.head_dim == d)
      return &f;
  return nullptr;
}

std::string parse_fla_results(const std::string& json, FlaResults& out) {
  Value root;
  if (std::string e = Parser(json).parse(root); !e.empty())
    return "not JSON: " + e;
  const Value* bench = root.get("bench");
  if (!bench || bench->kind != Value::object)
    return "no \"bench\" object (is this gdn_fla_bench.py's results.json?)";
  for (const auto& field : bench->fields) {
    const std::string& name = field.first;
    const Value& r = field.second; // a plain reference: lambdas may not capture bindings in C++17
    const Value* shape = r.get("shape");
    if (!shape)
      continue;
    FlaTiming f{name,
                int(number(shape->get("B"))),
                int(number(shape->get("T"))),
                int(number(shape->get("H"))),
                int(number(shape->get("HV"))),
                int(number(shape->get("D")))};
    auto median = [&](const char* key) {
      const Value* m = r.get(key);
      return m ? number(m->get("median")) : -1.0;
    };
    f.fwd_ms = median("fwd_graph");
    f.fwdbwd_ms = median("fwdbwd_graph");
    f.graph = f.fwd_ms > 0 && f.fwdbwd_ms > 0;
    if (!f.graph) {
      f.fwd_ms = median("fwd_train_eager");
      f.fwdbwd_ms = median("fwdbwd_eager");
    }
    if (f.fwd_ms > 0 || f.fwdbwd_ms > 0)
      out.shapes.push_back(f);
  }
  if (const Value* env = root.get("env")) {
    auto text = [&](const char* key) {
      const Value* v = env->get(key);
      return v && v->kind == Value::string ? v->str : std::string("?");
    };
    out.env = text("device") + ", torch " + text("torch") + ", triton " + text("triton") +
              ", fla " + text("fla");
  }
  return out.shapes.empty() ? "no timed shapes in \"bench\"" : std::string();
}

std::string read_fla_results(const std::string& path, FlaResults& out) {
  std::ifstream f(path);
  if (!f)
    return "cannot open " + path;
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_fla_results(ss.str(), out);
}

} // namespace qr::gdn
