// The adversarial suite (sim/scenarios/adversarial/, design.md "Why no
// strategy pays"): every gaming strategy x 5 seeds, judged by the
// counterfactual (the same workload with the gamer honest). FIFO must show
// the exploit where the strategy is one, so the suite can fail.
//
// One seed's gain or harm is noisy: a "gamer" whose bait is 1-GPU 1-second
// jobs (null_bait, a perturbation that does nothing) moves the other teams'
// p50 wait by up to 5x and "pays" on many seeds, because a small change
// early in a saturated week changes which jobs find an idle fragment
// (design.md, "Judged by the counterfactual": over 20 seeds a quarter of the
// null runs have harm > 1.25). So gpufair is judged on the geometric mean
// over the 5 seeds: gain (p50 and p90) <= 1.1 on the strategies design.md
// claims closed for gain, harm p50 <= 1.5 on those it claims closed for
// harm. Every figure, and the null gamer's, is printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim_test_util.h"

namespace gpufair::sim {
namespace {

using testing::run_counterfactual;

constexpr std::uint64_t kSeeds[] = {1, 7, 19, 42, 1234};
constexpr double kMaxMeanGain = 1.1;
constexpr double kMaxMeanHarm = 1.5;

struct Strategy {
  const char* name;
  bool pays_under_fifo;  // the strategy is an exploit on the story's cluster
  bool gain_closed;      // design.md claims gpufair takes the gain away
  bool harm_closed;      // ...and the harm to the other teams
  bool reclaims = true;  // reclaim=all can do better than the default (below)
};

const Strategy kStrategies[] = {
    {"dilution-gpuless", true, true, true},
    // Open: long placeholders started before the gamer's first jump stay
    // protected; its p90 gain is 1.17 on average (banked_jump, below).
    {"dilution-short", true, false, false},
    // Open: a slow gamer's reserve is built between its jumps (design.md).
    {"slow-old-placeholders", true, false, false},
    // A 16-GPU placeholder waits long in a FIFO queue too: the strategy paid
    // under FIFO on 2 of these 5 seeds only, so it is not claimed to pay
    // there. Harm open: 5 jumps a week keep few of its placeholders scavengers.
    {"big-placeholder", false, true, false},
    {"spread-accounts", true, true, true},
    // Harm open: the gamer stops jumping after day 4, its last placeholders
    // become protected again.
    {"long-queue-only", true, true, false},
    {"working-placeholder", true, true, true},
    // The gamer's real work is queued early at low QOS as well: its waits
    // are mostly those low jobs', so FIFO shows a gain on 4 of these 5 seeds
    // only (p50; at p90 on none). Harm open
    // (20 seeds: 1.73 against the null gamer's 1.48). The team waiting below
    // its entitlement is mostly the gamer itself, whose low real work may
    // not reclaim during its episode, so reclaim=all cannot do better than
    // the default there (80-83 % of the time under both).
    {"early-low-real-work", false, true, false, false},
    // exploit's workload with the placeholders at a middle QOS, above the
    // other teams' jobs: closed only since a scavenger may be taken by a job
    // of any rank (before: harm p50 2.6-10.6 on these seeds).
    {"middle-rank-bait", true, true, true},
    // preempt_scope=any: team A's placeholders are team B's victims. B's
    // urgent jobs start at once with or without them (any team's low job is
    // a victim), so gaming pays at p90 only where FIFO's queue kept them
    // waiting (4 of 20 seeds, none of these 5); harm open under every
    // policy: the placeholders are a load on the cluster, A's share wasted.
    {"colluding-teams", false, true, false, false},
};

std::string adversarial(const char* name) { return std::string("adversarial/") + name; }

double geometric_mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += std::log(std::max(x, 1e-3));
  return std::exp(sum / static_cast<double>(v.size()));
}

class Adversarial : public ::testing::TestWithParam<Strategy> {};

TEST_P(Adversarial, JudgedByTheCounterfactual) {
  const Strategy& s = GetParam();
  int fifo_paid = 0, all_not_lower = 0;
  std::vector<double> gain50, gain90, harm50, null_gain90, null_harm50;
  for (const auto seed : kSeeds) {
    const auto fifo = run_counterfactual(adversarial(s.name), "fifo", seed);
    fifo_paid += gaming_did_not_pay(fifo) ? 0 : 1;
    const auto gf = run_counterfactual(adversarial(s.name), "gpufair", seed);
    const auto null = run_counterfactual(adversarial(s.name), "gpufair", seed, {}, true);
    const auto all = run_counterfactual(adversarial(s.name), "gpufair", seed, {{"reclaim", "all"}});
    std::printf("[ figure   ] %-22s seed %5llu: fifo gain p50 %7.2f p90 %6.2f | gpufair gain p50 %5.2f p90 %5.2f,"
                " worst harm p50 %5.2f p90 %5.2f | null gamer: gain p50 %5.2f p90 %5.2f, harm p50 %5.2f\n",
                s.name, static_cast<unsigned long long>(seed), fifo.gain_p50, fifo.gain_p90, gf.gain_p50,
                gf.gain_p90, gf.worst_harm_p50, gf.worst_harm_p90, null.gain_p50, null.gain_p90,
                null.worst_harm_p50);
    std::printf("[ figure   ] %-22s seed %5llu: a team over %.2fx its entitlement while one below waits, %% of the"
                " time: fifo %4.1f, gpufair %4.1f (the gamer %5.1f GPU-h over), reclaim=all %4.1f (%5.1f GPU-h)\n",
                s.name, static_cast<unsigned long long>(seed), kOverEntitlement, 100 * fifo.over_entitlement_time,
                100 * gf.over_entitlement_time, gf.gamer_over_entitlement_gpu_hours, 100 * all.over_entitlement_time,
                all.gamer_over_entitlement_gpu_hours);
    if (all.over_entitlement_time >= gf.over_entitlement_time) ++all_not_lower;
    gain50.push_back(gf.gain_p50);
    gain90.push_back(gf.gain_p90);
    harm50.push_back(gf.worst_harm_p50);
    null_gain90.push_back(null.gain_p90);
    null_harm50.push_back(null.worst_harm_p50);
  }
  std::printf("[ figure   ] %-22s geometric mean of 5 seeds: gain p50 %.2f p90 %.2f, harm p50 %.2f"
              " (null gamer: gain p90 %.2f, harm p50 %.2f)\n",
              s.name, geometric_mean(gain50), geometric_mean(gain90), geometric_mean(harm50),
              geometric_mean(null_gain90), geometric_mean(null_harm50));
  if (s.gain_closed) {
    EXPECT_LE(geometric_mean(gain50), kMaxMeanGain) << s.name;
    EXPECT_LE(geometric_mean(gain90), kMaxMeanGain) << s.name;
  }
  if (s.harm_closed) {
    EXPECT_LE(geometric_mean(harm50), kMaxMeanHarm) << s.name;
  }
  // The share criterion (design.md, "Reclaim"): reclaim=all must leave
  // teams over their entitlement while others wait for less time than the
  // default (which reclaims only from teams that paid a jump price) on
  // every seed; it does not reach 0 (figures printed, design.md says why).
  if (s.reclaims) {
    EXPECT_EQ(all_not_lower, 0) << s.name << ": reclaim=all reclaimed no more than reclaim=jumpers";
  }
  if (s.pays_under_fifo) {
    EXPECT_EQ(fifo_paid, static_cast<int>(std::size(kSeeds))) << s.name << ": the strategy must pay under FIFO";
  }
}

INSTANTIATE_TEST_SUITE_P(Suite, Adversarial, ::testing::ValuesIn(kStrategies), [](const auto& info) {
  std::string n = info.param.name;
  for (auto& c : n)
    if (c == '-') c = '_';
  return n;
});

// banked_jump=refuse (design.md, "Jump price", banked GPUs): a team below its
// entitlement may displace only its jobs that started since its urgent job
// became eligible. With scavengers on, it takes the slow gamer's gain away
// too (measured worst over the 5 seeds; default in brackets); the harm of
// its reserve stays (design.md).
struct BankedCase {
  const char* name;
  double max_gain_p50, max_gain_p90;  // measured worst over the 5 seeds, with margin
};

const BankedCase kBankedCases[] = {
    {"dilution-short", 1.2, 2.0},         // measured 1.02 / 1.68 (default: 1.37 / 2.63)
    {"slow-old-placeholders", 1.5, 1.0},  // measured 1.11 / 0.68 (default: 15.0 / 3.65)
    {"working-placeholder", 1.0, 1.2},    // measured 0.45 / 0.80 (default: 1.00 / 1.10)
};

TEST(AdversarialBankedJump, ClosesTheBelowEntitlementGapUpToItsResidue) {
  for (const auto& c : kBankedCases) {
    double worst50 = 0, worst90 = 0;
    for (const auto seed : kSeeds) {
      const auto gf = run_counterfactual(adversarial(c.name), "gpufair", seed, {{"banked_jump", "refuse"}});
      std::printf("[ figure   ] banked_jump=refuse %-22s seed %5llu: gain p50 %5.2f p90 %5.2f, worst harm p50 %5.2f p90 %5.2f\n",
                  c.name, static_cast<unsigned long long>(seed), gf.gain_p50, gf.gain_p90, gf.worst_harm_p50,
                  gf.worst_harm_p90);
      worst50 = std::max(worst50, gf.gain_p50);
      worst90 = std::max(worst90, gf.gain_p90);
    }
    EXPECT_LE(worst50, c.max_gain_p50) << c.name;
    EXPECT_LE(worst90, c.max_gain_p90) << c.name;
  }
}

// Its price on honest teams: prices stay under 2 % of their GPU-hours, but
// urgent jobs of teams below their entitlement are refused (they queue):
// the big honest team had 406 refusals over the 5 seeds. That cost is why it is
// not the default.
TEST(AdversarialBankedJump, HonestBigTeamPaysUnderTwoPercentButIsRefused) {
  std::uint64_t refused = 0;
  for (const auto seed : kSeeds) {
    auto sc = load_scenario(testing::scenario_path(adversarial("honest-big-team")), seed);
    auto params = sc.policy_params;
    params.emplace_back("banked_jump", "refuse");
    const auto r = simulate(sc.workload, "gpufair", testing::config_from(params), sc.options);
    for (const auto& t : r.teams) {
      const double charged = t.gpu_hours > 0 ? t.price_gpu_s / 3600.0 / t.gpu_hours : 0;
      EXPECT_LE(charged, 0.02) << "seed " << seed << " " << t.name;
      refused += t.preemptions_refused;
    }
  }
  std::printf("[ figure   ] banked_jump=refuse honest-big-team: %llu urgent preemptions refused over 5 seeds\n",
              static_cast<unsigned long long>(refused));
  EXPECT_GT(refused, 0u) << "the cost design.md states: honest below-entitlement jumps are refused";
}

// The honest side: a big team with many urgent evaluations. Nobody games,
// so nobody may be charged more than 2 % of its own GPU-hours by jump
// prices, and no urgent job may be refused.
TEST(AdversarialHonest, BigTeamWithManyUrgentEvaluations) {
  for (const auto seed : kSeeds) {
    const auto r = testing::run_scenario(adversarial("honest-big-team"), "gpufair", seed);
    ASSERT_GT(testing::team(r, "teama").preemptions_caused, 5u) << "the scenario must exercise honest jumps";
    for (const auto& t : r.teams) {
      const double charged = t.gpu_hours > 0 ? t.price_gpu_s / 3600.0 / t.gpu_hours : 0;
      std::printf("[ figure   ] honest-big-team seed %llu %s: prices %.1f GPU-h = %.2f%% of %.0f GPU-h, "
                  "%llu refused, %llu bait, %llu jobs requeued by reclaim losing %.1f GPU-h (%.1f%%)\n",
                  static_cast<unsigned long long>(seed), t.name.c_str(), t.price_gpu_s / 3600, 100 * charged,
                  t.gpu_hours, static_cast<unsigned long long>(t.preemptions_refused),
                  static_cast<unsigned long long>(t.bait_detections),
                  static_cast<unsigned long long>(t.reclaimed_from), t.reclaim_lost_gpu_hours,
                  t.gpu_hours > 0 ? 100 * t.reclaim_lost_gpu_hours / t.gpu_hours : 0.0);
      EXPECT_LE(charged, 0.02) << "seed " << seed << " " << t.name;
      EXPECT_EQ(t.preemptions_refused, 0u) << "seed " << seed << " " << t.name;
    }
  }
}

}  // namespace
}  // namespace gpufair::sim
