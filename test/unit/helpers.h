// Shared test helpers: one compiler over the built-in recipes, short ways to build, and the
// golden-file comparison.
#pragma once

#include "build/build.h"
#include "diff/diff.h"
#include "support/error.h"
#include "yaml/yaml_write.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace qr::test {

// This process's folder under the tests' scratch folder, removed when the process ends: CTest
// runs each test case in its own process, in parallel, so cases that write a file of the same
// name must not share a folder.
inline std::filesystem::path scratch_dir() {
  struct Scratch {
    std::filesystem::path dir =
        std::filesystem::path(QR_TEST_TMP) / ("pid-" + std::to_string(::getpid()));
    Scratch() { std::filesystem::create_directories(dir); }
    ~Scratch() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  };
  static const Scratch scratch;
  return scratch.dir;
}

inline const Compiler& compiler() {
  static const Compiler c(embedded_data());
  return c;
}

inline BuildResult build(const std::string& recipe, const std::string& gpu,
                         const std::string& precision = "",
                         const std::vector<std::string>& overrides = {},
                         const std::string& profile = "") {
  BuildRequest req;
  req.recipe = recipe;
  req.gpu = gpu;
  req.precision = precision;
  req.overrides = overrides;
  req.profile = profile;
  return compiler().run(req, through(Stage::Invariants));
}

inline BuildResult build_pipeline(const std::string& recipe, const std::string& gpu,
                                  const std::string& pipeline,
                                  const std::vector<std::string>& overrides = {},
                                  const std::string& profile = "") {
  BuildRequest req;
  req.recipe = recipe;
  req.gpu = gpu;
  req.pipeline_text = pipeline;
  req.overrides = overrides;
  req.profile = profile;
  return compiler().run(req, through(Stage::Invariants));
}

// The message of the qr::Error that `f` throws; fails the test when it throws none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("expected a qr::Error");
  return {};
}

inline std::string at(const BuildResult& r, const std::string& path) {
  const Value* v = r.config.find(path);
  return v == nullptr ? "<absent>" : to_flow_yaml(*v);
}

inline std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline bool updating_goldens() {
  const char* v = std::getenv("UPDATE_GOLDENS");
  return v != nullptr && std::string(v) == "1";
}

// Where a mismatching golden's received text goes: next to it, so that `diff` or a copy over the
// golden is one command away (git ignores `*.received`).
inline std::filesystem::path received_path(const std::filesystem::path& golden) {
  return golden.string() + ".received";
}

// Compares `received` with the golden file byte for byte; `what` names what produced it (the
// recipe). UPDATE_GOLDENS=1 rewrites the golden instead. A mismatch fails the test with the first
// 60 lines of a unified diff on stderr and leaves the received text in `<golden>.received`; a match
// removes a stale one.
inline void check_golden(const std::filesystem::path& golden, const std::string& received,
                         const std::string& what) {
  namespace fs = std::filesystem;
  const fs::path received_file = received_path(golden);
  if (updating_goldens()) {
    fs::create_directories(golden.parent_path());
    std::ofstream(golden, std::ios::binary) << received;
    fs::remove(received_file);
    return;
  }
  const bool exists = fs::exists(golden);
  const std::string expected = exists ? read_bytes(golden) : std::string();
  if (exists && expected == received) {
    fs::remove(received_file);
    return;
  }
  std::ofstream(received_file, std::ios::binary) << received;
  constexpr int kDiffLines = 60;
  std::istringstream diff(
      unified_diff(expected, received, golden.string(), received_file.string()));
  std::string shown, line;
  int lines = 0, more = 0;
  while (std::getline(diff, line))
    if (lines < kDiffLines) {
      shown += line + "\n";
      ++lines;
    } else {
      ++more;
    }
  if (more > 0)
    shown += "... (" + std::to_string(more) + " more diff lines)\n";
  // On stderr as it is: Catch would wrap the diff's lines at 80 columns.
  std::cerr << "golden mismatch for " << what << "\n  golden:   " << golden.string()
            << (exists ? "" : " (missing)") << "\n  received: " << received_file.string()
            << "\n  (UPDATE_GOLDENS=1 rewrites the goldens)\n"
            << shown;
  FAIL_CHECK("golden mismatch for " << what << ": " << golden.filename().string()
                                    << " (diff on stderr)");
}

} // namespace qr::test
