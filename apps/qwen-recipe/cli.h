// Shared pieces of the subcommands: logging set-up, the compiler, atomic output.
#pragma once

#include "compile.h"
#include "validate/validate.h"

#include <memory>
#include <string>

namespace qr::cli {

struct GlobalOptions {
  int verbosity = 0; // -v / -q
  std::string recipes_dir;
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

// Writes `text` to `path` atomically (temporary file in the same directory, then rename), or to
// stdout when path is empty or "-", or in place when it is a device or a pipe (/dev/stdout).
// Throws qr::Error; leaves no file behind on failure.
void write_output(const std::string& path, const std::string& text);

// The start-up checks at the end of a build (build, launch): warnings and skipped checks go to
// the log; failures are logged as `error:` lines and the last one is thrown, so every failure
// shows as one line and the command exits 2.
void validate_built(const BuildResult& result, const ValidateOptions& options);

} // namespace qr::cli
