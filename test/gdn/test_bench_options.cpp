// CPU tests of gdn-bench's options (bench_options.h): one table for both ops, the contracts, the
// contract a recipe runs by default, the packing of a shape's tokens into uneven sequences.
#include "bench_options.h"

#include <catch2/catch.hpp>
#include <numeric>

using namespace qr::gdn;

namespace {

OpInfo gdn_op() {
  OpInfo op;
  op.op = "gdn";
  op.prefix = "gdn-bench";
  op.peers = {"fla", "flash_qla", "transformer_engine"};
  op.ours = {"reference", "chunked", "fused"};
  op.modes = {"fwd", "fwd-train", "bwd", "bwd-recompute", "fwdbwd"};
  return op;
}

OpInfo conv_op() {
  OpInfo op;
  op.op = "conv";
  op.prefix = "gdn-bench --op conv";
  op.peers = {"fla", "causal_conv1d"};
  op.ours = {"cudnn", "fused"};
  op.modes = {"fwd", "bwd", "fwdbwd"};
  op.tol = 1e-2;
  return op;
}

// A stand-in for the recipe compiler: qwen35_35b at MBS 4 and its profile's contract.
bool resolve(const std::string& name, RecipeShape& r, std::string& error) {
  if (name != "qwen35_35b") {
    error = "no such recipe";
    return false;
  }
  r = {4, 4096, 16, 32, 128, "mcore", "qwen35_35b@gb300's Megatron-Core profile pinned"};
  return true;
}

std::string parse(const OpInfo& op, const std::vector<std::string>& args, BenchOptions& o) {
  bool help = false;
  return parse_bench_options(op, args, resolve, o, help);
}

} // namespace

TEST_CASE("defaults: today's grouped call at the two Qwen3.5 shapes, every mode",
          "[gdn][options]") {
  BenchOptions o;
  REQUIRE(parse(gdn_op(), {}, o).empty());
  CHECK(o.contract == Contract::grouped);
  CHECK(o.contract_source == "the default");
  CHECK(o.l2norm_in_kernel());
  REQUIRE(o.shapes.size() == 2);
  CHECK(shape_text(o.shapes[0]) == "B4 T4096 Hk16 Hv32 D128");
  CHECK(shape_text(o.shapes[1]) == "B1 T4096 Hk16 Hv64 D128");
  CHECK(o.modes.size() == 5);
  CHECK(o.tol == 2e-2);
  BenchOptions c;
  REQUIRE(parse(conv_op(), {}, c).empty());
  CHECK(c.modes == std::vector<std::string>{"fwd", "bwd", "fwdbwd"});
  CHECK(c.tol == 1e-2);
}

TEST_CASE("--contract mcore: q and k repeated to the value heads, no norm in the kernel",
          "[gdn][options]") {
  BenchOptions o;
  REQUIRE(parse(gdn_op(), {"--contract", "mcore"}, o).empty());
  CHECK(o.contract == Contract::mcore);
  CHECK(o.contract_source == "--contract");
  CHECK_FALSE(o.l2norm_in_kernel());
  CHECK(o.shapes[0].shape.key_heads == 32);
  CHECK(o.shapes[0].repeat == 2);
  CHECK(o.shapes[1].shape.key_heads == 64);
  CHECK(o.shapes[1].repeat == 4);
  CHECK(shape_text(o.shapes[1]) == "B1 T4096 H64 (Hk16 x4) D128");
  CHECK(parse(gdn_op(), {"--contract", "mcore", "--initial-state"}, o) ==
        "--initial-state: the mcore contract has no initial or final state");
  BenchOptions f;
  REQUIRE(parse(gdn_op(), {"--contract", "fla-layer"}, f).empty());
  CHECK(f.contract == Contract::fla_layer);
  CHECK(f.l2norm_in_kernel());
  CHECK(f.shapes[0].shape.key_heads == 16);
}

TEST_CASE("--recipe runs the contract of its Megatron-Core profile unless --contract says",
          "[gdn][options]") {
  BenchOptions o;
  REQUIRE(parse(gdn_op(), {"--recipe", "qwen35_35b"}, o).empty());
  CHECK(o.contract == Contract::mcore);
  CHECK(o.contract_source == "qwen35_35b@gb300's Megatron-Core profile pinned");
  REQUIRE(o.shapes.size() == 1);
  CHECK(o.shapes[0].name == "qwen35_35b");
  CHECK(shape_text(o.shapes[0]) == "B4 T4096 H32 (Hk16 x2) D128");
  BenchOptions g;
  REQUIRE(parse(gdn_op(), {"--contract", "grouped", "--recipe", "qwen35_35b"}, g).empty());
  CHECK(g.contract == Contract::grouped);
  CHECK(g.contract_source == "--contract");
  CHECK(g.shapes[0].shape.key_heads == 16);
  CHECK(parse(gdn_op(), {"--recipe", "qwen99"}, g) == "--recipe qwen99: no such recipe");
}

TEST_CASE("--packed N: the recipe's tokens as one row of N uneven sequences", "[gdn][options]") {
  BenchOptions o;
  REQUIRE(parse(gdn_op(), {"--recipe", "qwen35_35b", "--packed", "4"}, o).empty());
  const NamedShape& ns = o.shapes[0];
  CHECK(ns.name == "qwen35_35b+packed4");
  CHECK(ns.shape.batch == 1);
  CHECK(ns.shape.seq_len == 16384);
  CHECK(ns.shape.sequences == 4);
  CHECK(ns.shape.key_heads == 32); // still mcore: repeated to Hv
  CHECK(ns.seq_lens == std::vector<int>{6553, 4915, 3277, 1639});
  CHECK(shape_text(ns) == "B1 T16384 H32 (Hk16 x2) D128 N4");
  CHECK(parse(gdn_op(), {"--shape", "1,3,1,2,16", "--packed", "4"}, o) ==
        "--packed: shape custom has 3 tokens; it packs at least 4 and at most 16777216");
  CHECK(parse(gdn_op(), {"--packed", "4", "--varlen", "2"}, o) ==
        "--varlen and --packed: one or the other (near-equal or uneven sequences)");
}

TEST_CASE("packed_lengths: uneven, longest first, every sequence a token, summing to T",
          "[gdn][options]") {
  CHECK(packed_lengths(16384, 1) == std::vector<int>{16384});
  CHECK(packed_lengths(10, 4) == std::vector<int>{4, 3, 2, 1});
  CHECK(packed_lengths(3, 3) == std::vector<int>{1, 1, 1});
  CHECK(packed_lengths(4, 3) == std::vector<int>{2, 1, 1});
  for (int n : {2, 5, 7, 64}) {
    const std::vector<int> l = packed_lengths(65536 + 17, n);
    CHECK(int(l.size()) == n);
    CHECK(std::accumulate(l.begin(), l.end(), 0) == 65536 + 17);
    CHECK(l.front() > l.back());
    for (int len : l)
      CHECK(len >= 1);
  }
}

TEST_CASE("one table for both ops: each refuses the other's options, naming them",
          "[gdn][options]") {
  BenchOptions o;
  CHECK(parse(gdn_op(), {"--contract", "megatron"}, o) ==
        "--contract: unknown contract 'megatron' (grouped, mcore or fla-layer)");
  CHECK(parse(gdn_op(), {"--contract"}, o) ==
        "--contract needs a name (grouped, mcore or fla-layer)");
  CHECK(parse(gdn_op(), {"--contract", "mcore", "--no-l2norm"}, o) ==
        "--no-l2norm: only with --contract grouped (mcore normalises outside the kernel, "
        "fla-layer inside)");
  CHECK(parse(gdn_op(), {"--mode", "fwd,fwd-trian"}, o) ==
        "--mode: unknown mode 'fwd-trian' (fwd, fwd-train, bwd, bwd-recompute, fwdbwd or all)");
  CHECK(parse(gdn_op(), {"--bias"}, o) == "unknown argument '--bias' (see --help)");
  CHECK(parse(conv_op(), {"--contract", "mcore"}, o) ==
        "unknown argument '--contract' (see --op conv --help)");
  CHECK(parse(conv_op(), {"--backend", "fused,flash_qla"}, o) ==
        "--backend: unknown path 'flash_qla' (cudnn, fused, fla, causal_conv1d or all)");
  BenchOptions c;
  CHECK(parse(conv_op(), {"--backend", "fused", "--baseline", "causal_conv1d"}, c) ==
        "--baseline causal_conv1d is not among the --backend list");
  BenchOptions w;
  CHECK(parse(gdn_op(), {"--warmup", "-1"}, w) == "--warmup needs a non-negative integer");
  CHECK(parse(gdn_op(), {"--iters", "0"}, w) == "--iters needs a positive integer");
  CHECK(parse(gdn_op(), {"--plot", "x.pdf"}, w) == "--plot x.pdf: the plot is a .png or .svg file");
  CHECK(parse(gdn_op(), {"--gate-scale", "-1"}, w) ==
        "--gate-scale: '-1' is not a number in [0, 64]");
  BenchOptions ok;
  REQUIRE(parse(conv_op(), {"--bias", "--mode", "fwd", "--seed", "7", "--tol", "0.5"}, ok).empty());
  CHECK(ok.bias);
  CHECK(ok.modes == std::vector<std::string>{"fwd"});
  CHECK(ok.seed == 7);
  CHECK(ok.tol == 0.5);
}
