// --multirun: one build per combination of a sweep (build and launch), written into --out-dir as
// one set of files.
#pragma once

#include "build/build.h"
#include "overrides/sweep.h"
#include "support/error.h"
#include "support/output.h"

#include <string>
#include <vector>

namespace qr {

// The runs of a sweep over `request`'s overrides and the shortcuts' texts (name, text: `--tp
// 1,2` sweeps too); each run's request has its overrides and shortcuts in place of the sweep's
// (request.shortcuts is not read). Throws qr::Error naming the token at fault, or the product
// over the bound.
struct SweepPlan {
  Sweep sweep;
  std::vector<SweepRun> runs;
  std::vector<BuildRequest> requests;
};
SweepPlan plan_sweep(const BuildRequest& request,
                     const std::vector<std::pair<std::string, std::string>>& shortcuts);

// What `step(request)` returns for run `i` of the plan (its build, its launch plan), with any
// error it throws named by the run: "sweep run 'NAME' (3 of 4): ...".
template <typename Step>
auto in_run(const SweepPlan& plan, std::size_t i, Step&& step);

// `dir`/NAME: a file name the sweep writes, refusing a `dir` that cannot hold it on one line.
std::string sweep_path(const std::string& dir, const std::string& name);

// Writes the files (all under `dir`) with write_outputs, all or none; a `dir` that does not exist
// is created first (its parent must exist) and removed again if the write fails.
void write_sweep(const std::string& dir, const std::vector<OutputFile>& files, bool replace);

// What a sweep's files may come to together: each config is bounded, and 4096 runs of a big one
// must not fill memory and disk.
inline constexpr std::size_t kMaxSweepBytes = std::size_t{1} << 30;
// Adds a file of run `i` to `total`, refusing (qr::Error naming the run) past kMaxSweepBytes.
void add_sweep_bytes(std::size_t& total, const std::string& text, const SweepPlan& plan,
                     std::size_t i);

// The prefix of a run's errors.
std::string run_label(const SweepPlan& plan, std::size_t i);

template <typename Step>
auto in_run(const SweepPlan& plan, std::size_t i, Step&& step) {
  try {
    return step(plan.requests[i]);
  } catch (const Error& e) {
    throw Error(run_label(plan, i) + e.what());
  }
}

} // namespace qr
