#include "data/data_source.h"

#include "data/embedded_data.h"
#include "support/error.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

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
    const std::string prefix = dir + "/";
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
    std::ifstream in(dir_ + "/" + path, std::ios::binary);
    if (!in)
      throw Error(describe(path) + ": cannot read");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::shared_ptr<YamlDoc> parse(const std::string& path) const override {
    return read_yaml_file(dir_ + "/" + path);
  }
  std::vector<std::string> list(const std::string& dir) const override {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_ + "/" + dir, ec))
      if (e.is_regular_file() && e.path().extension() == ".yaml")
        out.push_back(dir + "/" + e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string describe(const std::string& path) const override { return dir_ + "/" + path; }
  std::string directory() const override { return dir_; }

private:
  std::string dir_;
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

} // namespace qr
