// Classic Slurm fair share: F = 2^(-(U/Utot)/(S/Stot)), in [0,1], between
// teams; and a job's factor, that of its team combined with its
// association's place inside the team (fair_tree.h).
#pragma once

#include <span>
#include <vector>

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

// A job's fair-share factor (design.md, "Fair share inside a team"): its
// team's effective factor, lowered inside the team's band by how far its
// association ranks below the team's best: F_team - band * (1 - in_team),
// in_team in [0, 1] (clamped; NaN counts as 0). Never below 0.
double job_fair_share(double team_effective, double band, double in_team);

// The band of each team: half the gap between its effective factor and the
// next lower one among the teams (half its own factor for the lowest).
// With it every job of a team with a higher factor has a higher job factor
// than every job of a team with a lower one; teams with equal factors share
// one band.
std::vector<double> team_bands(std::span<const double> effective);

}  // namespace gpufair
