// Engine: the whole policy behind one thread-safe object. The Slurm plugins
// (through c_api.h), the simulator and the benchmarks all drive this class;
// there is no second implementation of the policy anywhere.
//
// Life of a cycle (every calc_period, driven by the host):
//   begin_cycle(now)        decay usage/penalties/detector memory, apply resets
//   observe_running(job)    charge each running job since it was last charged
//   observe_pending(job)    remember who is waiting (for "skipped queue time")
//   end_cycle(now)          charge jobs that vanished, recompute team factors
// At any time: job_ended(), priority(), allow_preemption(), record_preemption().
//
// Locking: mutating calls hold an exclusive lock; priority() and
// allow_preemption() hold a shared lock and read the per-cycle factor table;
// a reclaim check also holds, inside it, a mutex of its own while it reads
// (and after a change rebuilds) the victim's team's reclaim-order array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/config.h"
#include "gpufair/job.h"
#include "gpufair/result.h"
#include "gpufair/time.h"

namespace gpufair {

struct PreemptCheck {
  bool allowed = true;
  bool reclaim = false;  // allowed across teams by the reclaim rule
  bool banked = false;   // refused by banked_jump=refuse (not a bait verdict)
  std::string reason;
};

struct BaitDecision {
  JobId preemptor = 0, victim = 0;
  TeamId team = -1;
  TimePoint when = 0;
  bool in_team = false;
  bool bait = false;
  bool reclaim = false;      // a reclaim across teams, not a queue jump
  // The victim ran on borrowed reservation time (a MaxStartDelay
  // reservation's idle nodes) and the reservation's job took them back:
  // Slurm preempts it whatever the preemption rules; not a queue jump.
  bool reservation = false;
  double score = 0;
  Seconds skipped = 0;       // GPU-weighted queue time of the runnable jobs ahead it skipped
  double charged_gpu_s = 0;  // the jump's price, added to the team's usage
  double penalty_added = 0;
  std::string reason;        // human-readable evidence
};

struct TeamReport {
  std::string name;
  double usage_gpu_s = 0;      // decayed, weighted
  double raw_usage_gpu_s = 0;  // undecayed since last reset
  double shares = 0, shares_norm = 0, usage_norm = 0;
  double fairshare = 0, effective_fairshare = 0, penalty = 0;
  std::uint32_t bait_detections = 0, in_team_preemptions = 0;
  double price_total_gpu_s = 0;  // jump prices paid since the last usage reset
  std::uint32_t priced_jumps = 0, reclaimed_from = 0, reclaims_made = 0;
  double held_gpus = 0, entitled_gpus = 0;  // running now, and its share among active teams
  // Its scavenger episode when one is on (design.md, "Scavengers"): its
  // lower-rank jobs started after `since` may be requeued by any other team
  // until `until`. 0/0 = none.
  TimePoint scavenger_since = 0, scavenger_until = 0;
  // Whether it jumped the queue lately (design.md, "Reclaim"): its jump
  // prices decayed with half-life bait_window, and whether they come to at
  // least 1 GPU-second or its penalty to bait_block_penalty. Under
  // reclaim=jumpers only such a team's jobs may be reclaimed.
  double recent_jump_price_gpu_s = 0;
  bool jumped_lately = false;
  std::vector<BaitDecision> recent;  // newest last
};

// An association inside a team (design.md, "Fair share inside a team").
struct AssocReport {
  std::string account;  // path below root
  std::string user;     // "" = the account's own association
  TeamId team = -1;
  AssocId parent = -1;  // -1: the team's own account, which reports the team's figures
  bool live = true;     // named by the host at its last refresh
  double shares = 1;    // raw; negative: fairshare=parent
  double usage_gpu_s = 0;      // its jobs', decayed, weighted (the team's own account: the team's, jump prices included)
  double raw_usage_gpu_s = 0;  // undecayed since the last reset
  // Inside the team, by the configured algorithm (fair_tree.h: TreeShare);
  // the team's own account: S/Stot, U/Utot and, under Fair Tree, the level
  // fair share -1/log2(its effective factor), among the teams.
  double shares_norm = 0, usage_efctv = 0, level_fs = 0;
  double in_team = 1;    // its factor inside the team (the team's own account: 1)
  double fairshare = 0;  // what its jobs get: job_fair_share(team, band, in_team)
};

class Engine {
 public:
  explicit Engine(Config config);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Replace the configuration, keeping all state.
  void reconfigure(Config config);
  Config config() const;

  // Teams. A new team, or new shares, update that team's factor at once in
  // O(1); the other teams' factors (which move slightly with the totals) are
  // refreshed by end_cycle. Unknown team ids throw std::invalid_argument.
  TeamId team_for_account(std::string_view account_path);  // -1 if empty
  void set_shares(TeamId team, double shares);
  // Associations inside the teams: a user's (user non-empty) or an
  // account's, by its account path below root; made with its parents (its
  // account, the accounts up to its team's) when new. Its team is the
  // path's at team_level. -1 for an empty path.
  AssocId assoc_for(std::string_view account_path, std::string_view user);
  // Raw shares (sacctmgr fairshare=N; negative: fairshare=parent);
  // associations never set have 1, Slurm's default.
  void set_assoc_shares(AssocId assoc, double shares);
  // The host named every association it has (assoc_for or set_assoc_shares)
  // since its last call: the others are gone and are no longer ranked
  // (they keep their usage, and come back when named again). A host that
  // never calls it keeps every association ranked.
  void assocs_refreshed();
  std::int32_t assoc_count() const;
  void set_cluster_gpus(double gpus);
  std::int32_t team_count() const;
  std::string team_name(TeamId team) const;

  // The cycle.
  void begin_cycle(TimePoint now);
  void observe_running(const JobRef& job, TimePoint now);
  // Many running jobs under one lock (the simulator's cycle): as
  // observe_running for each in turn, stopping at the first invalid job
  // (the ones before it are taken).
  void observe_running(std::span<const JobRef> jobs, TimePoint now);
  void observe_pending(const JobRef& job);
  // Many pending jobs under one lock (the plugin's walk); jobs of an unknown
  // team are skipped rather than thrown for. Returns how many were taken.
  std::size_t observe_pending(std::span<const JobRef> jobs);
  void end_cycle(TimePoint now);
  // Time of the latest begin_cycle (0 before the first): what the C API's
  // observe_running charges up to, as it carries no time of its own.
  TimePoint cycle_time() const;
  // A job stopped (completed, cancelled, preempted): charged up to `end`
  // and forgotten. Unknown ids are ignored.
  void job_ended(JobId job, TimePoint end);
  // The same with the job's record (its team, GPUs, start, usage factor):
  // a job no cycle saw running, because it started after the last cycle
  // and stopped before the next, is charged for its whole run, once
  // (design.md, "Usage ledger"). A record with no start, no GPUs, no team,
  // or a start before the last cycle's time is only job_ended(job.id, end).
  void job_ended(const JobRef& job, TimePoint end);

  // Hot paths.
  PriorityFactors priority(const PriorityInput& in, TimePoint now) const;
  // Many jobs under one lock (the plugin's recalculation pass): out[i] is the
  // priority of in[i]; out must be at least as long as in.
  void priorities(std::span<const PriorityInput> in, TimePoint now,
                  std::span<std::uint32_t> out) const;
  // The PriorityWeightTRES term of a job in a partition (priority.h,
  // tres_term) with the configured weights and NO_NORMAL_TRES: what goes
  // into PriorityInput::tres. 0 when no TRES weight is set.
  double tres_term(const double* count, const double* total, std::size_t n,
                   double* each) const;
  PreemptCheck allow_preemption(const JobRef& preemptor, const JobRef& victim,
                                TimePoint now) const;
  // Same decision; want_reason=false skips building the reason string (the
  // preempt plugin's predicates run on slurmctld's hottest paths).
  PreemptCheck check_preemption(const JobRef& preemptor, const JobRef& victim,
                                TimePoint now, bool want_reason) const;
  // The reclaim rule alone (design.md, "Reclaim"): may `reclaimer`, a
  // pending job of a team below its entitlement, requeue `victim` of a team
  // over its own? Pair by pair: whichever allowed victims a host takes
  // together, their team ends less than the oldest one's GPUs below its
  // entitlement. check_preemption applies it to cross-team pairs.
  PreemptCheck check_reclaim(const JobRef& reclaimer, const JobRef& victim, TimePoint now) const;
  // As of the last cycle: some team below its entitlement has a runnable
  // GPU job waiting and some team over its own may be reclaimed from. Lock
  // free: the preempt plugin asks it for every cross-team pair, and skips
  // the core entirely when it is false (the usual case).
  bool reclaim_possible() const;
  // The reclaimer's side of the rule alone: false when check_reclaim would
  // refuse `reclaimer` whatever the victim (reclaim=off, not runnable, no
  // GPUs, or it would start as a scavenger). Lets a host skip the victims.
  bool may_reclaim(const JobRef& reclaimer, TimePoint now) const;
  // A preemption really happened: an in-team jump is priced and judged; a
  // cross-team one (preempt_scope=team) is recorded as a reclaim.
  // A reclaim from a team that jumped or from a scavenger
  // (preemptor_claim=jumpers, the default), any reclaim (reclaims), or any
  // preemption (all) also claims what its victims free for the preemptor:
  // until it is seen running (observe_running) or kClaimFor has passed,
  // priority() gives it kMaxPriority (job_ended of a job not seen running
  // changes nothing).
  BaitDecision record_preemption(const JobRef& preemptor, const JobRef& victim,
                                 TimePoint when);
  // Whether `job` holds such a claim now (what the preempt plugin asks, to
  // raise the preemptor's priority in Slurm at once, not at the next cycle).
  bool claimed(JobId job, TimePoint now) const;
  // A job of a MaxStartDelay reservation took back its nodes from a job
  // that ran there on borrowed time (Slurm preempts it automatically, no
  // rule asked): listed with the decisions of the preemptor's team, and of
  // the victim's when it is another known team; no price, never judged,
  // no counter moves (the victim's GPUs leave with job_ended).
  BaitDecision record_resv_preemption(const JobRef& preemptor, const JobRef& victim,
                                      TimePoint when);

  // Views.
  TeamReport team_report(TeamId team, TimePoint now) const;
  AssocReport assoc_report(AssocId assoc, TimePoint now) const;
  std::vector<AssocReport> assoc_reports(TimePoint now) const;
  std::vector<TeamReport> report(TimePoint now) const;

  // State.
  std::vector<std::uint8_t> save_state() const;
  Result<void> load_state(std::span<const std::uint8_t> bytes);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpufair
