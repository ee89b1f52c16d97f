#include "data/data_source.h"

#include "data/embedded_data.h"
#include "support/error.h"
#include "support/input.h"

#include <algorithm>
#include <filesystem>

namespace qr {
namespace {

class EmbeddedData : public DataSource {
public:
  std::string read(const std::string& path) const override {
    for (const EmbeddedFile& f : embedded_files())
      if (f.path == path)
        return std::string(f.contents);
    throw Error("built-in recipes have no file '" + path + "'");
  }
  std::shared_ptr<YamlDoc> parse(const std::string& path) const override {
    for (const EmbeddedFile& f : embedded_files())
      if (f.path == path)
        return deserialize_yaml_doc(f.tree, describe(path));
    throw Error("built-in recipes have no file '" + path + "'");
  }
  std::vector<std::string> list(const std::string& dir) const override {
    std::vector<std::string> out;
    const std::string prefix = dir.empty() ? std::string() : dir + "/";
    for (const EmbeddedFile& f : embedded_files()) {
      const std::string_view p = f.path;
      if (p.starts_with(prefix) && p.ends_with(".yaml") &&
          p.find('/', prefix.size()) == std::string_view::npos)
        out.emplace_back(p);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string describe(const std::string& path) const override { return "recipes/" + path; }
  std::string directory() const override { return {}; }
};

class DirectoryData : public DataSource {
public:
  explicit DirectoryData(std::string dir) : dir_(std::move(dir)) {}
  std::string read(const std::string& path) const override {
    return read_input_file(dir_ + "/" + path);
  }
  std::shared_ptr<YamlDoc> parse(const std::string& path) const override {
    return read_yaml_file(dir_ + "/" + path);
  }
  std::vector<std::string> list(const std::string& dir) const override {
    std::vector<std::string> out;
    std::error_code ec;
    const std::string prefix = dir.empty() ? std::string() : dir + "/";
    for (const auto& e : std::filesystem::directory_iterator(dir_ + "/" + dir, ec))
      if (e.is_regular_file() && e.path().extension() == ".yaml")
        out.push_back(prefix + e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string describe(const std::string& path) const override { return dir_ + "/" + path; }
  std::string directory() const override { return dir_; }

protected:
  std::string dir_;
};

// A user's files only: what is read must lie inside the directory, and there are not too many.
class OverlayData : public DirectoryData {
public:
  explicit OverlayData(std::string dir)
      : DirectoryData(std::move(dir)), root_(std::filesystem::weakly_canonical(dir_)) {}
  std::string read(const std::string& path) const override {
    check_inside(path);
    return DirectoryData::read(path);
  }
  std::shared_ptr<YamlDoc> parse(const std::string& path) const override {
    check_inside(path);
    return DirectoryData::parse(path);
  }
  std::vector<std::string> list(const std::string& dir) const override {
    std::vector<std::string> out = DirectoryData::list(dir);
    if (out.size() > kMaxOverlayFiles)
      throw Error(describe(dir) + ": " + std::to_string(out.size()) + " YAML files, more than " +
                  std::to_string(kMaxOverlayFiles) + " a --recipes-dir folder may hold");
    return out;
  }
  bool is_overlay() const override { return true; }

private:
  // A link may point within the directory, not out of it: the data of a --recipes-dir is what
  // lies in it.
  void check_inside(const std::string& path) const {
    std::error_code ec;
    const std::filesystem::path real = std::filesystem::weakly_canonical(dir_ + "/" + path, ec);
    const auto rel = real.lexically_relative(root_);
    if (ec || rel.empty() || *rel.begin() == "..")
      throw Error(describe(path) + ": leads outside " + dir_ +
                  " (a link out of it); a --recipes-dir holds its own files");
  }
  std::filesystem::path root_;
};

} // namespace

std::shared_ptr<const DataSource> embedded_data() {
  static const auto data = std::make_shared<EmbeddedData>();
  return data;
}

std::shared_ptr<const DataSource> directory_data(const std::string& dir) {
  if (!std::filesystem::is_directory(dir))
    throw Error(dir + ": not a directory (expected a recipes/ tree with schema/, models/, gpus/)");
  return std::make_shared<DirectoryData>(dir);
}

std::shared_ptr<const DataSource> overlay_data(const std::string& dir) {
  if (!std::filesystem::is_directory(dir))
    throw Error(dir + ": not a directory (--recipes-dir takes a folder of your recipe files)");
  return std::make_shared<OverlayData>(dir);
}

DataSources recipe_sources(const std::vector<std::string>& dirs) {
  DataSources out;
  for (const std::string& dir : dirs) {
    std::error_code ec;
    const bool whole_tree = std::filesystem::is_directory(dir + "/schema", ec);
    if (whole_tree && !out.empty())
      throw Error(dir + ": a whole recipes/ tree (it has schema/) replaces the built-in recipes, "
                        "so it can only be the first --recipes-dir");
    out.push_back(whole_tree ? directory_data(dir) : overlay_data(dir));
  }
  if (out.empty() || out.front()->is_overlay())
    out.insert(out.begin(), embedded_data());
  return out;
}

} // namespace qr
