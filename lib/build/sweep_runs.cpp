#include "build/sweep_runs.h"

#include "support/error.h"
#include "support/script_text.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace qr {

SweepPlan plan_sweep(const BuildRequest& request,
                     const std::vector<std::pair<std::string, std::string>>& shortcuts) {
  SweepPlan plan;
  plan.sweep = parse_sweep(request.overrides, shortcuts);
  plan.runs = expand_sweep(plan.sweep);
  for (const SweepRun& run : plan.runs) {
    BuildRequest r = request;
    r.overrides = run.overrides;
    r.shortcuts.clear();
    for (const auto& [name, text] : run.shortcuts)
      r.shortcuts.push_back(parse_shortcut(name, text));
    plan.requests.push_back(std::move(r));
  }
  return plan;
}

std::string run_label(const SweepPlan& plan, std::size_t i) {
  return "sweep run '" + plan.runs[i].name + "' (" + std::to_string(i + 1) + " of " +
         std::to_string(plan.runs.size()) + "): ";
}

void add_sweep_bytes(std::size_t& total, const std::string& text, const SweepPlan& plan,
                     std::size_t i) {
  total += text.size();
  if (total > kMaxSweepBytes)
    throw Error(run_label(plan, i) + "the sweep's files come to more than " +
                std::to_string(kMaxSweepBytes >> 20) + " MiB; sweep fewer runs");
}

std::string sweep_path(const std::string& dir, const std::string& name) {
  require_one_line(dir, "--out-dir");
  return (std::filesystem::path(dir) / name).string();
}

void write_sweep(const std::string& dir, const std::vector<OutputFile>& files, bool replace) {
  struct stat st {};
  bool created = false;
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      throw Error("--out-dir " + dir + ": exists and is not a directory");
  } else if (::mkdir(dir.c_str(), 0777) == 0) {
    created = true;
  } else {
    throw Error("--out-dir " + dir + ": cannot create the directory: " + std::strerror(errno));
  }
  try {
    write_outputs(files, replace);
  } catch (const Error&) {
    if (created)
      ::rmdir(dir.c_str());
    throw;
  }
}

} // namespace qr
