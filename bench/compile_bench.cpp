// qr-compile-bench: how long a build takes. Prints medians of repeated runs:
//   start-up   loading the schema and recipe catalogue (once per process)
//   build      one recipe (qwen35_397b on gb300): pipeline, invariants and YAML
//   all        every recipe x GPU x precision, built and emitted
//   process    a whole `qwen-recipe build qwen35_397b --gpu gb300` run, exec to exit
// Usage: qr-compile-bench [PATH-TO-qwen-recipe] [--reps N]
#include "build/build.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <spdlog/spdlog.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
std::vector<double> time_ms(int reps, F&& f) {
  std::vector<double> out;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    out.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void report(const char* what, const std::vector<double>& ms) {
  std::printf("%-10s %10.3f %10.3f %10.3f %6zu\n", what, ms[ms.size() / 2], ms.front(), ms.back(),
              ms.size());
}

void run_process(const std::string& bin) {
  std::fflush(stdout); // or the child inherits, and prints, our buffered output
  const pid_t pid = fork();
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    execl(bin.c_str(), bin.c_str(), "build", "qwen35_397b", "--gpu", "gb300",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "qr-compile-bench: %s failed\n", bin.c_str());
    std::exit(2);
  }
}

} // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::off);
  std::string bin;
  int reps = 50;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else
      bin = a;
  }
  std::printf("%-10s %10s %10s %10s %6s\n", "what", "median ms", "min ms", "max ms", "runs");
  report("start-up", time_ms(reps, [] { qr::Compiler c(qr::embedded_data()); }));
  const qr::Compiler compiler(qr::embedded_data());
  qr::BuildRequest one;
  one.recipe = "qwen35_397b";
  one.gpu = "gb300";
  std::size_t bytes = 0;
  report("build", time_ms(reps, [&] {
           bytes +=
               compiler.run(one, qr::through(qr::Stage::Invariants) | qr::Stage::Emit).yaml.size();
         }));
  const auto all = compiler.catalog().all();
  report("all", time_ms(std::max(3, reps / 10), [&] {
           for (const qr::RecipeSpec& s : all) {
             qr::BuildRequest r;
             r.recipe = s.model->name;
             r.gpu = s.gpu->name;
             r.precision = s.precision;
             bytes +=
                 compiler.run(r, qr::through(qr::Stage::Invariants) | qr::Stage::Emit).yaml.size();
           }
         }));
  if (!bin.empty())
    report("process", time_ms(reps, [&] { run_process(bin); }));
  std::printf("(%zu recipes in 'all'; %zu bytes of YAML written in total)\n", all.size(), bytes);
  return 0;
}
