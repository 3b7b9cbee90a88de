#include "gpufair/qos_rank.h"

#include <algorithm>

namespace gpufair {

std::vector<std::int32_t> qos_ranks(const std::vector<std::uint32_t>& priority,
                                    const std::vector<std::pair<std::uint32_t, std::uint32_t>>& preempts) {
  const std::size_t n = priority.size();
  // Reachability (Warshall): reach[i][j] = i may preempt j, directly or
  // through others. QOS lists are short (tens), so n^3 is nothing.
  std::vector<std::vector<char>> reach(n, std::vector<char>(n, 0));
  for (const auto& [i, j] : preempts)
    if (i < n && j < n && i != j) reach[i][j] = 1;
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t i = 0; i < n; ++i)
      if (reach[i][k])
        for (std::size_t j = 0; j < n; ++j)
          if (reach[k][j]) reach[i][j] = 1;
  // Height over the strict order "i reaches j and j does not reach i" (a
  // cycle is one level). Its chains are at most n long: n rounds suffice.
  std::vector<std::int32_t> height(n, 0);
  for (std::size_t round = 0; round < n; ++round) {
    bool changed = false;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        if (reach[i][j] && !reach[j][i] && height[i] < height[j] + 1) {
          height[i] = height[j] + 1;
          changed = true;
        }
    if (!changed) break;
  }
  std::vector<std::int32_t> rank(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t h = std::min<std::int32_t>(height[i], 0x7FFF - 1);
    rank[i] = h * 0x10000 + static_cast<std::int32_t>(std::min<std::uint32_t>(priority[i], 0xFFFF));
  }
  return rank;
}

std::int32_t in_team_rank(PreemptBy by, std::int32_t qos_rank, std::uint32_t partition_tier) {
  if (by == PreemptBy::kPartition)
    return static_cast<std::int32_t>(std::min<std::uint32_t>(partition_tier, 0x7FFFFFFF));
  return qos_rank;
}

}  // namespace gpufair
