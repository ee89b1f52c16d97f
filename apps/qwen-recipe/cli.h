// Shared pieces of the subcommands: logging set-up, the compiler, atomic output.
#pragma once

#include "compile/compile.h"
#include "validate/validate.h"

#include <memory>
#include <string>
#include <vector>

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

struct OutputFile {
  std::string path; // empty or "-": standard output
  std::string text;
};

// Writes the files as one: each to a temporary file next to it (a name that stays within
// NAME_MAX), and only once every one is written are they renamed into place, so that after any
// error (a full disk, a missing directory, an existing file without `replace`) none is created
// or changed. A path that is a device or a pipe (/dev/stdout, or a link to one) is written in
// place, after the renames; standard output last. A path that is a symbolic link to anything
// else is replaced by the new file (the link's target is left as it was). Without `replace`, an
// existing path is refused. SIGINT, SIGTERM and SIGHUP during the write remove the temporary
// files, and undo the renames done so far, before the process dies. Throws qr::Error.
void write_outputs(const std::vector<OutputFile>& files, bool replace);
// One file, replacing what is there: write_outputs({{path, text}}, true).
void write_output(const std::string& path, const std::string& text);

// The start-up checks at the end of a build (build, launch): warnings and skipped checks go to
// the log; failures are logged as `error:` lines and the last one is thrown, so every failure
// shows as one line and the command exits 2.
void validate_built(const BuildResult& result, const ValidateOptions& options);

} // namespace qr::cli
