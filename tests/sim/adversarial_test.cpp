// The adversarial suite (sim/scenarios/adversarial/, design.md "Why no
// strategy pays"): every gaming strategy x 5 seeds, judged by the
// counterfactual (the same workload with the gamer honest), under Slurm's
// hand-off (the simulator's default). A cluster whose urgent QOS heads the
// queue (multifactor with a QOS weight) must show the exploit where the
// strategy is one, so the suite can fail; FIFO's figures are printed (under
// Slurm's hand-off a jump from behind the head mostly hands the GPUs on).
//
// One seed's gain or harm is noisy: a "gamer" whose bait is 1-GPU 1-second
// jobs (null_bait, a perturbation that does nothing) moves the other teams'
// p50 wait by up to 5x and "pays" on many seeds, because a small change
// early in a saturated week changes which jobs find an idle fragment
// (design.md, "Judged by the counterfactual": over 20 seeds a quarter of the
// null runs have harm > 1.25). So gpufair is judged on the geometric mean
// over the 5 seeds: gain (p50 and p90) <= 1.1 on the strategies design.md
// claims closed for gain, harm p50 <= 1.25 (the bound) or the null
// gamer's own geometric mean, whichever is higher, on those it claims
// closed for harm. Every figure, and the null gamer's, is printed.
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
constexpr double kMaxMeanHarm = 1.25;

struct Strategy {
  const char* name;
  bool pays_urgent_first;  // the strategy is an exploit where the urgent QOS heads the queue
  bool gain_closed;      // design.md claims gpufair takes the gain away
  bool harm_closed;      // ...and the harm to the other teams
  bool reclaims = true;  // reclaim=all can do better than the default (below)
};

// The flags are what design.md ("Who gets the GPUs a preemption frees",
// "The preemptor's claim") claims under Slurm's hand-off with the defaults
// (reclaim=jumpers, preemptor_claim=jumpers: every reclaim claims, since
// each is from a team that jumped or of a scavenger); the comments give
// these 5 seeds' geometric
// means (gain p50/p90, harm p50; null gamer's harm).
const Strategy kStrategies[] = {
    // 0.04 / 0.03, harm 1.00 (null 1.29): the dilution does not fool the
    // price, and what the others reclaim of the placeholders is theirs.
    {"dilution-gpuless", true, true, true},
    // 0.07 / 0.14, harm 1.35 (null 1.08): 2-day placeholders started
    // before the first jump stay protected.
    {"dilution-short", true, true, false},
    // 0.04 / 0.16, harm 1.77 (null 1.67): its reserve is built between
    // episodes.
    {"slow-old-placeholders", true, true, false},
    // A 16-GPU placeholder: the exploit pays where the urgent QOS heads the
    // queue on 3 of these 5 seeds only. 0.83 / 0.19, harm 3.82.
    {"big-placeholder", false, true, false},
    // 0.01 / 0.06, harm 1.04.
    {"spread-accounts", true, true, true},
    // 0.01 / 0.09, harm 1.85.
    {"long-queue-only", true, true, false},
    // 0.03 / 0.06, harm 1.00.
    {"working-placeholder", true, true, true},
    // The gamer's real work is queued early at low QOS as well: its waits
    // are mostly those low jobs', which an urgent QOS at the head does not
    // speed up (gain p90 at most 0.01 there). The team waiting below its
    // entitlement is mostly the gamer itself, whose low real work may not
    // reclaim during its episode, so reclaim=all cannot do better than the
    // default. 0.29 / 0.30, harm 2.17 (null 1.40).
    {"early-low-real-work", false, true, false, false},
    // exploit's workload with the placeholders at a middle QOS, above the
    // other teams' jobs. 0.01 / 0.05, harm 1.00.
    {"middle-rank-bait", true, true, true},
    // preempt_scope=any: team A's placeholders are team B's victims. B's
    // urgent jobs start at once with or without them (any team's low job is
    // a victim); harm open under every policy: the placeholders are a load
    // on the cluster, A's share wasted. 0.25 / 0.25, harm 25.6.
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
  int urgent_first_paid = 0, all_not_lower = 0;
  std::vector<double> gain50, gain90, harm50, null_gain90, null_harm50;
  for (const auto seed : kSeeds) {
    const auto fifo = run_counterfactual(adversarial(s.name), "fifo", seed);
    const auto mfq = run_counterfactual(adversarial(s.name), "multifactor", seed, {{"weight_qos", "20000"}});
    urgent_first_paid += gaming_did_not_pay(mfq) ? 0 : 1;
    std::printf("[ figure   ] %-22s seed %5llu: multifactor with a QOS weight gain p50 %7.2f p90 %6.2f, worst harm"
                " p50 %5.2f\n",
                s.name, static_cast<unsigned long long>(seed), mfq.gain_p50, mfq.gain_p90, mfq.worst_harm_p50);
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
    EXPECT_LE(geometric_mean(harm50), std::max(kMaxMeanHarm, geometric_mean(null_harm50))) << s.name;
  }
  // The share criterion (design.md, "Reclaim"): reclaim=all must leave
  // teams over their entitlement while others wait for less time than the
  // default (which reclaims only from teams that paid a jump price) on
  // every seed; it does not reach 0 (figures printed, design.md says why).
  if (s.reclaims) {
    EXPECT_EQ(all_not_lower, 0) << s.name << ": reclaim=all reclaimed no more than reclaim=jumpers";
  }
  if (s.pays_urgent_first) {
    EXPECT_EQ(urgent_first_paid, static_cast<int>(std::size(kSeeds)))
        << s.name << ": the strategy must pay where the urgent QOS heads the queue";
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
// became eligible. It was made for the strategies whose gain the default
// left open under the atomic hand-off; under Slurm's hand-off the default
// closes their gain too, and the option must not open it again (the same
// criterion as the suite's: geometric mean over the 5 seeds).
const char* const kBankedCases[] = {"dilution-short", "slow-old-placeholders", "working-placeholder"};

// A strategy under gpufair with one key set, over the 5 seeds: every seed
// printed, the gain and harm collected for their geometric means.
struct SeedFigures {
  std::vector<double> gain50, gain90, harm50;
};
SeedFigures with_key(const char* name, const std::string& key, const std::string& value) {
  SeedFigures out;
  for (const auto seed : kSeeds) {
    const auto gf = run_counterfactual(adversarial(name), "gpufair", seed, {{key, value}});
    std::printf("[ figure   ] %s=%s %-22s seed %5llu: gain p50 %5.2f p90 %5.2f, worst harm p50 %5.2f p90 %5.2f\n",
                key.c_str(), value.c_str(), name, static_cast<unsigned long long>(seed), gf.gain_p50, gf.gain_p90,
                gf.worst_harm_p50, gf.worst_harm_p90);
    out.gain50.push_back(gf.gain_p50);
    out.gain90.push_back(gf.gain_p90);
    out.harm50.push_back(gf.worst_harm_p50);
  }
  return out;
}

TEST(AdversarialBankedJump, KeepsTheGainClosed) {
  for (const auto* name : kBankedCases) {
    const SeedFigures f = with_key(name, "banked_jump", "refuse");
    EXPECT_LE(geometric_mean(f.gain50), kMaxMeanGain) << name;
    EXPECT_LE(geometric_mean(f.gain90), kMaxMeanGain) << name;
  }
}

// Its price on honest teams: prices stay under 2 % of their GPU-hours, but
// urgent jobs of teams below their entitlement are refused (they queue):
// the big honest team had 406 refusals over the 5 seeds. That cost is why it is
// not the default.
TEST(AdversarialBankedJump, HonestBigTeamPaysUnderTwoPercentButIsRefused) {
  std::uint64_t refused = 0;
  for (const auto seed : kSeeds) {
    const auto r =
        testing::run_scenario(adversarial("honest-big-team"), "gpufair", seed, {{"banked_jump", "refuse"}});
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

// preemptor_claim (design.md, "The preemptor's claim"): the harm the
// suite's default closes above is the claim's doing. With it off (Slurm's
// hand-off for reclaims too) a reclaim hands the GPUs it frees to the
// first job that fits, often the gamer's next placeholder, and the harm of
// the reserves built during episodes comes back (3.4-7.6 over seeds 1-20).
const char* const kClaimCases[] = {"dilution-gpuless", "middle-rank-bait", "spread-accounts",
                                   "working-placeholder"};

TEST(AdversarialClaim, OffGivesTheHarmOfEpisodeReservesBack) {
  for (const auto* name : kClaimCases) {
    const SeedFigures f = with_key(name, "preemptor_claim", "off");
    EXPECT_GT(geometric_mean(f.harm50), 2 * kMaxMeanHarm) << name;
  }
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
