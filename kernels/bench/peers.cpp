// The peers driver's files (peers.h): the tensor files, a small recursive-descent JSON reader
// (objects, arrays, strings with their escapes, numbers, true / false / null; Python's NaN and
// Infinity read as null) for peers.json and the manifests, and posix_spawn without a shell.
#include "peers.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>

extern char** environ;

namespace qr::gdn::peers {
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
  static void utf8(unsigned cp, std::string& out) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xc0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3f));
    } else {
      out += char(0xe0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3f));
      out += char(0x80 | (cp & 0x3f));
    }
  }
  bool str(std::string& out) {
    if (!eat('"'))
      return fail("expected a string");
    while (i_ < s_.size() && s_[i_] != '"') {
      if (s_[i_] == '\\' && i_ + 1 < s_.size()) {
        const char c = s_[++i_];
        if (c == 'u' && i_ + 4 < s_.size()) {
          const unsigned cp = unsigned(std::strtoul(s_.substr(i_ + 1, 4).c_str(), nullptr, 16));
          i_ += 4;
          utf8(cp, out); // surrogate pairs are kept as two code points, enough for messages
        } else {
          const char* from = "\"\\/bfnrt";
          const char* to = "\"\\/\b\f\n\r\t";
          const char* at = std::strchr(from, c);
          out += at && c ? to[at - from] : c;
        }
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

std::string text(const Value* v) {
  return v && v->kind == Value::string ? v->str : std::string();
}

std::string read_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return "cannot open " + path;
  std::stringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return {};
}

std::string parse_file(const std::string& path, Value& root) {
  std::string s;
  if (std::string e = read_file(path, s); !e.empty())
    return e;
  if (std::string e = Parser(s).parse(root); !e.empty())
    return path + ": not JSON: " + e;
  return {};
}

ShapeInfo shape_of(const Value* v) {
  ShapeInfo s;
  if (!v)
    return s;
  s.name = text(v->get("name"));
  s.batch = int(number(v->get("B"), 0));
  s.seq_len = int(number(v->get("T"), 0));
  s.key_heads = int(number(v->get("Hk"), 0));
  s.value_heads = int(number(v->get("Hv"), 0));
  s.head_dim = int(number(v->get("D"), 0));
  s.sequences = int(number(v->get("N"), 0));
  return s;
}

Stats stats_of(const Value* v) {
  Stats s;
  if (v && v->kind == Value::object) {
    s.median = number(v->get("median"));
    s.min = number(v->get("min"));
    s.max = number(v->get("max"));
  }
  return s;
}

double bf16_to_double(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

bool write_all(const std::string& path, const void* data, size_t n) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f)
    return false;
  const bool ok = std::fwrite(data, 1, n, f) == n;
  return std::fclose(f) == 0 && ok;
}

} // namespace

const char* const kTensorsFormat = "qwen-recipe gdn-bench tensors 1";

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += char(c);
    }
  }
  return o + "\"";
}

std::vector<TensorLayout> gdn_input_layout(const ShapeInfo& s, bool states, bool gate_in_kernel) {
  const int64_t B = s.batch, T = s.seq_len, Hk = s.key_heads, Hv = s.value_heads, D = s.head_dim;
  const int64_t N = s.sequences > 0 ? s.sequences : B; // one state per sequence
  std::vector<TensorLayout> out = {
      {"q", "bf16", {B, T, Hk, D}}, {"k", "bf16", {B, T, Hk, D}}, {"v", "bf16", {B, T, Hv, D}}};
  if (gate_in_kernel)
    out.insert(out.end(), {{"a", "bf16", {B, T, Hv}},
                           {"b", "bf16", {B, T, Hv}},
                           {"A_log", "f32", {Hv}},
                           {"dt_bias", "f32", {Hv}}});
  else
    out.insert(out.end(), {{"g", "f32", {B, T, Hv}}, {"beta", "bf16", {B, T, Hv}}});
  out.push_back({"do", "bf16", {B, T, Hv, D}});
  if (states) {
    out.push_back({"h0", "f32", {N, Hv, D, D}});
    out.push_back({"dht", "f32", {N, Hv, D, D}});
  }
  if (s.sequences > 0)
    out.push_back({"cu_seqlens", "i32", {N + 1}});
  return out;
}

std::string write_tensors(const std::string& stem, const ShapeInfo& shape,
                          const std::vector<HostTensor>& tensors, const std::string& extra) {
  std::string bin,
      manifest =
          "{\n \"format\": " + json_string(kTensorsFormat) +
          ",\n \"shape\": " + "{\"name\": " + json_string(shape.name) +
          ", \"B\": " + std::to_string(shape.batch) + ", \"T\": " + std::to_string(shape.seq_len) +
          ", \"Hk\": " + std::to_string(shape.key_heads) +
          ", \"Hv\": " + std::to_string(shape.value_heads) +
          ", \"D\": " + std::to_string(shape.head_dim) +
          (shape.sequences > 0 ? ", \"N\": " + std::to_string(shape.sequences) : std::string()) +
          "},\n";
  if (!extra.empty())
    manifest += " " + extra + ",\n";
  manifest += " \"tensors\": [";
  size_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const HostTensor& t = tensors[i];
    std::string dims;
    for (size_t d = 0; d < t.shape.size(); ++d)
      dims += (d ? ", " : "") + std::to_string(t.shape[d]);
    manifest += std::string(i ? ",\n  " : "\n  ") + "{\"name\": " + json_string(t.name) +
                ", \"dtype\": " + json_string(t.dtype) + ", \"shape\": [" + dims +
                "], \"offset\": " + std::to_string(offset) +
                ", \"bytes\": " + std::to_string(t.bytes.size()) + "}";
    offset += t.bytes.size();
  }
  manifest += "\n ]\n}\n";
  // The .bin first: a manifest never names a file that is not all there.
  std::FILE* f = std::fopen((stem + ".bin.tmp").c_str(), "wb");
  if (!f)
    return "cannot write " + stem + ".bin.tmp: " + std::strerror(errno);
  bool ok = true;
  for (const HostTensor& t : tensors)
    ok = ok && std::fwrite(t.bytes.data(), 1, t.bytes.size(), f) == t.bytes.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename((stem + ".bin.tmp").c_str(), (stem + ".bin").c_str()) != 0)
    return "cannot write " + stem + ".bin";
  if (!write_all(stem + ".json.tmp", manifest.data(), manifest.size()) ||
      std::rename((stem + ".json.tmp").c_str(), (stem + ".json").c_str()) != 0)
    return "cannot write " + stem + ".json";
  return {};
}

std::string read_tensors(const std::string& manifest_path,
                         std::map<std::string, std::vector<double>>& out) {
  Value root;
  if (std::string e = parse_file(manifest_path, root); !e.empty())
    return e;
  if (text(root.get("format")) != kTensorsFormat)
    return manifest_path + ": not a '" + kTensorsFormat + "' manifest";
  const Value* list = root.get("tensors");
  if (!list || list->kind != Value::array)
    return manifest_path + ": no \"tensors\" array";
  std::string bin_path = manifest_path;
  if (bin_path.size() > 5 && bin_path.compare(bin_path.size() - 5, 5, ".json") == 0)
    bin_path.resize(bin_path.size() - 5);
  bin_path += ".bin";
  std::string bin;
  if (std::string e = read_file(bin_path, bin); !e.empty())
    return e;
  for (const Value& t : list->items) {
    const std::string name = text(t.get("name")), dtype = text(t.get("dtype"));
    const double offset = number(t.get("offset")), bytes = number(t.get("bytes"));
    const size_t elem = dtype == "bf16" ? 2 : dtype == "f32" || dtype == "i32" ? 4 : 0;
    if (name.empty() || !elem || offset < 0 || bytes < 0 || size_t(bytes) % elem ||
        size_t(offset) + size_t(bytes) > bin.size())
      return manifest_path + ": tensor '" + name + "' has a bad dtype, offset or size";
    std::vector<double>& v = out[name];
    v.resize(size_t(bytes) / elem);
    const char* p = bin.data() + size_t(offset);
    for (size_t i = 0; i < v.size(); ++i) {
      if (elem == 2) {
        uint16_t b;
        std::memcpy(&b, p + 2 * i, 2);
        v[i] = bf16_to_double(b);
      } else if (dtype == "i32") {
        int32_t x;
        std::memcpy(&x, p + 4 * i, 4);
        v[i] = x;
      } else {
        float x;
        std::memcpy(&x, p + 4 * i, 4);
        v[i] = x;
      }
    }
  }
  return {};
}

std::string parse_results(const std::string& json, std::vector<Row>& out) {
  Value root;
  if (std::string e = Parser(json).parse(root); !e.empty())
    return "not JSON: " + e;
  if (text(root.get("schema")) != "qwen-recipe gdn-peers 1")
    return "no \"schema\": \"qwen-recipe gdn-peers 1\" (is this the driver's peers.json?)";
  const Value* rows = root.get("rows");
  if (!rows || rows->kind != Value::array)
    return "no \"rows\" array";
  for (const Value& r : rows->items) {
    Row row;
    row.backend = text(r.get("backend"));
    row.status = text(r.get("status"));
    row.reason = text(r.get("reason"));
    row.runs = text(r.get("runs"));
    row.shape = shape_of(r.get("shape"));
    row.outputs = text(r.get("outputs"));
    row.first_call_s = number(r.get("first_call_s"));
    row.own_kernels_ms = number(r.get("own_kernels_ms"));
    if (row.backend.empty() || row.status.empty() || row.shape.name.empty())
      return "a row without \"backend\", \"status\" or \"shape\"";
    if (const Value* v = r.get("versions"))
      for (const auto& kv : v->fields)
        row.versions.emplace_back(kv.first, text(&kv.second));
    if (const Value* k = r.get("kernels"); k && k->kind == Value::array)
      for (const Value& name : k->items)
        row.kernels.push_back(text(&name));
    if (const Value* k = r.get("kernel_times"); k && k->kind == Value::array)
      for (const Value& t : k->items)
        row.kernel_times.push_back(
            {text(t.get("name")), number(t.get("calls"), 0), number(t.get("us"), 0)});
    if (const Value* p = r.get("pinned")) {
      row.pinned = text(p->get("text"));
      const Value* ok = p->get("verified");
      row.pinned_verified = ok && ok->kind == Value::boolean && ok->num != 0;
    }
    if (const Value* m = r.get("memory")) {
      row.saved_bytes = number(m->get("saved_bytes"));
      row.peak_bytes = number(m->get("peak_bytes"));
    }
    if (const Value* t = r.get("times"))
      for (const auto& kv : t->fields) {
        ModeTimes mt{kv.first, stats_of(kv.second.get("graph")), stats_of(kv.second.get("eager")),
                     text(kv.second.get("graph_error"))};
        row.times.push_back(mt);
      }
    out.push_back(std::move(row));
  }
  return {};
}

std::string read_results(const std::string& path, std::vector<Row>& out) {
  std::string s;
  if (std::string e = read_file(path, s); !e.empty())
    return e;
  if (std::string e = parse_results(s, out); !e.empty())
    return path + ": " + e;
  return {};
}

int run_process(const std::vector<std::string>& argv, std::string& error) {
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, 2, 1); // the table owns our stdout
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    error = "could not start " + argv[0] + ": " + std::strerror(rc);
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      error = std::string("waitpid: ") + std::strerror(errno);
      return -1;
    }
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  error = argv[0] + " was killed by signal " + std::to_string(WTERMSIG(status));
  return -1;
}

} // namespace qr::gdn::peers
