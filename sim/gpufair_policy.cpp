#include <algorithm>
#include <cstdint>
#include <span>
#include <stdexcept>

#include "policies.h"

namespace gpufair::sim {

GpufairPolicy::GpufairPolicy(const Config& config)
    : engine_(config),
      team_level_(config.team_level),
      reclaims_(config.jump.reclaim != Reclaim::kOff && config.preempt_scope == PreemptScope::kTeam),
      any_team_(config.preempt_scope == PreemptScope::kAny),
      claims_(config.jump.preemptor_claim != PreemptorClaim::kOff) {}

void GpufairPolicy::add_account(std::int32_t account, const std::string& path, std::int32_t team,
                                double shares) {
  const TeamId tid = engine_.team_for_account(path);
  // The simulator groups its metrics by its own roll-up; if the engine ever
  // disagreed, every per-team figure would silently be wrong.
  const auto expected = team_of_account(path, team_level_);
  if (tid < 0 || engine_.team_name(tid) != expected)
    throw std::runtime_error("gpufair engine put account '" + path + "' in team '" +
                             (tid < 0 ? std::string("?") : engine_.team_name(tid)) +
                             "', the simulator expected '" + expected + "'");
  if (account >= static_cast<std::int32_t>(account_team_.size()))
    account_team_.resize(static_cast<size_t>(account) + 1, -1);
  account_team_[static_cast<size_t>(account)] = tid;
  if (team >= static_cast<std::int32_t>(team_map_.size())) team_map_.resize(static_cast<size_t>(team) + 1, -1);
  if (team_map_[static_cast<size_t>(team)] < 0) {
    team_map_[static_cast<size_t>(team)] = tid;
    engine_.set_shares(tid, shares);
  }
}

JobRef GpufairPolicy::ref(const SimJob& job) const {
  JobRef r;
  r.id = job.id;
  r.team = account_team_[static_cast<size_t>(job.account)];
  r.user = static_cast<std::uint32_t>(job.user);
  r.rank = job.rank;
  r.gpus = job.gpus;
  r.submit = job.submit + kEpoch;
  r.eligible = job.eligible + kEpoch;
  r.start = job.state == JobState::kRunning ? job.start + kEpoch : 0;
  // The simulator queues a job only once it may run: every pending job is
  // runnable, ranked by the priority of the last cycle.
  r.priority = static_cast<std::uint32_t>(std::min<std::uint64_t>(job.priority, UINT32_MAX));
  r.runnable = true;
  return r;
}

std::span<const JobRef> GpufairPolicy::refs(const std::vector<const SimJob*>& jobs) {
  batch_refs_.clear();
  for (const auto* j : jobs) batch_refs_.push_back(ref(*j));
  return batch_refs_;
}

void GpufairPolicy::observe_running_all(const std::vector<const SimJob*>& jobs, TimePoint now) {
  engine_.observe_running(refs(jobs), now + kEpoch);
}

void GpufairPolicy::observe_pending_all(const std::vector<const SimJob*>& jobs) {
  // Every job's team is known (add_account ran for its account), so the
  // batch call skips none: the same as observe_pending for each in turn.
  engine_.observe_pending(refs(jobs));
}

PriorityInput GpufairPolicy::input(const SimJob& job) const {
  PriorityInput in;
  in.job = job.id;
  in.team = account_team_[static_cast<size_t>(job.account)];
  in.gpus = job.gpus;
  in.eligible = job.eligible + kEpoch;
  in.qos_norm = static_cast<double>(job.rank) / kRankHigh;
  in.rank = job.rank;
  return in;
}

std::uint64_t GpufairPolicy::priority(const SimJob& job, TimePoint now) const {
  return engine_.priority(input(job), now + kEpoch).priority;
}

void GpufairPolicy::priorities(const std::vector<const SimJob*>& jobs, TimePoint now,
                               std::vector<std::uint64_t>& out) const {
  batch_in_.clear();
  for (const auto* j : jobs) batch_in_.push_back(input(*j));
  batch_out_.resize(jobs.size());
  engine_.priorities(batch_in_, now + kEpoch, batch_out_);
  out.assign(batch_out_.begin(), batch_out_.end());
}

PreemptVerdict GpufairPolicy::allow_preemption(const SimJob& preemptor, const SimJob& victim,
                                               TimePoint now) const {
  // The preempt plugin's predicate path: the same decision without building
  // a reason string (formatting it dominated the simulator's profile).
  const auto check = engine_.check_preemption(ref(preemptor), ref(victim), now + kEpoch, false);
  // The simulator only offers same-team victims, so a refusal here is the
  // bait rule blocking the jump, or banked_jump (not a bait verdict).
  return {check.allowed, !check.allowed && !check.banked && preemptor.team == victim.team, check.reason};
}

RecordedPreemption GpufairPolicy::record_preemption(const SimJob& preemptor, const SimJob& victim,
                                                    TimePoint now) {
  const auto d = engine_.record_preemption(ref(preemptor), ref(victim), now + kEpoch);
  return {d.bait, d.reclaim, d.charged_gpu_s, d.score, d.penalty_added, d.reason};
}

bool GpufairPolicy::may_reclaim(const SimJob& reclaimer, TimePoint now) const {
  return reclaims_ && engine_.may_reclaim(ref(reclaimer), now + kEpoch);
}

PreemptVerdict GpufairPolicy::allow_reclaim(const SimJob& reclaimer, const SimJob& victim, TimePoint now) const {
  const auto c = engine_.check_reclaim(ref(reclaimer), ref(victim), now + kEpoch);
  return {c.allowed, false, c.reason};
}

PolicyTeamState GpufairPolicy::team_state(std::int32_t team, TimePoint now) const {
  PolicyTeamState s;
  if (team >= static_cast<std::int32_t>(team_map_.size()) || team_map_[static_cast<size_t>(team)] < 0) return s;
  const auto r = engine_.team_report(team_map_[static_cast<size_t>(team)], now + kEpoch);
  s.penalty = r.penalty;
  s.bait_detections = r.bait_detections;
  s.fairshare = r.effective_fairshare;
  s.price_gpu_s = r.price_total_gpu_s;
  return s;
}

}  // namespace gpufair::sim
