#include "gpu_pool.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace gpufair::sim {
namespace {

TEST(GpuPool, FlatPoolCountsGpus) {
  GpuPool p(10, 0);
  std::vector<NodeShare> a, b;
  EXPECT_TRUE(p.place(7, a));
  EXPECT_FALSE(p.fits(4));
  EXPECT_FALSE(p.place(4, b));
  EXPECT_EQ(p.free(), 3);
  p.release(7, a);
  EXPECT_EQ(p.free(), 10);
}

TEST(GpuPool, BestFitKeepsEmptyNodesForBigJobs) {
  GpuPool p(16, 8);
  std::vector<NodeShare> a, b, c;
  ASSERT_TRUE(p.place(6, a));
  ASSERT_TRUE(p.place(2, b));  // best fit: the node with 2 free, not the empty one
  EXPECT_EQ(a[0].node, b[0].node);
  EXPECT_EQ(p.empty_nodes(), 1);
  ASSERT_TRUE(p.place(8, c));
  EXPECT_EQ(p.free(), 0);
}

TEST(GpuPool, BigJobsTakeWholeNodes) {
  GpuPool p(32, 8);
  EXPECT_EQ(p.held_gpus(12), 16);
  EXPECT_EQ(p.held_gpus(8), 8);
  std::vector<NodeShare> a, b;
  ASSERT_TRUE(p.place(1, a));
  ASSERT_TRUE(p.place(24, b));
  EXPECT_EQ(b.size(), 3u);
  EXPECT_FALSE(p.fits(8));
  EXPECT_TRUE(p.fits(7));
}

TEST(GpuPool, RejectsImpossibleShapes) {
  EXPECT_THROW(GpuPool(0, 0), std::invalid_argument);
  EXPECT_THROW(GpuPool(10, 4), std::invalid_argument);
}

}  // namespace
}  // namespace gpufair::sim
