// See bench_options.h.
#include "bench_options.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace qr::gdn {
namespace {

struct ContractName {
  Contract contract;
  const char *name, *text;
};
constexpr ContractName kContracts[] = {
    {Contract::grouped, "grouped",
     "grouped value heads, q/k L2 norm in the kernel, g (fp32) and beta (bf16) given"},
    {Contract::mcore, "mcore",
     "Megatron-Core's GatedDeltaNet: q/k L2-normalised outside and repeated to H = Hv, no norm in "
     "the kernel, g fp32, beta bf16, no states, default scale"},
    {Contract::fla_layer, "fla-layer",
     "FLA 0.6's GatedDeltaNet layer: grouped value heads; q/k L2 norm, the gate "
     "-exp(A_log) softplus(a + dt_bias) and sigmoid(b) in the kernel"}};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty())
      out.push_back(item);
  return out;
}

bool parse_int(const std::string& s, long long lo, long long hi, long long& out) {
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < lo || v > hi)
    return false;
  out = v;
  return true;
}

std::string join(const std::vector<std::string>& v, const std::string& last) {
  std::string t;
  for (size_t i = 0; i < v.size(); ++i)
    t += (i ? ", " : "") + v[i];
  return t + (last.empty() ? "" : (v.empty() ? "" : " or ") + last);
}

Shape make_shape(long long b, long long t, long long hk, long long hv, long long d) {
  return {int(b), int(t), int(hk), int(hv), int(d), int(d)};
}

// One option: its name, whether it takes a value, the ops that take it ("" for both) and what it
// does with the value; the handler returns an error text.
struct Option {
  const char* name;
  bool takes_value;
  const char* op;
  std::function<std::string(const std::string&)> apply;
};

} // namespace

const char* contract_name(Contract c) {
  for (const ContractName& n : kContracts)
    if (n.contract == c)
      return n.name;
  return "?";
}

const char* contract_text(Contract c) {
  for (const ContractName& n : kContracts)
    if (n.contract == c)
      return n.text;
  return "?";
}

bool contract_from_name(const std::string& name, Contract& out) {
  for (const ContractName& n : kContracts)
    if (name == n.name) {
      out = n.contract;
      return true;
    }
  return false;
}

bool BenchOptions::selected(const std::string& b) const {
  return backends.empty() || std::find(backends.begin(), backends.end(), b) != backends.end();
}

std::vector<int> packed_lengths(int tokens, int n) {
  std::vector<int> lens;
  const long long total = (long long)n * (n + 1) / 2;
  long long weight = 0;
  int at = 0;
  for (int i = 0; i < n; ++i) {
    weight += n - i;
    int next = i + 1 == n ? tokens : int((long long)tokens * weight / total);
    next = std::min(std::max(next, at + 1), tokens - (n - 1 - i)); // every sequence >= 1 token
    lens.push_back(next - at);
    at = next;
  }
  return lens;
}

std::string shape_text(const NamedShape& ns) {
  const Shape& s = ns.shape;
  char buf[160];
  if (ns.repeat > 1)
    std::snprintf(buf, sizeof buf, "B%d T%d H%d (Hk%d x%d) D%d", s.batch, s.seq_len, s.value_heads,
                  s.key_heads / ns.repeat, ns.repeat, s.head_dim_k);
  else
    std::snprintf(buf, sizeof buf, "B%d T%d Hk%d Hv%d D%d", s.batch, s.seq_len, s.key_heads,
                  s.value_heads, s.head_dim_k);
  std::string t = buf;
  if (s.sequences > 0)
    t += " N" + std::to_string(s.sequences);
  return t;
}

std::string parse_bench_options(const OpInfo& op, const std::vector<std::string>& args,
                                const RecipeShapeResolver& resolver, BenchOptions& o, bool& help) {
  const bool gdn = op.op == "gdn";
  bool baseline_given = false, contract_given = false;
  std::vector<std::string> recipe_contracts; // what each --recipe's profile runs
  auto is_backend = [&](const std::string& b) {
    return std::find(op.peers.begin(), op.peers.end(), b) != op.peers.end() ||
           std::find(op.ours.begin(), op.ours.end(), b) != op.ours.end();
  };
  std::vector<std::string> all = op.ours;
  all.insert(all.end(), op.peers.begin(), op.peers.end());
  const std::string what = gdn ? "backend" : "path";
  auto count = [](const std::string& name, long long lo, int& out) {
    return [&out, name, lo](const std::string& v) -> std::string {
      long long n = 0;
      if (!parse_int(v, lo, 1 << 30, n))
        return name + (lo > 0 ? " needs a positive integer" : " needs a non-negative integer");
      out = int(n);
      return {};
    };
  };
  auto file = [](const std::string& name, std::string& out) {
    return [&out, name](const std::string& v) -> std::string {
      if (v.empty())
        return name + " needs a file name";
      if (name == "--plot" && !(v.size() > 4 && (v.compare(v.size() - 4, 4, ".png") == 0 ||
                                                 v.compare(v.size() - 4, 4, ".svg") == 0)))
        return "--plot " + v + ": the plot is a .png or .svg file";
      out = v;
      return {};
    };
  };
  int seed = 1;
  const std::vector<Option> table = {
      {"--help", false, "", [&](const std::string&) { return help = true, std::string(); }},
      {"--check", false, "",
       [&](const std::string&) { return o.check_only = true, std::string(); }},
      {"--initial-state", false, "gdn",
       [&](const std::string&) { return o.states = true, std::string(); }},
      {"--bias", false, "conv", [&](const std::string&) { return o.bias = true, std::string(); }},
      {"--no-l2norm", false, "gdn",
       [&](const std::string&) { return o.l2norm = false, std::string(); }},
      {"--contract", true, "gdn",
       [&](const std::string& v) -> std::string {
         if (!contract_from_name(v, o.contract))
           return "--contract: unknown contract '" + v + "' (grouped, mcore or fla-layer)";
         contract_given = true;
         o.contract_source = "--contract";
         return {};
       }},
      {"--recipe", true, "gdn",
       [&](const std::string& v) -> std::string {
         if (split(v).empty())
           return "--recipe needs a name";
         for (const std::string& name : split(v)) {
           RecipeShape r;
           std::string error;
           if (!resolver || !resolver(name, r, error))
             return "--recipe " + name + ": " + (error.empty() ? "unknown recipe" : error);
           const Shape s = make_shape(r.batch, r.seq_len, r.key_heads, r.value_heads, r.head_dim);
           if (!s.valid())
             return "--recipe " + name + ": its GDN shape is not one the kernels take";
           o.shapes.push_back({name, s, 1, {}});
           recipe_contracts.push_back(r.contract + "\n" + r.contract_source);
         }
         return {};
       }},
      {"--shape", true, "",
       [&](const std::string& v) -> std::string {
         const std::vector<std::string> f = split(v);
         long long d[5];
         bool ok = f.size() == 5;
         for (size_t j = 0; ok && j < 5; ++j)
           ok = parse_int(f[j], 1, 1 << 24, d[j]);
         if (!ok)
           return "--shape needs B,T,Hk,Hv,D (positive integers)";
         const Shape s = make_shape(d[0], d[1], d[2], d[3], d[4]);
         if (!s.valid())
           return "--shape: Hv must be a multiple of Hk";
         o.shapes.push_back({"custom", s, 1, {}});
         return {};
       }},
      {"--seq-lens", true, "gdn",
       [&](const std::string& v) -> std::string {
         if (split(v).empty())
           return "--seq-lens needs T[,T...] (positive integers)";
         for (const std::string& t : split(v)) {
           long long n = 0;
           if (!parse_int(t, 1, 1 << 24, n))
             return "--seq-lens: '" + t + "' is not a positive integer";
           o.seq_lens.push_back(int(n));
         }
         return {};
       }},
      {"--varlen", true, "gdn", count("--varlen", 1, o.varlen)},
      {"--packed", true, "gdn", count("--packed", 1, o.packed)},
      {"--backend", true, "",
       [&](const std::string& v) -> std::string {
         o.backends = v == "all" ? std::vector<std::string>{} : split(v);
         if (v != "all" && o.backends.empty())
           return "--backend needs a value";
         for (const std::string& b : o.backends)
           if (!is_backend(b))
             return "--backend: unknown " + what + " '" + b + "' (" + join(all, "all") + ")";
         return {};
       }},
      {"--baseline", true, "",
       [&](const std::string& v) -> std::string {
         if (!is_backend(v))
           return "--baseline needs a " + what + " name (" + join(all, "") + ")";
         o.baseline = v;
         baseline_given = true;
         return {};
       }},
      {"--mode", true, "",
       [&](const std::string& v) -> std::string {
         for (const std::string& m : split(v)) {
           if (m != "all" && std::find(op.modes.begin(), op.modes.end(), m) == op.modes.end())
             return "--mode: unknown mode '" + m + "' (" + join(op.modes, "all") + ")";
           for (const std::string& add : m == "all" ? op.modes : std::vector<std::string>{m})
             if (std::find(o.modes.begin(), o.modes.end(), add) == o.modes.end())
               o.modes.push_back(add);
         }
         return o.modes.empty() ? "--mode needs a value" : std::string();
       }},
      {"--warmup", true, "", count("--warmup", 0, o.warmup)},
      {"--iters", true, "", count("--iters", 1, o.iters)},
      {"--seed", true, "", count("--seed", 0, seed)},
      {"--peers-budget", true, "", count("--peers-budget", 0, o.peers_budget)},
      {"--tol", true, "",
       [&](const std::string& v) -> std::string {
         char* end = nullptr;
         const double x = std::strtod(v.c_str(), &end);
         if (v.empty() || *end != '\0' || !(x > 0))
           return "--tol needs a positive number";
         o.tol = x;
         return {};
       }},
      {"--gate-scale", true, "gdn",
       [&](const std::string& v) -> std::string {
         char* end = nullptr;
         const float x = std::strtof(v.c_str(), &end);
         if (v.empty() || *end != '\0' || !(x >= 0.f && x <= 64.f))
           return "--gate-scale: '" + v + "' is not a number in [0, 64]";
         o.gate_scale = x;
         return {};
       }},
      {"--json", true, "", file("--json", o.json)},
      {"--plot", true, "", file("--plot", o.plot)},
      {"--python", true, "", file("--python", o.python)},
      {"--peers-driver", true, "", file("--peers-driver", o.driver)},
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string a = args[i] == "-h" ? "--help" : args[i];
    const auto opt = std::find_if(table.begin(), table.end(), [&](const Option& t) {
      return a == t.name && (!*t.op || op.op == t.op);
    });
    if (opt == table.end())
      return "unknown argument '" + a + "' (see " + (gdn ? "--help" : "--op conv --help") + ")";
    std::string value;
    if (opt->takes_value) {
      if (i + 1 >= args.size())
        return a + (a == "--shape"      ? " needs B,T,Hk,Hv,D (positive integers)"
                    : a == "--recipe"   ? " needs a name"
                    : a == "--contract" ? " needs a name (grouped, mcore or fla-layer)"
                    : a == "--json" || a == "--plot" || a == "--python" || a == "--peers-driver"
                        ? " needs a file name"
                        : " needs a value");
      value = args[++i];
    }
    if (std::string e = opt->apply(value); !e.empty())
      return e;
  }
  o.seed = uint64_t(seed);
  if (!o.l2norm && o.contract != Contract::grouped)
    return "--no-l2norm: only with --contract grouped (mcore normalises outside the kernel, "
           "fla-layer inside)";
  if (o.modes.empty())
    o.modes = op.modes;
  if (o.tol == 0)
    o.tol = op.tol;
  if (baseline_given && !o.selected(o.baseline))
    return "--baseline " + o.baseline + " is not among the --backend list";
  if (o.varlen && o.packed)
    return "--varlen and --packed: one or the other (near-equal or uneven sequences)";
  // --recipe: the contract its Megatron-Core profile runs, unless --contract says otherwise.
  if (!contract_given && !recipe_contracts.empty()) {
    for (const std::string& rc : recipe_contracts)
      if (rc.substr(0, rc.find('\n')) != recipe_contracts.front().substr(0, rc.find('\n')))
        return "--recipe: the recipes run different contracts; bench them one at a time or give "
               "--contract";
    const std::string& rc = recipe_contracts.front();
    if (!contract_from_name(rc.substr(0, rc.find('\n')), o.contract))
      return "--recipe: the resolver named an unknown contract '" + rc.substr(0, rc.find('\n')) +
             "'";
    o.contract_source = rc.substr(rc.find('\n') + 1);
  }
  if (o.shapes.empty())
    o.shapes = {{"qwen35_35b", make_shape(4, 4096, 16, 32, 128), 1, {}},
                {"qwen35_397b", make_shape(1, 4096, 16, 64, 128), 1, {}}};
  if (!gdn)
    return {};
  if (!o.seq_lens.empty()) {
    std::vector<NamedShape> each;
    for (const NamedShape& s : o.shapes)
      for (int t : o.seq_lens) {
        NamedShape c = s;
        c.shape.seq_len = t;
        each.push_back(c);
      }
    o.shapes = each;
  }
  for (NamedShape& ns : o.shapes) {
    Shape& s = ns.shape;
    if (o.varlen) {
      if (s.batch != 1 || s.seq_len < o.varlen)
        return "--varlen: shape " + ns.name + " needs batch 1 and at least " +
               std::to_string(o.varlen) + " tokens";
      s.sequences = o.varlen;
      for (int i = 0; i < o.varlen; ++i) // near-equal lengths, the longer ones first
        ns.seq_lens.push_back(s.seq_len / o.varlen + (i < s.seq_len % o.varlen));
      ns.name += "+N" + std::to_string(o.varlen);
    }
    if (o.packed) {
      const long long tokens = (long long)s.batch * s.seq_len;
      if (tokens > (1 << 24) || tokens < o.packed)
        return "--packed: shape " + ns.name + " has " + std::to_string(tokens) +
               " tokens; it packs at least " + std::to_string(o.packed) + " and at most 16777216";
      s.seq_len = int(tokens);
      s.batch = 1;
      s.sequences = o.packed;
      ns.seq_lens = packed_lengths(s.seq_len, o.packed);
      ns.name += "+packed" + std::to_string(o.packed);
    }
    if (o.contract == Contract::mcore) { // q and k repeated to the value heads
      ns.repeat = s.value_heads / s.key_heads;
      s.key_heads = s.value_heads;
    }
  }
  if (o.contract == Contract::mcore && o.states)
    return "--initial-state: the mcore contract has no initial or final state";
  return {};
}

} // namespace qr::gdn
