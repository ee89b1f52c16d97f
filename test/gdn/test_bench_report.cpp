// CPU tests of what gdn-bench's GDN and conv runs report alike (bench_report.h): the figures'
// text and JSON, the driver's rows taken into results, the peers driver's run and the atomic JSON
// write then the plot, each with a stand-in driver (a shell script) that succeeds or fails.
#include "bench_report.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace qr::gdn;

namespace {

std::string temp_dir() {
  char dir[] = "/tmp/qr-bench-report-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  return dir;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// A stand-in for the driver, run as `sh DRIVER ARGS...`: it appends its arguments to DIR/args,
// then runs `body`.
std::string stand_in(const std::string& dir, const std::string& body) {
  const std::string path = dir + "/driver.sh";
  std::ofstream(path) << "echo \"$@\" >> '" << dir << "/args'\n" << body << "\n";
  return path;
}

// A training result with a graph and an eager time per mode.
BenchResult timed(const std::string& backend, double fwd_ms, double fwdbwd_ms) {
  BenchResult r;
  r.backend = backend;
  r.modes = {{"fwd", {fwd_ms, fwd_ms - 0.5, fwd_ms + 0.5}, {2 * fwd_ms, 1, 9}, ""},
             {"fwdbwd", {fwdbwd_ms, 1, 9}, {-1, -1, -1}, "capture failed"}};
  return r;
}

} // namespace

TEST_CASE("stats and their JSON: median of odd and even counts, null when not measured",
          "[gdn][report]") {
  const peers::Stats odd = stats_of({3, 1, 2});
  CHECK(odd.median == 2);
  CHECK(odd.min == 1);
  CHECK(odd.max == 3);
  CHECK(stats_of({4, 1}).median == 2.5);
  CHECK(stats_of({}).median == -1);
  std::ostringstream j;
  j.precision(6);
  json_stats(j, odd);
  j << " ";
  json_stats(j, stats_of({}));
  CHECK(j.str() == "{\"median\": 2, \"min\": 1, \"max\": 3} null");
}

TEST_CASE("figures as text: dashes where nothing was measured", "[gdn][report]") {
  CHECK(ms_text(1.23456) == "1.235");
  CHECK(ms_text(0) == "-");
  CHECK(ratio_text(1, 4) == "0.25");
  CHECK(ratio_text(1, -1) == "-");
  CHECK(mb(2.5e6) == "2.5");
  CHECK(mb(-1) == "-");
  CHECK(one_line("a\nb\tc\r") == "a b c ");
  CHECK(versions_text({}) == "no versions found");
  CHECK(versions_text({{"torch", "2.11.0"}, {"fla", "0.6"}}) == "torch 2.11.0, fla 0.6");
}

TEST_CASE("a driver row taken into a result; fla unverified becomes an error", "[gdn][report]") {
  std::vector<peers::Row> rows(3);
  rows[0].backend = rows[1].backend = "fla";
  rows[2].backend = "flash_qla";
  rows[0].shape = {"qwen35_35b", 4, 4096, 16, 32, 128};
  rows[1].shape = {"qwen35_35b", 4, 8192, 16, 32, 128};
  rows[2].shape = rows[1].shape;
  rows[1].status = "ok";
  rows[1].runs = "FLA Triton";
  rows[1].pinned = "0 FLA Triton kernels ran";
  rows[1].saved_bytes = 5;
  CHECK(find_row(rows, "fla", "qwen35_35b", 4, 8192, 32) == &rows[1]);
  CHECK(find_row(rows, "fla", "qwen35_35b", 4, 8192, 64) == nullptr);
  CHECK(find_row(rows, "fla", "qwen35_397b", 4, 8192, 32) == nullptr);
  CHECK(find_row(rows, "transformer_engine", "qwen35_35b", 4, 8192, 32) == nullptr);

  BenchResult res;
  res.backend = "fla";
  take_row(res, rows[1], "Triton kernels");
  CHECK(res.status == "error");
  CHECK(res.reason == "could not verify that FLA ran its Triton kernels: 0 FLA Triton kernels ran");
  CHECK(res.saved_bytes == 5);
  rows[1].pinned_verified = true;
  take_row(res, rows[1], "Triton kernels");
  CHECK(res.status == "ok");
  CHECK(res.runs == "FLA Triton");

  std::vector<ModeResult> modes = {
      {"fwdbwd", {}, {}, ""}, {"extra", {}, {}, ""}, {"fwd", {}, {}, ""}};
  sort_modes(modes, {"fwd", "bwd", "fwdbwd"});
  CHECK((modes[0].mode == "fwd" && modes[1].mode == "fwdbwd" && modes[2].mode == "extra"));
}

TEST_CASE("results by shape, peers first, and the baseline of a shape", "[gdn][report]") {
  std::vector<BenchResult> results;
  for (const auto& [backend, shape] : std::vector<std::pair<std::string, size_t>>{
           {"fused", 1}, {"fla", 1}, {"chunked", 0}, {"flash_qla", 0}, {"fla", 0}}) {
    BenchResult r;
    r.backend = backend;
    r.shape = shape;
    results.push_back(r);
  }
  results[4].status = "error";
  sort_results(results, std::vector<std::string>{"fla", "flash_qla"},
               std::vector<std::string>{"chunked", "fused"});
  std::string order;
  for (const BenchResult& r : results)
    order += r.backend + "@" + std::to_string(r.shape) + " ";
  CHECK(order == "fla@0 flash_qla@0 chunked@0 fla@1 fused@1 ");
  CHECK(baseline_of(results, "flash_qla", 0) == &results[1]);
  CHECK(baseline_of(results, "fla", 0) == nullptr); // it did not run
  CHECK(baseline_of(results, "fla", 1) == &results[3]);
}

TEST_CASE("the note, the comparison text and the per-kernel listing", "[gdn][report]") {
  BenchResult r = timed("fla", 1, 3);
  r.peer = true;
  r.runs = "FLA Triton";
  r.pinned = "2 kernels";
  r.versions = {{"torch", "2.11.0"}};
  CHECK(result_note(r, "; extra") == "FLA Triton; 2 kernels; extra [torch 2.11.0]");
  r.status = "error";
  r.reason = "why";
  r.peer = false;
  CHECK(result_note(r, "") == "why; 2 kernels");

  const BenchResult base = timed("fused", 1, 2);
  CHECK(against_text(r, &base, "fused") == "1.50 of fused (fwd+bwd 3.000 ms)");
  CHECK(against_text(base, &base, "fused") == "fwd+bwd 2.000 ms");
  CHECK(against_text(r, nullptr, "fused") == "fwd+bwd 3.000 ms");

  std::vector<BenchResult> results = {timed("fla", 1, 3), timed("fused", 1, 2)};
  std::ostringstream none;
  print_peer_kernel_times(none, results, [](const BenchResult&) { return "s"; });
  CHECK(none.str().empty()); // no peer has kernel times
  results[0].peer = true;
  results[0].kernel_times = {{"chunk\nfwd", 2, 750}, {"l2norm", 1, 250}};
  std::ostringstream listing;
  print_peer_kernel_times(listing, results, [](const BenchResult&) { return "s (B=1)"; });
  CHECK(listing.str() ==
        "\nper kernel, a peer's training step (torch.profiler in the driver: GPU time, share and "
        "launches per step, averaged over a few eager steps)\n"
        "fla @ s (B=1): 2 kernels, 1.000 ms of GPU time\n"
        "      750.0 us  75.0%   2.0 x  chunk fwd\n"
        "      250.0 us  25.0%   1.0 x  l2norm\n");
}

TEST_CASE("a result's JSON members and the recommendations", "[gdn][report]") {
  BenchResult r = timed("fla", 2, 3);
  r.status = "failed check";
  r.reason = "a \"b\"";
  r.versions = {{"torch", "2.11.0"}, {"fla", "0.6"}};
  r.worst_rel_l2 = 0.125;
  r.worst_output = "dq";
  r.kernel_times = {{"k", 1.5, 20}};
  r.first_call_s = 9.5;
  const BenchResult base = timed("fused", 1, 2);
  std::ostringstream j;
  j.precision(6);
  json_result_status(j, r);
  CHECK(j.str() == ", \"status\": \"failed check\", \"reason\": \"a \\\"b\\\"\", \"runs\": \"\", "
                   "\"pinned\": \"\", \"versions\": {\"torch\": \"2.11.0\", \"fla\": \"0.6\"}, "
                   "\"saved_bytes\": -1, \"peak_bytes\": -1, \"max_rel_l2\": 0.125, "
                   "\"max_rel_l2_output\": \"dq\"");
  const std::string times =
      ", \"kernel_times\": [{\"name\": \"k\", \"calls\": 1.5, \"us\": 20}], \"first_call_s\": "
      "9.5, \"times\": {\"fwd\": {\"graph_ms\": {\"median\": 2, \"min\": 1.5, \"max\": 2.5}, "
      "\"eager_ms\": {\"median\": 4, \"min\": 1, \"max\": 9}, \"ratio_to_baseline\": 2";
  std::ostringstream plain, with_errors, no_base;
  for (std::ostringstream* o : {&plain, &with_errors, &no_base})
    o->precision(6);
  json_result_times(plain, r, &base, false);
  CHECK(plain.str() == times + "}, \"fwdbwd\": {\"graph_ms\": {\"median\": 3, \"min\": 1, "
                               "\"max\": 9}, \"eager_ms\": null, \"ratio_to_baseline\": 1.5}}}");
  json_result_times(with_errors, r, &base, true);
  CHECK(with_errors.str() ==
        times + ", \"graph_error\": \"\"}, \"fwdbwd\": {\"graph_ms\": {\"median\": 3, \"min\": 1, "
                "\"max\": 9}, \"eager_ms\": null, \"ratio_to_baseline\": 1.5, \"graph_error\": "
                "\"capture failed\"}}}");
  json_result_times(no_base, r, nullptr, false);
  CHECK(no_base.str().find("\"ratio_to_baseline\": -1}, \"fwdbwd\"") != std::string::npos);

  std::ostringstream recs;
  json_recommendations(
      recs, {{"a", 4096, "text \"1\"", "fla", "", ""}, {"b", 8192, "t2", "", "x", "mcore"}},
      "fastest_peer");
  CHECK(recs.str() == "[\n  {\"shape\": \"a\", \"T\": 4096, \"fastest\": \"fla\", "
                      "\"fastest_peer\": \"\", \"text\": \"text \\\"1\\\"\"},\n  {\"shape\": "
                      "\"b\", \"T\": 8192, \"fastest\": \"\", \"fastest_peer\": \"x\", "
                      "\"contract\": \"mcore\", \"text\": \"t2\"}\n ]");
}

TEST_CASE("run_peers_driver: no inputs, a failing driver, a good one", "[gdn][report]") {
  const std::string work = temp_dir();
  std::vector<peers::Row> rows;
  bool keep = false;
  std::ostringstream err;
  const std::vector<std::string> argv = {"sh", stand_in(work, "exit 3"), "gdn", "--out",
                                         work + "/peers"};
  CHECK(run_peers_driver(argv, {"", ""}, work, "gdn-bench", "fla", "note", err, rows, keep) ==
        "no inputs were written");
  CHECK(!keep);
  CHECK(err.str().empty());
  CHECK(!std::filesystem::exists(work + "/args")); // the driver was not started

  CHECK(run_peers_driver(argv, {"in0", "", "in2"}, work, "gdn-bench --op conv", "fla,x",
                         "it takes a while", err, rows,
                         keep) == "the driver exited with code 3 (see stderr)");
  CHECK(keep);
  CHECK(err.str() == "gdn-bench --op conv: starting the peers driver (fla,x); it takes a while\n"
                     "gdn-bench --op conv: the peers driver failed; its files are kept in " +
                         work + "\n");
  CHECK(read_text(work + "/args") == "gdn --out " + work + "/peers --inputs in0 --inputs in2\n");

  // A driver that exits 0 without its peers.json: the reader's error, files kept.
  keep = false;
  const std::vector<std::string> silent = {"sh", stand_in(work, "exit 0")};
  CHECK(run_peers_driver(silent, {"in0"}, work, "gdn-bench", "fla", "n", err, rows, keep)
            .find("peers.json") != std::string::npos);
  CHECK(keep);

  // One that writes it.
  keep = false;
  err.str("");
  std::filesystem::create_directories(work + "/peers");
  const std::vector<std::string> good = {
      "sh", stand_in(work, "echo '{\"schema\": \"qwen-recipe gdn-peers 1\", \"rows\": "
                           "[{\"backend\": \"fla\", \"status\": \"unavailable\", \"reason\": "
                           "\"r\", \"shape\": {\"name\": \"s\", \"B\": 1, \"T\": 2, \"Hk\": 1, "
                           "\"Hv\": 1, \"D\": 4}}]}' > '" +
                               work + "/peers/peers.json'")};
  CHECK(run_peers_driver(good, {"in0"}, work, "gdn-bench", "fla", "n", err, rows, keep) == "");
  CHECK(!keep);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].reason == "r");
  CHECK(err.str() == "gdn-bench: starting the peers driver (fla); n\n");
  std::filesystem::remove_all(work);
}

TEST_CASE("write_json_and_plot: atomic write, then the driver's plot", "[gdn][report]") {
  const std::string work = temp_dir();
  const std::string json = work + "/bench.json";
  std::ostringstream err;
  // No plot asked for: the file alone, no .tmp left.
  CHECK(write_json_and_plot(json, "{}\n", "sh", stand_in(work, "exit 1"), "", "gdn-bench", err));
  CHECK(read_text(json) == "{}\n");
  CHECK(!std::filesystem::exists(json + ".tmp"));
  CHECK(!std::filesystem::exists(work + "/args"));
  CHECK(err.str().empty());

  // The plot fails: said with the prefix, false.
  CHECK(!write_json_and_plot(json, "{\"a\": 1}\n", "sh", stand_in(work, "exit 1"), work + "/plot",
                             "gdn-bench --op conv", err));
  CHECK(read_text(json) == "{\"a\": 1}\n");
  CHECK(read_text(work + "/args") == "plot --json " + json + " --out " + work + "/plot\n");
  CHECK(err.str() ==
        "gdn-bench --op conv: --plot " + work + "/plot: the driver's plot failed (see above)\n");

  // The plot succeeds.
  err.str("");
  CHECK(write_json_and_plot(json, "{}\n", "sh", stand_in(work, "exit 0"), work + "/plot",
                            "gdn-bench", err));
  CHECK(err.str().empty());

  // A python that is not there.
  CHECK(!write_json_and_plot(json, "{}\n", work + "/no-python", "d", "p", "gdn-bench", err));
  CHECK(err.str().rfind("gdn-bench: --plot p: ", 0) == 0);

  // A directory that is not there: nothing written, nothing plotted.
  err.str("");
  std::filesystem::remove(work + "/args");
  CHECK(!write_json_and_plot(work + "/missing/bench.json", "{}\n", "sh", stand_in(work, "exit 0"),
                             work + "/plot", "gdn-bench", err));
  CHECK(err.str() == "gdn-bench: could not write " + work + "/missing/bench.json\n");
  CHECK(!std::filesystem::exists(work + "/args"));
  std::filesystem::remove_all(work);
}

TEST_CASE("ScratchDir: made under the temporary folder, removed unless kept", "[gdn][report]") {
  std::ostringstream err;
  std::string made, kept;
  {
    ScratchDir scratch;
    REQUIRE(make_scratch_dir(scratch, "gdn-bench", err));
    made = scratch.dir;
    CHECK(made.rfind((std::filesystem::temp_directory_path() / "qr-gdn-bench-").string(), 0) == 0);
    std::ofstream(made + "/peers.json") << "{}";
    ScratchDir kept_one;
    REQUIRE(make_scratch_dir(kept_one, "gdn-bench", err));
    kept = kept_one.dir;
    kept_one.dir.clear();
  }
  CHECK(!std::filesystem::exists(made));
  CHECK(std::filesystem::is_directory(kept));
  std::filesystem::remove_all(kept);
  CHECK(err.str().empty());
}

TEST_CASE("fastest_of: the fastest training step that passed, and the fastest peer",
          "[gdn][report]") {
  std::vector<BenchResult> results = {timed("reference", 1, 0.5), timed("fused", 1, 2),
                                      timed("fla", 1, 3), timed("flash_qla", 1, 1),
                                      timed("chunked", 1, 1.5)};
  results[2].peer = results[3].peer = true;
  results[3].status = "failed check";
  results[4].shape = 1;
  auto [best, best_peer] = fastest_of(results, 0, "reference");
  CHECK(best == &results[1]);
  CHECK(best_peer == &results[2]);
  CHECK(fastest_of(results, 0, "").first == &results[0]);
  CHECK(fastest_of(results, 1, "").first == &results[4]);
  CHECK(fastest_of(results, 1, "").second == nullptr);
  CHECK(fastest_of(results, 2, "").first == nullptr);
}

namespace {

// A gdn run at the mcore contract of one recipe: fused and flash_qla timed, fla unavailable.
struct McoreRun {
  OpInfo op;
  BenchOptions o;
  ReportSpec spec;
  std::vector<CheckRow> checks;
  std::vector<BenchResult> results;
  McoreRun() {
    op.op = "gdn";
    op.prefix = "gdn-bench";
    op.peers = {"fla", "flash_qla"};
    op.ours = {"reference", "fused"};
    o.contract = Contract::mcore;
    o.contract_source = "qwen35_35b@gb300's Megatron-Core profile pinned";
    o.baseline = "flash_qla";
    NamedShape ns{"qwen35_35b", {4, 4096, 32, 32, 128, 128, 0}, 2, {}};
    o.shapes = {ns};
    spec.op = &op;
    spec.opts = &o;
    spec.date = "2026-12-08 00:00 UTC";
    spec.device = "NVIDIA H100";
    spec.sm = 90;
    spec.sm_count = 132;
    spec.peak_tflops = 1000;
    spec.peak_gbps = 3000;
    spec.flops = [](const NamedShape&, const std::string&) { return 1e12; };
    spec.bytes = [](const NamedShape&, const std::string&) { return 3e9; };
    spec.oracle = "reference";
    spec.how_to_get = [](const std::string& b) { return "select " + b; };
    spec.ours_note = "ours: no recipe selects it";
    spec.peers_label = "of the recipe's choices";
    spec.second_key = "fastest_selectable";
    checks = {{"fused", "qwen35_35b", "o", 1e-3, 2e-3, 0, true, ""},
              {"fla", "qwen35_35b", "all", 0, 0, 0, false, "run failed: boom"}};
    BenchResult fused = timed("fused", 0.5, 2.0), qla = timed("flash_qla", 0.4, 1.0), fla;
    qla.peer = true;
    fla.backend = "fla";
    fla.peer = true;
    fla.status = "unavailable";
    fla.reason = "not installed";
    results = {fla, qla, fused};
  }
};

} // namespace

TEST_CASE("the report names the contract, where it came from, and recommends per contract",
          "[gdn][report]") {
  McoreRun run;
  std::ostringstream head;
  print_header(head, run.spec);
  CHECK(head.str() ==
        "gdn-bench 2026-12-08 00:00 UTC on NVIDIA H100 (sm_90, 132 SMs; nominal peaks 1000 "
        "TFLOP/s dense bf16, 3000 GB/s)\ncontract mcore (qwen35_35b@gb300's Megatron-Core "
        "profile pinned): Megatron-Core's GatedDeltaNet: q/k L2-normalised outside and repeated "
        "to H = Hv, no norm in the kernel, g fp32, beta bf16, no states, default scale\n");
  std::ostringstream out;
  const std::vector<Recommendation> recs = print_report(out, run.spec, run.checks, run.results);
  const std::string text = out.str();
  CHECK(text.find("fused                qwen35_35b                     o                  "
                  "1.000e-03   2.000e-03         0 ok\n") != std::string::npos);
  CHECK(text.find("fla                  qwen35_35b                     all              run "
                  "failed: boom\n") != std::string::npos);
  // 1e12 FLOP in 2 ms: 500 TFLOP/s, half the peak; 3e9 bytes: 1500 GB/s.
  CHECK(text.find("fused                qwen35_35b               fwdbwd             2.000   "
                  "       -      2.00     500.0      1500   50.0%  50.0%\n") != std::string::npos);
  CHECK(text.find("\nper backend at contract mcore (qwen35_35b@gb300's Megatron-Core profile "
                  "pinned) (graph medians;") != std::string::npos);
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].contract == "mcore");
  CHECK(recs[0].fastest == "flash_qla");
  CHECK(recs[0].text ==
        "recommendation for qwen35_35b (B4 T4096 H32 (Hk16 x2) D128, contract mcore): fastest "
        "here: flash_qla, fwd+bwd 1.000 ms; select flash_qla; not timed here, see their rows: "
        "fla (unavailable)");
  CHECK(text.find(recs[0].text + "\n") != std::string::npos);

  const std::string j = report_json(run.spec, run.checks, run.results, recs);
  CHECK(j.find("\"schema\": \"qwen-recipe gdn-bench 3\",\n \"op\": \"gdn\"") != std::string::npos);
  CHECK(j.find("\"contract\": \"mcore\",\n \"contract_source\": \"qwen35_35b@gb300's "
               "Megatron-Core profile pinned\",\n \"l2norm_in_kernel\": false") !=
        std::string::npos);
  CHECK(j.find("{\"backend\": \"fla\", \"shape\": \"qwen35_35b\", \"output\": \"all\", "
               "\"rel_l2\": -1, \"max_abs\": -1, \"non_finite\": 0, \"pass\": false, \"note\": "
               "\"run failed: boom\"}") != std::string::npos);
  CHECK(j.find("\"shape\": \"qwen35_35b\", \"B\": 4, \"T\": 4096, \"Hk\": 32, \"Hv\": 32, \"D\": "
               "128, \"N\": 0, \"repeat\": 2, \"seq_lens\": []") != std::string::npos);
  CHECK(j.find("\"fastest_selectable\": \"flash_qla\", \"contract\": \"mcore\"") !=
        std::string::npos);
}

TEST_CASE("the conv report: no FLOP model, its own schema and columns", "[gdn][report]") {
  McoreRun run;
  run.op.op = "conv";
  run.op.prefix = "gdn-bench --op conv";
  run.spec.flops = nullptr;
  run.o.bias = true;
  std::ostringstream head, out;
  print_header(head, run.spec);
  CHECK(head.str() == "gdn-bench --op conv 2026-12-08 00:00 UTC on NVIDIA H100 (sm_90, 132 SMs; "
                      "nominal 3000 GB/s), with conv bias\n");
  const std::vector<Recommendation> recs = print_report(out, run.spec, run.checks, run.results);
  CHECK(out.str().find("fused                qwen35_35b               fwdbwd             2.000   "
                       "       -      2.00         -      1500       -  50.0%\n") !=
        std::string::npos);
  CHECK(recs[0].contract.empty());
  CHECK(out.str().find("\nper backend (graph medians;") != std::string::npos);
  const std::string j = report_json(run.spec, run.checks, run.results, recs);
  CHECK(j.find("\"schema\": \"qwen-recipe gdn-bench conv 2\"") != std::string::npos);
  CHECK(j.find("\"peak_tflops\"") == std::string::npos);
  CHECK(j.find("\"bias\": true") != std::string::npos);
  CHECK(j.find("\"contract\"") == std::string::npos);
  CHECK(j.find("\"C\": 12288") != std::string::npos);
}

TEST_CASE("flash_qla's row must show that FLA's dispatch ran FlashQLA", "[gdn][report]") {
  peers::Row row;
  row.backend = "flash_qla";
  row.status = "ok";
  row.pinned = "0 FlashQLA kernels ran through FLA's dispatch ()";
  BenchResult res;
  res.backend = "flash_qla";
  take_row(res, row, "Triton kernels");
  CHECK(res.status == "error");
  CHECK(res.reason == "could not verify that FLA's dispatch ran FlashQLA: 0 FlashQLA kernels ran "
                      "through FLA's dispatch ()");
  row.pinned_verified = true;
  take_row(res, row, "Triton kernels");
  CHECK(res.status == "ok");
}
