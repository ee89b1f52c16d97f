// Overrides files: both forms become the command line's tokens, each naming its file:line:col.
#include "helpers.h"
#include "overrides/overrides_file.h"

#include <filesystem>
#include <fstream>

using namespace qr;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> tokens_of(const std::string& text) {
  const fs::path p = test::scratch_dir() / "overrides-file.yaml";
  std::ofstream(p, std::ios::binary) << text;
  std::vector<std::string> out;
  for (const Override& o : read_overrides_file(p.string()))
    out.push_back(fs::path(o.origin.substr(0, o.origin.find(':'))).filename().string() +
                  o.origin.substr(o.origin.find(':')) + " " + to_token(o));
  return out;
}

} // namespace

TEST_CASE("overrides file: the list form is the command line's tokens, in order") {
  CHECK(tokens_of("- train.train_iters=20\n- +env_vars.X=1\n- ~model.fp8\n") ==
        std::vector<std::string>{"overrides-file.yaml:1:3 train.train_iters=20",
                                 "overrides-file.yaml:2:3 +env_vars.X=1",
                                 "overrides-file.yaml:3:3 ~model.fp8"});
}

TEST_CASE("overrides file: the mapping form sets each leaf, values as written") {
  CHECK(
      tokens_of("train:\n  global_batch_size: 256\n  train_iters: '10'\n"
                "model: {cuda_graph_scope: [moe_router, attn], fp8: null}\n"
                "logger.wandb_project: a,b\n"
                "tokenizer: {hf_tokenizer_kwargs: {}}\n") ==
      std::vector<std::string>{"overrides-file.yaml:2:3 train.global_batch_size=256",
                               "overrides-file.yaml:3:3 train.train_iters='10'",
                               "overrides-file.yaml:4:9 model.cuda_graph_scope=[moe_router, attn]",
                               "overrides-file.yaml:4:47 model.fp8=null",
                               "overrides-file.yaml:5:1 logger.wandb_project='a,b'",
                               "overrides-file.yaml:6:13 tokenizer.hf_tokenizer_kwargs={}"});
}

TEST_CASE("overrides file: a mapping with _target_ replaces a section whole") {
  CHECK(tokens_of("model:\n  dist_train: {_target_: x.Y, use_dist_train: true}\n") ==
        std::vector<std::string>{
            "overrides-file.yaml:2:3 model.dist_train={_target_: x.Y, use_dist_train: true}"});
}

TEST_CASE("overrides file: applied by the compiler before the command line's, in file order") {
  const fs::path a = test::scratch_dir() / "overrides-a.yaml";
  const fs::path b = test::scratch_dir() / "overrides-b.yaml";
  std::ofstream(a, std::ios::binary) << "train: {train_iters: 10, global_batch_size: 256}\n";
  std::ofstream(b, std::ios::binary) << "- train.train_iters=20\n";
  BuildRequest req;
  req.recipe = "qwen3_30b@b200";
  req.override_files = {a.string(), b.string()};
  req.overrides = {"train.global_batch_size=128"};
  const BuildResult r = qr::test::compiler().run(req, through(Stage::Invariants));
  CHECK(qr::test::at(r, "train.train_iters") == "20");
  CHECK(qr::test::at(r, "train.global_batch_size") == "128");
  // A failure names the file's line.
  std::ofstream(b, std::ios::binary) << "- train.train_iters=20\n- train.trian_iters=5\n";
  CHECK_THAT(
      qr::test::error_of([&] { (void)qr::test::compiler().run(req, through(Stage::Invariants)); }),
      Catch::StartsWith(b.string() + ":2:3: could not override 'train.trian_iters'"));
}
