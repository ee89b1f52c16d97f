// The pass registry: one entry per pass and per named pipeline. It drives `list passes`,
// docs/passes.md and the pipeline parser.
#pragma once

#include "passes/pass.h"

#include <string_view>
#include <vector>

namespace qr {

// Each pass family's file defines its entries.
extern const PassInfo kPrecisionPass;
extern const PassInfo kVocabNullTokenizerPass;
extern const PassInfo kQwen35VlCommonPass;
extern const PassInfo kQwen3VlCommonPass;
extern const PassInfo kBenchmarkCommonPass;
extern const PassInfo kParallelismPass;
extern const PassInfo kBatchPass;
extern const PassInfo kDispatcherPass;
extern const PassInfo kCommOverlapPass;
extern const PassInfo kCudaGraphsPass;
extern const PassInfo kQwen35VlPostPass;
extern const PassInfo kClearCudaGraphScopePass;
extern const PassInfo kOverlapWithOptimizerStepPass;
extern const PassInfo kPartialCudaGraphsPass;
extern const PassInfo kGdnBackendPass;
extern const PassInfo kFinalizeQwen3VlPass;
extern const PassInfo kMoeA2aOverlapPass;
extern const PassInfo kNcclepPass;
extern const PassInfo kFusedGroupedMlpPass;
extern const PassInfo kQwen35Vl35bH100ExecPass;
extern const PassInfo kSetPass;
extern const PassInfo kSetIfFieldPass;
extern const PassInfo kEnvPass;

const std::vector<const PassInfo*>& pass_registry();
const std::vector<NamedPipeline>& named_pipelines();
const PassInfo* find_pass(std::string_view name);
const NamedPipeline* find_named_pipeline(std::string_view name);
// Every pass and named-pipeline name, for "did you mean".
std::vector<std::string> registered_names();

// Shared by the passes that start with the null tokenizer.
void run_null_tokenizer(PassContext& ctx);

} // namespace qr
