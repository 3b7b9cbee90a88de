// Storage for the core's per-job arrays (the queue views: one entry per
// waiting job). An array of a mebibyte or more gets its own anonymous
// mapping instead of a block of the malloc heap, so that inside slurmctld
//   - only the pages written are resident (a vector's spare capacity is
//     address space), and
//   - growing it gives its old pages back instead of leaving a freed block
//     in the calling thread's malloc arena, where glibc keeps it resident
//     (2.8 MiB of holes at a 50,000-job backlog: docs/performance.md).
// Smaller arrays use std::allocator. Stateless; any two compare equal.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <limits>
#include <memory>
#include <new>

namespace gpufair {

template <typename T>
struct MappedAllocator {
  using value_type = T;
  static constexpr std::size_t kMapBytes = std::size_t{1} << 20;

  MappedAllocator() noexcept = default;
  template <typename U>
  MappedAllocator(const MappedAllocator<U>&) noexcept {}  // NOLINT: rebinding is implicit

  T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    if (n * sizeof(T) < kMapBytes) return std::allocator<T>{}.allocate(n);
    void* p = ::mmap(nullptr, n * sizeof(T), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<T*>(p);
  }

  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) < kMapBytes) {
      std::allocator<T>{}.deallocate(p, n);
    } else {
      ::munmap(p, n * sizeof(T));
    }
  }

  // Whether an array of n elements gets its own mapping.
  static constexpr bool mapped(std::size_t n) { return n * sizeof(T) >= kMapBytes; }

  friend bool operator==(const MappedAllocator&, const MappedAllocator&) noexcept { return true; }
};

}  // namespace gpufair
