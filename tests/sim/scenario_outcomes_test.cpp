// The simulator's purpose, asserted: on every shipped gaming scenario the
// gaming team gains on a cluster whose urgent QOS heads the queue
// (multifactor with a QOS weight) and gains nothing under gpufair, judged by
// the counterfactual (the same workload with the gamer honest; the
// geometric mean over 5 seeds, as one seed's figure is noisy:
// adversarial_test.cpp); honest teams are not penalised; on a saturated
// cluster the honest teams get at least their share and the gamer no more
// than its own. All under Slurm's hand-off (the simulator's default: the
// GPUs a preemption frees go to the first job in priority order that fits).
// The harm to the other teams (the worst other team's p50 wait gaming /
// honest, geometric mean) is at most 1.25, the bound, on every one
// of these but gaming-small (and gaming-requeue under the fast profile),
// where it is printed: with the defaults (reclaim=jumpers,
// preemptor_claim=jumpers) a reclaim from a team that jumped or from a
// scavenger keeps the GPUs it frees (design.md, "The preemptor's claim";
// with the claim off, 4-7x).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "sim_test_util.h"

namespace gpufair::sim {
namespace {

using testing::run_scenario;
using testing::team;

class GamingScenario : public ::testing::TestWithParam<const char*> {};

// Where the urgent QOS heads the global queue (multifactor with
// PriorityWeightQOS, the real cluster's baseline in t5_exploit.sh), a jump
// onto a placeholder takes the GPUs at once: the exploit pays, so the suite
// can fail. On the story's first-come-first-served cluster it mostly does
// not under Slurm's hand-off (the urgent job is not the head, and the GPUs
// its jump frees go to the job ahead): printed.
const std::vector<std::pair<std::string, std::string>> kUrgentFirst = {{"weight_qos", "20000"}};

TEST_P(GamingScenario, AnUrgentQosAtTheHeadRewardsGaming) {
  const auto r = run_scenario(GetParam(), "multifactor", 0, kUrgentFirst);
  ASSERT_TRUE(r.gaming_advantage.has_value());
  EXPECT_EQ(r.gaming_team, "teama");
  // "Clearly below 1": the gaming team's urgent work barely waits.
  EXPECT_LT(*r.gaming_advantage, 0.5) << "high p50 " << r.gaming_high_wait_p50 << " s, others p50 "
                                       << r.others_wait_p50 << " s";
  EXPECT_GT(team(r, "teama").preemptions_caused, 10u);
  // And by the counterfactual.
  const auto c = testing::run_counterfactual(GetParam(), "multifactor", 0, kUrgentFirst);
  EXPECT_FALSE(gaming_did_not_pay(c)) << "gain p50 " << c.gain_p50 << " p90 " << c.gain_p90;
  EXPECT_GT(c.gain_p90, 1.0);
  const auto f = testing::run_counterfactual(GetParam(), "fifo");
  std::printf("[ figure   ] %s: multifactor with a QOS weight gain p50 %.2f p90 %.2f, worst harm p50 %.2f; "
              "fifo (QOS weight 0) gain p50 %.2f p90 %.2f, worst harm p50 %.2f\n",
              GetParam(), c.gain_p50, c.gain_p90, c.worst_harm_p50, f.gain_p50, f.gain_p90, f.worst_harm_p50);
}

// On a saturated cluster: the honest teams get at least their share (less
// 0.1), the gamer at most its own (plus 0.05): gaming may cost the gamer,
// never the others' share.
void expect_shares_kept(const RunResult& r, const std::string& what) {
  ASSERT_GT(r.utilization, 0.9) << what << ": the cluster must be saturated for shares to mean anything";
  for (const auto& t : r.teams) {
    if (t.name == r.gaming_team) {
      EXPECT_LE(t.gpu_hour_share, t.share + 0.05) << what << " " << t.name;
    } else {
      EXPECT_GE(t.gpu_hour_share, t.share - 0.1) << what << " " << t.name;
    }
  }
}

constexpr std::uint64_t kSeeds[] = {0, 11, 22, 101, 202};  // 0 = the scenario's own

double geometric_mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += std::log(std::max(x, 1e-3));
  return std::exp(sum / static_cast<double>(v.size()));
}

// Gain by the counterfactual (counterfactual.h), geometric mean of p50 and
// of p90 over the seeds <= 1.1; harm <= 1.25 but where it is open (the
// file's head): gaming-small's four 1-GPU placeholders an hour sort ahead of
// the others' jobs and take every GPU that frees (design.md, "Scavengers");
// gaming-requeue under the fast profile since jobs that run between two
// cycles are charged (2026-12-07): one seed of the five (11) moves team C's
// median wait from 10 min to 3 h 22 min while its GPU-hours and its p90
// improve (2d10h -> 1d12h), harm 12.9 there, 1.00 on the other four.
bool harm_open(const std::string& name, bool fast_profile) {
  return name == "gaming-small" || (fast_profile && name == "gaming-requeue");
}

void expect_gaming_does_not_pay(const std::string& name,
                                const std::vector<std::pair<std::string, std::string>>& extra = {}) {
  std::vector<double> g50, g90, h50;
  for (const auto seed : kSeeds) {
    const auto c = testing::run_counterfactual(name, "gpufair", seed, extra);
    std::printf("[ figure   ] %s seed %llu gpufair%s: gain p50 %.3f p90 %.3f, worst harm p50 %.2f p90 %.2f\n",
                name.c_str(), static_cast<unsigned long long>(seed), extra.empty() ? "" : " (fast profile)",
                c.gain_p50, c.gain_p90, c.worst_harm_p50, c.worst_harm_p90);
    g50.push_back(c.gain_p50);
    g90.push_back(c.gain_p90);
    h50.push_back(c.worst_harm_p50);
  }
  std::printf("[ figure   ] %s gpufair%s, geometric mean of %zu seeds: gain p50 %.2f p90 %.2f, worst harm p50 %.2f\n",
              name.c_str(), extra.empty() ? "" : " (fast profile)", std::size(kSeeds), geometric_mean(g50),
              geometric_mean(g90), geometric_mean(h50));
  EXPECT_LE(geometric_mean(g50), 1.1) << name;
  EXPECT_LE(geometric_mean(g90), 1.1) << name;
  if (!harm_open(name, !extra.empty())) {
    EXPECT_LE(geometric_mean(h50), 1.25) << name;
  }
}

TEST_P(GamingScenario, GpufairGamingDoesNotPay) {
  const auto r = run_scenario(GetParam(), "gpufair");
  ASSERT_TRUE(r.gaming_advantage.has_value());
  // Its placeholders run as scavengers: other teams take them back.
  EXPECT_GT(team(r, "teama").reclaimed_from, 0u);
  // The honest teams are never judged.
  for (const auto* honest : {"teamb", "teamc"}) {
    EXPECT_EQ(team(r, honest).bait_detections, 0u) << honest;
    EXPECT_LT(team(r, honest).penalty, 0.05) << honest;
  }
  ASSERT_TRUE(r.detector.has_value());
  EXPECT_EQ(r.detector->false_positive, 0u);
  expect_shares_kept(r, GetParam());
  expect_gaming_does_not_pay(GetParam());
}

TEST_P(GamingScenario, GpufairKeepsSharesWithOtherSeeds) {
  for (std::uint64_t seed : kSeeds) {
    const auto r = run_scenario(GetParam(), "gpufair", seed);
    expect_shares_kept(r, std::string(GetParam()) + " seed " + std::to_string(seed));
  }
}

INSTANTIATE_TEST_SUITE_P(Shipped, GamingScenario,
                         ::testing::Values("exploit", "gaming-multi-user", "gaming-jitter", "gaming-array",
                                           "gaming-small", "gaming-requeue", "gaming-slow"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// The fast-detection profile (sim/tuning.md; the real-cluster demo and the
// end-to-end tests use it because their story lasts 14-16 hours): it notices
// a low-rate gamer sooner than the defaults, at the price of judging some
// rare honest preemptions as bait. It must close every gaming scenario too.
// The profile's values live in one place, apply_bait_profile (config.cpp).
const std::vector<std::pair<std::string, std::string>> kFastDetection = {{"bait_profile", "fast"}};

TEST_P(GamingScenario, FastDetectionProfileAlsoClosesIt) {
  const auto r = run_scenario(GetParam(), "gpufair", 0, kFastDetection);
  expect_shares_kept(r, std::string(GetParam()) + " (fast profile)");
  expect_gaming_does_not_pay(GetParam(), kFastDetection);
}

TEST(HonestBaseline, RareHonestPreemptionIsNotPenalised) {
  for (std::uint64_t seed : {0u, 11u, 22u}) {
    const auto r = run_scenario("honest", "gpufair", seed);
    const auto& b = team(r, "teamb");
    ASSERT_GT(b.preemptions_caused, 2u) << "the scenario must exercise honest preemption";
    EXPECT_EQ(b.bait_detections, 0u) << "seed " << seed;
    EXPECT_LT(b.penalty, 0.05) << "seed " << seed;
    // The preemption itself is allowed: none refused. B's urgent work does
    // not start at once for all that: B runs over its share, so its urgent
    // job sorts behind the others' jobs, and Slurm hands the GPUs it frees
    // to the first of them that fits (design.md, "Who gets the GPUs a
    // preemption frees"); printed.
    EXPECT_EQ(b.preemptions_refused, 0u) << "seed " << seed;
    ASSERT_FALSE(b.high_waits.empty());
    std::printf("[ figure   ] honest seed %llu: B's urgent jobs wait p50 %.0f s, p90 %.0f s; %llu in-team "
                "preemptions\n",
                static_cast<unsigned long long>(seed), percentile(b.high_waits, 50), percentile(b.high_waits, 90),
                static_cast<unsigned long long>(b.preemptions_caused));
    for (const auto* t : {"teama", "teamc"}) EXPECT_EQ(team(r, t).bait_detections, 0u) << t;
  }
}

// Jump prices and penalties together, as a fraction of the team's own
// delivered GPU-hours.
double charged_fraction(const TeamResult& t) {
  return t.gpu_hours > 0 ? t.price_gpu_s / 3600.0 / t.gpu_hours : 0;
}

TEST(HonestBaseline, HonestJumpsPayAtMostTwoPercent) {
  for (std::uint64_t seed : {0u, 11u, 22u, 101u, 202u}) {
    const auto r = run_scenario("honest", "gpufair", seed);
    for (const auto& t : r.teams) {
      EXPECT_LE(charged_fraction(t), 0.02) << "seed " << seed << " " << t.name << ": " << t.price_gpu_s / 3600
                                           << " GPU-h of prices";
      EXPECT_EQ(t.preemptions_refused, 0u) << "seed " << seed << " " << t.name;
    }
  }
  // The busy honest team is the documented exception (design.md): printed.
  const auto busy = run_scenario("honest-busy", "gpufair");
  for (const auto& t : busy.teams)
    std::printf("[ figure   ] honest-busy %s: prices %.1f GPU-h = %.1f%% of its %.0f GPU-h, %llu refused\n",
                t.name.c_str(), t.price_gpu_s / 3600, 100 * charged_fraction(t), t.gpu_hours,
                static_cast<unsigned long long>(t.preemptions_refused));
}

TEST(HonestBaseline, NoGamingMeansNoAdvantageToTakeAway) {
  // Team A queues its real work like everyone: under FIFO it gets no
  // advantage (its high jobs wait as long as the others' jobs or longer).
  const auto r = run_scenario("honest", "fifo");
  ASSERT_TRUE(r.gaming_advantage.has_value());
  EXPECT_GE(*r.gaming_advantage, 0.8);
  EXPECT_EQ(team(r, "teama").preemptions_caused, 0u);
}

TEST(HonestBusy, FrequentHonestPreemptionIsMostlyNotJudgedBait) {
  // The hard case: B preempts a large fraction of its own long jobs, which is
  // statistically close to a slow gamer; the detector misjudges some of it
  // (figures in sim/tuning.md), but never most of it, and C's occasional
  // preemptions are never judged bait.
  const auto r = run_scenario("honest-busy", "gpufair");
  const auto& b = team(r, "teamb");
  ASSERT_GT(b.preemptions_caused, 10u);
  EXPECT_LE(b.bait_detections * 5, b.preemptions_caused * 2);
  EXPECT_EQ(team(r, "teamc").bait_detections, 0u);
}

TEST(Fairness, SaturatedClusterTracksShares) {
  const auto fair = run_scenario("fairness", "gpufair");
  EXPECT_GE(fair.jain_index, 0.95);
  EXPECT_GT(fair.utilization, 0.9);
  for (const auto& t : fair.teams) EXPECT_NEAR(t.gpu_hour_share, t.share, 0.05) << t.name;
  // FIFO ignores shares: the same input is visibly less fair.
  const auto fifo = run_scenario("fairness", "fifo");
  EXPECT_LT(fifo.jain_index, 0.9);
}

TEST(Fairness, MultifactorModelAgreesWithTheCoreWithoutPreemption) {
  // Without in-team preemption the bait rule never fires, so gpufair is
  // classic fair share: the independent multifactor model must give the same
  // shares (a cross-check of both).
  const auto mf = run_scenario("fairness", "multifactor");
  const auto gf = run_scenario("fairness", "gpufair");
  ASSERT_EQ(mf.teams.size(), gf.teams.size());
  for (size_t i = 0; i < mf.teams.size(); ++i)
    EXPECT_NEAR(mf.teams[i].gpu_hour_share, gf.teams[i].gpu_hour_share, 0.02) << mf.teams[i].name;
}

}  // namespace
}  // namespace gpufair::sim
