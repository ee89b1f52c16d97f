#include "support/output.h"

#include "support/error.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

namespace qr {

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

// What the write in progress has to undo if a signal ends it, for the signal handler: slots of
// plain memory, since a handler may only call async-signal-safe functions (unlink, rename,
// raise). A slot names a temporary file to remove, or a file this write created (removed too), or
// a kept copy of a file it replaced (renamed back over it). Slots come in blocks, added as a
// write of many files (a sweep) needs them and never freed or moved, so that the handler can walk
// them at any moment; a slot's buffers are allocated when it is first claimed.
struct TempSlot {
  char* path = nullptr;       // PATH_MAX bytes
  char* restore_to = nullptr; // PATH_MAX bytes
  volatile std::sig_atomic_t used = 0;
  volatile std::sig_atomic_t restore = 0; // rename path back to restore_to instead of removing it
};
struct SlotBlock {
  TempSlot slots[16];
  std::atomic<SlotBlock*> next{nullptr};
};
SlotBlock temp_slots;

extern "C" void remove_temps_and_die(int sig) {
  for (SlotBlock* b = &temp_slots; b != nullptr; b = b->next.load(std::memory_order_relaxed))
    for (TempSlot& t : b->slots)
      if (t.used != 0 && t.restore != 0)
        ::rename(t.path, t.restore_to);
      else if (t.used != 0)
        ::unlink(t.path);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void install_temp_cleanup() {
  static bool installed = false;
  if (installed)
    return;
  installed = true;
  struct sigaction sa {};
  sa.sa_handler = remove_temps_and_die;
  sigemptyset(&sa.sa_mask);
  // Every signal whose default action ends the process, but those that cannot be caught
  // (SIGKILL) or that report a fault of the program itself (SIGSEGV, SIGBUS, SIGILL, SIGFPE,
  // SIGTRAP, SIGSYS: a sanitizer's report comes first). SIGXFSZ is what `ulimit -f` sends, SIGPIPE
  // a closed standard output, SIGABRT an uncaught exception. The mask blocks the others while
  // the handler runs, so that two signals cannot undo a write twice.
  const int fatal[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM, SIGPIPE,   SIGALRM, SIGUSR1,  SIGUSR2,
                       SIGXFSZ, SIGXCPU, SIGPOLL, SIGPROF, SIGVTALRM, SIGABRT, SIGSTKFLT};
  for (int sig : fatal)
    sigaddset(&sa.sa_mask, sig);
  for (int sig : fatal) {
    // A signal ignored by whoever started us (nohup, a shell's trap '' QUIT) stays ignored.
    struct sigaction was {};
    if (::sigaction(sig, nullptr, &was) == 0 && was.sa_handler == SIG_IGN)
      continue;
    ::sigaction(sig, &sa, nullptr);
  }
}

TempSlot& claim_slot(const std::string& path, const std::string& for_path) {
  install_temp_cleanup();
  if (path.size() >= PATH_MAX)
    throw Error(for_path + ": cannot create the output file: " + std::strerror(ENAMETOOLONG));
  for (SlotBlock* b = &temp_slots;;) {
    for (TempSlot& t : b->slots)
      if (t.used == 0) {
        if (t.path == nullptr) {
          t.path = new char[PATH_MAX];
          t.restore_to = new char[PATH_MAX];
        }
        std::memcpy(t.path, path.c_str(), path.size() + 1);
        t.restore = 0;
        t.used = 1;
        return t;
      }
    SlotBlock* next = b->next.load();
    if (next == nullptr) {
      next = new SlotBlock; // never freed: the handler may walk it at any time
      b->next.store(next);
    }
    b = next;
  }
}

// A file this write is about to create: removed if a signal ends the write before all are in
// place, so that a pair is never left half written.
class RemoveOnSignal {
public:
  explicit RemoveOnSignal(const std::string& path) : slot_(claim_slot(path, path)) {}
  RemoveOnSignal(const RemoveOnSignal&) = delete;
  RemoveOnSignal& operator=(const RemoveOnSignal&) = delete;
  ~RemoveOnSignal() { slot_.used = 0; }

private:
  TempSlot& slot_;
};

// A temporary file next to `path`, registered for the signal handler. mkstemp fills in the
// registered name itself, so the handler sees the file from the moment it exists.
class TempFile {
public:
  explicit TempFile(const std::string& path) {
    // base.tmp.XXXXXX, the base cut so that the name stays within NAME_MAX.
    const std::size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
    std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    const std::string suffix = ".tmp.XXXXXX";
    if (base.size() + suffix.size() > NAME_MAX)
      base.resize(NAME_MAX - suffix.size());
    slot_ = &claim_slot(dir + base + suffix, path);
    fd_ = ::mkstemp(slot_->path);
    if (fd_ < 0) {
      const std::string why = std::strerror(errno);
      slot_->used = 0;
      throw Error(path + ": cannot create the output file: " + why);
    }
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0)
      ::close(fd_);
    if (slot_->used != 0)
      ::unlink(slot_->path);
    slot_->used = 0;
  }
  [[nodiscard]] const char* name() const { return slot_->path; }
  // Writes, syncs and closes; false (errno set) on failure.
  bool write(const std::string& text) {
    // Same permissions an ordinary new file would get.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    const bool ok = write_all(fd_, text) && ::fchmod(fd_, 0666 & ~mask) == 0 && ::fsync(fd_) == 0;
    const int saved = errno;
    const int rc = ::close(fd_);
    fd_ = -1;
    errno = ok ? errno : saved;
    return ok && rc == 0;
  }
  // After a rename there is nothing left to remove.
  void renamed() { slot_->used = 0; }
  // Until every file is in place, a signal renames this kept copy back over `target`.
  void restore_on_signal(const std::string& target) {
    std::memcpy(slot_->restore_to, target.c_str(),
                std::min<std::size_t>(target.size() + 1, PATH_MAX));
    slot_->restore_to[PATH_MAX - 1] = '\0';
    slot_->restore = 1;
  }
  void remove_on_signal() { slot_->restore = 0; }

private:
  TempSlot* slot_ = nullptr;
  int fd_ = -1;
};

// rename(2) that fails with EEXIST instead of replacing `to`.
bool rename_no_replace(const char* from, const char* to) {
  if (::renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
    return true;
  if (errno != EINVAL && errno != ENOSYS)
    return false;
  // A file system without RENAME_NOREPLACE: link(2) fails on an existing name too.
  if (::link(from, to) != 0)
    return false;
  ::unlink(from);
  return true;
}

void write_in_place(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    throw Error(path + ": cannot open for writing: " + std::strerror(errno));
  const bool ok = write_all(fd, text);
  const std::string why = std::strerror(errno);
  if (::close(fd) != 0 || !ok)
    throw Error(path + ": write failed: " + (ok ? std::string(std::strerror(errno)) : why));
}

// Straight to the descriptor, after whatever stdio holds: a failed write leaves nothing in a
// buffer for exit() to try again.
void write_stdout(const std::string& text) {
  if (std::fflush(stdout) != 0 || !write_all(STDOUT_FILENO, text))
    throw Error("cannot write to standard output: " + std::string(std::strerror(errno)));
}

// While streams are written, a reader that went away is an error (EPIPE) that undoes the files
// and says so in one line, not a silent death by SIGPIPE that leaves them.
class SigpipeIgnored {
public:
  SigpipeIgnored() {
    struct sigaction sa {};
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGPIPE, &sa, &old_);
  }
  SigpipeIgnored(const SigpipeIgnored&) = delete;
  SigpipeIgnored& operator=(const SigpipeIgnored&) = delete;
  ~SigpipeIgnored() { ::sigaction(SIGPIPE, &old_, nullptr); }

private:
  struct sigaction old_ {};
};

} // namespace

void write_outputs(const std::vector<OutputFile>& files, bool replace) {
  std::vector<const OutputFile*> renamed, in_place, to_stdout;
  for (const OutputFile& f : files) {
    if (f.path.empty() || f.path == "-") {
      if (::fcntl(STDOUT_FILENO, F_GETFL) < 0)
        throw Error("cannot write to standard output: it is closed");
      to_stdout.push_back(&f);
      continue;
    }
    struct stat st {};
    const bool exists = ::lstat(f.path.c_str(), &st) == 0;
    if (exists && S_ISLNK(st.st_mode) && ::stat(f.path.c_str(), &st) != 0)
      st.st_mode = S_IFREG; // a dangling link: replaced like a file
    if (exists && S_ISDIR(st.st_mode))
      throw Error(f.path + ": is a directory; give -o a file name");
    if (exists && !S_ISREG(st.st_mode)) {
      // A device or a pipe (/dev/stdout, a FIFO) is written in place: a rename would replace it.
      in_place.push_back(&f);
      continue;
    }
    if (exists && !replace)
      throw Error(f.path + ": already exists; give --force to replace it");
    renamed.push_back(&f);
  }
  // Every file is written before any is renamed into place.
  std::vector<std::unique_ptr<TempFile>> temps;
  for (const OutputFile* f : renamed) {
    temps.push_back(std::make_unique<TempFile>(f->path));
    if (!temps.back()->write(f->text))
      throw Error(f->path + ": write failed: " + std::strerror(errno));
  }
  // A file replaced is kept under a temporary name until every rename has worked, so that a
  // failed rename can put back what was there.
  std::vector<std::unique_ptr<TempFile>> kept(renamed.size());
  std::vector<bool> existed(renamed.size());
  std::vector<std::unique_ptr<RemoveOnSignal>> created;
  std::size_t done = 0;
  auto undo = [&] {
    for (std::size_t i = 0; i < done; ++i) {
      if (kept[i] && ::rename(kept[i]->name(), renamed[i]->path.c_str()) == 0)
        kept[i]->renamed();
      else if (!existed[i])
        ::unlink(renamed[i]->path.c_str());
    }
  };
  for (; done < renamed.size(); ++done) {
    const std::string& path = renamed[done]->path;
    struct stat st {};
    existed[done] = ::lstat(path.c_str(), &st) == 0;
    if (replace && existed[done]) {
      kept[done] = std::make_unique<TempFile>(path);
      ::unlink(kept[done]->name());
      if (::link(path.c_str(), kept[done]->name()) != 0)
        kept[done].reset(); // no hard links here: the replaced file cannot be put back
    }
    if (kept[done])
      kept[done]->restore_on_signal(path);
    else if (!existed[done])
      created.push_back(std::make_unique<RemoveOnSignal>(path));
    const bool ok = replace ? ::rename(temps[done]->name(), path.c_str()) == 0
                            : rename_no_replace(temps[done]->name(), path.c_str());
    if (!ok) {
      const std::string why =
          errno == EEXIST ? "it already exists; give --force to replace it" : std::strerror(errno);
      if (kept[done])
        ::unlink(kept[done]->name());
      kept[done].reset();
      if (!existed[done])
        created.pop_back(); // not created: the path may be someone else's now
      undo();
      throw Error(path + ": cannot write: " + why);
    }
    temps[done]->renamed();
  }
  // The streams (a device, a pipe, standard output) last, while the renames can still be undone:
  // a stream that fails (a full device, a reader gone) leaves none of the files behind.
  try {
    const SigpipeIgnored no_sigpipe;
    for (const OutputFile* f : in_place)
      write_in_place(f->path, f->text);
    for (const OutputFile* f : to_stdout)
      write_stdout(f->text);
  } catch (const Error&) {
    undo();
    throw;
  }
  // All in place: what was replaced can go, and a signal from here on leaves the new files.
  for (auto& k : kept)
    if (k)
      k->remove_on_signal();
  created.clear();
}

void write_output(const std::string& path, const std::string& text) {
  write_outputs({{path, text}}, true);
}

} // namespace qr
