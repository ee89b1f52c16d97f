// gdn-bench's options, for both ops (`gdn`, the default, and `--op conv`), parsed from one table
// in plain C++ so that the CPU tests reach them (test/gdn/test_bench_options.cpp); the contracts
// (how a caller invokes the GDN op) and the packing of a shape's tokens into uneven sequences.
#pragma once

#include "gdn.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace qr::gdn {

// How a caller invokes the GDN op (docs/gdn/bench.md, "Contracts"):
//   grouped    grouped value heads (Hk < Hv), q/k L2-normalised in the kernel, g (fp32) and
//              beta (bf16) computed by the caller: gdn-bench's call before contracts existed
//   mcore      Megatron-Core's GatedDeltaNet: q and k L2-normalised by the caller (FLA's l2norm)
//              and repeated to the value heads (H = Hv), no L2 norm in the kernel, g fp32, beta
//              bf16, no initial or final state, default scale
//   fla-layer  FLA 0.6's GatedDeltaNet layer: grouped value heads, L2 norm, the gate
//              -exp(A_log) softplus(a + dt_bias) and beta's sigmoid all in the kernel
enum class Contract { grouped, mcore, fla_layer };
const char* contract_name(Contract c);
const char* contract_text(Contract c); // one line: how the op is called
bool contract_from_name(const std::string& name, Contract& out);

// What `--recipe NAME` resolves to: one GPU's GDN shape, and the contract the recipe's
// Megatron-Core profile runs, with the reason said in the table and the JSON.
struct RecipeShape {
  int batch = 0, seq_len = 0, key_heads = 0, value_heads = 0, head_dim = 0;
  std::string contract;        // a contract name
  std::string contract_source; // e.g. "qwen35_35b's Megatron-Core profile (pinned ...)"
};

// Resolves a recipe name to its GDN shape; returns false and sets `error` when unknown.
using RecipeShapeResolver =
    std::function<bool(const std::string& recipe, RecipeShape& out, std::string& error)>;

struct NamedShape {
  std::string name;          // the recipe, or "custom"
  Shape shape;               // what the op sees (mcore: key_heads = value_heads)
  int repeat = 1;            // mcore: q and k repeated this many times (Hv / the model's Hk)
  std::vector<int> seq_lens; // packed (shape.sequences = N): the N lengths, summing to T
};

// What one op's bench is: the name `--op` takes, the prefix of its messages, its backends (the
// Python peers, then ours), its modes and its usage text.
struct OpInfo {
  std::string op, prefix;
  std::vector<std::string> peers, ours, modes;
  double tol = 2e-2;
  const char* usage = "";
};

struct BenchOptions {
  std::vector<NamedShape> shapes;
  std::vector<std::string> backends; // empty: all
  std::vector<std::string> modes;    // empty: the op's
  int warmup = 3, iters = 20;
  int peers_budget = 0; // seconds the peers' first calls may take; 0: no limit
  bool check_only = false;
  double tol = 0; // 0: the op's
  uint64_t seed = 1;
  std::string baseline = "fla", json, plot, python = "python3", driver;
  // gdn
  Contract contract = Contract::grouped;
  std::string contract_source = "the default";
  bool states = false;
  bool l2norm = true; // --no-l2norm (grouped only): no q/k L2 norm anywhere, q, k ~ N(0, 1/D)
  int varlen = 0;     // > 0: each shape's tokens as this many near-equal sequences (batch 1)
  int packed = 0;     // > 0: each shape's B x T tokens as one row of this many uneven sequences
  float gate_scale = 1.f;
  std::vector<int> seq_lens; // each shape at each of these T
  // conv
  bool bias = false;

  bool selected(const std::string& backend) const;
  bool l2norm_in_kernel() const { return l2norm && contract != Contract::mcore; }
};

// Parses `args` (without the program name and --op) for `op` into `o`; `resolver` resolves
// --recipe (gdn only). Returns an error text (empty on success); `help` when --help was given.
std::string parse_bench_options(const OpInfo& op, const std::vector<std::string>& args,
                                const RecipeShapeResolver& resolver, BenchOptions& o, bool& help);

// The lengths of `n` uneven packed sequences over `tokens` tokens (n <= tokens): sequence i gets
// a share (n - i) / (n (n + 1) / 2) of the tokens, rounded down at each boundary, the last the
// rest: the longest first, as a first-fit-decreasing packer leaves a pack. 4 over 16384: 6553,
// 4915, 3277, 1639.
std::vector<int> packed_lengths(int tokens, int n);

// "B4 T4096 Hk16 Hv32 D128", with the packed sequences ("N4") and a repeat ("H32 = Hk16 x2").
std::string shape_text(const NamedShape& s);

} // namespace qr::gdn
