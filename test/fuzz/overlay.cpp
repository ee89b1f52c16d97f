// A --recipes-dir folder as the loader meets it: one user file, and after a 0x1e byte, a base
// layer of its own (models/top8.yaml), layered over the built-in catalogue (or qr::Error). Each
// recipe it defines is then prepared (its base config typed, its pipeline bound and
// order-checked), and its key reads back as the same model, GPU and count.
#include "data/data_source.h"
#include "fuzz.h"

#include <memory>
#include <optional>

namespace {

// The folder in memory: what the fuzzer gives is what the files hold.
class MemoryOverlay : public qr::DataSource {
public:
  MemoryOverlay(std::string_view file, std::optional<std::string_view> layer)
      : file_(file), layer_(layer) {}
  std::string read(const std::string& path) const override { return text_of(path); }
  std::shared_ptr<qr::YamlDoc> parse(const std::string& path) const override {
    return qr::parse_yaml(text_of(path), describe(path));
  }
  std::vector<std::string> list(const std::string& dir) const override {
    if (dir.empty())
      return {"user.yaml"};
    if (dir == "models" && layer_)
      return {"models/top8.yaml"};
    return {};
  }
  std::string describe(const std::string& path) const override { return "mine/" + path; }
  std::string directory() const override { return "mine"; }
  bool is_overlay() const override { return true; }

private:
  std::string text_of(const std::string& path) const {
    if (path == "user.yaml")
      return std::string(file_);
    if (path == "models/top8.yaml" && layer_)
      return std::string(*layer_);
    throw qr::Error(describe(path) + ": no such file");
  }
  std::string_view file_;
  std::optional<std::string_view> layer_;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qr;
  (void)fuzz::compiler(); // logging off
  const std::vector<std::string_view> parts = fuzz::split(fuzz::text(data, size), '\x1e');
  return fuzz::run([&] {
    const Compiler c(DataSources{
        embedded_data(), std::make_shared<MemoryOverlay>(
                             parts[0], parts.size() > 1 ? std::optional(parts[1]) : std::nullopt)});
    fuzz::expect(c.catalog().recipes().size() >= fuzz::compiler().catalog().recipes().size(),
                 "an overlay dropped a built-in recipe");
    for (const RecipeEntry& r : c.catalog().recipes()) {
      if (r.layer == 0)
        continue;
      const RecipeRef ref = parse_recipe_ref(r.key());
      fuzz::expect(ref.model == r.model && ref.gpu == r.gpu &&
                       (ref.num_gpus == 0 ? r.is_default : ref.num_gpus == r.num_gpus),
                   "a recipe's key reads back as another recipe", r.key());
      for (const auto& [precision, variant] : r.precisions) {
        BuildRequest req;
        req.recipe = r.key() + ":" + precision;
        try {
          (void)c.run(req, through(Stage::Pipeline));
        } catch (const Error&) {
        }
      }
    }
  });
}
