// CPU tests of gdn-bench's side of the peers driver (peers.h): the tensor files both sides share,
// and the reader of the driver's peers.json.
#include "peers.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

using namespace qr::gdn::peers;

namespace {

// A peers.json as gdn_peers.py writes it: an ok row, an unavailable one, an error, plus noise.
const char* kResults = R"json({
 "schema": "qwen-recipe gdn-peers 1", "op": "gdn", "env": {"python": "3.12.3"},
 "modes": ["fwd", "fwdbwd"], "warmup": 3, "iters": 20,
 "rows": [
  {"backend": "fla", "shape": {"name": "qwen35_397b", "B": 1, "T": 4096, "Hk": 16, "Hv": 64, "D": 128},
   "versions": {"torch": "2.11.0", "flash-linear-attention": "0.6.0"}, "status": "ok",
   "runs": "FLA Triton: FLA_FLASH_QLA=0", "first_call_s": 91.5, "outputs": "/tmp/x/fla-shape1.json",
   "memory": {"saved_bytes": 81300000, "peak_bytes": 511000000},
   "kernels": ["chunk_fwd_kernel_o", "l2norm_fwd_kernel"],
   "kernel_times": [{"name": "chunk_fwd_kernel_o", "calls": 1.0, "us": 210.5},
                    {"name": "l2norm_fwd_kernel", "calls": 2, "us": 12.25}],
   "pinned": {"verified": true, "fla_triton_kernels": ["chunk_fwd_kernel_o"], "text": "1 FLA Triton kernels ran"},
   "times": {"fwd": {"eager": {"median": 0.8, "min": 0.79, "max": 0.9, "n": 20},
                     "graph": {"median": 0.467, "min": 0.46, "max": 0.47, "n": 20}},
             "fwdbwd": {"eager": {"median": 3.2, "min": 3.1, "max": 3.3, "n": 20}, "graph": null,
                        "graph_error": "RuntimeError: capture\nfailed \u00e9 NaN"}}},
  {"backend": "flash_qla", "shape": {"name": "qwen35_397b", "B": 1, "T": 4096, "Hk": 16, "Hv": 64, "D": 128},
   "status": "unavailable", "reason": "not installed: pip install flash-qla (no module 'flash_qla')",
   "versions": {"torch": "2.11.0"}, "extra": [1, 2.5e-3, true, null, NaN]},
  {"backend": "transformer_engine", "shape": {"name": "qwen35_397b", "B": 1, "T": 4096, "Hk": 16, "Hv": 64, "D": 128},
   "status": "error", "reason": "cudnnGraphNotSupportedError: no engine \"sm_90\"", "versions": {}},
  {"backend": "fla", "shape": {"name": "qwen35_35b", "B": 4, "T": 4096, "Hk": 16, "Hv": 32, "D": 128},
   "status": "ok", "versions": {}, "own_kernels_ms": 0.215, "outputs": "/tmp/x/fla-shape0.json"}
 ]
})json";

std::string temp_stem() {
  char dir[] = "/tmp/qr-test-peers-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  return std::string(dir) + "/t";
}

HostTensor f32(const std::string& name, std::vector<float> v) {
  HostTensor t{name, "f32", {int64_t(v.size())}, std::vector<uint8_t>(v.size() * 4)};
  std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

} // namespace

TEST_CASE("peers.json: rows with status, reasons, versions, times, memory", "[gdn][peers]") {
  std::vector<Row> rows;
  REQUIRE(parse_results(kResults, rows).empty());
  REQUIRE(rows.size() == 4);
  const Row& fla = rows[0];
  CHECK(fla.backend == "fla");
  CHECK(fla.status == "ok");
  CHECK(fla.shape.name == "qwen35_397b");
  CHECK(fla.shape.batch == 1);
  CHECK(fla.shape.value_heads == 64);
  CHECK(fla.pinned_verified);
  CHECK(fla.pinned == "1 FLA Triton kernels ran");
  CHECK(fla.kernels.size() == 2);
  REQUIRE(fla.kernel_times.size() == 2);
  CHECK(fla.kernel_times[0].name == "chunk_fwd_kernel_o");
  CHECK(fla.kernel_times[0].us == Approx(210.5));
  CHECK(fla.kernel_times[1].calls == Approx(2));
  CHECK(rows[1].kernel_times.empty());
  CHECK(fla.saved_bytes == Approx(81.3e6));
  CHECK(fla.peak_bytes == Approx(511e6));
  CHECK(fla.first_call_s == Approx(91.5));
  CHECK(fla.outputs == "/tmp/x/fla-shape1.json");
  REQUIRE(fla.versions.size() == 2);
  REQUIRE(fla.times.size() == 2);
  const ModeTimes& fwd = fla.times[0].mode == "fwd" ? fla.times[0] : fla.times[1];
  const ModeTimes& fb = fla.times[0].mode == "fwd" ? fla.times[1] : fla.times[0];
  CHECK(fwd.graph.median == Approx(0.467));
  CHECK(fwd.eager.min == Approx(0.79));
  CHECK(fb.graph.median < 0); // null: no replay timed
  CHECK(fb.graph_error == "RuntimeError: capture\nfailed \xc3\xa9 NaN");
  CHECK(rows[1].status == "unavailable");
  CHECK(rows[1].reason == "not installed: pip install flash-qla (no module 'flash_qla')");
  CHECK(rows[1].times.empty());
  CHECK(rows[2].reason == "cudnnGraphNotSupportedError: no engine \"sm_90\"");
  CHECK(fla.own_kernels_ms < 0);                  // absent: a GDN row
  CHECK(rows[3].own_kernels_ms == Approx(0.215)); // a conv row: the peer's own kernels' time
}

TEST_CASE("peers.json: wrong files are errors, not empty results", "[gdn][peers]") {
  std::vector<Row> rows;
  CHECK(parse_results("{\"bench\": {}}", rows).find("schema") != std::string::npos);
  CHECK(parse_results("{\"schema\": \"qwen-recipe gdn-peers 1\"}", rows).find("rows") !=
        std::string::npos);
  CHECK(parse_results("{\"schema\": \"qwen-recipe gdn-peers 1\", \"rows\": [{}]}", rows)
            .find("backend") != std::string::npos);
  CHECK(parse_results("{\"schema\": ", rows).find("not JSON") != std::string::npos);
  CHECK(read_results("/nonexistent/peers.json", rows).find("cannot open") != std::string::npos);
}

TEST_CASE("tensor files: what gdn-bench writes reads back exactly", "[gdn][peers]") {
  const std::string stem = temp_stem();
  HostTensor bf{"q", "bf16", {2, 1}, {0x80, 0x3f, 0x00, 0xc0}}; // 1.0, -2.0
  REQUIRE(write_tensors(stem, {"custom", 1, 2, 1, 1, 1}, {bf, f32("g", {0.5f, -0.25f, 3.f})},
                        "\"scale\": 0.5, \"l2norm\": true")
              .empty());
  std::ifstream manifest(stem + ".json");
  std::string text((std::istreambuf_iterator<char>(manifest)), std::istreambuf_iterator<char>());
  CHECK(text.find("\"format\": \"qwen-recipe gdn-bench tensors 1\"") != std::string::npos);
  CHECK(text.find("\"scale\": 0.5") != std::string::npos);
  CHECK(text.find("\"offset\": 4, \"bytes\": 12") != std::string::npos);
  std::map<std::string, std::vector<double>> got;
  REQUIRE(read_tensors(stem + ".json", got).empty());
  CHECK(got["q"] == std::vector<double>{1.0, -2.0});
  CHECK(got["g"] == std::vector<double>{0.5, -0.25, 3.0});
  std::remove((stem + ".json").c_str());
  std::remove((stem + ".bin").c_str());
}

TEST_CASE("tensor files: a packed shape's inputs carry N, the offsets and a state per sequence",
          "[gdn][peers]") {
  // gdn-bench --varlen 3 at B1 T10: the layout the driver checks (gdn_peers.py, gdn_inputs).
  const ShapeInfo packed{"custom+N3", 1, 10, 1, 2, 4, 3};
  const std::vector<TensorLayout> layout = gdn_input_layout(packed, true);
  std::vector<std::string> names;
  for (const TensorLayout& t : layout)
    names.push_back(t.name);
  CHECK(names ==
        std::vector<std::string>{"q", "k", "v", "g", "beta", "do", "h0", "dht", "cu_seqlens"});
  CHECK(layout[6].shape == std::vector<int64_t>{3, 2, 4, 4}); // h0: one state per sequence
  CHECK(layout[7].shape == std::vector<int64_t>{3, 2, 4, 4}); // dht likewise
  CHECK(layout[8].dtype == "i32");
  CHECK(layout[8].shape == std::vector<int64_t>{4});
  CHECK(gdn_input_layout(packed, false).back().name == "cu_seqlens");
  // Dense: one state per batch row, no offsets.
  const std::vector<TensorLayout> dense = gdn_input_layout({"custom", 2, 10, 1, 2, 4}, true);
  REQUIRE(dense.size() == 8);
  CHECK(dense[6].shape == std::vector<int64_t>{2, 2, 4, 4});
  CHECK(dense[0].shape == std::vector<int64_t>{2, 10, 1, 4});

  const std::string stem = temp_stem();
  const std::vector<int32_t> cu = {0, 1, 5, 10};
  HostTensor offsets{"cu_seqlens", "i32", {4}, std::vector<uint8_t>(16)};
  std::memcpy(offsets.bytes.data(), cu.data(), 16);
  REQUIRE(write_tensors(stem, packed, {f32("g", {0.5f}), offsets}, "").empty());
  std::ifstream manifest(stem + ".json");
  std::string text((std::istreambuf_iterator<char>(manifest)), std::istreambuf_iterator<char>());
  CHECK(text.find("\"D\": 4, \"N\": 3}") != std::string::npos);
  CHECK(text.find("{\"name\": \"cu_seqlens\", \"dtype\": \"i32\", \"shape\": [4], \"offset\": 4, "
                  "\"bytes\": 16}") != std::string::npos);
  std::map<std::string, std::vector<double>> got;
  REQUIRE(read_tensors(stem + ".json", got).empty());
  CHECK(got["cu_seqlens"] == std::vector<double>{0, 1, 5, 10});
  // A dense shape's manifest has no N (its bytes are as before packed shapes existed).
  REQUIRE(write_tensors(stem, {"custom", 1, 1, 1, 1, 1}, {f32("o", {1.f})}, "").empty());
  std::ifstream dense_manifest(stem + ".json");
  std::string dense_text((std::istreambuf_iterator<char>(dense_manifest)),
                         std::istreambuf_iterator<char>());
  CHECK(dense_text.find("\"D\": 1},") != std::string::npos);
  std::remove((stem + ".json").c_str());
  std::remove((stem + ".bin").c_str());
}

TEST_CASE("peers.json: a packed shape's row reads back its N", "[gdn][peers]") {
  std::vector<Row> rows;
  REQUIRE(parse_results(R"json({"schema": "qwen-recipe gdn-peers 1", "rows": [
    {"backend": "flash_qla", "status": "ok", "versions": {},
     "shape": {"name": "custom+N8", "B": 1, "T": 16384, "Hk": 16, "Hv": 32, "D": 128, "N": 8}},
    {"backend": "fla", "status": "ok", "versions": {},
     "shape": {"name": "custom", "B": 1, "T": 16384, "Hk": 16, "Hv": 32, "D": 128}}]})json",
                        rows)
              .empty());
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].shape.sequences == 8);
  CHECK(rows[1].shape.sequences == 0);
}

TEST_CASE("tensor files: a manifest that overruns its .bin is refused", "[gdn][peers]") {
  const std::string stem = temp_stem();
  REQUIRE(write_tensors(stem, {"custom", 1, 1, 1, 1, 1}, {f32("o", {1.f, 2.f})}, "").empty());
  std::ofstream(stem + ".bin", std::ios::trunc) << "abc"; // shorter than the 8 bytes named
  std::map<std::string, std::vector<double>> got;
  CHECK(read_tensors(stem + ".json", got).find("tensor 'o'") != std::string::npos);
  CHECK(read_tensors(stem + ".missing.json", got).find("cannot open") != std::string::npos);
}

TEST_CASE("json_string escapes quotes, backslashes and control characters", "[gdn][peers]") {
  CHECK(json_string("a\"b\\c\nd") == "\"a\\\"b\\\\c\\u000ad\"");
}

TEST_CASE("run_process: exit codes, and a program that is not there", "[gdn][peers]") {
  std::string error;
  CHECK(run_process({"sh", "-c", "exit 3"}, error) == 3);
  CHECK(run_process({"true"}, error) == 0);
  CHECK(run_process({"/nonexistent/python3"}, error) != 0);
}

TEST_CASE("tensor files: at fla-layer the gate's inputs stand where g and beta do",
          "[gdn][peers]") {
  // gdn-bench --contract fla-layer: the layout the driver checks (gdn_peers.py, gdn_inputs with
  // gate=True).
  const std::vector<TensorLayout> layout =
      gdn_input_layout({"custom", 2, 10, 1, 3, 4}, false, true);
  std::vector<std::string> names;
  for (const TensorLayout& t : layout)
    names.push_back(t.name + " " + t.dtype);
  CHECK(names == std::vector<std::string>{"q bf16", "k bf16", "v bf16", "a bf16", "b bf16",
                                          "A_log f32", "dt_bias f32", "do bf16"});
  CHECK(layout[3].shape == std::vector<int64_t>{2, 10, 3});
  CHECK(layout[5].shape == std::vector<int64_t>{3});
}
