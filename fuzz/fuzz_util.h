// Shared by the fuzz targets whose readers open a file by path: a reusable
// in-memory file (memfd, reached through /proc/self/fd) and a hard failure
// that libFuzzer records as a crash with the target's own message.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace fuzz_util {

// Set by each target to its own name, for the messages.
inline const char* target_name = "fuzz";

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "%s: %s\n", target_name, what);
  std::abort();
}

struct MemFile {
  int fd = -1;
  std::string path;
  explicit MemFile(const char* name) {
    fd = memfd_create(name, 0);
    if (fd < 0) fail("memfd_create failed");
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  void set(const std::uint8_t* data, std::size_t size) {
    if (ftruncate(fd, 0) != 0) fail("ftruncate failed");
    std::size_t done = 0;
    while (done < size) {
      ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) fail("pwrite failed");
      done += static_cast<std::size_t>(n);
    }
  }
};

}  // namespace fuzz_util
