// The counterfactual measure of gaming (design.md, "Judged by the
// counterfactual"): the same workload run twice under one policy, once as
// given and once with the gaming team playing honestly (its jobs labelled
// bait dropped), same seed. Gaming paid if the gamer's real work waited less
// with it; it cost the others if their waits rose.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "run_result.h"

namespace gpufair::sim {

// Waits under a minute count as a minute in every ratio: a 3-second wait
// against a 10-second one is no gain, and the ratio must not divide by 0.
inline constexpr double kWaitFloor = 60;

struct TeamCounterfactual {
  std::string name;
  bool gaming = false;
  double wait_p50_gaming = 0, wait_p50_honest = 0;  // real work (not bait), seconds
  double wait_p90_gaming = 0, wait_p90_honest = 0;
  double share_gaming = 0, share_honest = 0;        // of GPU-hours
  double share = 0;                                 // configured
  // gaming team: gain = honest / gaming (> 1: gaming paid);
  // other teams: harm = gaming / honest (> 1: the gamer cost them).
  double ratio_p50 = 1, ratio_p90 = 1;
};

struct Counterfactual {
  std::string policy, gaming_team;
  double gain_p50 = 1, gain_p90 = 1;  // the gaming team's
  // In the gaming run: the share of the measured time some team held above
  // kOverEntitlement x its entitlement while a team below its own had a
  // fitting job waiting, and the gaming team's GPU-hours above that line.
  double over_entitlement_time = 0;
  double gamer_over_entitlement_gpu_hours = 0;
  double worst_harm_p50 = 1, worst_harm_p90 = 1;  // over the other teams
  std::vector<TeamCounterfactual> teams;
};

// `gaming`: the run as given; `honest`: the same with drop_bait. The gaming
// team is gaming.gaming_team; nullopt when there is none.
std::optional<Counterfactual> compare_counterfactual(const RunResult& gaming, const RunResult& honest);

// Gain within the done criterion: the gamer's p50 and p90 with gaming are at
// least 0.95x those without, or within 60 s of them.
bool gaming_did_not_pay(const Counterfactual& c);

void print_counterfactual(std::FILE* out, const std::vector<Counterfactual>& runs);
std::string counterfactual_json(const std::vector<Counterfactual>& runs, const std::string& title);

}  // namespace gpufair::sim
