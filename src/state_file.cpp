#include "gpufair/state_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace gpufair {

int FileOps::open(const char* path, int flags, mode_t mode) { return ::open(path, flags, mode); }
ssize_t FileOps::write(int fd, const void* buf, std::size_t n) { return ::write(fd, buf, n); }
ssize_t FileOps::read(int fd, void* buf, std::size_t n) { return ::read(fd, buf, n); }
int FileOps::fsync(int fd) { return ::fsync(fd); }
int FileOps::close(int fd) { return ::close(fd); }
int FileOps::rename(const char* from, const char* to) { return ::rename(from, to); }
int FileOps::unlink(const char* path) { return ::unlink(path); }

FileOps& posix_file_ops() {
  static FileOps ops;
  return ops;
}

std::string temp_path_for(const std::string& path) { return path + ".new"; }

namespace {

Error sys_error(const std::string& what, const std::string& path, int err) {
  return Error{what + " " + path + ": " + std::strerror(err)};
}

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

Result<void> write_file_atomically(const std::string& path,
                                   std::span<const std::uint8_t> bytes,
                                   FileOps& ops) {
  if (path.empty()) return Error{"state file path is empty"};
  const std::string temp = temp_path_for(path);
  const int fd = ops.open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return sys_error("cannot create", temp, errno);

  auto abandon = [&](const std::string& what, int err) -> Result<void> {
    ops.close(fd);
    ops.unlink(temp.c_str());
    return sys_error(what, temp, err);
  };

  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ops.write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return abandon("cannot write", errno);
    }
    if (n == 0) return abandon("cannot write (no progress)", EIO);
    done += static_cast<std::size_t>(n);  // a short write just continues
  }
  if (ops.fsync(fd) != 0) return abandon("cannot fsync", errno);
  if (ops.close(fd) != 0) {
    const int err = errno;
    ops.unlink(temp.c_str());
    return sys_error("cannot close", temp, err);
  }
  if (ops.rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ops.unlink(temp.c_str());
    return Error{"cannot rename " + temp + " to " + path + ": " + std::strerror(err)};
  }
  // Make the rename itself durable. Failure here leaves a complete file in
  // place either way, so it is not reported.
  const std::string dir = directory_of(path);
  const int dfd = ops.open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dfd >= 0) {
    ops.fsync(dfd);
    ops.close(dfd);
  }
  return {};
}

Result<std::vector<std::uint8_t>> read_whole_file(const std::string& path,
                                                  FileOps& ops,
                                                  std::size_t max_bytes) {
  const int fd = ops.open(path.c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return sys_error("cannot open", path, errno);
  std::vector<std::uint8_t> out;
  std::uint8_t buf[65536];
  for (;;) {
    const ssize_t n = ops.read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ops.close(fd);
      return sys_error("cannot read", path, err);
    }
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes) {
      ops.close(fd);
      return Error{"file " + path + " is larger than " + std::to_string(max_bytes) + " bytes"};
    }
    out.insert(out.end(), buf, buf + n);
  }
  ops.close(fd);
  return out;
}

}  // namespace gpufair
