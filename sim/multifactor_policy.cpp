#include <algorithm>
#include <cmath>

#include "policies.h"

namespace gpufair::sim {

void MultifactorPolicy::add_account(std::int32_t, const std::string&, std::int32_t team,
                                    double shares) {
  if (team >= static_cast<std::int32_t>(teams_.size())) teams_.resize(static_cast<size_t>(team) + 1);
  teams_[static_cast<size_t>(team)].shares = shares;
}

void MultifactorPolicy::charge(const SimJob& job, TimePoint until) {
  auto [it, added] = charged_until_.try_emplace(job.id, job.start);
  if (until > it->second) {
    teams_[static_cast<size_t>(job.team)].usage += job.gpus * static_cast<double>(until - it->second);
    it->second = until;
  }
}

void MultifactorPolicy::begin_cycle(TimePoint now) {
  // Slurm's decay thread: usage *= 2^(-elapsed/half_life), once per cycle.
  if (decayed_once_ && config_.decay_half_life > 0 && now > last_decay_) {
    const double f = std::exp2(-static_cast<double>(now - last_decay_) /
                               static_cast<double>(config_.decay_half_life));
    for (auto& t : teams_) t.usage *= f;
  }
  last_decay_ = now;
  decayed_once_ = true;
}

void MultifactorPolicy::observe_running(const SimJob& job, TimePoint now) { charge(job, now); }

void MultifactorPolicy::job_ended(const SimJob& job, TimePoint end) {
  charge(job, end);
  charged_until_.erase(job.id);
}

void MultifactorPolicy::end_cycle(TimePoint) {
  double utot = 0, stot = 0;
  for (const auto& t : teams_) {
    utot += t.usage;
    stot += t.shares;
  }
  for (auto& t : teams_) {
    if (t.shares <= 0 || stot <= 0) t.fairshare = 0;
    else if (utot <= 0) t.fairshare = 1;
    else t.fairshare = std::exp2(-(t.usage / utot) / (t.shares / stot));
  }
}

std::uint64_t MultifactorPolicy::priority(const SimJob& job, TimePoint now) const {
  const auto& w = config_.weights;
  const double age = config_.max_age > 0
                         ? std::clamp(static_cast<double>(now - job.eligible) /
                                          static_cast<double>(config_.max_age), 0.0, 1.0)
                         : 0.0;
  double size = std::min(1.0, job.gpus / cluster_gpus_);
  if (config_.favor_small) size = 1.0 - size;
  const double fs = teams_[static_cast<size_t>(job.team)].fairshare;
  const double prio = w.age * age + w.fairshare * fs + w.job_size * size + w.qos * job.rank / kRankHigh;
  // Slurm truncates the weighted sum to a uint32 and keeps 0 for held jobs.
  return std::clamp<std::uint64_t>(static_cast<std::uint64_t>(prio), 1, 0xFFFFFFFEull);
}

PreemptVerdict MultifactorPolicy::allow_preemption(const SimJob& preemptor, const SimJob& victim,
                                                   TimePoint) const {
  if (preemptor.team != victim.team && !preempts_across_teams()) return {false, false, "different teams"};
  return {true, false, "higher QOS"};
}

RecordedPreemption MultifactorPolicy::record_preemption(const SimJob&, const SimJob&, TimePoint) {
  return {};
}

PolicyTeamState MultifactorPolicy::team_state(std::int32_t team, TimePoint) const {
  PolicyTeamState s;
  if (team < static_cast<std::int32_t>(teams_.size())) s.fairshare = teams_[static_cast<size_t>(team)].fairshare;
  return s;
}

}  // namespace gpufair::sim
