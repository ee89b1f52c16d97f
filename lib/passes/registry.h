// The pass registry, built from passes/passes.def: every pass, property and named pipeline. It
// drives `list passes`, docs/passes.md, completion and the pipeline parser.
#pragma once

#include "passes/pass.h"

#include <string_view>
#include <vector>

namespace qr {

// Each pass's body, defined in its family file.
#define PASS(id, name, ...) void run_##id(PassContext& ctx);
#define PASS_WITH_FREE_OPTIONS(id, name, ...)                                                      \
  void run_##id(PassContext& ctx);                                                                 \
  PassArgs bind_##id(const RawOptions& raw, const Config& base, const Presets& presets);
#include "passes/passes.def"

// In passes.def order (the order a recipe runs them).
const std::vector<PassInfo>& pass_registry();
const std::vector<PassProperty>& pass_properties();
const std::vector<NamedPipeline>& named_pipelines();
const PassInfo* find_pass(std::string_view name);
const PassProperty* find_property(std::string_view name);
const NamedPipeline* find_named_pipeline(std::string_view name);
// The names of the passes that provide `property`, in registry order.
std::vector<std::string> providers_of(std::string_view property);
// Every pass and named-pipeline name, for "did you mean" and completion.
std::vector<std::string> registered_names();

// vocab-null-tokenizer's writes followed by `more`, for the passes that run it first.
std::vector<std::string> null_tokenizer_writes(std::vector<std::string> more = {});

} // namespace qr
