// Where recipe data (recipes/: schema, models, GPU recipes) is read from: the copy compiled into
// the binary, or a directory given at run time (for editing recipes without rebuilding).
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
};

// The recipes/ tree compiled into the binary.
std::shared_ptr<const DataSource> embedded_data();
// A recipes/ directory on disk.
std::shared_ptr<const DataSource> directory_data(const std::string& dir);

} // namespace qr
