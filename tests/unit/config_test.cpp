// Configuration: strict keys, Slurm durations, ranges, all errors at once.
#include "gpufair/config.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include <string>

namespace gpufair {
namespace {

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string error_of(std::string_view params, const SlurmKnobs& knobs = {}) {
  auto c = parse_config(params, knobs);
  EXPECT_FALSE(c.ok()) << "expected an error for: " << params;
  return c.ok() ? std::string() : c.error().message;
}

TEST(Config, EmptyGivesDocumentedDefaults) {
  auto c = parse_config("");
  ASSERT_TRUE(c.ok()) << c.error().message;
  const Config d;
  EXPECT_EQ(c->decay_half_life, d.decay_half_life);
  EXPECT_EQ(c->calc_period, 300);
  EXPECT_EQ(c->team_level, 1);
  EXPECT_EQ(c->bait.block, BaitBlock::kNever);
  EXPECT_EQ(c->preempt_scope, PreemptScope::kTeam);
  EXPECT_EQ(c->jump.banked_jump, BankedJump::kAllow);
  EXPECT_DOUBLE_EQ(c->bait.threshold, d.bait.threshold);
}

struct DurationCase {
  const char* text;
  Seconds seconds;
};

TEST(Config, SlurmDurationForms) {
  const DurationCase cases[] = {
      {"90", 90},          {"90s", 90},        {"15m", 900},       {"2h", 7200},
      {"7d", 604800},      {"7D", 604800},     {"30:00", 1800},    {"1:30:00", 5400},
      {"7-0", 604800},     {"7-12", 648000},   {"1-02:03", 93780}, {"14-00:00:00", 1209600},
      {" 0 ", 0},          {"0-0:0:1", 1},
  };
  for (const auto& c : cases) {
    auto d = parse_duration(c.text);
    ASSERT_TRUE(d.ok()) << c.text << ": " << d.error().message;
    EXPECT_EQ(*d, c.seconds) << c.text;
  }
}

TEST(Config, MalformedDurationsAreErrors) {
  for (const char* text : {"", "abc", "-5", "5x", "1.5h", "7-", "-7", "1:2:3:4", "1:60",
                           "7-24", "7-1:60", "1:", ":1", "99999999999999999999", "7d5"}) {
    auto d = parse_duration(text);
    EXPECT_FALSE(d.ok()) << "'" << text << "' parsed as " << (d.ok() ? *d : 0);
    if (!d.ok()) {
      EXPECT_TRUE(contains(d.error().message, "accepted")) << d.error().message;
    }
  }
}

TEST(Config, EveryKeyParses) {
  auto c = parse_config(
      "half_life=14-00:00:00,calc_period=1m,max_age=3d,usage_reset=monthly,weight_age=10,"
      "weight_fairshare=20,weight_job_size=30,weight_partition=40,weight_qos=50,weight_assoc=60,"
      "favor_small=yes,"
      "gpu_weight=0.5,gpu_weight:a100=2.0,team_level=2,default_shares=3,preempt_scope=any,preempt_by=partition,"
      "bait_threshold=0.7,bait_young=30m,bait_window=2d,bait_repeat=4,bait_skip_norm=2h,"
      "bait_w_young=0.1,bait_w_repeat=0.2,bait_w_supply=0.3,bait_w_skip=0.4,bait_w_jump=0.6,"
      "bait_block=always,"
      "bait_block_penalty=1.5,penalty_per_bait=2,penalty_max=6,penalty_half_life=12h,"
      "skip_charge=0.5,jump_price_cap=2h,reclaim=all,banked_jump=refuse,state_file=/var/spool/gpufair.state");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->decay_half_life, 14 * 86400);
  EXPECT_EQ(c->calc_period, 60);
  EXPECT_EQ(c->max_age, 3 * 86400);
  EXPECT_EQ(c->usage_reset, ResetPeriod::kMonthly);
  EXPECT_DOUBLE_EQ(c->weights.age, 10);
  EXPECT_DOUBLE_EQ(c->weights.fairshare, 20);
  EXPECT_DOUBLE_EQ(c->weights.job_size, 30);
  EXPECT_DOUBLE_EQ(c->weights.partition, 40);
  EXPECT_DOUBLE_EQ(c->weights.qos, 50);
  EXPECT_DOUBLE_EQ(c->weights.assoc, 60);
  EXPECT_TRUE(c->favor_small);
  EXPECT_DOUBLE_EQ(c->default_gpu_weight, 0.5);
  EXPECT_DOUBLE_EQ(c->gpu_type_weights.at("a100"), 2.0);
  EXPECT_EQ(c->team_level, 2);
  EXPECT_DOUBLE_EQ(c->default_shares, 3);
  EXPECT_EQ(c->preempt_scope, PreemptScope::kAny);
  EXPECT_EQ(c->preempt_by, PreemptBy::kPartition);
  EXPECT_DOUBLE_EQ(c->bait.threshold, 0.7);
  EXPECT_EQ(c->bait.young, 1800);
  EXPECT_EQ(c->bait.window, 2 * 86400);
  EXPECT_DOUBLE_EQ(c->bait.repeat, 4);
  EXPECT_EQ(c->bait.skip_norm, 7200);
  EXPECT_DOUBLE_EQ(c->bait.w_young, 0.1);
  EXPECT_DOUBLE_EQ(c->bait.w_repeat, 0.2);
  EXPECT_DOUBLE_EQ(c->bait.w_supply, 0.3);
  EXPECT_DOUBLE_EQ(c->bait.w_skip, 0.4);
  EXPECT_DOUBLE_EQ(c->bait.w_jump, 0.6);
  EXPECT_EQ(c->bait.block, BaitBlock::kAlways);
  EXPECT_DOUBLE_EQ(c->bait.block_penalty, 1.5);
  EXPECT_DOUBLE_EQ(c->penalty.per_bait, 2);
  EXPECT_DOUBLE_EQ(c->penalty.max, 6);
  EXPECT_EQ(c->penalty.half_life, 43200);
  EXPECT_DOUBLE_EQ(c->penalty.skip_charge, 0.5);
  EXPECT_EQ(c->jump.price_cap, 7200);
  EXPECT_EQ(c->jump.reclaim, Reclaim::kAll);
  EXPECT_EQ(c->jump.banked_jump, BankedJump::kRefuse);
  EXPECT_EQ(c->state_file, "/var/spool/gpufair.state");
}

TEST(Config, BaitProfileSetsTheRuleAndExplicitKeysWin) {
  const Config d;
  auto rec = parse_config("bait_profile=recommended");
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  EXPECT_EQ(describe(*rec), describe(d)) << "recommended is the defaults";

  auto fast = parse_config("bait_profile=fast");
  ASSERT_TRUE(fast.ok()) << fast.error().message;
  EXPECT_EQ(fast->bait_profile, "fast");
  EXPECT_DOUBLE_EQ(fast->bait.threshold, 0.5);
  EXPECT_DOUBLE_EQ(fast->bait.w_young, 0.4);
  EXPECT_DOUBLE_EQ(fast->bait.w_jump, 0);
  EXPECT_DOUBLE_EQ(fast->bait.repeat, 3);
  EXPECT_DOUBLE_EQ(fast->bait.block_penalty, 0.5);
  EXPECT_DOUBLE_EQ(fast->penalty.per_bait, 1);
  // Timescales are not part of a profile.
  EXPECT_EQ(fast->bait.young, d.bait.young);
  EXPECT_EQ(fast->penalty.half_life, d.penalty.half_life);

  // An explicit key wins wherever it is in the list.
  for (const char* params : {"bait_w_young=0.9,bait_profile=fast,bait_young=10m",
                             "bait_young=10m,bait_profile=FAST,bait_w_young=0.9"}) {
    auto c = parse_config(params);
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_DOUBLE_EQ(c->bait.w_young, 0.9) << params;
    EXPECT_DOUBLE_EQ(c->bait.threshold, 0.5) << params;
    EXPECT_EQ(c->bait.young, 600) << params;
  }
}

TEST(Config, DescribeRoundTrips) {
  auto c = parse_config("half_life=3d,bait_block=never,gpu_weight:h100=3,usage_reset=weekly");
  ASSERT_TRUE(c.ok());
  std::string text = describe(*c);
  std::string params;
  for (char ch : text) params.push_back(ch == '\n' ? ',' : ch);
  auto again = parse_config(params);
  ASSERT_TRUE(again.ok()) << again.error().message << "\n" << params;
  EXPECT_EQ(describe(*again), text);
}

TEST(Config, KeysAreDocumented) {
  const auto& keys = config_keys();
  ASSERT_GE(keys.size(), 30u);
  const std::string text = describe(Config{});
  for (const auto& k : keys) {
    EXPECT_FALSE(k.accepted.empty()) << k.key;
    EXPECT_FALSE(k.meaning.empty()) << k.key;
    if (k.key.find('<') == std::string::npos) {
      EXPECT_TRUE(contains(text, k.key + "=" + k.default_value + "\n")) << k.key;
    }
  }
}

TEST(Config, UnknownKeySuggestsClosest) {
  const std::string e = error_of("half_lfe=7d");
  EXPECT_TRUE(contains(e, "unknown key 'half_lfe'")) << e;
  EXPECT_TRUE(contains(e, "'7d'")) << e;
  EXPECT_TRUE(contains(e, "did you mean 'half_life'")) << e;
  EXPECT_TRUE(contains(error_of("bait_treshold=1"), "did you mean 'bait_threshold'"));
  EXPECT_FALSE(contains(error_of("zzzzzzzzzzzzzzzz=1"), "did you mean"));
}

struct BadValueCase {
  const char* params;
  const char* key;
  const char* problem;
  const char* accepted;
};

TEST(Config, BadValuesNameKeyValueAndAcceptedRange) {
  const BadValueCase cases[] = {
      {"bait_threshold=abc", "bait_threshold='abc'", "not a number", "[0, 100]"},
      {"bait_threshold=101", "bait_threshold='101'", "out of range", "[0, 100]"},
      {"bait_threshold=nan", "bait_threshold='nan'", "not a number", "[0, 100]"},
      {"team_level=0", "team_level='0'", "out of range", "[1, 16]"},
      {"team_level=1.5", "team_level='1.5'", "not an integer", "[1, 16]"},
      {"calc_period=0", "calc_period='0'", "out of range", "[1s, 1d]"},
      {"half_life=4000d", "half_life='4000d'", "out of range", "3650d"},
      {"half_life=soon", "half_life='soon'", "not a duration", "d-hh:mm:ss"},
      {"usage_reset=hourly", "usage_reset='hourly'", "not a reset period", "quarterly"},
      {"preempt_scope=all", "preempt_scope='all'", "not a preemption scope", "team or any"},
      {"preempt_by=tier", "preempt_by='tier'", "not a preemption rule", "one of qos, partition"},
      {"bait_block=sometimes", "bait_block='sometimes'", "not a blocking mode", "penalized"},
      {"reclaim=everyone", "reclaim='everyone'", "not a reclaim mode", "off, jumpers, all"},
      {"banked_jump=never", "banked_jump='never'", "not a banked_jump mode", "allow, refuse"},
      {"scavenger_order=first", "scavenger_order='first'", "not a scavenger_order", "queue, last"},
      {"scavenger_window=31d", "scavenger_window='31d'", "out of range", "30d"},
      {"scavenger_window=soon", "scavenger_window='soon'", "not a duration", "d-hh:mm:ss"},
      {"jump_price_cap=31d", "jump_price_cap='31d'", "out of range", "30d"},
      {"favor_small=maybe", "favor_small='maybe'", "not yes/no", "yes or no"},
      {"default_shares=-1", "default_shares='-1'", "out of range", "[0, 1000000000]"},
      {"gpu_weight:a100=-2", "gpu_weight:a100='-2'", "out of range", "[0, 1000]"},
      {"gpu_weight:a100=x", "gpu_weight:a100='x'", "not a number", "[0, 1000]"},
      {"gpu_weight:=1", "gpu_weight:='1'", "missing GPU type", "gpu_weight:<type>"},
      {"penalty_max=65", "penalty_max='65'", "out of range", "[0, 64]"},
      {"bait_repeat=0", "bait_repeat='0'", "out of range", "[0.01, 1000000]"},
      {"bait_profile=eager", "bait_profile='eager'", "not a bait profile", "recommended, fast"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of(c.params);
    EXPECT_TRUE(contains(e, c.key)) << c.params << " -> " << e;
    EXPECT_TRUE(contains(e, c.problem)) << c.params << " -> " << e;
    EXPECT_TRUE(contains(e, c.accepted)) << c.params << " -> " << e;
  }
}

TEST(Config, SyntaxErrors) {
  EXPECT_TRUE(contains(error_of("half_life"), "expected key=value"));
  EXPECT_TRUE(contains(error_of("half_life=1d,half_life=2d"), "more than once"));
}

TEST(Config, AllErrorsReportedAtOnce) {
  const std::string e = error_of("half_lfe=1d,team_level=99,bait_w_skip=abc,max_age=1d");
  EXPECT_TRUE(contains(e, "3 configuration errors")) << e;
  EXPECT_TRUE(contains(e, "half_lfe")) << e;
  EXPECT_TRUE(contains(e, "team_level")) << e;
  EXPECT_TRUE(contains(e, "bait_w_skip")) << e;
}

TEST(Config, WhitespaceAndCaseAreTolerated) {
  auto c = parse_config(" Half_Life = 2d , , bait_block = ALWAYS ");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->decay_half_life, 2 * 86400);
  EXPECT_EQ(c->bait.block, BaitBlock::kAlways);
}

TEST(Config, SlurmKnobsApplyAndParametersOverride) {
  SlurmKnobs k;
  k.set = true;
  k.decay_half_life = 3 * 86400;
  k.calc_period = 60;
  k.max_age = 86400;
  k.usage_reset = ResetPeriod::kWeekly;
  k.weight_fairshare = 5000;
  k.favor_small = true;
  auto c = parse_config("half_life=1d", k);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->decay_half_life, 86400);  // PriorityParameters wins
  EXPECT_EQ(c->calc_period, 60);
  EXPECT_EQ(c->max_age, 86400);
  EXPECT_EQ(c->usage_reset, ResetPeriod::kWeekly);
  EXPECT_DOUBLE_EQ(c->weights.fairshare, 5000);
  EXPECT_DOUBLE_EQ(c->weights.age, 0);  // set weights are taken as a whole
  EXPECT_TRUE(c->favor_small);
}

TEST(Config, AllZeroSlurmWeightsKeepGpufairDefaults) {
  SlurmKnobs k;
  k.set = true;
  auto c = parse_config("", k);
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->weights.fairshare, Weights{}.fairshare);
  EXPECT_DOUBLE_EQ(c->weights.age, Weights{}.age);
}

// multifactor's keys beyond the five classic weights: PriorityWeightAssoc,
// PriorityWeightTRES and the PriorityFlags that change the composition.
// Any weight set (TRES included) means the whole set is taken from slurm.conf.
struct WeightSetCase {
  const char* name;
  unsigned weight_assoc;
  std::vector<double> tres;
  double expect_fairshare, expect_assoc;
  std::size_t expect_tres;
};

TEST(Config, AssocAndTresWeightsComeFromSlurmLikeTheOthers) {
  const WeightSetCase cases[] = {
      {"nothing set: gpufair's defaults", 0, {}, Weights{}.fairshare, 0, 0},
      {"PriorityWeightAssoc alone", 700, {}, 0, 700, 0},
      {"PriorityWeightTRES alone", 0, {0, 0, 3000}, 0, 0, 3},
      {"all-zero TRES weights count as unset", 0, {0, 0}, Weights{}.fairshare, 0, 0},
  };
  for (const auto& c : cases) {
    SlurmKnobs k;
    k.set = true;
    k.weight_assoc = c.weight_assoc;
    k.tres_weights = c.tres;
    auto cfg = parse_config("", k);
    ASSERT_TRUE(cfg.ok()) << c.name << ": " << cfg.error().message;
    EXPECT_DOUBLE_EQ(cfg->weights.fairshare, c.expect_fairshare) << c.name;
    EXPECT_DOUBLE_EQ(cfg->weights.assoc, c.expect_assoc) << c.name;
    EXPECT_EQ(cfg->tres_weights.size(), c.expect_tres) << c.name;
  }
  SlurmKnobs k;
  k.set = true;
  k.size_relative = true;
  k.raw = {.assoc = true, .partition = false, .qos = true, .tres = true};
  k.tres_weights = {1, std::numeric_limits<double>::infinity()};
  EXPECT_TRUE(contains(error_of("", k), "PriorityWeightTRES='TRES #1=")) << error_of("", k);
  k.tres_weights = {1, -2};  // negative weights are allowed, as in multifactor
  auto cfg = parse_config("weight_assoc=5", k);
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  EXPECT_TRUE(cfg->size_relative);
  EXPECT_TRUE(cfg->raw.assoc && !cfg->raw.partition && cfg->raw.qos && cfg->raw.tres);
  EXPECT_DOUBLE_EQ(cfg->weights.assoc, 5);  // PriorityParameters wins
  EXPECT_DOUBLE_EQ(cfg->tres_weights[1], -2);
}

TEST(Config, BadSlurmKnobsNameTheSlurmKey) {
  SlurmKnobs k;
  k.set = true;
  k.decay_half_life = -1;
  k.calc_period = 0;
  const std::string e = error_of("", k);
  EXPECT_TRUE(contains(e, "PriorityDecayHalfLife='-1s'")) << e;
  EXPECT_TRUE(contains(e, "PriorityCalcPeriod='0s'")) << e;
}

// preempt_by must agree with the rule Slurm's own preempt plugins preempt
// by; preempt/gpufair follows preempt_by, and without PreemptType (the
// simulator, tests) nothing is checked.
TEST(Config, PreemptByAgreesWithPreemptType) {
  struct Case {
    const char* preempt_type;
    const char* params;
    const char* error;  // nullptr = accepted
  };
  const Case cases[] = {
      {"preempt/qos", "", nullptr},
      {"preempt/qos", "preempt_by=partition", "preempt_by='partition': PreemptType=preempt/qos preempts by QOS"},
      {"preempt/partition_prio", "preempt_by=partition", nullptr},
      {"PREEMPT/Partition_Prio", "", "preempt_by='qos': PreemptType=preempt/partition_prio"},
      {"preempt/partition_prio", "preempt_by=qos", "accepted: partition with PreemptType=preempt/partition_prio"},
      {"preempt/gpufair", "preempt_by=partition", nullptr},
      {"preempt/gpufair", "preempt_by=qos", nullptr},
      {"preempt/none", "preempt_by=partition", nullptr},
      {"", "preempt_by=partition", nullptr},
  };
  for (const auto& c : cases) {
    SlurmKnobs k;
    k.set = true;
    k.preempt_type = c.preempt_type;
    auto cfg = parse_config(c.params, k);
    if (!c.error) {
      EXPECT_TRUE(cfg.ok()) << c.preempt_type << " " << c.params << ": " << cfg.error().message;
    } else {
      ASSERT_FALSE(cfg.ok()) << c.preempt_type << " " << c.params;
      EXPECT_TRUE(contains(cfg.error().message, c.error)) << cfg.error().message;
    }
  }
}

TEST(Config, TresBillingWeightsGiveGpuTypeWeights) {
  SlurmKnobs k;
  k.set = true;
  k.tres_billing_weights = "CPU=1.0,Mem=0.25G,GRES/gpu=1.5,GRES/gpu:a100=2.0,gres/gpu:H100=3";
  auto c = parse_config("gpu_weight:v100=0.5", k);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_DOUBLE_EQ(c->default_gpu_weight, 1.5);
  EXPECT_DOUBLE_EQ(gpu_weight_for(*c, "a100"), 2.0);
  EXPECT_DOUBLE_EQ(gpu_weight_for(*c, "A100"), 2.0);
  EXPECT_DOUBLE_EQ(gpu_weight_for(*c, "h100"), 3.0);
  EXPECT_DOUBLE_EQ(gpu_weight_for(*c, "v100"), 0.5);
  EXPECT_DOUBLE_EQ(gpu_weight_for(*c, "t4"), 1.5);  // unknown type: default weight
  EXPECT_DOUBLE_EQ(gpu_weight_for(*c, ""), 1.5);
}

TEST(Config, MalformedTresBillingWeights) {
  SlurmKnobs k;
  k.set = true;
  k.tres_billing_weights = "CPU,GRES/gpu:a100=abc";
  const std::string e = error_of("", k);
  EXPECT_TRUE(contains(e, "2 configuration errors")) << e;
  EXPECT_TRUE(contains(e, "TRESBillingWeights='CPU'")) << e;
  EXPECT_TRUE(contains(e, "GRES/gpu:a100='abc'")) << e;
}

}  // namespace
}  // namespace gpufair
