// The three policies behind SchedPolicy (see sched_policy.h for what each
// one models).
#pragma once

#include <span>
#include <unordered_map>
#include <vector>

#include "gpufair/engine.h"
#include "sched_policy.h"

namespace gpufair::sim {

class FifoPolicy final : public SchedPolicy {
 public:
  explicit FifoPolicy(bool any_team) : any_team_(any_team) {}
  std::string name() const override { return "fifo"; }
  void add_account(std::int32_t account, const std::string& path, std::int32_t team,
                   double shares) override;
  void set_cluster_gpus(double) override {}
  bool priorities_change() const override { return false; }
  void begin_cycle(TimePoint) override {}
  void observe_running(const SimJob&, TimePoint) override {}
  void observe_pending(const SimJob&) override {}
  void observe_pending_all(const std::vector<const SimJob*>&) override {}
  void end_cycle(TimePoint) override {}
  void job_ended(const SimJob&, TimePoint) override {}
  std::uint64_t priority(const SimJob& job, TimePoint now) const override;
  PreemptVerdict allow_preemption(const SimJob& preemptor, const SimJob& victim,
                                  TimePoint now) const override;
  RecordedPreemption record_preemption(const SimJob& preemptor, const SimJob& victim,
                                       TimePoint now) override;
  bool preempts_across_teams() const override { return any_team_; }
  PolicyTeamState team_state(std::int32_t, TimePoint) const override { return {}; }

 private:
  bool any_team_;
};

// Slurm's priority/multifactor with the classic (non-Fair-Tree) fair share,
// restricted to what matters here: decayed GPU usage per team, shares,
// F = 2^(-(U/Utot)/(S/Stot)), and the weighted sum of age, fair share, job
// size and QOS truncated to an integer as Slurm does. Preemption: preempt/qos
// limited to the team, never judged.
class MultifactorPolicy final : public SchedPolicy {
 public:
  explicit MultifactorPolicy(const Config& config) : config_(config) {}
  std::string name() const override { return "multifactor"; }
  void add_account(std::int32_t account, const std::string& path, std::int32_t team,
                   double shares) override;
  void set_cluster_gpus(double gpus) override { cluster_gpus_ = gpus; }
  bool priorities_change() const override { return true; }
  void begin_cycle(TimePoint now) override;
  void observe_running(const SimJob& job, TimePoint now) override;
  void observe_pending(const SimJob&) override {}
  void observe_pending_all(const std::vector<const SimJob*>&) override {}
  void end_cycle(TimePoint now) override;
  void job_ended(const SimJob& job, TimePoint end) override;
  std::uint64_t priority(const SimJob& job, TimePoint now) const override;
  PreemptVerdict allow_preemption(const SimJob& preemptor, const SimJob& victim,
                                  TimePoint now) const override;
  RecordedPreemption record_preemption(const SimJob& preemptor, const SimJob& victim,
                                       TimePoint now) override;
  bool preempts_across_teams() const override { return config_.preempt_scope == PreemptScope::kAny; }
  PolicyTeamState team_state(std::int32_t team, TimePoint now) const override;

 private:
  struct Team {
    double shares = 0, usage = 0, fairshare = 1;
  };
  void charge(const SimJob& job, TimePoint until);

  Config config_;
  double cluster_gpus_ = 1;
  std::vector<Team> teams_;  // by simulator team index
  std::unordered_map<JobId, TimePoint> charged_until_;
  TimePoint last_decay_ = 0;
  bool decayed_once_ = false;
};

// gpufair::Engine, driven exactly as priority_gpufair/preempt_gpufair drive it.
class GpufairPolicy final : public SchedPolicy {
 public:
  explicit GpufairPolicy(const Config& config);
  std::string name() const override { return "gpufair"; }
  void add_account(std::int32_t account, const std::string& path, std::int32_t team,
                   double shares) override;
  void set_cluster_gpus(double gpus) override { engine_.set_cluster_gpus(gpus); }
  bool priorities_change() const override { return true; }
  void begin_cycle(TimePoint now) override { engine_.begin_cycle(now + kEpoch); }
  void observe_running(const SimJob& job, TimePoint now) override {
    engine_.observe_running(ref(job), now + kEpoch);
  }
  void observe_running_all(const std::vector<const SimJob*>& jobs, TimePoint now) override;
  void observe_pending(const SimJob& job) override { engine_.observe_pending(ref(job)); }
  void observe_pending_all(const std::vector<const SimJob*>& jobs) override;
  void end_cycle(TimePoint now) override { engine_.end_cycle(now + kEpoch); }
  // With its record: a job that ran between two cycles is charged too.
  void job_ended(const SimJob& job, TimePoint end) override { engine_.job_ended(ref(job), end + kEpoch); }
  std::uint64_t priority(const SimJob& job, TimePoint now) const override;
  // Engine::priorities: one lock for the whole pass, as the plugin does it.
  void priorities(const std::vector<const SimJob*>& jobs, TimePoint now,
                  std::vector<std::uint64_t>& out) const override;
  PreemptVerdict allow_preemption(const SimJob& preemptor, const SimJob& victim,
                                  TimePoint now) const override;
  RecordedPreemption record_preemption(const SimJob& preemptor, const SimJob& victim,
                                       TimePoint now) override;
  bool reclaims() const override { return reclaims_; }
  bool reclaim_possible() const override { return reclaims_ && engine_.reclaim_possible(); }
  bool may_reclaim(const SimJob& reclaimer, TimePoint now) const override;
  PreemptVerdict allow_reclaim(const SimJob& reclaimer, const SimJob& victim, TimePoint now) const override;
  bool preempts_across_teams() const override { return any_team_; }
  bool preemptor_claims() const override { return claims_; }
  PolicyTeamState team_state(std::int32_t team, TimePoint now) const override;

  const Engine& engine() const { return engine_; }

 private:
  // Simulated time starts at 0, but the core reads 0 as "not started" in
  // JobRef and resets usage on UTC calendar boundaries: shift every time by a
  // fixed epoch (2023-11-14T22:13:20Z) when talking to the engine.
  static constexpr TimePoint kEpoch = 1'700'000'000;
  JobRef ref(const SimJob& job) const;
  // Every job's ref, in batch_refs_ (valid until the next call).
  std::span<const JobRef> refs(const std::vector<const SimJob*>& jobs);

  PriorityInput input(const SimJob& job) const;

  Engine engine_;
  int team_level_;
  bool reclaims_;
  bool any_team_;
  bool claims_;
  mutable std::vector<PriorityInput> batch_in_;   // scratch for priorities()
  mutable std::vector<std::uint32_t> batch_out_;
  std::vector<JobRef> batch_refs_;  // scratch for observe_running_all(), observe_pending_all()
  std::vector<TeamId> account_team_;  // simulator account -> engine team
  std::vector<TeamId> team_map_;      // simulator team -> engine team
};

}  // namespace gpufair::sim
