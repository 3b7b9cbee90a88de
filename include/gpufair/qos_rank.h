// In-team rank of each QOS (design.md, "In-team rank"): a QOS that may
// preempt another ranks above it, whatever their Priority values say (sites
// often leave every QOS Priority at 0, and a flat rank would make every
// in-team preemption look like one between equals); among QOS not ordered by
// the Preempt= relation, the higher Priority ranks higher.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "gpufair/config.h"

namespace gpufair {

// `priority[i]`: QOS i's Priority; `preempts`: pairs (i, j) meaning QOS i may
// preempt QOS j (indices into priority; out-of-range pairs are ignored).
// Returns one rank per QOS: height * 2^16 + min(priority, 2^16 - 1), where
// height is the length of the longest chain of QOS below it in the Preempt=
// relation. QOS that preempt each other (a cycle) share one height.
std::vector<std::int32_t> qos_ranks(const std::vector<std::uint32_t>& priority,
                                    const std::vector<std::pair<std::uint32_t, std::uint32_t>>& preempts);

// A job's in-team rank under preempt_by: with kQos its QOS's rank (above);
// with kPartition its partition's PriorityTier, the order Slurm's
// preempt/partition_prio preempts by (a higher tier may preempt a lower one,
// the same tier never), whatever the QOS. The bait detector's rank gap, the
// scavenger rule's "lower rank" and a team's top rank all read this one
// number, so they follow the rule Slurm actually preempts by.
std::int32_t in_team_rank(PreemptBy by, std::int32_t qos_rank, std::uint32_t partition_tier);

}  // namespace gpufair
