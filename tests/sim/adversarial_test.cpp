// The adversarial suite (sim/scenarios/adversarial/, design.md "Why no
// strategy pays"): every gaming strategy x 5 seeds, judged by the
// counterfactual (the same workload with the gamer honest). FIFO must show
// the exploit where the strategy is one, so the suite can fail; gpufair must
// keep the gain within the done criterion on the strategies design.md claims
// closed. The open ones are listed there with their figures, printed here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "sim_test_util.h"

namespace gpufair::sim {
namespace {

using testing::run_counterfactual;

constexpr std::uint64_t kSeeds[] = {1, 7, 19, 42, 1234};

struct Strategy {
  const char* name;
  bool pays_under_fifo;  // the strategy is an exploit on the story's cluster
  bool closed;           // design.md claims gpufair closes it
};

const Strategy kStrategies[] = {
    {"dilution-gpuless", true, true},
    {"dilution-short", true, false},       // open by default: the gamer stays below its entitlement (banked_jump, below)
    {"slow-old-placeholders", true, false},  // open: same
    // A 16-GPU placeholder waits long in a FIFO queue too: the strategy paid
    // under FIFO on 2 of these 5 seeds only, so it is not claimed to pay there.
    {"big-placeholder", false, true},
    {"spread-accounts", true, true},
    {"long-queue-only", true, true},
    {"working-placeholder", true, false},  // open: same
    // The gamer's real work is queued early at low QOS as well: its waits
    // are mostly those low jobs', so FIFO shows no gain either.
    {"early-low-real-work", false, true},
};

std::string adversarial(const char* name) { return std::string("adversarial/") + name; }

class Adversarial : public ::testing::TestWithParam<Strategy> {};

TEST_P(Adversarial, JudgedByTheCounterfactual) {
  const Strategy& s = GetParam();
  int fifo_paid = 0;
  for (const auto seed : kSeeds) {
    const auto fifo = run_counterfactual(adversarial(s.name), "fifo", seed);
    fifo_paid += gaming_did_not_pay(fifo) ? 0 : 1;
    const auto gf = run_counterfactual(adversarial(s.name), "gpufair", seed);
    std::printf("[ figure   ] %-22s seed %5llu: fifo gain p50 %7.2f p90 %6.2f | gpufair gain p50 %5.2f p90 %5.2f,"
                " worst harm p50 %5.2f p90 %5.2f\n",
                s.name, static_cast<unsigned long long>(seed), fifo.gain_p50, fifo.gain_p90, gf.gain_p50,
                gf.gain_p90, gf.worst_harm_p50, gf.worst_harm_p90);
    if (s.closed) {
      EXPECT_TRUE(gaming_did_not_pay(gf)) << s.name << " seed " << seed << ": gain p50 " << gf.gain_p50
                                          << " p90 " << gf.gain_p90;
    }
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
// became eligible. It closes the below-entitlement strategies that are open
// by default, up to the limits measured below (5 seeds; the figures printed
// are in design.md): working-placeholder's p90 keeps a residue that is not a
// preemption at all (its own short placeholders end and free GPUs; refusing
// every below-entitlement preemption left 1.72), slow-old-placeholders' p50
// is 1.27 on one seed (245 s against 311 s).
struct BankedCase {
  const char* name;
  double max_gain_p50, max_gain_p90;  // measured worst over the 5 seeds, with margin
};

const BankedCase kBankedCases[] = {
    {"dilution-short", 0.5, 0.5},         // measured 0.17 / 0.10 (default: 12.3 / 4.5)
    {"slow-old-placeholders", 1.6, 0.5},  // measured 1.27 / 0.17 (default: 15.0 / 3.0)
    {"working-placeholder", 1.2, 2.5},    // measured 1.00 / 1.90 (default: 1.00 / 17.8)
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
// the big honest team had 25-51 refusals per seed. That cost is why it is
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
                  "%llu refused, %llu bait\n",
                  static_cast<unsigned long long>(seed), t.name.c_str(), t.price_gpu_s / 3600, 100 * charged,
                  t.gpu_hours, static_cast<unsigned long long>(t.preemptions_refused),
                  static_cast<unsigned long long>(t.bait_detections));
      EXPECT_LE(charged, 0.02) << "seed " << seed << " " << t.name;
      EXPECT_EQ(t.preemptions_refused, 0u) << "seed " << seed << " " << t.name;
    }
  }
}

}  // namespace
}  // namespace gpufair::sim
