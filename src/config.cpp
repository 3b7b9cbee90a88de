// Configuration: strict parse, defaults from config.h, range checks, and every
// problem reported at once. The key table below is the single list of keys:
// parsing, config_keys() (documentation) and describe() all read it.
#include "gpufair/config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <optional>
#include <set>

#include "gpufair/reset_period.h"

namespace gpufair {
namespace {

constexpr Seconds kDay = 86400;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Joins the pieces into one string, sized once. Messages are built with this
// rather than `"literal" + std::string(...) + ...`: that operator+ inserts at
// position 0 of the temporary, and GCC 12 at -O3 (Release) then reports a
// false -Wrestrict overlap inside libstdc++ (GCC bugzilla 105651), which
// -Werror turns into a failed build. Appending to a reserved string does not
// trigger it.
std::string cat(std::initializer_list<std::string_view> parts) {
  std::size_t n = 0;
  for (std::string_view p : parts) n += p.size();
  std::string out;
  out.reserve(n);
  for (std::string_view p : parts) out.append(p);
  return out;
}

std::string lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

std::optional<double> parse_number(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  std::string s(text);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<std::int64_t> parse_uint(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::string format_number(double v) {
  // Whole numbers as integers ("1000000000", not "1e+09"): they are read by people.
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
    return std::to_string(static_cast<long long>(v));
  }
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  if (ec != std::errc()) return "?";
  return std::string(buf, p);
}

std::string format_duration(Seconds s) {
  if (s == 0) return "0";
  if (s % kDay == 0) return std::to_string(s / kDay) + "d";
  if (s % 3600 == 0) return std::to_string(s / 3600) + "h";
  if (s % 60 == 0) return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

std::optional<bool> parse_bool(std::string_view text) {
  const std::string t = lower(trim(text));
  if (t == "1" || t == "yes" || t == "true" || t == "on") return true;
  if (t == "0" || t == "no" || t == "false" || t == "off") return false;
  return std::nullopt;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1] ? 1 : 0)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// A setter returns the problem with the value (empty = accepted).
using Setter = std::function<std::string(Config&, std::string_view)>;
using Getter = std::function<std::string(const Config&)>;

struct KeyDef {
  std::string key, accepted, meaning;
  Getter get;
  Setter set;
};

const char* kOutOfRange = "out of range";

KeyDef number_key(std::string key, double lo, double hi, std::string meaning,
                  std::function<double&(Config&)> field) {
  std::string accepted = cat({"a number in [", format_number(lo), ", ", format_number(hi), "]"});
  return {key, accepted, std::move(meaning),
          [field](const Config& c) { return format_number(field(const_cast<Config&>(c))); },
          [field, lo, hi](Config& c, std::string_view v) -> std::string {
            auto n = parse_number(v);
            if (!n) return "not a number";
            if (*n < lo || *n > hi) return kOutOfRange;
            field(c) = *n;
            return {};
          }};
}

// A key whose value is one of a few names, each naming one enum value.
template <typename E>
KeyDef choice_key(std::string key, std::vector<std::pair<std::string, E>> choices, std::string meaning,
                  std::string not_a, std::function<E&(Config&)> field) {
  std::string accepted = "one of ";
  for (std::size_t i = 0; i < choices.size(); ++i) accepted += (i ? ", " : "") + choices[i].first;
  return {key, accepted, std::move(meaning),
          [field, choices](const Config& c) {
            const E v = field(const_cast<Config&>(c));
            for (const auto& [name, value] : choices)
              if (value == v) return name;
            return std::string("?");
          },
          [field, choices, not_a](Config& c, std::string_view v) -> std::string {
            const std::string s = lower(trim(v));
            for (const auto& [name, value] : choices)
              if (name == s) {
                field(c) = value;
                return {};
              }
            return not_a;
          }};
}

KeyDef duration_key(std::string key, Seconds lo, Seconds hi, std::string meaning,
                    std::function<Seconds&(Config&)> field) {
  std::string accepted = cat({"a duration in [", format_duration(lo), ", ", format_duration(hi),
                              "] (90, 90s, 15m, 2h, 7d, mm:ss, hh:mm:ss, d-h, d-hh:mm:ss)"});
  return {key, accepted, std::move(meaning),
          [field](const Config& c) { return format_duration(field(const_cast<Config&>(c))); },
          [field, lo, hi](Config& c, std::string_view v) -> std::string {
            auto d = parse_duration(v);
            if (!d.ok()) return "not a duration";
            if (*d < lo || *d > hi) return kOutOfRange;
            field(c) = *d;
            return {};
          }};
}

const char* kBaitProfileKey = "bait_profile";

const std::vector<KeyDef>& key_table() {
  static const std::vector<KeyDef> table = [] {
    std::vector<KeyDef> t;
    t.push_back(duration_key("half_life", 0, 3650 * kDay,
                             "usage decay half-life (PriorityDecayHalfLife); 0 = no decay",
                             [](Config& c) -> Seconds& { return c.decay_half_life; }));
    t.push_back(duration_key("calc_period", 1, kDay,
                             "how often usage is charged and factors recomputed (PriorityCalcPeriod)",
                             [](Config& c) -> Seconds& { return c.calc_period; }));
    t.push_back(duration_key("max_age", 1, 3650 * kDay,
                             "queue wait at which the age factor reaches 1 (PriorityMaxAge)",
                             [](Config& c) -> Seconds& { return c.max_age; }));
    t.push_back({"usage_reset", "one of none, now, daily, weekly, monthly, quarterly, yearly",
                 "zero all usage at each UTC calendar boundary (PriorityUsageResetPeriod); weeks start Sunday",
                 [](const Config& c) { return std::string(reset_period_name(c.usage_reset)); },
                 [](Config& c, std::string_view v) -> std::string {
                   auto p = parse_reset_period(trim(v));
                   if (!p) return "not a reset period";
                   c.usage_reset = *p;
                   return {};
                 }});
    const double kMaxWeight = 4294967294.0;
    t.push_back(number_key("weight_age", 0, kMaxWeight, "PriorityWeightAge",
                           [](Config& c) -> double& { return c.weights.age; }));
    t.push_back(number_key("weight_fairshare", 0, kMaxWeight, "PriorityWeightFairshare",
                           [](Config& c) -> double& { return c.weights.fairshare; }));
    t.push_back(number_key("weight_job_size", 0, kMaxWeight, "PriorityWeightJobSize",
                           [](Config& c) -> double& { return c.weights.job_size; }));
    t.push_back(number_key("weight_partition", 0, kMaxWeight, "PriorityWeightPartition",
                           [](Config& c) -> double& { return c.weights.partition; }));
    t.push_back(number_key("weight_qos", 0, kMaxWeight, "PriorityWeightQOS",
                           [](Config& c) -> double& { return c.weights.qos; }));
    t.push_back(number_key("weight_assoc", 0, kMaxWeight, "PriorityWeightAssoc",
                           [](Config& c) -> double& { return c.weights.assoc; }));
    t.push_back({"favor_small", "yes or no",
                 "job size factor favours small jobs (PriorityFavorSmall)",
                 [](const Config& c) { return std::string(c.favor_small ? "yes" : "no"); },
                 [](Config& c, std::string_view v) -> std::string {
                   auto b = parse_bool(v);
                   if (!b) return "not yes/no";
                   c.favor_small = *b;
                   return {};
                 }});
    t.push_back(number_key("gpu_weight", 0, 1000,
                           "weight of a GPU of unknown or no type (TRESBillingWeights GRES/gpu)",
                           [](Config& c) -> double& { return c.default_gpu_weight; }));
    t.push_back({"team_level", "an integer in [1, 16]",
                 "account depth below root that is a team (1 = top-level account)",
                 [](const Config& c) { return std::to_string(c.team_level); },
                 [](Config& c, std::string_view v) -> std::string {
                   auto n = parse_uint(trim(v));
                   if (!n) return "not an integer";
                   if (*n < 1 || *n > 16) return kOutOfRange;
                   c.team_level = static_cast<int>(*n);
                   return {};
                 }});
    t.push_back(number_key("default_shares", 0, 1e9,
                           "shares of a team with no association; 0 = runs only when nobody else waits",
                           [](Config& c) -> double& { return c.default_shares; }));
    t.push_back({"preempt_scope", "team or any",
                 "team: preemption only within a team; any: also across teams",
                 [](const Config& c) { return std::string(c.preempt_scope == PreemptScope::kAny ? "any" : "team"); },
                 [](Config& c, std::string_view v) -> std::string {
                   const std::string s = lower(trim(v));
                   if (s == "team") c.preempt_scope = PreemptScope::kTeam;
                   else if (s == "any") c.preempt_scope = PreemptScope::kAny;
                   else return "not a preemption scope";
                   return {};
                 }});
    t.push_back(choice_key<PreemptBy>(
        "preempt_by", {{"qos", PreemptBy::kQos}, {"partition", PreemptBy::kPartition}},
        "who may preempt whom, and so a job's in-team rank: QOS Preempt= lists (qos, as preempt/qos) or "
        "partition PriorityTier (partition, as preempt/partition_prio)",
        "not a preemption rule", [](Config& c) -> PreemptBy& { return c.preempt_by; }));
    t.push_back(number_key("bait_threshold", 0, 100, "detector score at which a victim is bait",
                           [](Config& c) -> double& { return c.bait.threshold; }));
    t.push_back(duration_key("bait_young", 1, 30 * kDay,
                             "victims displaced sooner than this after start look like slot holders",
                             [](Config& c) -> Seconds& { return c.bait.young; }));
    t.push_back(duration_key("bait_window", 1, 365 * kDay,
                             "half-life of the detector's per-team memory",
                             [](Config& c) -> Seconds& { return c.bait.window; }));
    t.push_back(number_key("bait_repeat", 0.01, 1e6,
                           "recent in-team jumps (preemptors) that count as routine",
                           [](Config& c) -> double& { return c.bait.repeat; }));
    t.push_back(duration_key("bait_skip_norm", 1, 30 * kDay,
                             "skipped queue time that counts in full",
                             [](Config& c) -> Seconds& { return c.bait.skip_norm; }));
    t.push_back(number_key("bait_w_young", 0, 100, "score weight of a young victim",
                           [](Config& c) -> double& { return c.bait.w_young; }));
    t.push_back(number_key("bait_w_repeat", 0, 100, "score weight of routine in-team preemption",
                           [](Config& c) -> double& { return c.bait.w_repeat; }));
    t.push_back(number_key("bait_w_supply", 0, 100,
                           "score weight of the share of low-rank GPU-seconds that were displaced in-team",
                           [](Config& c) -> double& { return c.bait.w_supply; }));
    t.push_back(number_key("bait_w_skip", 0, 100, "score weight of skipped queue time",
                           [](Config& c) -> double& { return c.bait.w_skip; }));
    t.push_back(number_key("bait_w_jump", 0, 100,
                           "score weight of the share of the team's started GPUs that started by "
                           "in-team preemption (0 = off)",
                           [](Config& c) -> double& { return c.bait.w_jump; }));
    t.push_back(choice_key<BaitBlock>(
        "bait_block", {{"never", BaitBlock::kNever}, {"penalized", BaitBlock::kPenalized}, {"always", BaitBlock::kAlways}},
        "refuse a preemption whose victim looks like bait: never, when the team is penalized, always",
        "not a blocking mode", [](Config& c) -> BaitBlock& { return c.bait.block; }));
    t.push_back({kBaitProfileKey, "one of recommended, fast",
                 "bait-rule threshold, weights, bait_repeat, bait_block_penalty and penalty_per_bait at once "
                 "(sim/tuning.md); keys given explicitly override it, wherever they are in the list",
                 [](const Config& c) { return c.bait_profile; },
                 [](Config& c, std::string_view v) -> std::string {
                   return apply_bait_profile(lower(trim(v)), c) ? std::string() : "not a bait profile";
                 }});
    t.push_back(number_key("bait_block_penalty", 0, 64,
                           "penalty at which bait_block=penalized starts refusing",
                           [](Config& c) -> double& { return c.bait.block_penalty; }));
    t.push_back(number_key("penalty_per_bait", 0, 64, "penalty added per confirmed bait, times its score",
                           [](Config& c) -> double& { return c.penalty.per_bait; }));
    t.push_back(number_key("penalty_max", 0, 64, "cap of a team's penalty",
                           [](Config& c) -> double& { return c.penalty.max; }));
    t.push_back(duration_key("penalty_half_life", 0, 365 * kDay,
                             "half-life of the penalty; 0 = never decays",
                             [](Config& c) -> Seconds& { return c.penalty.half_life; }));
    t.push_back(number_key("skip_charge", 0, 1000, "a queue jump's price per GPU-second of other teams' queue time it took",
                           [](Config& c) -> double& { return c.penalty.skip_charge; }));
    t.push_back(duration_key("jump_price_cap", 0, 30 * kDay,
                             "longest wait of one job that a queue jump's price counts (0 = jumps are free)",
                             [](Config& c) -> Seconds& { return c.jump.price_cap; }));
    t.push_back(choice_key<Reclaim>(
        "reclaim", {{"off", Reclaim::kOff}, {"jumpers", Reclaim::kJumpers}, {"all", Reclaim::kAll}},
        "whose GPUs a team below its entitlement may requeue: teams over theirs that jumped the queue "
        "or baited within bait_window (jumpers), any team over its entitlement (all), nobody (off)",
        "not a reclaim mode", [](Config& c) -> Reclaim& { return c.jump.reclaim; }));
    t.push_back(choice_key<BankedJump>(
        "banked_jump", {{"allow", BankedJump::kAllow}, {"refuse", BankedJump::kRefuse}},
        "in-team preemption by a team below its entitlement: any victim (allow), or only its jobs "
        "that started at or after the preemptor became eligible, never GPUs held in advance (refuse)",
        "not a banked_jump mode", [](Config& c) -> BankedJump& { return c.jump.banked_jump; }));
    t.push_back(duration_key("scavenger_window", 0, 30 * kDay,
                             "after a team preempts its own lower-rank job, its lower-rank jobs that start within "
                             "this long are, until they have run bait_young, scavengers any other team's job may "
                             "requeue (0 = off)",
                             [](Config& c) -> Seconds& { return c.jump.scavenger_window; }));
    t.push_back(choice_key<ScavengerOrder>(
        "scavenger_order", {{"queue", ScavengerOrder::kQueue}, {"last", ScavengerOrder::kLast}},
        "where a pending job that would start as a scavenger sorts: by its priority (queue), or after every "
        "other job with priority 1 (last)",
        "not a scavenger_order", [](Config& c) -> ScavengerOrder& { return c.jump.scavenger_order; }));
    t.push_back(choice_key<PreemptorClaim>(
        "preemptor_claim",
        {{"off", PreemptorClaim::kOff},
         {"jumpers", PreemptorClaim::kJumpers},
         {"reclaims", PreemptorClaim::kReclaims},
         {"all", PreemptorClaim::kAll}},
        "whose preemptions keep the GPUs they free, the preemptor sorting first until it starts (at most 10 "
        "minutes): reclaims from a team that jumped the queue or from a scavenger (jumpers), every reclaim "
        "(reclaims), in-team jumps too (all), none: Slurm gives them to the first job in priority order that "
        "fits (off)",
        "not a preemptor_claim mode", [](Config& c) -> PreemptorClaim& { return c.jump.preemptor_claim; }));
    t.push_back({"state_file", "a file path",
                 "where the state is saved; empty = <StateSaveLocation>/gpufair.state",
                 [](const Config& c) { return c.state_file; },
                 [](Config& c, std::string_view v) -> std::string {
                   c.state_file = std::string(trim(v));
                   return {};
                 }});
    return t;
  }();
  return table;
}

constexpr std::string_view kGpuTypePrefix = "gpu_weight:";
const char* kGpuTypeAccepted = "a number in [0, 1000]";

std::string closest_key(std::string_view key) {
  std::string best;
  std::size_t best_d = SIZE_MAX;
  for (const auto& def : key_table()) {
    const std::size_t d = edit_distance(key, def.key);
    if (d < best_d) {
      best_d = d;
      best = def.key;
    }
  }
  if (best_d <= std::max<std::size_t>(2, key.size() / 3)) return best;
  return {};
}

std::string problem(std::string_view key, std::string_view value, std::string_view what,
                    std::string_view accepted) {
  return cat({key, "='", value, "': ", what, "; accepted: ", accepted});
}

// TRESBillingWeights: "CPU=1.0,Mem=0.25G,GRES/gpu=1.0,GRES/gpu:a100=2.0".
// Only the GPU entries matter to us; the rest must merely be well formed.
void apply_tres_billing(std::string_view text, Config& c, std::vector<std::string>& errors) {
  std::size_t i = 0;
  while (i <= text.size()) {
    std::size_t j = text.find(',', i);
    if (j == std::string_view::npos) j = text.size();
    std::string_view item = trim(text.substr(i, j - i));
    i = j + 1;
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) {
      errors.push_back(problem("TRESBillingWeights", item, "expected TRES=weight",
                               "e.g. GRES/gpu=1.0,GRES/gpu:a100=2.0"));
      continue;
    }
    const std::string name = lower(trim(item.substr(0, eq)));
    const std::string_view value = trim(item.substr(eq + 1));
    if (name.rfind("gres/gpu", 0) != 0) continue;
    std::string type;
    if (name.size() > 8) {
      if (name[8] != ':' || name.size() == 9) continue;  // another GRES, e.g. gres/gpumem
      type = name.substr(9);
    }
    auto w = parse_number(value);
    if (!w || *w < 0 || *w > 1000) {
      errors.push_back(problem(cat({"TRESBillingWeights ", trim(item.substr(0, eq))}), value,
                               w ? kOutOfRange : "not a number", kGpuTypeAccepted));
      continue;
    }
    if (type.empty()) c.default_gpu_weight = *w;
    else c.gpu_type_weights[type] = *w;
  }
}

void apply_knobs(const SlurmKnobs& k, Config& c, std::vector<std::string>& errors) {
  if (!k.set) return;
  auto check_duration = [&](const char* name, Seconds v, Seconds lo, Seconds hi, Seconds& out) {
    if (v < lo || v > hi) {
      errors.push_back(problem(name, std::to_string(v) + "s", kOutOfRange,
                               cat({"[", format_duration(lo), ", ", format_duration(hi), "]"})));
    } else {
      out = v;
    }
  };
  check_duration("PriorityDecayHalfLife", k.decay_half_life, 0, 3650 * kDay, c.decay_half_life);
  check_duration("PriorityCalcPeriod", k.calc_period, 1, kDay, c.calc_period);
  check_duration("PriorityMaxAge", k.max_age, 1, 3650 * kDay, c.max_age);
  c.usage_reset = k.usage_reset;
  // slurm.conf's weights all default to 0; a cluster that set none of them
  // keeps gpufair's defaults rather than giving every job priority 1.
  const bool any_tres_weight =
      std::any_of(k.tres_weights.begin(), k.tres_weights.end(), [](double w) { return w != 0; });
  if (k.weight_age || k.weight_fairshare || k.weight_job_size || k.weight_partition ||
      k.weight_qos || k.weight_assoc || any_tres_weight) {
    c.weights = {static_cast<double>(k.weight_age), static_cast<double>(k.weight_fairshare),
                 static_cast<double>(k.weight_job_size), static_cast<double>(k.weight_partition),
                 static_cast<double>(k.weight_qos), static_cast<double>(k.weight_assoc)};
  }
  for (std::size_t i = 0; i < k.tres_weights.size(); ++i)
    if (!std::isfinite(k.tres_weights[i]))  // negative is allowed, as in multifactor
      errors.push_back(problem("PriorityWeightTRES", "TRES #" + std::to_string(i) + "=" +
                                   format_number(k.tres_weights[i]),
                               "not a finite number", "finite weights"));
  if (any_tres_weight) c.tres_weights = k.tres_weights;
  c.favor_small = k.favor_small;
  c.size_relative = k.size_relative;
  c.raw = k.raw;
  c.in_team = k.in_team;
  apply_tres_billing(k.tres_billing_weights, c, errors);
}

// Slurm's own preempt plugins each preempt by one rule; in-team ranks must
// come from the same one, or the detector and the scavenger rule would see
// "lower rank" where Slurm sees none (preempt/gpufair follows preempt_by).
void check_preempt_type(const SlurmKnobs& k, const Config& c, std::vector<std::string>& errors) {
  const std::string type = lower(trim(k.preempt_type));
  if (type == "preempt/qos" && c.preempt_by == PreemptBy::kPartition)
    errors.push_back(problem("preempt_by", "partition",
                             "PreemptType=preempt/qos preempts by QOS, so in-team ranks must come from the QOS",
                             "qos with PreemptType=preempt/qos; partition with preempt/partition_prio or "
                             "preempt/gpufair"));
  if (type == "preempt/partition_prio" && c.preempt_by == PreemptBy::kQos)
    errors.push_back(problem("preempt_by", "qos",
                             "PreemptType=preempt/partition_prio preempts by partition PriorityTier, so in-team "
                             "ranks must come from the tier",
                             "partition with PreemptType=preempt/partition_prio; qos with preempt/qos or "
                             "preempt/gpufair"));
}

bool is_digit(char ch) { return ch >= '0' && ch <= '9'; }

// "a:b:c" -> up to three non-negative integer fields.
bool split_colon_fields(std::string_view s, std::vector<std::int64_t>& out) {
  std::size_t i = 0;
  while (true) {
    std::size_t j = s.find(':', i);
    if (j == std::string_view::npos) j = s.size();
    auto n = parse_uint(s.substr(i, j - i));
    if (!n) return false;
    out.push_back(*n);
    if (j == s.size()) break;
    i = j + 1;
  }
  return out.size() <= 3;
}

}  // namespace

Result<Seconds> parse_duration(std::string_view text) {
  const std::string_view s = trim(text);
  const auto bad = [&] {
    return Error{cat({"'", text,
                      "' is not a duration; accepted: 90 (seconds), 90s, 15m, 2h, 7d, mm:ss, "
                      "hh:mm:ss, days-hours, days-hh:mm, days-hh:mm:ss"})};
  };
  if (s.empty()) return bad();
  constexpr std::int64_t kMaxField = std::int64_t{1} << 40;  // keeps products in range
  std::int64_t total = 0;
  const auto dash = s.find('-');
  if (dash != std::string_view::npos) {
    auto days = parse_uint(s.substr(0, dash));
    std::vector<std::int64_t> f;
    if (!days || !split_colon_fields(s.substr(dash + 1), f) || *days > kMaxField) return bad();
    // days-hours, days-hours:minutes, days-hours:minutes:seconds
    if (f[0] > 23 || (f.size() > 1 && f[1] > 59) || (f.size() > 2 && f[2] > 59)) return bad();
    total = *days * kDay + f[0] * 3600 + (f.size() > 1 ? f[1] * 60 : 0) + (f.size() > 2 ? f[2] : 0);
    return total;
  }
  if (s.find(':') != std::string_view::npos) {
    std::vector<std::int64_t> f;
    if (!split_colon_fields(s, f) || f.size() < 2) return bad();
    for (std::size_t i = 1; i < f.size(); ++i)
      if (f[i] > 59) return bad();
    if (f[0] > kMaxField) return bad();
    if (f.size() == 2) return f[0] * 60 + f[1];            // mm:ss
    return f[0] * 3600 + f[1] * 60 + f[2];                 // hh:mm:ss
  }
  std::size_t digits = 0;
  while (digits < s.size() && is_digit(s[digits])) ++digits;
  auto n = parse_uint(s.substr(0, digits));
  if (!n || *n > kMaxField) return bad();
  const std::string unit = lower(s.substr(digits));
  if (unit.empty() || unit == "s") return *n;
  if (unit == "m") return *n * 60;
  if (unit == "h") return *n * 3600;
  if (unit == "d") return *n * kDay;
  return bad();
}

double gpu_weight_for(const Config& config, std::string_view gpu_type) {
  if (!gpu_type.empty()) {
    auto it = config.gpu_type_weights.find(lower(gpu_type));
    if (it != config.gpu_type_weights.end()) return it->second;
  }
  return config.default_gpu_weight;
}

Result<Config> parse_config(std::string_view params, const SlurmKnobs& knobs) {
  Config c;
  std::vector<std::string> errors;
  apply_knobs(knobs, c, errors);

  // Split first, so that bait_profile is applied before the keys it sets,
  // wherever it is in the list: explicit keys override the profile.
  std::vector<std::pair<std::string, std::string_view>> items;
  std::set<std::string> seen;
  std::size_t i = 0;
  while (i <= params.size()) {
    std::size_t j = params.find(',', i);
    if (j == std::string_view::npos) j = params.size();
    const std::string_view item = trim(params.substr(i, j - i));
    i = j + 1;
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) {
      errors.push_back(cat({"'", item, "': expected key=value"}));
      continue;
    }
    std::string key = lower(trim(item.substr(0, eq)));
    const std::string_view value = trim(item.substr(eq + 1));
    if (!seen.insert(key).second) {
      errors.push_back(cat({key, "='", value, "': key given more than once"}));
      continue;
    }
    items.emplace_back(std::move(key), value);
  }
  std::stable_partition(items.begin(), items.end(),
                        [](const auto& kv) { return kv.first == kBaitProfileKey; });

  for (const auto& item : items) {
    // Named copies, not structured bindings: clang 14 (the fuzz build)
    // cannot capture a structured binding in the lambda below.
    const std::string& key = item.first;
    const std::string_view value = item.second;
    if (key.rfind(kGpuTypePrefix, 0) == 0) {
      const std::string type = key.substr(kGpuTypePrefix.size());
      auto w = parse_number(value);
      if (type.empty()) {
        errors.push_back(problem(key, value, "missing GPU type", "gpu_weight:<type>=<weight>"));
      } else if (!w || *w < 0 || *w > 1000) {
        errors.push_back(problem(key, value, w ? kOutOfRange : "not a number", kGpuTypeAccepted));
      } else {
        c.gpu_type_weights[type] = *w;
      }
      continue;
    }
    const auto& table = key_table();
    auto def = std::find_if(table.begin(), table.end(), [&](const KeyDef& d) { return d.key == key; });
    if (def == table.end()) {
      std::string msg = cat({"unknown key '", key, "' (value '", value, "')"});
      const std::string near = closest_key(key);
      if (!near.empty()) msg += cat({"; did you mean '", near, "'?"});
      errors.push_back(msg);
      continue;
    }
    const std::string what = def->set(c, value);
    if (!what.empty()) errors.push_back(problem(key, value, what, def->accepted));
  }
  if (knobs.set) check_preempt_type(knobs, c, errors);

  if (!errors.empty()) {
    std::string msg = std::to_string(errors.size()) + " configuration error" +
                      (errors.size() > 1 ? "s" : "") + ": ";
    for (std::size_t e = 0; e < errors.size(); ++e) {
      if (e) msg += "; ";
      msg += errors[e];
    }
    return Error{msg};
  }
  return c;
}

const std::vector<KeyDoc>& config_keys() {
  static const std::vector<KeyDoc> docs = [] {
    std::vector<KeyDoc> out;
    const Config defaults;
    for (const auto& def : key_table()) {
      out.push_back({def.key, def.get(defaults), def.accepted, def.meaning});
    }
    out.push_back({"gpu_weight:<type>", "(none: gpu_weight)", kGpuTypeAccepted,
                   "weight of a GPU of this type, e.g. gpu_weight:a100=2 (TRESBillingWeights GRES/gpu:<type>)"});
    return out;
  }();
  return docs;
}

std::string describe(const Config& config) {
  std::string out;
  for (const auto& def : key_table()) {
    out += def.key + "=" + def.get(config) + "\n";
  }
  for (const auto& [type, w] : config.gpu_type_weights) {
    out += std::string(kGpuTypePrefix) + type + "=" + format_number(w) + "\n";
  }
  return out;
}

bool apply_bait_profile(std::string_view name, Config& config) {
  // What a profile sets; the recommended values are config.h's defaults, so
  // they are written down once.
  struct Profile {
    double threshold, repeat, w_young, w_repeat, w_supply, w_skip, w_jump, block_penalty, per_bait;
  };
  const Config d;
  const Profile recommended{d.bait.threshold, d.bait.repeat,  d.bait.w_young,
                            d.bait.w_repeat,  d.bait.w_supply, d.bait.w_skip,
                            d.bait.w_jump,    d.bait.block_penalty, d.penalty.per_bait};
  // One young victim while others wait is enough (sim/tuning.md, "fast").
  const Profile fast{0.5, 3, 0.4, 0.2, 0.2, 0.2, 0, 0.5, 1.0};
  const Profile* p = name == "recommended" ? &recommended : name == "fast" ? &fast : nullptr;
  if (!p) return false;
  config.bait.threshold = p->threshold;
  config.bait.repeat = p->repeat;
  config.bait.w_young = p->w_young;
  config.bait.w_repeat = p->w_repeat;
  config.bait.w_supply = p->w_supply;
  config.bait.w_skip = p->w_skip;
  config.bait.w_jump = p->w_jump;
  config.bait.block_penalty = p->block_penalty;
  config.penalty.per_bait = p->per_bait;
  config.bait_profile = std::string(name);
  return true;
}

}  // namespace gpufair
