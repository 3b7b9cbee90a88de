// The scheduling policy the simulator asks for priorities and preemption
// verdicts. Three implementations:
//   fifo         the original situation: global FIFO by submit time, in-team
//                preemption always allowed (preempt/qos with a same-team rule)
//   multifactor  a model of Slurm's classic fair-share priority/multifactor
//   gpufair      gpufair::Engine itself, driven as the Slurm plugins drive it
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpufair/config.h"
#include "job_spec.h"
#include "sim_job.h"

namespace gpufair::sim {

struct PreemptVerdict {
  bool allowed = true;
  bool judged_bait = false;  // refused because the victim looks like bait
  std::string reason;
};

struct RecordedPreemption {
  bool bait = false;
  bool reclaim = false;
  double price_gpu_s = 0;  // the jump's price charged to the preemptor's team
  double score = 0;
  double penalty_added = 0;
  std::string reason;
};

struct PolicyTeamState {
  double penalty = 0;
  std::uint32_t bait_detections = 0;
  double fairshare = 0;
  // The jump prices the team paid in the end, GPU-seconds, if the policy
  // settles them after the jump (gpufair: on how long each jumper ran);
  // negative: the sum of the prices charged at the jumps stands.
  double price_gpu_s = -1;
};

class SchedPolicy {
 public:
  virtual ~SchedPolicy() = default;
  virtual std::string name() const = 0;

  // A new account (full path) of team `team` was seen; its team's shares.
  virtual void add_account(std::int32_t account, const std::string& path, std::int32_t team,
                           double shares) = 0;
  virtual void set_cluster_gpus(double gpus) = 0;

  // False when the queue order never changes after submit (fifo): the
  // simulator then skips the per-cycle re-sort.
  virtual bool priorities_change() const = 0;

  // The periodic cycle (every calc_period).
  virtual void begin_cycle(TimePoint now) = 0;
  virtual void observe_running(const SimJob& job, TimePoint now) = 0;
  virtual void observe_pending(const SimJob& job) = 0;
  // Every running job of the cycle; policies may take them in one go.
  virtual void observe_running_all(const std::vector<const SimJob*>& jobs, TimePoint now) {
    for (const auto* j : jobs) observe_running(*j, now);
  }
  // Every pending job of the cycle in queue order; policies may take them
  // in one go (the plugin hands the core its whole walk under one lock).
  virtual void observe_pending_all(const std::vector<const SimJob*>& jobs) {
    for (const auto* j : jobs) observe_pending(*j);
  }
  virtual void end_cycle(TimePoint now) = 0;
  virtual void job_ended(const SimJob& job, TimePoint end) = 0;

  // Higher runs first; ties go to the earlier submit.
  virtual std::uint64_t priority(const SimJob& job, TimePoint now) const = 0;
  // The per-cycle pass over every pending job (the plugin's recalculation):
  // out[i] = priority(*jobs[i], now). Policies may do it in one go.
  virtual void priorities(const std::vector<const SimJob*>& jobs, TimePoint now,
                          std::vector<std::uint64_t>& out) const {
    out.resize(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) out[i] = priority(*jobs[i], now);
  }

  virtual PreemptVerdict allow_preemption(const SimJob& preemptor, const SimJob& victim,
                                          TimePoint now) const = 0;
  virtual RecordedPreemption record_preemption(const SimJob& preemptor, const SimJob& victim,
                                               TimePoint now) = 0;
  // preempt_scope=any: a job may preempt lower-rank jobs of every team (the
  // site lets preempt/qos work across teams), not only its own team's.
  virtual bool preempts_across_teams() const = 0;
  // Whether a preemptor the policy let through claims the GPUs its victims
  // free (gpufair's preemptor_claim): its priority changes when it
  // preempts, so the simulator asks for it again then. Slurm's plugins
  // leave it as it was.
  virtual bool preemptor_claims() const { return false; }

  // Reclaim across teams (design.md, "Reclaim"): whether the policy ever
  // lets a pending job requeue another team's running job, and whether it
  // may now take `victim` (the rule bounds any set of allowed victims, so
  // the simulator asks victim by victim as Slurm does). fifo and
  // multifactor never reclaim.
  virtual bool reclaims() const { return false; }
  // Whether a reclaim may be allowed now at all (the engine's flag: some
  // team may be reclaimed from while another waits); false spares the
  // simulator every try, as it spares the preempt plugin every check.
  virtual bool reclaim_possible() const { return reclaims(); }
  // The reclaimer's side alone: false when no victim could be allowed.
  virtual bool may_reclaim(const SimJob& /*reclaimer*/, TimePoint /*now*/) const { return reclaims(); }
  virtual PreemptVerdict allow_reclaim(const SimJob& /*reclaimer*/, const SimJob& /*victim*/,
                                       TimePoint /*now*/) const {
    return {false, false, "this policy never reclaims"};
  }

  virtual PolicyTeamState team_state(std::int32_t team, TimePoint now) const = 0;
};

// policy: "fifo", "multifactor" or "gpufair". Throws std::invalid_argument
// for an unknown name.
std::unique_ptr<SchedPolicy> make_policy(const std::string& policy, const Config& config);

// The team an account path belongs to: its first `level` components (the
// design's roll-up rule; the gpufair policy checks that the engine agrees).
std::string team_of_account(const std::string& path, int level);

}  // namespace gpufair::sim
