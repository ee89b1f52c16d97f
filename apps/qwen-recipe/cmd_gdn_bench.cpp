// qwen-recipe gdn-bench: the GDN kernel benchmark (kernels/bench), with shapes taken from the
// compiled recipes. Every argument goes to the bench; `--recipe MODEL[@GPU[:PRECISION]]` is
// resolved here (GPU defaults to gb300, whose recipes the GDN backend choice is about).
#include "commands.h"
#include "support/error.h"

#include <iostream>
#include <memory>
#include <spdlog/spdlog.h>

#ifdef QR_HAVE_GDN_BENCH
#include "gdn_bench.h"
#endif

namespace qr::cli {
namespace {

#ifdef QR_HAVE_GDN_BENCH
// The shape one GPU's GDN layer sees: micro batch x (sequence / CP), heads / TP; and the contract
// its Megatron-Core profile runs. Every profile builds Megatron-Core's GatedDeltaNet, which
// normalises q and k and repeats them to the value heads before the op: the mcore contract
// (docs/gdn/bench.md, "Contracts"), dense at B = MBS (the recipes' mock data packs nothing).
bool recipe_shape(const Compiler& compiler, const std::string& spec, gdn::RecipeShape& shape,
                  std::string& error) {
  try {
    BuildRequest req;
    req.recipe = spec.find('@') == std::string::npos ? spec + "@gb300" : spec;
    const BuildResult r = compiler.run(req, through(Stage::Invariants));
    const Config& c = r.config;
    const Value& variant = c.at("model.experimental_attention_variant");
    if (!variant.is_str() || variant.as_str() != "gated_delta_net") {
      error = r.recipe->model->name + " has no GatedDeltaNet layers";
      return false;
    }
    auto num = [&](const char* path) { return static_cast<int>(c.at(path).as_int()); };
    const int tp = num("model.tensor_model_parallel_size");
    const int cp = num("model.context_parallel_size");
    if (num("model.linear_key_head_dim") != num("model.linear_value_head_dim")) {
      error = "the kernels take equal key and value head dims";
      return false;
    }
    shape = {num("train.micro_batch_size"),
             num("model.seq_length") / cp,
             num("model.linear_num_key_heads") / tp,
             num("model.linear_num_value_heads") / tp,
             num("model.linear_key_head_dim"),
             "mcore",
             req.recipe + "'s Megatron-Core profile " + c.profile() +
                 " (Megatron-Core's GatedDeltaNet)"};
    return true;
  } catch (const Error& e) {
    error = e.what();
    return false;
  }
}
#endif

int run_gdn_bench(const std::vector<std::string>& args, const GlobalOptions& g) {
#ifdef QR_HAVE_GDN_BENCH
  auto compiler = make_compiler(g);
  spdlog::set_level(spdlog::level::warn); // a recipe's build notes are noise here
  const gdn::RecipeShapeResolver resolver = [&](const std::string& spec, gdn::RecipeShape& shape,
                                                std::string& error) {
    return recipe_shape(*compiler, spec, shape, error);
  };
  return gdn::bench_main(args, resolver, std::cout, std::cerr);
#else
  (void)args;
  (void)g;
  std::cerr << "gdn-bench: this qwen-recipe was built without the CUDA kernels (no nvcc at "
               "configure time); skipping\n";
  return 77;
#endif
}

} // namespace

void register_gdn_bench(CLI::App& app, GlobalOptions& global, std::function<int()>& action) {
  CLI::App* cmd = app.add_subcommand(
      "gdn-bench", "time the CUDA GatedDeltaNet kernels per backend at the recipes' shapes "
                   "(all arguments go to the bench; --help lists them)");
  cmd->prefix_command(); // everything after the subcommand belongs to the bench
  cmd->set_help_flag();
  cmd->callback([cmd, &global, &action] {
    action = [args = cmd->remaining(), &global] { return run_gdn_bench(args, global); };
  });
}

} // namespace qr::cli
