// Classic Slurm fair share: F = 2^(-(U/Utot)/(S/Stot)), in [0,1].
#pragma once

namespace gpufair {

// usage: the team's decayed usage; usage_total: sum over all teams (Utot);
// shares / shares_total likewise. Edge cases are decided here, explicitly:
//  - shares <= 0 (or no shares anywhere): 0.0 -- the team only runs when
//    nobody else waits; never NaN.
//  - no usage anywhere (usage_total <= 0) or none by this team: 1.0.
double fair_share_factor(double usage, double usage_total, double shares,
                         double shares_total);

// The effective factor including the bait penalty: F * 2^(-penalty).
double effective_fair_share(double fair_share, double penalty);

}  // namespace gpufair
