#include "tools/cli/atomic_file.hpp"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>  // renameat2 (glibc >= 2.28, declared with _GNU_SOURCE, which g++ defines)
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace nnops::cli {
namespace {

Status io_error(const std::string& msg) { return Status(StatusCode::kInvalidArgument, msg); }

std::string errno_text() { return std::strerror(errno); }

// Renames src to dst unless dst exists, atomically. renameat2(RENAME_NOREPLACE) where the file system
// supports it; otherwise link() + unlink(), which also fails with EEXIST atomically.
int rename_noreplace(const char* src, const char* dst) {
#ifdef RENAME_NOREPLACE
  if (::renameat2(AT_FDCWD, src, AT_FDCWD, dst, RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return -1;
#endif
  if (::link(src, dst) != 0) return -1;
  ::unlink(src);
  return 0;
}

}  // namespace

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
}

Status AtomicFile::open(const std::string& target, Mode mode) {
  mode_ = mode;
  target_ = target;
  struct stat st;
  bool exists = false;
  if (::lstat(target.c_str(), &st) == 0) {
    exists = true;
    if (mode == Mode::kCreate) return io_error(target + ": the file exists; pass --force to replace it");
    // Replace the file a symlink points to, not the link.
    char resolved[PATH_MAX];
    if (::realpath(target.c_str(), resolved) == nullptr) return io_error(target + ": " + errno_text());
    target_ = resolved;
    if (::stat(target_.c_str(), &st) != 0) return io_error(target + ": " + errno_text());
    if (!S_ISREG(st.st_mode)) return io_error(target + ": not a regular file");
  } else if (errno != ENOENT) {
    return io_error(target + ": " + errno_text());
  }

  const std::size_t slash = target_.rfind('/');
  dir_ = slash == std::string::npos ? "." : (slash == 0 ? "/" : target_.substr(0, slash));
  const std::string base = slash == std::string::npos ? target_ : target_.substr(slash + 1);
  static unsigned counter = 0;
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string temp =
        dir_ + "/." + base + ".nnops-tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    // 0666 minus the umask: the permissions a new file gets from any other program.
    fd_ = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) {
      temp_ = std::move(temp);
      break;
    }
    if (errno != EEXIST) return io_error("cannot create a temporary file in " + dir_ + ": " + errno_text());
  }
  if (fd_ < 0) return io_error("cannot create a temporary file in " + dir_ + ": too many leftover temporaries");
  if (exists && ::fchmod(fd_, st.st_mode & 07777) != 0) {
    return io_error("cannot set permissions of " + temp_ + ": " + errno_text());
  }
  return Status::ok();
}

Status AtomicFile::write(const void* data, std::size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t w = ::write(fd_, p, bytes);
    if (w < 0) {
      if (errno == EINTR) continue;
      return io_error("cannot write " + temp_ + ": " + errno_text());
    }
    p += w;
    bytes -= static_cast<std::size_t>(w);
  }
  return Status::ok();
}

Status AtomicFile::finish() {
  // Without the fsync a crash after the rename could leave the new name pointing at data that never
  // reached the disk (a zero-length or partial file on some file systems).
  if (::fsync(fd_) != 0) return io_error("cannot flush " + temp_ + ": " + errno_text());
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return io_error("cannot close " + temp_ + ": " + errno_text());
  return Status::ok();
}

Status AtomicFile::commit() {
  const int rc = mode_ == Mode::kCreate ? rename_noreplace(temp_.c_str(), target_.c_str())
                                        : ::rename(temp_.c_str(), target_.c_str());
  if (rc != 0) {
    if (errno == EEXIST) return io_error(target_ + ": the file exists; pass --force to replace it");
    return io_error("cannot rename " + temp_ + " to " + target_ + ": " + errno_text());
  }
  committed_ = true;
  // Make the rename durable. Some file systems refuse fsync on a directory (EINVAL); the new file is in
  // place either way, so a failure here is not reported as an error.
  const int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
  return Status::ok();
}

}  // namespace nnops::cli
