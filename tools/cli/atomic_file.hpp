// Replacing a file so that a reader, an error or a kill at any moment sees the old file or the new one,
// never a mix: the new contents go to a temporary file in the target's directory, are flushed to disk
// (fsync), and one rename() puts them in place; the directory is then fsynced so the rename itself
// survives a power cut. rename() within one file system is atomic in POSIX, which is why the temporary
// file must live beside the target rather than in /tmp.
//
// Several files cannot be replaced atomically together (POSIX has no multi-file rename). Callers that
// update several files write and flush every temporary first and rename them one after another at the
// end, which leaves the smallest window: each file is always whole, old or new.
#pragma once

#include <string>

#include "nnops/status.hpp"

namespace nnops::cli {

class AtomicFile {
 public:
  enum class Mode {
    kCreate,   ///< The target must not exist (checked again, atomically, at commit).
    kReplace,  ///< The target may exist and is replaced; an existing file's permission bits are kept.
  };

  AtomicFile() = default;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  /// Removes the temporary file unless commit() succeeded.
  ~AtomicFile();

  /// Creates the temporary file ".<name>.nnops-tmp-<pid>-<n>" beside `target`. An existing target that is
  /// a symbolic link is resolved, so the file it points to is replaced and the link kept.
  Status open(const std::string& target, Mode mode);
  /// Appends bytes to the temporary file.
  Status write(const void* data, std::size_t bytes);
  /// Flushes the temporary file to disk and closes it.
  Status finish();
  /// Renames the temporary file over the target, then fsyncs the directory.
  Status commit();

  const std::string& target() const { return target_; }
  const std::string& temp_path() const { return temp_; }

 private:
  std::string target_;  // resolved path of the file to replace or create
  std::string dir_;
  std::string temp_;
  Mode mode_ = Mode::kReplace;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace nnops::cli
