// CPU tests of the reader of gdn_fla_bench.py's results.json (gdn-bench --compare-fla).
#include "fla_json.h"

#include <catch2/catch.hpp>

using namespace qr::gdn;

namespace {

// The layout gdn_fla_bench.py writes, trimmed to what the reader looks at plus some noise.
const char* kResults = R"json({
 "env": {"device": "NVIDIA H200", "torch": "2.11.0+cu130", "triton": "3.6.0", "fla": "0.5.2",
         "pinned_configs": {"l2norm_fwd_kernel": "BT: 8, num_warps: 4"}, "copy_TBps": 4.21},
 "check": {"max_rel_rms": 0.0047, "ok": true, "nan": NaN},
 "bench": {
  "S35gva": {"shape": {"B": 4, "T": 4096, "H": 16, "HV": 32, "D": 128},
             "fwd_train_eager": {"median": 1.621, "n": 30},
             "fwdbwd_eager": {"median": 5.213},
             "fwd_graph": {"median": 0.896, "min": 0.892, "p90": 0.9, "n": 30},
             "fwdbwd_graph": {"median": 3.81},
             "kernels_us_per_iter": [{"name": "chunk_bwd_kernel_dqkwg \"x\"", "us": 912.9}]},
  "S397gva": {"shape": {"B": 1, "T": 4096, "H": 16, "HV": 64, "D": 128},
              "fwd_train_eager": {"median": 1.379}, "fwdbwd_eager": {"median": 4.542},
              "graph_error": "RuntimeError('x')"}
 },
 "model": {}
})json";

} // namespace

TEST_CASE("FLA results: graph medians per shape, eager when no graph ran", "[gdn][fla]") {
  FlaResults r;
  REQUIRE(parse_fla_results(kResults, r).empty());
  REQUIRE(r.shapes.size() == 2);
  CHECK(r.env == "NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0, fla 0.5.2");
  const FlaTiming* s35 = r.find(4, 4096, 16, 32, 128);
  REQUIRE(s35);
  CHECK(s35->name == "S35gva");
  CHECK(s35->graph);
  CHECK(s35->fwd_ms == Approx(0.896));
  CHECK(s35->fwdbwd_ms == Approx(3.81));
  const FlaTiming* s397 = r.find(1, 4096, 16, 64, 128);
  REQUIRE(s397);
  CHECK_FALSE(s397->graph);
  CHECK(s397->fwd_ms == Approx(1.379));
  CHECK(s397->fwdbwd_ms == Approx(4.542));
  CHECK(r.find(1, 4096, 16, 32, 128) == nullptr);
}

TEST_CASE("FLA results: malformed input is an error, not a crash", "[gdn][fla]") {
  FlaResults r;
  CHECK_FALSE(parse_fla_results("", r).empty());
  CHECK_FALSE(parse_fla_results("{\"bench\": {", r).empty());
  CHECK_FALSE(parse_fla_results("{\"bench\": {}} trailing", r).empty());
  CHECK_FALSE(parse_fla_results("[1, 2, 3]", r).empty());
  CHECK_FALSE(parse_fla_results("{\"bench\": {}}", r).empty()); // no timed shape
  CHECK(parse_fla_results("{\"bench\": {}}", r).find("no timed shapes") != std::string::npos);
  CHECK_FALSE(read_fla_results("/nonexistent/results.json", r).empty());
}
