// Shared pieces of the subcommands: logging set-up and the compiler.
#pragma once

#include "build/build.h"
#include "support/output.h"

#include <memory>
#include <string>

namespace qr::cli {

struct GlobalOptions {
  int verbosity = 0;                     // -v / -q
  std::vector<std::string> recipes_dirs; // --recipes-dir, in order
};

// Log messages go to stderr as `level: message`. A command that compiles (build) holds them, and
// its --print-after-all dumps, until it ends: on success they are written; on an error only with
// -v or --print-after-all, so that otherwise the error is the one line on stderr.
void setup_logging(const GlobalOptions& g);
void hold_logs();
// Adds text to what is held (--print-after-all dumps), keeping it in order with the messages.
void hold_text(const std::string& text);
// Writes (or drops, after an error) what is held; called once the command has ended.
void release_logs(bool failed);
// The compiler over the built-in recipes, or over --recipes-dir.
std::unique_ptr<Compiler> make_compiler(const GlobalOptions& g);

} // namespace qr::cli
