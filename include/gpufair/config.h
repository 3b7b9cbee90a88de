// gpufair's configuration: the standard slurm.conf Priority* knobs plus our own
// keys from PriorityParameters= ("key=value,key=value"). Loaded strictly
// (unknown keys are errors, with the closest known key suggested), defaulted,
// then range-checked; all errors are reported at once, each naming the key,
// the value and what is accepted.
//
// The defaults below are the single place they are written down; README and
// slurm-conf-examples/ quote them.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/fair_tree.h"
#include "gpufair/result.h"
#include "gpufair/time.h"

namespace gpufair {

enum class ResetPeriod { kNone, kNow, kDaily, kWeekly, kMonthly, kQuarterly, kYearly };
enum class PreemptScope { kTeam, kAny };
// Whose rule says who may preempt whom, and so what a job's in-team rank is
// (qos_rank.h, in_team_rank): the QOS Preempt= lists, as Slurm's preempt/qos,
// or the partitions' PriorityTier, as preempt/partition_prio.
enum class PreemptBy { kQos, kPartition };
enum class BaitBlock { kNever, kPenalized, kAlways };
// Whose GPUs a team below its share may take back (design.md, "Reclaim").
enum class Reclaim { kOff, kJumpers, kAll };
// In-team jumps by a team below its entitlement onto GPUs it held before the
// preemptor could run (design.md, "Jump price", banked GPUs).
enum class BankedJump { kAllow, kRefuse };
enum class ScavengerOrder { kQueue, kLast };
// Which preemptors sort first until they start (design.md, "The
// preemptor's claim").
enum class PreemptorClaim { kOff, kJumpers, kReclaims, kAll };

// PriorityFlags=NO_NORMAL_ASSOC/_PART/_QOS/_TRES: the factor is the raw
// value (association or QOS Priority, partition PriorityJobFactor, TRES
// count) instead of that value over the largest one (the partition's total
// for a TRES), as in priority/multifactor.
struct RawFactors {
  bool assoc = false, partition = false, qos = false, tres = false;
};

// The standard slurm.conf knobs as Slurm parsed them (seconds, raw weights).
// `set == false` means "not from Slurm" (the simulator, tests): defaults apply.
struct SlurmKnobs {
  bool set = false;
  Seconds decay_half_life = 7 * 86400;  // PriorityDecayHalfLife
  Seconds calc_period = 300;            // PriorityCalcPeriod
  Seconds max_age = 7 * 86400;          // PriorityMaxAge
  ResetPeriod usage_reset = ResetPeriod::kNone;  // PriorityUsageResetPeriod
  unsigned weight_age = 0, weight_fairshare = 0, weight_job_size = 0,
           weight_partition = 0, weight_qos = 0, weight_assoc = 0;  // PriorityWeight*
  bool favor_small = false;                       // PriorityFavorSmall
  std::string tres_billing_weights;               // TRESBillingWeights
  // PriorityWeightTRES, by the host's TRES position (Slurm's own parser
  // fills it); empty = no TRES term.
  std::vector<double> tres_weights;
  bool size_relative = false;                     // PriorityFlags=SMALL_RELATIVE_TO_TIME
  RawFactors raw;                                 // PriorityFlags=NO_NORMAL_*
  // PreemptType ("preempt/qos"); empty = unknown. preempt_by must agree
  // with the rule Slurm's own preempt plugins preempt by.
  std::string preempt_type;
  // Fair share inside a team: Fair Tree unless PriorityFlags=NO_FAIR_TREE
  // (classic) or DEPTH_OBLIVIOUS.
  InTeamAlgo in_team = InTeamAlgo::kFairTree;
};

struct Weights {
  double age = 1000;
  double fairshare = 10000;
  double job_size = 0;
  double partition = 0;
  double qos = 0;
  double assoc = 0;  // PriorityWeightAssoc
};

// The bait rule's defaults are the "recommended" profile of sim/tuning.md,
// chosen with gpufair-sim over every shipped scenario and three seeds: every
// gaming strategy stays closed, honest teams that preempt about once a day
// are never judged, and the gamer's GPU-hours stay near its share (Jain >=
// 0.95). Repetition and a rolling supply of victims carry the decision, because
// honest preemption also picks the youngest victim and skips queue time on any
// busy cluster. The price: a low-rate gamer is first noticed after about a day.
struct BaitConfig {
  double threshold = 0.6;         // bait_threshold: score at which a victim is bait
  Seconds young = 2 * 3600;       // bait_young: victims younger than this look like slot holders
  Seconds window = 86400;         // bait_window: half-life of the detector's per-team memory
  double repeat = 8;              // bait_repeat: recent in-team jumps that count as routine
  Seconds skip_norm = 3600;       // bait_skip_norm: skipped queue time that counts in full
  double w_young = 0.2;           // bait_w_young
  double w_repeat = 0.35;         // bait_w_repeat
  double w_supply = 0.3;          // bait_w_supply
  double w_skip = 0.15;           // bait_w_skip
  // bait_w_jump: weight of the share of the team's recently started GPUs that
  // started by preempting their own team. Volume-relative, so it separates a
  // gamer (much of its work jumps) from a big honest team that preempts often.
  double w_jump = 0.2;
  BaitBlock block = BaitBlock::kNever;  // bait_block
  // bait_block_penalty: low, so one confirmed bait already stops the queue
  // jump itself. Blocking, not a deep priority cut, is what removes the
  // advantage; a large penalty would only push the gamer far below its share.
  double block_penalty = 0.1;
};

struct PenaltyConfig {
  double per_bait = 0.3;          // penalty_per_bait: added per confirmed bait (times its score)
  double max = 8.0;               // penalty_max
  Seconds half_life = 86400;      // penalty_half_life
  double skip_charge = 1.0;       // skip_charge: GPU-seconds charged per skipped GPU-second
};

// The price of a queue jump and the reclaim of squatted GPUs (design.md,
// "Jump price" and "Reclaim"): the two rules whose guarantee does not rest
// on the bait detector.
struct JumpConfig {
  // jump_price_cap: one waiting job counts at most this long, so a single
  // stale job cannot inflate a price. Four hours: longer than a typical
  // queue wait on a healthy cluster, far shorter than a stuck job's.
  Seconds price_cap = 4 * 3600;
  // reclaim: jumpers (default) = the GPUs of a team over its entitlement
  // that jumped the queue (paid a jump price) or was caught baiting within
  // bait_window; all = any team over its entitlement; off = never. With
  // jumpers a reserve that never paid a price (placeholders started before
  // the first jump, free jumps onto scavengers) is nobody's to take; all
  // takes it too, and with preemptor_claim=jumpers the gamer's own
  // reclaims from teams that did not jump gain it nothing, but it costs
  // honest teams more (design.md, "The preemptor's claim").
  Reclaim reclaim = Reclaim::kJumpers;
  // banked_jump: refuse = a team below its entitlement may displace only
  // its own jobs that started at or after the preemptor became eligible
  // (GPUs it got while the preemptor already waited), never GPUs banked in
  // advance; allow (default) = any in-team victim. Off by default because it
  // also refuses honest urgent jobs of below-entitlement teams (measured in
  // design.md, "Why no strategy pays").
  BankedJump banked_jump = BankedJump::kAllow;
  // scavenger_window: after a team displaces one of its own jobs by a
  // higher-rank one, its lower-rank jobs that start within this long of its
  // latest such preemption are scavengers until they have run bait_young
  // (design.md, "Scavengers"): any other team's job, whatever its rank,
  // may requeue them, whatever the entitlements; the team's own jumps onto
  // them are free; and, while it lasts, the team's lower-rank jobs may not
  // reclaim. 0 = off. One day, the detector's window: a team that preempts
  // its own jobs at least daily keeps its reserve as scavengers; what it
  // costs honest teams is measured in design.md.
  Seconds scavenger_window = 86400;
  // scavenger_order: where a pending job that would start as a scavenger
  // (a lower-rank job of a team in a scavenger episode) sorts. queue
  // (default): by its priority. last: priority 1, after every other job,
  // as a scavenger QOS would put it. Slurm hands the GPUs a preemption
  // frees out in priority order, so a reclaimer that is not the queue's
  // head frees them for whoever is first; a reserve whose pending jobs
  // sort ahead takes them back (design.md, "Who gets the GPUs a preemption
  // frees": what it does to harm, and to honest teams' lower-rank work).
  ScavengerOrder scavenger_order = ScavengerOrder::kQueue;
  // preemptor_claim: whose preemptions keep what they free. Slurm hands
  // the GPUs a preemption frees to the first job in priority order that
  // fits, so a preemptor that is not the head frees them for someone else
  // and preempts again and again. A claimed preemptor sorts first (priority
  // kMaxPriority) until a cycle sees it running, at most kClaimFor from its
  // first preemption. jumpers (default): a job that reclaimed GPUs from a
  // team that jumped the queue lately (reclaim=jumpers' test) or from a
  // scavenger, so that what a jump or a reserve took goes back to a team it
  // was taken from and not, as the head of the queue often is, to the
  // victim's team's next placeholder. A reclaim from a team merely over its
  // entitlement (reclaim=all) requeues its youngest job and leaves the GPUs
  // to fair-share order: claimed, a gamer's own reclaims would start its
  // urgent jobs at once. reclaims: every reclaim. all: in-team jumps too
  // (that gives a reserve held before a team's first jump its jump back).
  // off: Slurm's hand-off for every preemption. design.md, "The
  // preemptor's claim": what each does to gain, harm and honest teams.
  PreemptorClaim preemptor_claim = PreemptorClaim::kJumpers;
};

// How long a preemptor's claim lasts at most (preemptor_claim): Slurm frees
// a requeued victim's GPUs within seconds (KillWait 30 s and the epilog by
// default), or after the victim's GraceTime; a claim not taken by then is
// dropped, so that a job that cannot start does not head the queue.
inline constexpr Seconds kClaimFor = 600;

struct Config {
  // Standard knobs (overridable at seconds resolution from PriorityParameters,
  // because slurm.conf only takes minutes for some of them).
  Seconds decay_half_life = 7 * 86400;  // half_life
  Seconds calc_period = 300;            // calc_period
  Seconds max_age = 7 * 86400;          // max_age
  ResetPeriod usage_reset = ResetPeriod::kNone;  // usage_reset
  Weights weights;
  bool favor_small = false;
  bool size_relative = false;      // job size per minute of time limit (SMALL_RELATIVE_TO_TIME)
  RawFactors raw;                  // NO_NORMAL_* (slurm.conf only)
  InTeamAlgo in_team = InTeamAlgo::kFairTree;  // fair share inside a team (slurm.conf only)
  std::vector<double> tres_weights;  // PriorityWeightTRES by TRES position (slurm.conf only)
  std::map<std::string, double> gpu_type_weights;  // "a100" -> 2.0; "" = untyped GPUs
  double default_gpu_weight = 1.0;

  // gpufair's own keys.
  int team_level = 1;              // team_level: account depth below root that is a team
  double default_shares = 1.0;     // default_shares: for teams with no association
  PreemptScope preempt_scope = PreemptScope::kTeam;  // preempt_scope
  PreemptBy preempt_by = PreemptBy::kQos;            // preempt_by
  BaitConfig bait;
  PenaltyConfig penalty;
  JumpConfig jump;
  std::string state_file;          // state_file: empty = <StateSaveLocation>/gpufair.state
  // bait_profile: the named profile the bait rule's weights started from
  // (apply_bait_profile); weights given explicitly override it.
  std::string bait_profile = "recommended";
};

// Named bait-rule profiles, measured in sim/tuning.md. A profile sets the
// rule's threshold, weights, bait_repeat, bait_block_penalty and
// penalty_per_bait at once; its timescales (bait_young, bait_window,
// bait_skip_norm, penalty_half_life) stay as configured.
//   recommended  the defaults above.
//   fast         notices a low-rate gamer after ~15 h instead of ~24 h, but
//                judges some rare honest preemptions as bait and pushes a
//                caught gamer further below its share. For short trials: the
//                demo and the end-to-end tests, whose story lasts 14-16 hours.
// Returns false (and leaves `config` alone) for an unknown name.
bool apply_bait_profile(std::string_view name, Config& config);

// Parse Slurm-style durations: "90" (seconds), "90s", "15m", "2h", "7d",
// "30:00" (mm:ss), "1:30:00" (hh:mm:ss), "7-0", "7-12", "14-00:00:00".
Result<Seconds> parse_duration(std::string_view text);

// Build the effective configuration from Slurm's knobs and PriorityParameters.
Result<Config> parse_config(std::string_view priority_parameters,
                            const SlurmKnobs& knobs = {});

// Every accepted PriorityParameters key with its default and range, in order.
struct KeyDoc {
  std::string key, default_value, accepted, meaning;
};
const std::vector<KeyDoc>& config_keys();

// The effective configuration, one "key=value" per line (logged at init).
std::string describe(const Config& config);

// Billing weight of one GPU of `gpu_type` ("a100"; "" = untyped): the type's
// weight when configured, else default_gpu_weight. Case-insensitive.
double gpu_weight_for(const Config& config, std::string_view gpu_type);

}  // namespace gpufair
