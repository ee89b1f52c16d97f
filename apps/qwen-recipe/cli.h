// Shared pieces of the subcommands: logging set-up, the compiler, atomic output.
#pragma once

#include "compile.h"

#include <memory>
#include <string>

namespace qr::cli {

struct GlobalOptions {
  int verbosity = 0; // -v / -q
  std::string recipes_dir;
};

void setup_logging(const GlobalOptions& g);
// The compiler over the built-in recipes, or over --recipes-dir.
std::unique_ptr<Compiler> make_compiler(const GlobalOptions& g);

// Writes `text` to `path` atomically (temporary file in the same directory, then rename), or to
// stdout when path is empty or "-", or in place when it is a device or a pipe (/dev/stdout).
// Throws qr::Error; leaves no file behind on failure.
void write_output(const std::string& path, const std::string& text);

} // namespace qr::cli
