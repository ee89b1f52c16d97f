// What passes read from the recipe catalogue: precision blocks (recipes/precisions.yaml) and
// environment presets (recipes/env.yaml). recipes/'s Catalog implements it, so passes/ sits below
// recipes/ in the build and never includes it (the catalogue holds parsed pipelines).
#pragma once

#include "config/config.h"
#include "yaml/value.h"

#include <string_view>

namespace qr {

class Presets {
public:
  Presets() = default;
  Presets(const Presets&) = default;
  Presets& operator=(const Presets&) = default;
  virtual ~Presets() = default;

  // A fresh MixedPrecisionConfig with the named block's fields.
  [[nodiscard]] virtual Value precision_block(std::string_view precision,
                                              const Config& config) const = 0;
  // An environment preset; "common" is always applied first.
  [[nodiscard]] virtual const Map& env_preset(std::string_view name) const = 0;
};

} // namespace qr
