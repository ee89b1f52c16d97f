// Shared by the libFuzzer targets. Each target feeds its input to the library as the CLI would;
// qr::Error is the expected answer to bad input. Any other exception escapes and libFuzzer
// reports it, as it does crashes, leaks, undefined behaviour and failed checks (`expect`).
#pragma once

#include "build/build.h"
#include "support/error.h"
#include "yaml/yaml_read.h"
#include "yaml/yaml_write.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <spdlog/spdlog.h>
#include <string>
#include <string_view>
#include <vector>

namespace qr::fuzz {

inline const Compiler& compiler() {
  static const Compiler c = [] {
    spdlog::set_level(spdlog::level::off); // passes' notes and warnings
    return Compiler(embedded_data());
  }();
  return c;
}

// A recipe prepared but not run (its base config and pipeline): Qwen3.5-VL 397B-A17B on GB300,
// whose pipeline has CUDA graphs, MoE dispatch and HybridEP environment settings.
inline const BuildResult& prepared() {
  static const BuildResult r = [] {
    BuildRequest req;
    req.recipe = "qwen35_397b";
    req.gpu = "gb300";
    return compiler().run(req, through(Stage::Pipeline));
  }();
  return r;
}

// The same recipe built: the config overrides apply to.
inline const BuildResult& built() {
  static const BuildResult r = [] {
    BuildRequest req;
    req.recipe = "qwen35_397b";
    req.gpu = "gb300";
    return compiler().run(req, through(Stage::Invariants));
  }();
  return r;
}

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The input cut at `sep`, for targets that take several inputs (tokens, or two files).
inline std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0;;) {
    const std::size_t end = text.find(sep, start);
    out.push_back(text.substr(start, end - start));
    if (end == std::string_view::npos)
      return out;
    start = end + 1;
  }
}

// A property of the library that must hold; a failure is a crash libFuzzer keeps.
inline void expect(bool ok, const char* what, std::string_view detail = {}) {
  if (ok)
    return;
  std::fprintf(stderr, "fuzz check failed: %s\n%.*s\n", what, static_cast<int>(detail.size()),
               detail.data());
  std::abort();
}

// What the emitter writes reads back as the same tree (the emitter quotes exactly where a reader
// would take a string for something else).
inline void expect_round_trip(const Value& v) {
  const std::string yaml = to_yaml(v);
  const auto doc = parse_yaml(yaml, "emitted");
  expect(to_untyped_value(*doc, *doc->root) == v, "to_yaml output reads back differently", yaml);
}

// Runs one input through `body`: qr::Error is a fine answer, anything else escapes.
template <typename F>
int run(F&& body) {
  try {
    body();
  } catch (const Error&) {
  }
  return 0;
}

} // namespace qr::fuzz
