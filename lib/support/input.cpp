#include "support/input.h"

#include "support/error.h"
#include "support/script_text.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace qr {
namespace {

std::string mib(std::size_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

// Reads an open descriptor by the rules in input.h; `label` is the input's name, escaped.
std::string read_fd(int fd, const std::string& label, std::size_t max_bytes,
                    std::string_view kind) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw Error(label + ": cannot read: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    throw Error(label + ": is a directory, expected a YAML file");
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode))
    throw Error(label + ": not a regular file, a pipe or a character device");
  const std::string too_big =
      "larger than the " + mib(max_bytes) + " " + std::string(kind) + " may be";
  if (S_ISREG(st.st_mode) && static_cast<std::size_t>(st.st_size) > max_bytes)
    throw Error(label + ": file is " + mib(static_cast<std::size_t>(st.st_size)) + ", " + too_big);
  std::string text;
  if (S_ISREG(st.st_mode))
    text.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      throw Error(label + ": read error: " + std::strerror(errno));
    if (n == 0)
      return text;
    // A file that grows while it is read, a pipe or a device: stop one chunk past the cap.
    if (text.size() + static_cast<std::size_t>(n) > max_bytes)
      throw Error(label + ": " + too_big);
    text.append(buf, static_cast<std::size_t>(n));
  }
}

} // namespace

std::string read_input_file(const std::string& path, std::size_t max_bytes, std::string_view kind) {
  const std::string label = escaped_for_message(path);
  // O_NONBLOCK would make a FIFO's reads fail; a FIFO without a writer waits, as cat's does.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    throw Error(label + (errno == ENOENT ? std::string(": no such file")
                                         : ": cannot read: " + std::string(std::strerror(errno))));
  try {
    std::string text = read_fd(fd, label, max_bytes, kind);
    ::close(fd);
    return text;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

std::string read_standard_input(std::size_t max_bytes, std::string_view kind) {
  return read_fd(STDIN_FILENO, "<stdin>", max_bytes, kind);
}

} // namespace qr
