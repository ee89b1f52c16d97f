// Output files written as one: all or none, atomically, even when a signal ends the process.
#pragma once

#include <string>
#include <vector>

namespace qr {

struct OutputFile {
  std::string path; // empty or "-": standard output
  std::string text;
};

// Writes the files as one: each to a temporary file next to it (a name that stays within
// NAME_MAX), and only once every one is written are they renamed into place, so that after any
// error (a full disk, a missing directory, an existing file without `replace`) none is created
// or changed. A path that is a device or a pipe (/dev/stdout, or a link to one) is written in
// place after the renames, standard output last (closed, it is refused first), and if one of
// them fails (a full device, a reader gone: EPIPE, not SIGPIPE) the renames are undone. A path
// that is a symbolic link to anything else is replaced by the new file (the link's target is left
// as it was). Without `replace`, an existing path is refused. A signal that ends the process
// during the write (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGXFSZ, SIGALRM, SIGUSR1 ...) removes the
// temporary files, and undoes the renames done so far, before the process dies. Throws qr::Error.
void write_outputs(const std::vector<OutputFile>& files, bool replace);
// One file, replacing what is there: write_outputs({{path, text}}, true).
void write_output(const std::string& path, const std::string& text);

} // namespace qr
