// Where recipe data (recipes/: schema, models, GPU recipes) is read from: the copy compiled into
// the binary, or a whole recipes/ tree given at run time (for editing recipes without
// rebuilding), and the users' overlays (--recipes-dir DIR holding only their own files).
#pragma once

#include "yaml/yaml_read.h"

#include <memory>
#include <string>
#include <vector>

namespace qr {

class DataSource {
public:
  virtual ~DataSource() = default;
  // Contents of `path` (relative to recipes/, e.g. "schema/train.yaml"); throws qr::Error.
  [[nodiscard]] virtual std::string read(const std::string& path) const = 0;
  // The parsed document; throws qr::Error naming the file, line and column.
  [[nodiscard]] virtual std::shared_ptr<YamlDoc> parse(const std::string& path) const = 0;
  // Files directly under `dir` ending in `.yaml`, sorted.
  [[nodiscard]] virtual std::vector<std::string> list(const std::string& dir) const = 0;
  // How to name this source in messages ("built-in recipes", or the directory).
  [[nodiscard]] virtual std::string describe(const std::string& path) const = 0;
  // The --recipes-dir this data comes from; empty for the built-in recipes.
  [[nodiscard]] virtual std::string directory() const = 0;
  // True for an overlay: a user's files, layered over the catalogue, not a whole tree.
  [[nodiscard]] virtual bool is_overlay() const { return false; }
};

using DataSources = std::vector<std::shared_ptr<const DataSource>>;

// The recipes/ tree compiled into the binary.
std::shared_ptr<const DataSource> embedded_data();
// A whole recipes/ directory on disk.
std::shared_ptr<const DataSource> directory_data(const std::string& dir);
// A user's overlay directory: every file read must lie inside it (a link out is refused), it
// holds at most kMaxOverlayFiles YAML files, each bounded as every YAML file is.
std::shared_ptr<const DataSource> overlay_data(const std::string& dir);
inline constexpr std::size_t kMaxOverlayFiles = 1000;
// What --recipes-dir DIR... means: the built-in recipes, or the first DIR when it is a whole tree
// (it has schema/), then each other DIR as an overlay, in order (a later one wins).
DataSources recipe_sources(const std::vector<std::string>& dirs);

} // namespace qr
