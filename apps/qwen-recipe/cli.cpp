#include "cli.h"

#include "config/error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

namespace qr::cli {

namespace {

struct HeldLogs {
  bool holding = false;
  bool has_text = false; // --print-after-all dumps, which are kept after an error too
  int verbosity = 0;
  std::string text;
};

HeldLogs& held() {
  static HeldLogs h;
  return h;
}

// Writes each message to stderr, or to what is held. Locked: check builds in threads.
class StderrSink : public spdlog::sinks::base_sink<std::mutex> {
protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    // Errors are never held: each is one line of the failure report (validate lists them all).
    if (held().holding && msg.level < spdlog::level::err)
      held().text.append(line.data(), line.size());
    else
      std::fwrite(line.data(), 1, line.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }
};

} // namespace

void setup_logging(const GlobalOptions& g) {
  auto logger = std::make_shared<spdlog::logger>("qwen-recipe", std::make_shared<StderrSink>());
  logger->set_pattern("%l: %v");
  held().verbosity = g.verbosity;
  spdlog::set_default_logger(logger);
  spdlog::set_level(g.verbosity > 0   ? spdlog::level::debug
                    : g.verbosity < 0 ? spdlog::level::err
                                      : spdlog::level::info);
}

void hold_logs() {
  held().holding = true;
}

void hold_text(const std::string& text) {
  held().text += text;
  held().has_text = true;
}

void release_logs(bool failed) {
  HeldLogs& h = held();
  if (!failed || h.verbosity > 0 || h.has_text)
    std::fwrite(h.text.data(), 1, h.text.size(), stderr);
  h = HeldLogs{false, false, h.verbosity, {}};
}

std::unique_ptr<Compiler> make_compiler(const GlobalOptions& g) {
  return std::make_unique<Compiler>(g.recipes_dir.empty() ? embedded_data()
                                                          : directory_data(g.recipes_dir));
}

namespace {

// Writes all of `text`; false (errno set) on failure.
bool write_all(int fd, const std::string& text) {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

} // namespace

void write_output(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0)
      throw Error("cannot write to standard output: " + std::string(std::strerror(errno)));
    return;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode))
      throw Error(path + ": is a directory; give -o a file name");
    // A device or a pipe (/dev/stdout, a FIFO) is written in place: a rename would replace it.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
      throw Error(path + ": cannot open for writing: " + std::strerror(errno));
    const bool ok = write_all(fd, text);
    const std::string why = std::strerror(errno);
    if (::close(fd) != 0 || !ok)
      throw Error(path + ": write failed: " + (ok ? std::string(std::strerror(errno)) : why));
    return;
  }
  std::string tmpl = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0)
    throw Error(path + ": cannot create the output file: " + std::strerror(errno));
  auto fail = [&](const char* what) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    ::unlink(tmpl.c_str());
    throw Error(path + ": " + what + ": " + why);
  };
  if (!write_all(fd, text))
    fail("write failed");
  // Same permissions an ordinary new file would get.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0 || ::fsync(fd) != 0)
    fail("write failed");
  if (::close(fd) != 0) {
    ::unlink(tmpl.c_str());
    throw Error(path + ": write failed: " + std::strerror(errno));
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmpl.c_str());
    throw Error(path + ": cannot write: " + why);
  }
}

void validate_built(const BuildResult& result, const ValidateOptions& options) {
  const ValidationReport report = validate_config(result.config, options);
  std::vector<const Finding*> errors;
  for (const Finding& f : report.findings) {
    if (f.level == Finding::Level::Error)
      errors.push_back(&f);
    else if (f.level == Finding::Level::Warning)
      spdlog::warn("check '{}': {}", f.check, f.message);
    else
      spdlog::info("check '{}' skipped: {}", f.check, f.message);
  }
  for (const Finding* f : errors) {
    if (f == errors.back())
      throw Error("check '" + f->check + "' failed: " + f->message);
    spdlog::error("check '{}' failed: {}", f->check, f->message);
  }
}

} // namespace qr::cli
