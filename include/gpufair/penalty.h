// The consequences of a confirmed bait event (design.md, "Penalty"):
// a ledger charge for the queue time skipped, and a decaying penalty that
// lowers the team's effective fair share by 2^(-penalty).
#pragma once

#include "gpufair/config.h"
#include "gpufair/time.h"

namespace gpufair {

// GPU-seconds charged to the team for queue time its preemptor skipped.
double skip_charge_gpu_s(const PenaltyConfig& config, double preemptor_gpus,
                         Seconds skipped);

// The penalty after one more bait event of the given score, capped.
// `current` must already be decayed to the event time.
double penalty_after_bait(const PenaltyConfig& config, double current,
                          double score);

}  // namespace gpufair
