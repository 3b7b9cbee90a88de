// Crash-safe state files: write a temp file beside the target, fsync it,
// rename it over the target, fsync the directory. At every instant the target
// is either the previous good file or the new complete one. All system calls
// go through FileOps so tests can inject ENOSPC, EIO, short writes and a
// "crash" between write and rename.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpufair/result.h"

namespace gpufair {

// Thin POSIX layer. Return values and errno follow the POSIX calls.
class FileOps {
 public:
  virtual ~FileOps() = default;
  virtual int open(const char* path, int flags, mode_t mode);
  virtual ssize_t write(int fd, const void* buf, std::size_t n);
  virtual ssize_t read(int fd, void* buf, std::size_t n);
  virtual int fsync(int fd);
  virtual int close(int fd);
  virtual int rename(const char* from, const char* to);
  virtual int unlink(const char* path);
};

FileOps& posix_file_ops();

// The temp file used for `path` (same directory, so rename is atomic).
std::string temp_path_for(const std::string& path);

// Atomically replace `path` with `bytes`. On error the previous file at
// `path` is untouched and the temp file is removed (best effort).
Result<void> write_file_atomically(const std::string& path,
                                   std::span<const std::uint8_t> bytes,
                                   FileOps& ops = posix_file_ops());

// Whole file; refuses files larger than max_bytes.
Result<std::vector<std::uint8_t>> read_whole_file(const std::string& path,
                                                  FileOps& ops = posix_file_ops(),
                                                  std::size_t max_bytes = std::size_t{1} << 30);

}  // namespace gpufair
