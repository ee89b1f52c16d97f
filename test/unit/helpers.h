// Shared test helpers: one compiler over the built-in recipes, and short ways to build.
#pragma once

#include "compile/compile.h"
#include "support/error.h"
#include "yaml/yaml_write.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace qr::test {

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
  return compiler().build(req);
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
  return compiler().build(req);
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

} // namespace qr::test
