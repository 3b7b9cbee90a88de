// MappedAllocator (gpufair/mapped_allocator.h): large arrays get their own
// mapping, only the pages written are resident, freeing unmaps; small ones
// stay on the heap; a vector using it keeps its elements across growth.
#include "gpufair/mapped_allocator.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

namespace gpufair {
namespace {

const std::size_t kPage = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));

// Resident pages of [p, p + bytes), or -1 when the range is not mapped.
long resident_pages(const void* p, std::size_t bytes) {
  const std::size_t n = (bytes + kPage - 1) / kPage;
  std::vector<unsigned char> vec(n);
  if (mincore(const_cast<void*>(p), n * kPage, vec.data()) != 0) return -1;
  long r = 0;
  for (unsigned char v : vec) r += v & 1;
  return r;
}

TEST(MappedAllocator, LargeArraysAreMappedAndOnlyWrittenPagesResident) {
  MappedAllocator<std::uint64_t> a;
  const std::size_t n = 256 * kPage / sizeof(std::uint64_t);  // 256 pages, >= 1 MiB
  ASSERT_TRUE(MappedAllocator<std::uint64_t>::mapped(n));
  std::uint64_t* p = a.allocate(n);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % kPage, 0u);  // a mapping of its own
  p[0] = 1;
  p[n - 1] = 2;
  EXPECT_EQ(resident_pages(p, n * sizeof(*p)), 2);  // the rest is address space
  a.deallocate(p, n);
  EXPECT_EQ(resident_pages(p, n * sizeof(*p)), -1);  // unmapped, not a freed heap block
}

TEST(MappedAllocator, SmallArraysStayOnTheHeap) {
  EXPECT_FALSE(MappedAllocator<std::uint64_t>::mapped(1000));
  MappedAllocator<std::uint64_t> a;
  std::uint64_t* p = a.allocate(1000);
  p[999] = 7;
  EXPECT_EQ(p[999], 7u);
  a.deallocate(p, 1000);
}

TEST(MappedAllocator, VectorKeepsItsElementsAcrossGrowth) {
  std::vector<std::uint32_t, MappedAllocator<std::uint32_t>> v;
  for (std::uint32_t i = 0; i < 1'000'000; ++i) v.push_back(i * 3);  // crosses 1 MiB
  ASSERT_EQ(v.size(), 1'000'000u);
  bool same = true;
  for (std::uint32_t i = 0; i < v.size(); ++i) same = same && v[i] == i * 3;
  EXPECT_TRUE(same);
  v.clear();
  EXPECT_GE(v.capacity(), 1'000'000u);  // clear keeps the storage, as std::vector does
}

TEST(MappedAllocator, RefusesAnImpossibleSize) {
  MappedAllocator<std::uint64_t> a;
  EXPECT_THROW((void)a.allocate(std::numeric_limits<std::size_t>::max() / 4), std::bad_array_new_length);
}

}  // namespace
}  // namespace gpufair
