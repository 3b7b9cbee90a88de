#include "simulator.h"

#include <algorithm>
#include <array>
#include <map>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <queue>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "gpu_pool.h"
#include "pending_queue.h"
#include "sched_policy.h"
#include "sim_job.h"

namespace gpufair::sim {
namespace {

constexpr TimePoint kNever = std::numeric_limits<TimePoint>::max();
constexpr size_t kSeriesBuckets = 96;
// Slurm's KillWait + MessageTimeout defaults (30 s + 10 s): how long a job
// that preempted waits before it may preempt again (try_preemption).
constexpr Seconds kPreemptRetry = 40;
constexpr int kMaxRank = kRankHigh;

// Victim order inside a team and rank: youngest first (the least work lost).
struct RunKey {
  TimePoint start;
  JobId id;
  std::uint32_t slot;
  bool operator<(const RunKey& o) const {
    if (start != o.start) return start > o.start;
    return id < o.id;
  }
};

struct EndEvent {
  TimePoint time;
  std::uint64_t seq;
  std::uint32_t slot, generation;
  bool operator>(const EndEvent& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

struct TeamRun {
  TeamResult result;
  std::array<std::set<RunKey>, kMaxRank + 1> running;  // by rank, victims first
  std::array<std::int64_t, kMaxRank + 1> running_gpus{};
  std::uint64_t changes = 0;  // bumped when the team's running set changes
  std::uint64_t bait_labels = 0;
  std::int64_t running_jobs = 0, pending_jobs = 0;  // pending: runnable now (held requeues excluded)
  // Real work (not labelled bait) pending: GPUs -> jobs needing that many (> 0).
  std::map<std::int32_t, std::int32_t> pending_gpu_sizes;
  std::int64_t held_gpus() const {
    std::int64_t g = 0;
    for (auto x : running_gpus) g += x;
    return g;
  }
};

class Simulator {
 public:
  Simulator(Workload& workload, const std::string& policy, const Config& config,
            const SimOptions& options)
      : workload_(workload),
        config_(config),
        options_(options),
        policy_(make_policy(policy, config)),
        pool_(options.gpus, options.gpus_per_node) {
    if (options_.backfill_interval <= 0) throw std::invalid_argument("backfill interval must be > 0");
    if (options_.backfill_window <= 0) throw std::invalid_argument("backfill window must be > 0");
    policy_->set_cluster_gpus(options_.gpus);
    series_width_ = options_.horizon > 0
                        ? std::max<Seconds>(1, (options_.horizon + kSeriesBuckets - 1) / kSeriesBuckets)
                        : 3600;
    result_.policy = policy_->name();
    judges_bait_ = result_.policy == "gpufair";
    result_.cluster_gpus = options_.gpus;
    result_.measure_from = options_.measure_from;
  }

  RunResult run();

 private:
  // Input.
  bool fetch_next_spec();
  std::int32_t team_for_account(std::int32_t account);
  void submit(const JobSpec& spec, TimePoint now);

  // Job life.
  void enqueue(std::uint32_t slot);
  void dequeue(std::uint32_t slot);
  void start(std::uint32_t slot, TimePoint now, const std::vector<NodeShare>* placed);
  void stop(std::uint32_t slot, TimePoint now, bool completed);
  void free_slot(std::uint32_t slot);

  // Scheduling.
  void cycle(TimePoint now);
  void schedule(TimePoint now);
  void main_pass(TimePoint now);
  void head_preempts(TimePoint now);
  // What a backfill preemptor that runs past the head's reservation may take
  // from it: at most `spare` of the GPUs the reservation counts on at
  // `shadow` (free now, or freed by then by jobs that end). spare -1: no limit.
  struct HeadReserve {
    std::int64_t spare = -1;
    TimePoint shadow = kNever;
  };
  // A blocked job tries to start by preemption: in-team victims of a lower
  // rank, then other teams' jobs the policy lets it reclaim.
  bool try_preemption(std::uint32_t slot, TimePoint now, HeadReserve reserve);
  bool try_preempt(std::uint32_t slot, TimePoint now);
  bool try_reclaim(std::uint32_t slot, TimePoint now);
  struct VictimSet;
  VictimSet victim_set_for(const SimJob& j);
  bool add_victim(VictimSet& vs, const SimJob& j, std::uint32_t vslot);  // true: enough
  std::int64_t reserved_gpus_taken(const SimJob& j, const VictimSet& vs) const;
  bool within_reserve(const SimJob& j, const VictimSet& vs);
  void displace(std::uint32_t slot, TimePoint now, VictimSet& vs);
  // One backfill pass; true when it ended at a preemption whose freed GPUs
  // go back to the queue (Handoff::kPriority): the caller runs the main
  // pass and a new pass from the top, as Slurm's next passes would.
  bool backfill(TimePoint now);
  // true: it preempted and left the freed GPUs to the queue (the pass ends).
  bool backfill_preempts(std::uint32_t slot, TimePoint now, HeadReserve reserve, std::int64_t& extra);
  void release_held(TimePoint now);

  // Metrics.
  void account_usage(const SimJob& job, TimePoint from, TimePoint to);
  void account_lost_work(const SimJob& job, TimePoint from, TimePoint to);
  void widen_series_to(TimePoint t);
  void tally_detector(const SimJob& job);
  void measure_over_entitlement(TimePoint from, TimePoint to);
  void finish(TimePoint end);

  SimJob& job(std::uint32_t slot) { return jobs_[slot]; }
  TeamRun& team(std::int32_t t) { return teams_[static_cast<size_t>(t)]; }

  Workload& workload_;
  Config config_;
  SimOptions options_;
  std::unique_ptr<SchedPolicy> policy_;
  GpuPool pool_;
  RunResult result_;

  std::vector<SimJob> jobs_;  // slots; active jobs only, reused via free list
  std::vector<std::uint32_t> free_slots_;
  PendingQueue pending_;
  std::int64_t pending_gpuless_ = 0;  // pending jobs that need no GPU (they always fit)
  std::set<std::pair<TimePoint, std::uint32_t>> running_by_end_;
  std::priority_queue<EndEvent, std::vector<EndEvent>, std::greater<>> ends_;
  // Requeued victims not yet eligible again: (eligible time, slot).
  std::priority_queue<std::pair<TimePoint, std::uint32_t>, std::vector<std::pair<TimePoint, std::uint32_t>>,
                      std::greater<>>
      held_;
  std::uint64_t changes_ = 0;  // bumped by every start and stop
  // The head's last failed preemption try: not repeated until a job starts
  // or stops, a cycle passes (new verdicts) or the head changes.
  struct HeadTry {
    JobId id = 0;
    std::uint64_t changes = 0, cycles = 0;
  } head_try_;
  HeadReserve reserve_;                   // the limit of the preemption being tried
  std::int64_t last_reserved_taken_ = 0;  // of the head's GPUs, what the last preemption took
  std::int64_t pending_ranked_ = 0;  // pending jobs above the lowest rank (they may preempt in-team)
  bool any_lower_rank_running() const { return pending_ranked_ > 0; }
  struct FailedTry {
    std::int32_t team, rank, gpus;
    bool capped;  // tried with a limit on the GPUs the head's reservation counts on
  };
  std::vector<FailedTry> failed_tries_;  // backfill: this pass's failed preemption tries
  bool in_backfill_ = false;  // the preemption being tried is a backfill pass's
  bool handed_off_ = false;   // the last preemption left its preemptor pending
  std::uint64_t seq_ = 0;
  JobId next_id_ = 1;

  std::vector<TeamRun> teams_;
  std::map<std::string, std::int32_t> team_index_;
  std::vector<std::int32_t> account_team_;

  JobSpec spec_;
  bool have_spec_ = false;
  TimePoint last_submit_ = 0;
  bool changed_ = true;  // anything started/stopped/arrived since the last backfill
  TimePoint next_backfill_ = 0;
  std::uint64_t cycles_ = 0;
  Seconds series_width_;
  DetectorScore detector_;
  bool detector_labelled_ = false;
  bool judges_bait_ = false;  // the policy has a bait detector to score
  std::vector<NodeShare> scratch_placement_;
  // The current victim set's tallies (victim_set_for): GPUs freed per node
  // and which entries are non-zero.
  std::vector<std::int32_t> freed_on_node_;
  std::vector<std::int32_t> freed_touched_;
  std::vector<std::int32_t> candidate_teams_;  // try_preempt: whose jobs it may preempt
  std::vector<const SimJob*> batch_jobs_;  // scratch for the per-cycle priority pass
  std::vector<PendKey> batch_keys_, sort_scratch_;
  std::vector<std::uint64_t> batch_prio_;
};

bool Simulator::fetch_next_spec() {
  // The honest counterfactual: the same workload without the jobs labelled
  // bait (a scenario's placeholders, a trace's bait rows).
  do {
    have_spec_ = workload_.source->next(spec_);
  } while (have_spec_ && options_.drop_bait && spec_.label == Label::kBait);
  if (have_spec_ && options_.null_bait && spec_.label == Label::kBait) {
    spec_.gpus = std::min(spec_.gpus, 1);
    spec_.runtime = 1;
  }
  if (have_spec_ && spec_.submit < last_submit_)
    throw SourceError{"jobs are not in submit order (" + std::to_string(spec_.submit) + " after " +
                      std::to_string(last_submit_) + ")"};
  if (have_spec_) last_submit_ = spec_.submit;
  return have_spec_;
}

std::int32_t Simulator::team_for_account(std::int32_t account) {
  if (account < static_cast<std::int32_t>(account_team_.size()) && account_team_[static_cast<size_t>(account)] >= 0)
    return account_team_[static_cast<size_t>(account)];
  const auto& path = workload_.accounts.name(account);
  const auto name = team_of_account(path, config_.team_level);
  auto [it, added] = team_index_.try_emplace(name, static_cast<std::int32_t>(teams_.size()));
  if (added) {
    teams_.emplace_back();
    auto& r = teams_.back().result;
    r.name = name;
    const auto s = workload_.shares.find(name);
    r.shares = s != workload_.shares.end() ? s->second : config_.default_shares;
  }
  const auto t = it->second;
  if (account >= static_cast<std::int32_t>(account_team_.size())) account_team_.resize(static_cast<size_t>(account) + 1, -1);
  account_team_[static_cast<size_t>(account)] = t;
  policy_->add_account(account, path, t, team(t).result.shares);
  return t;
}

void Simulator::submit(const JobSpec& spec, TimePoint now) {
  const auto t = team_for_account(spec.account);
  auto& tr = team(t);
  ++result_.jobs;
  const auto held = pool_.held_gpus(spec.gpus);
  if (held > pool_.total()) {  // could never run here: Slurm rejects it at submit
    ++result_.rejected_jobs;
    return;
  }
  ++tr.result.jobs;
  if (spec.label == Label::kBait) ++tr.bait_labels;
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(jobs_.size());
    jobs_.emplace_back();
  }
  auto& j = job(slot);
  j = SimJob{};
  if (next_id_ > 0xFFFFFFFFull) throw std::runtime_error("simulator: more than 2^32 - 1 jobs in one run");
  j.id = next_id_++;
  j.account = spec.account;
  j.user = spec.user;
  j.team = t;
  j.gpus = held;
  j.runtime = spec.runtime;
  j.rank = std::clamp(spec.rank, 0, kMaxRank);
  j.label = spec.label;
  j.submit = j.eligible = now;
  j.priority = policy_->priority(j, now);  // priority_p_set at submit
  enqueue(slot);
  changed_ = true;
}

void Simulator::enqueue(std::uint32_t slot) {
  auto& j = job(slot);
  j.state = JobState::kPending;
  const PendKey k = pending_.insert({PendKey::order_of(j.priority, j.id), slot, 0});
  j.queue_epoch = k.epoch;
  if (j.gpus == 0) ++pending_gpuless_;
  if (j.rank > kRankLow) ++pending_ranked_;
  auto& tr = team(j.team);
  ++tr.pending_jobs;
  if (j.gpus > 0 && j.label != Label::kBait) ++tr.pending_gpu_sizes[j.gpus];
}

void Simulator::dequeue(std::uint32_t slot) {
  auto& j = job(slot);
  const PendKey k{PendKey::order_of(j.priority, j.id), slot, j.queue_epoch};
  pending_.erase(k);
  if (j.gpus == 0) --pending_gpuless_;
  if (j.rank > kRankLow) --pending_ranked_;
  auto& tr = team(j.team);
  --tr.pending_jobs;
  if (j.gpus > 0 && j.label != Label::kBait) {
    const auto it = tr.pending_gpu_sizes.find(j.gpus);
    if (--it->second == 0) tr.pending_gpu_sizes.erase(it);
  }
}

void Simulator::start(std::uint32_t slot, TimePoint now, const std::vector<NodeShare>* placed) {
  auto& j = job(slot);
  dequeue(slot);
  if (placed) {
    j.placement = *placed;
  } else if (!pool_.place(j.gpus, j.placement)) {
    throw std::logic_error("simulator: started a job that does not fit");
  }
  j.state = JobState::kRunning;
  j.start = now;
  auto& tr = team(j.team);
  if (j.first_start < 0) {
    j.first_start = now;
    const Seconds wait = now - j.submit;
    tr.result.waits.push_back(wait);
    if (j.rank > kRankLow) tr.result.high_waits.push_back(wait);
    if (j.label != Label::kBait) tr.result.real_waits.push_back(wait);
    ++tr.result.started;
  }
  tr.running[static_cast<size_t>(j.rank)].insert({j.start, j.id, slot});
  tr.running_gpus[static_cast<size_t>(j.rank)] += j.gpus;
  ++tr.running_jobs;
  ++tr.changes;
  ++changes_;
  running_by_end_.insert({now + j.runtime, slot});
  ends_.push({now + j.runtime, seq_++, slot, j.generation});
  changed_ = true;
}

void Simulator::stop(std::uint32_t slot, TimePoint now, bool completed) {
  auto& j = job(slot);
  policy_->job_ended(j, now);
  pool_.release(j.gpus, j.placement);
  auto& tr = team(j.team);
  tr.running[static_cast<size_t>(j.rank)].erase({j.start, j.id, slot});
  tr.running_gpus[static_cast<size_t>(j.rank)] -= j.gpus;
  --tr.running_jobs;
  ++tr.changes;
  ++changes_;
  running_by_end_.erase({j.start + j.runtime, slot});
  account_usage(j, j.start, now);
  if (!completed) account_lost_work(j, j.start, now);
  changed_ = true;
  ++j.generation;  // a pending end event of this run is now stale
  if (completed) {
    ++tr.result.completed;
    free_slot(slot);
  } else if (options_.preempt_mode == PreemptMode::kRequeue) {
    // Slurm's PreemptMode=REQUEUE: back to the queue with the same submit
    // time (so FIFO keeps its place) and the work lost, but not at once:
    // Slurm gives a requeued batch job a begin time of now plus the launch
    // credential's expiry window plus one (1201 s by default,
    // batch_requeue_fini in job_mgr.c), and its age counts from there.
    j.start = -1;
    j.placement.clear();
    j.eligible = now + options_.requeue_hold;
    if (options_.requeue_hold > 0) {
      held_.push({j.eligible, slot});
    } else {
      j.priority = policy_->priority(j, now);
      enqueue(slot);
    }
  } else {
    free_slot(slot);
  }
}

void Simulator::free_slot(std::uint32_t slot) {
  tally_detector(job(slot));
  free_slots_.push_back(slot);
}

void Simulator::tally_detector(const SimJob& j) {
  if (!j.involved || j.label == Label::kNone) return;
  detector_labelled_ = true;
  const bool bait = j.label == Label::kBait;
  if (bait && j.judged_bait) ++detector_.true_positive;
  else if (bait) ++detector_.false_negative;
  else if (j.judged_bait) ++detector_.false_positive;
  else ++detector_.true_negative;
}

void Simulator::widen_series_to(TimePoint t) {
  while (t > series_width_ * static_cast<Seconds>(kSeriesBuckets)) {
    series_width_ *= 2;
    for (auto& tr : teams_) {
      auto& s = tr.result.usage_series;
      std::vector<double> merged((s.size() + 1) / 2, 0.0);
      for (size_t i = 0; i < s.size(); ++i) merged[i / 2] += s[i];
      s = std::move(merged);
    }
  }
}

void Simulator::account_usage(const SimJob& j, TimePoint from, TimePoint to) {
  if (to <= from) return;
  auto& r = team(j.team).result;
  const TimePoint a = std::max(from, options_.measure_from);
  if (to > a) r.gpu_hours += j.gpus * static_cast<double>(to - a) / 3600.0;
  widen_series_to(to);
  auto& s = r.usage_series;
  for (TimePoint b = from / series_width_ * series_width_; b < to; b += series_width_) {
    const auto idx = static_cast<size_t>(b / series_width_);
    if (s.size() <= idx) s.resize(idx + 1, 0.0);
    s[idx] += j.gpus * static_cast<double>(std::min(to, b + series_width_) - std::max(from, b));
  }
}

void Simulator::account_lost_work(const SimJob& j, TimePoint from, TimePoint to) {
  const TimePoint a = std::max(from, options_.measure_from);
  if (to > a) team(j.team).result.lost_gpu_hours += j.gpus * static_cast<double>(to - a) / 3600.0;
}

// The state between two events is constant, so this integrates it exactly.
// Entitlement as the core computes it (cluster GPUs x shares over the
// shares of the active teams), except that a team running only GPU-less
// jobs counts as active here (the core counts held GPUs). A team
// "waits below" when its smallest pending GPU job of real work would keep it
// within its entitlement and the GPUs the other teams hold above theirs
// would cover that job: a reclaim could start it, GPU counts allowing
// (placement on nodes aside).
void Simulator::measure_over_entitlement(TimePoint from, TimePoint to) {
  from = std::max(from, options_.measure_from);
  if (to <= from) return;
  double active_shares = 0;
  for (const auto& tr : teams_)
    if (tr.running_jobs > 0 || tr.pending_jobs > 0) active_shares += tr.result.shares;
  if (active_shares <= 0) return;
  const double per_share = static_cast<double>(options_.gpus) / active_shares;
  double surplus = 0;  // GPUs held above entitlement, over all teams
  for (const auto& tr : teams_)
    surplus += std::max(0.0, static_cast<double>(tr.held_gpus()) - per_share * tr.result.shares);
  bool below_waits = false;
  for (const auto& tr : teams_) {
    if (tr.pending_gpu_sizes.empty()) continue;
    const auto smallest = static_cast<double>(tr.pending_gpu_sizes.begin()->first);
    if (static_cast<double>(tr.held_gpus()) + smallest <= per_share * tr.result.shares && smallest <= surplus) {
      below_waits = true;
      break;
    }
  }
  if (!below_waits) return;
  const auto dt = static_cast<double>(to - from);
  bool any = false;
  for (auto& tr : teams_) {
    const double over = static_cast<double>(tr.held_gpus()) - kOverEntitlement * per_share * tr.result.shares;
    if (over <= 0) continue;
    tr.result.over_entitlement_gpu_s += over * dt;
    tr.result.over_entitlement_s += dt;
    any = true;
  }
  if (any) result_.over_entitlement_s += dt;
}

// Requeued victims whose begin time has come are pending again.
void Simulator::release_held(TimePoint now) {
  while (!held_.empty() && held_.top().first <= now) {
    const auto slot = held_.top().second;
    held_.pop();
    auto& j = job(slot);
    j.priority = policy_->priority(j, now);
    enqueue(slot);
    changed_ = true;
  }
}

void Simulator::cycle(TimePoint now) {
  ++cycles_;
  if (!policy_->priorities_change()) return;  // fifo: nothing to observe or re-sort
  policy_->begin_cycle(now);
  batch_jobs_.clear();
  for (const auto& [end, slot] : running_by_end_) batch_jobs_.push_back(&job(slot));
  policy_->observe_running_all(batch_jobs_, now);
  // One walk of the queue in its current order: observe every pending job,
  // then give each its fresh priority and rebuild the order with one sort.
  pending_.collect(batch_keys_);
  batch_jobs_.clear();
  for (const auto& k : batch_keys_) batch_jobs_.push_back(&job(k.slot));
  policy_->observe_pending_all(batch_jobs_);
  policy_->end_cycle(now);
  policy_->priorities(batch_jobs_, now, batch_prio_);
  for (size_t i = 0; i < batch_keys_.size(); ++i) {
    auto& k = batch_keys_[i];
    auto& j = job(k.slot);
    j.priority = batch_prio_[i];
    k.order = PendKey::order_of(j.priority, j.id);
  }
  sort_keys(batch_keys_, sort_scratch_);
  pending_.rebuild(batch_keys_);
}

void Simulator::schedule(TimePoint now) {
  main_pass(now);
  head_preempts(now);
  if (options_.backfill && changed_ && now >= next_backfill_ && !pending_.empty()) {
    // Each restart follows a preemption by a job that may not preempt again
    // for kPreemptRetry, so the loop ends.
    while (backfill(now)) {
      main_pass(now);
      head_preempts(now);
      if (pending_.empty()) break;
    }
    next_backfill_ = now + options_.backfill_interval;
    changed_ = false;
  }
}

void Simulator::main_pass(TimePoint now) {
  while (!pending_.empty()) {
    const auto slot = pending_.front().slot;
    if (!pool_.fits(job(slot).gpus)) return;  // the head blocks the queue
    start(slot, now, nullptr);
  }
}

// The main scheduler's preemption: Slurm's schedule() (job_scheduler.c)
// lets the first job that cannot start try to preempt, then marks its
// partition failed, so no job behind it is tried in that pass; jobs further
// down get their chance in backfill. A failed try is not repeated until a
// job starts or stops, a cycle passes or another job heads the queue.
void Simulator::head_preempts(TimePoint now) {
  if (pending_.empty()) return;
  const auto slot = pending_.front().slot;
  const SimJob& h = job(slot);
  if (h.gpus <= 0 || pool_.fits(h.gpus)) return;
  if (head_try_.id == h.id && head_try_.changes == changes_ && head_try_.cycles == cycles_) return;
  if (try_preemption(slot, now, HeadReserve{})) {
    main_pass(now);
    return;
  }
  head_try_ = {h.id, changes_, cycles_};
}

bool Simulator::try_preemption(std::uint32_t slot, TimePoint now, HeadReserve reserve) {
  // Slurm does not preempt again for a job whose last preemption is
  // younger than KillWait + MessageTimeout (select_nodes' kill_pending,
  // node_scheduler.c): its victims may still be on their way out.
  const SimJob& p = job(slot);
  if (p.preempted_at >= 0 && now < p.preempted_at + kPreemptRetry) return false;
  const HeadReserve saved = reserve_;
  reserve_ = reserve;
  const bool started = (job(slot).rank > kRankLow && try_preempt(slot, now)) ||
                       (policy_->reclaims() && policy_->reclaim_possible() && try_reclaim(slot, now));
  reserve_ = saved;
  return started;
}

// The victims chosen so far for one preemptor, and whether they free room
// for it: anywhere on a flat pool, on one node for a job that fits a node,
// on enough whole nodes for a multi-node job.
struct Simulator::VictimSet {
  std::vector<std::uint32_t> chosen;
  std::int64_t freed = 0;
  std::vector<std::int32_t> target_nodes;
  bool enough = false;
  bool flat = true, multi_node = false;
  std::int32_t per_node = 0;
  size_t nodes_needed = 1, victim_nodes_needed = 1;
};

Simulator::VictimSet Simulator::victim_set_for(const SimJob& j) {
  // One victim set at a time: the per-node tallies live in a scratch
  // array, cleared here where the last set touched it.
  for (const auto n : freed_touched_) freed_on_node_[static_cast<size_t>(n)] = 0;
  freed_touched_.clear();
  if (freed_on_node_.size() < static_cast<size_t>(pool_.node_count()))
    freed_on_node_.resize(static_cast<size_t>(pool_.node_count()), 0);
  VictimSet vs;
  vs.flat = pool_.flat();
  vs.per_node = pool_.gpus_per_node();
  vs.multi_node = !vs.flat && j.gpus > vs.per_node;
  vs.nodes_needed = vs.multi_node ? static_cast<size_t>(j.gpus / vs.per_node) : 1;
  // Nodes that are empty already need no victim.
  vs.victim_nodes_needed =
      vs.multi_node ? vs.nodes_needed - std::min(vs.nodes_needed, static_cast<size_t>(pool_.empty_nodes())) : 1;
  return vs;
}

bool Simulator::add_victim(VictimSet& vs, const SimJob& j, std::uint32_t vslot) {
  const SimJob& v = job(vslot);
  vs.chosen.push_back(vslot);
  if (vs.flat) {
    vs.freed += v.gpus;
    const std::int64_t usable =
        reserve_.spare < 0 ? pool_.free() : std::min<std::int64_t>(pool_.free(), reserve_.spare);
    vs.enough = usable + vs.freed >= j.gpus;
    return vs.enough;
  }
  for (const auto& s : v.placement) {
    freed_touched_.push_back(s.node);
    const auto f = (freed_on_node_[static_cast<size_t>(s.node)] += s.gpus);
    const auto node_free = pool_.node_free(s.node) + f;
    if (!vs.multi_node && node_free >= j.gpus) {
      vs.target_nodes.assign(1, s.node);
      vs.enough = true;
    } else if (vs.multi_node && node_free == vs.per_node &&
               std::find(vs.target_nodes.begin(), vs.target_nodes.end(), s.node) == vs.target_nodes.end()) {
      vs.target_nodes.push_back(s.node);
      vs.enough = vs.target_nodes.size() >= vs.victim_nodes_needed;
    }
    if (vs.enough) break;
  }
  return vs.enough;
}

bool Simulator::try_preempt(std::uint32_t slot, TimePoint now) {
  auto& j = job(slot);
  auto& tr = team(j.team);
  // The policy refused victims at the last try and neither a cycle passed nor
  // the team's running jobs changed: the verdicts would be the same, and
  // asking again for every candidate on every event is what costs time.
  const std::uint64_t stamp = (cycles_ << 32) + tr.changes + 1;
  if (j.preempt_try == stamp) return false;
  j.preempt_try = 0;
  // A job that fits in the free GPUs is the scheduler's business, unless
  // backfill holds those GPUs for the head's reservation (a limit on what
  // it may take of them): then it may preempt for the rest.
  if (reserve_.spare < 0 && pool_.fits(j.gpus)) return false;
  // The teams whose jobs it may preempt: its own, or with preempt_scope=any
  // every team (its own first).
  const bool any_team = policy_->preempts_across_teams();
  candidate_teams_.assign(1, j.team);
  if (any_team)
    for (std::int32_t t = 0; t < static_cast<std::int32_t>(teams_.size()); ++t)
      if (t != j.team) candidate_teams_.push_back(t);
  std::int64_t lower = 0;
  for (const auto t : candidate_teams_)
    for (int r = 0; r < j.rank; ++r) lower += team(t).running_gpus[static_cast<size_t>(r)];
  if (lower + pool_.free() < j.gpus) return false;

  // Collect victims, lowest rank first, youngest first, until the job fits.
  VictimSet vs = victim_set_for(j);
  bool refused_any = false;
  for (int r = 0; r < j.rank && !vs.enough; ++r) {
    for (const auto t : candidate_teams_) {
      for (const auto& rk : team(t).running[static_cast<size_t>(r)]) {
        auto& v = job(rk.slot);
        const auto verdict = policy_->allow_preemption(j, v, now);
        if (judges_bait_) v.involved = true;
        if (!verdict.allowed) {
          if (verdict.judged_bait) v.judged_bait = true;
          if (!v.refused) ++tr.result.preemptions_refused;  // count each victim once
          v.refused = true;
          refused_any = true;
          continue;
        }
        if (add_victim(vs, j, rk.slot)) break;
      }
      if (vs.enough) break;
    }
  }
  if (!vs.enough) {
    // Only a new cycle or a change of the team's jobs helps (with other
    // teams' victims too, any change: no caching then).
    if (refused_any && !any_team) j.preempt_try = stamp;
    return false;
  }
  if (!within_reserve(j, vs)) return false;
  displace(slot, now, vs);
  return true;
}

bool Simulator::try_reclaim(std::uint32_t slot, TimePoint now) {
  const SimJob& j = job(slot);
  if (!policy_->may_reclaim(j, now)) return false;
  // Victims: other teams' jobs, lowest rank first, youngest first (the
  // engine's reclaim order), while the policy agrees. Within a rank the
  // first refusal ends the walk (the team would be at its entitlement
  // without the jobs before, or its older jobs are no scavengers); the next
  // rank is still asked, as a scavenger of any rank may be taken.
  VictimSet vs = victim_set_for(j);
  for (std::int32_t t = 0; t < static_cast<std::int32_t>(teams_.size()) && !vs.enough; ++t) {
    if (t == j.team) continue;
    const TeamRun& vt = team(t);
    for (int r = 0; r <= kMaxRank && !vs.enough; ++r) {
      for (const auto& rk : vt.running[static_cast<size_t>(r)]) {
        if (!policy_->allow_reclaim(j, job(rk.slot), now).allowed) break;
        if (add_victim(vs, j, rk.slot)) break;
      }
    }
  }
  if (!vs.enough) return false;
  if (!within_reserve(j, vs)) return false;
  displace(slot, now, vs);
  return true;
}

// Of the GPUs the head's reservation counts on at its shadow time, those a
// preemptor with these victims would hold then: what it holds, less what
// its victims would still have held then (the reservation did not count
// those). A victim that would have ended by then leaves GPUs the head was
// promised, whoever requeues it.
std::int64_t Simulator::reserved_gpus_taken(const SimJob& j, const VictimSet& vs) const {
  std::int64_t still_held = 0;
  for (const auto vslot : vs.chosen) {
    const SimJob& v = jobs_[vslot];
    if (v.start + v.runtime <= reserve_.shadow) continue;
    if (vs.flat) {
      still_held += v.gpus;
      continue;
    }
    for (const auto& p : v.placement)
      if (std::find(vs.target_nodes.begin(), vs.target_nodes.end(), p.node) != vs.target_nodes.end())
        still_held += p.gpus;
  }
  const std::int64_t held = vs.multi_node ? static_cast<std::int64_t>(vs.nodes_needed) * vs.per_node : j.gpus;
  return std::max<std::int64_t>(0, held - still_held);
}

bool Simulator::within_reserve(const SimJob& j, const VictimSet& vs) {
  last_reserved_taken_ = 0;
  if (reserve_.spare < 0) return true;
  last_reserved_taken_ = reserved_gpus_taken(j, vs);
  return last_reserved_taken_ <= reserve_.spare;
}

void Simulator::displace(std::uint32_t slot, TimePoint now, VictimSet& vs) {
  auto& j = job(slot);
  auto& tr = team(j.team);
  if (!vs.flat) {
    // Only victims on the chosen nodes need to go.
    std::sort(vs.target_nodes.begin(), vs.target_nodes.end());
    std::erase_if(vs.chosen, [&](std::uint32_t s) {
      for (const auto& p : job(s).placement)
        if (std::binary_search(vs.target_nodes.begin(), vs.target_nodes.end(), p.node)) return false;
      return true;
    });
    // Multi-node: nodes that were already empty count too.
    if (vs.multi_node) {
      for (std::int32_t n = 0; n < pool_.node_count() && vs.target_nodes.size() < vs.nodes_needed; ++n)
        if (pool_.node_free(n) == vs.per_node &&
            !std::binary_search(vs.target_nodes.begin(), vs.target_nodes.end(), n))
          vs.target_nodes.push_back(n);
      std::sort(vs.target_nodes.begin(), vs.target_nodes.end());
    }
  }
  for (const auto vslot : vs.chosen) {
    auto& v = job(vslot);
    auto& vt = team(v.team);
    const auto rec = policy_->record_preemption(j, v, now);
    if (rec.bait) {
      v.judged_bait = true;
      ++tr.result.bait_detections;
    }
    if (rec.reclaim) {
      ++tr.result.reclaims_made;
      ++vt.result.reclaimed_from;
    }
    tr.result.price_gpu_s += rec.price_gpu_s;
    if (rec.price_gpu_s > 0) ++tr.result.priced_jumps;
    ++tr.result.preemptions_caused;
    ++vt.result.preemptions_suffered;
    ++result_.preemptions;
    if (options_.decisions)
      std::fprintf(options_.decisions, "t=%lld team=%s preemptor=%llu victim=%llu victim_team=%s victim_ran=%llds label=%s bait=%d score=%.3f %s\n",
                   static_cast<long long>(now), tr.result.name.c_str(),
                   static_cast<unsigned long long>(j.id), static_cast<unsigned long long>(v.id),
                   vt.result.name.c_str(), static_cast<long long>(now - v.start),
                   v.label == Label::kBait ? "bait" : v.label == Label::kHonest ? "honest" : "-",
                   rec.bait ? 1 : 0, rec.score, rec.reason.c_str());
    if (rec.reclaim) {
      const TimePoint a = std::max(v.start, options_.measure_from);
      if (now > a) vt.result.reclaim_lost_gpu_hours += v.gpus * static_cast<double>(now - a) / 3600.0;
    }
    stop(vslot, now, false);
  }
  // A backfill preemptor waits for the next passes like any pending job:
  // the freed GPUs go to whoever comes first in priority order and fits.
  // The head's are its own (it is first), so it starts on them now.
  handed_off_ = in_backfill_ && options_.handoff == Handoff::kPriority;
  if (handed_off_) {
    if (policy_->preemptor_claims()) {
      // It claimed what it freed (preemptor_claim): its new priority, at
      // once, as the preempt plugin sets it in Slurm.
      dequeue(slot);
      j.priority = policy_->priority(j, now);
      enqueue(slot);
    }
    j.preempted_at = now;
    ++result_.preemptors_left_pending;
    return;
  }
  if (vs.flat) {
    start(slot, now, nullptr);
  } else {
    if (!pool_.place_on(j.gpus, vs.target_nodes, scratch_placement_))
      throw std::logic_error("simulator: preemption freed the wrong nodes");
    start(slot, now, &scratch_placement_);
  }
}

bool Simulator::backfill(TimePoint now) {
  // EASY: the blocked head gets a reservation at the earliest time enough
  // GPUs come free (the shadow time); a later job may start now if it ends
  // before then or fits in the GPUs the head will not need. As in Slurm, no
  // reservation is made for a start beyond the backfill window: then any
  // job that fits may start. So the walk over running jobs stops there.
  // Nothing fits and nothing may preempt: the pass could start nothing.
  if (pool_.nothing_fits() && pending_gpuless_ == 0 && !(policy_->reclaims() && policy_->reclaim_possible()) &&
      !any_lower_rank_running())
    return false;
  auto walk = pending_.walk();
  const auto head = *walk.next();
  const auto head_gpus = job(head.slot).gpus;
  std::int64_t free_then = pool_.free();
  TimePoint shadow = kNever;
  std::int64_t extra = 0;
  const TimePoint window_end = now + options_.backfill_window;
  for (const auto& [end, slot] : running_by_end_) {
    if (end > window_end) break;
    free_then += job(slot).gpus;
    if (free_then >= head_gpus) {
      shadow = end;
      extra = free_then - head_gpus;
      break;
    }
  }
  // Slurm's backfill also plans preemption (its will-run test with the
  // preemptable jobs removed says "now", backfill.c starts the job and
  // select_nodes preempts), so a job on the way that does not fit may
  // preempt as the head may; the GPUs free now it takes count against the
  // head's reservation like a backfilled start's. Which blocked jobs failed
  // in this pass is remembered per (team, rank): one that needs at least as
  // many GPUs fails too until something starts.
  const bool reclaim = policy_->reclaims() && policy_->reclaim_possible();
  failed_tries_.clear();
  std::int32_t depth = 0;
  for (; depth < options_.backfill_depth; ++depth) {
    const bool can_preempt = reclaim || any_lower_rank_running();
    if (!can_preempt && pool_.nothing_fits() && pending_gpuless_ == 0) break;  // nothing more can start
    const PendKey* k = walk.next();
    if (!k) break;
    const auto slot = k->slot;
    auto& j = job(slot);
    const bool before_shadow = now + j.runtime <= shadow;
    const bool may_preempt = j.gpus > 0 && (reclaim || j.rank > kRankLow);
    const HeadReserve within_spare{std::max<std::int64_t>(0, extra), shadow};
    if (!pool_.fits(j.gpus)) {
      if (may_preempt && backfill_preempts(slot, now, before_shadow ? HeadReserve{} : within_spare, extra))
        return true;
      continue;
    }
    if (before_shadow) {
      start(slot, now, nullptr);
    } else if (j.gpus <= extra) {
      extra -= j.gpus;
      start(slot, now, nullptr);
    } else if (may_preempt) {
      // It fits, but in GPUs held for the head. Slurm's will-run test runs
      // on the nodes the reservation leaves, with preemptable jobs counted
      // as free, so it may start now by preempting, taking of the GPUs the
      // reservation counts on at most what the head can spare.
      if (backfill_preempts(slot, now, within_spare, extra)) return true;
    }
  }
  return false;
}

// One backfill preemption try, unless one of the same team and rank that
// needed no more GPUs failed in this pass under no looser limit (`extra`
// only shrinks in a pass). What a limited start takes of the head's GPUs
// comes off its spare ones.
bool Simulator::backfill_preempts(std::uint32_t slot, TimePoint now, HeadReserve reserve, std::int64_t& extra) {
  const SimJob& j = job(slot);
  const bool capped = reserve.spare >= 0;
  for (const auto& f : failed_tries_)
    if (f.team == j.team && f.rank == j.rank && f.gpus <= j.gpus && (capped || !f.capped)) return false;
  in_backfill_ = true;
  handed_off_ = false;
  const bool preempted = try_preemption(slot, now, reserve);
  in_backfill_ = false;
  if (preempted) {
    extra -= last_reserved_taken_;
    failed_tries_.clear();
  } else {
    failed_tries_.push_back({j.team, j.rank, j.gpus, capped});
  }
  return preempted && handed_off_;
}

void Simulator::finish(TimePoint end) {
  result_.end = end;
  for (const auto& [e, slot] : running_by_end_) {
    const auto& j = jobs_[slot];
    account_usage(j, j.start, end);
  }
  std::vector<PendKey> queued;
  pending_.collect(queued);
  for (const auto& k : queued) {
    const auto& j = jobs_[k.slot];
    if (j.first_start >= 0) continue;
    auto& tr = team(j.team);
    tr.result.waits.push_back(end - j.submit);  // censored: still waiting at the end
    if (j.rank > kRankLow) tr.result.high_waits.push_back(end - j.submit);
    if (j.label != Label::kBait) tr.result.real_waits.push_back(end - j.submit);
    ++tr.result.never_started;
  }
  for (const auto& k : queued) tally_detector(jobs_[k.slot]);
  for (const auto& [e, slot] : running_by_end_) tally_detector(jobs_[slot]);

  double total_hours = 0, total_shares = 0;
  for (auto& tr : teams_) {
    std::sort(tr.result.waits.begin(), tr.result.waits.end());
    std::sort(tr.result.high_waits.begin(), tr.result.high_waits.end());
    std::sort(tr.result.real_waits.begin(), tr.result.real_waits.end());
    total_hours += tr.result.gpu_hours;
    if (tr.result.jobs > 0) total_shares += tr.result.shares;
    const auto st = policy_->team_state(static_cast<std::int32_t>(&tr - teams_.data()), end);
    tr.result.penalty = st.penalty;
    tr.result.fairshare = st.fairshare;
    if (st.price_gpu_s >= 0) tr.result.price_gpu_s = st.price_gpu_s;
    tr.result.usage_series.resize((static_cast<size_t>(end) + series_width_ - 1) / static_cast<size_t>(series_width_), 0.0);
  }
  // Jain's index over share-normalised GPU-hours: x_i = (hours share) / (configured share).
  double sx = 0, sxx = 0;
  size_t n = 0;
  for (auto& tr : teams_) {
    auto& r = tr.result;
    r.share = total_shares > 0 && r.jobs > 0 ? r.shares / total_shares : 0;
    r.gpu_hour_share = total_hours > 0 ? r.gpu_hours / total_hours : 0;
    if (r.jobs == 0 || r.share <= 0) continue;
    const double x = r.gpu_hour_share / r.share;
    sx += x;
    sxx += x * x;
    ++n;
  }
  result_.jain_index = sxx > 0 ? sx * sx / (static_cast<double>(n) * sxx) : 0;
  const double span = static_cast<double>(end - options_.measure_from);
  result_.utilization = span > 0 ? total_hours * 3600.0 / (span * options_.gpus) : 0;
  result_.sim_seconds = static_cast<double>(end);
  result_.cycles = cycles_;
  result_.series_bucket = series_width_;
  result_.skipped_rows = workload_.source->skipped_rows();

  // The gaming team: named by the input, else the team with the most
  // bait-labelled jobs.
  std::string gaming = !options_.gaming_team.empty() ? options_.gaming_team : workload_.gaming_team;
  if (gaming.empty()) {
    std::uint64_t best = 0;
    for (const auto& tr : teams_)
      if (tr.bait_labels > best) {
        best = tr.bait_labels;
        gaming = tr.result.name;
      }
  }
  result_.gaming_team = gaming;
  if (!gaming.empty() && team_index_.count(gaming)) {
    const auto& g = team(team_index_[gaming]).result;
    std::vector<Seconds> others;
    for (const auto& tr : teams_)
      if (tr.result.name != gaming) others.insert(others.end(), tr.result.waits.begin(), tr.result.waits.end());
    std::sort(others.begin(), others.end());
    if (!g.high_waits.empty() && !others.empty()) {
      result_.gaming_high_wait_p50 = percentile(g.high_waits, 50);
      result_.others_wait_p50 = percentile(others, 50);
      result_.gaming_advantage = std::max(1.0, result_.gaming_high_wait_p50) / std::max(1.0, result_.others_wait_p50);
    }
  }
  if (detector_labelled_ && judges_bait_) result_.detector = detector_;

  for (auto& tr : teams_) result_.teams.push_back(std::move(tr.result));
  std::sort(result_.teams.begin(), result_.teams.end(),
            [](const TeamResult& a, const TeamResult& b) { return a.name < b.name; });
}

RunResult Simulator::run() {
  const auto wall0 = std::chrono::steady_clock::now();
  const std::clock_t cpu0 = std::clock();
  workload_.source->rewind();
  fetch_next_spec();
  const Seconds period = std::max<Seconds>(1, config_.calc_period);
  TimePoint next_cycle = 0;
  TimePoint now = 0;
  std::uint64_t events = 0;
  for (;;) {
    const bool busy = !pending_.empty() || !running_by_end_.empty() || !held_.empty();
    if (!have_spec_ && !busy && options_.horizon == 0) break;
    // Idle: skip cycles until the next arrival (decay is exact for any step).
    if (!busy && have_spec_ && next_cycle < spec_.submit)
      next_cycle = std::max(next_cycle, spec_.submit / period * period);
    TimePoint t = next_cycle;
    if (have_spec_) t = std::min(t, spec_.submit);
    if (!ends_.empty()) t = std::min(t, ends_.top().time);
    if (!held_.empty()) t = std::min(t, held_.top().first);
    if (options_.backfill && changed_ && !pending_.empty()) t = std::min(t, std::max(next_backfill_, now));
    if (!busy && !have_spec_) t = options_.horizon;  // nothing left: jump to the end
    if (options_.horizon > 0 && t >= options_.horizon) {
      measure_over_entitlement(now, options_.horizon);
      now = options_.horizon;
      break;
    }
    measure_over_entitlement(now, t);
    now = t;
    // 1. Jobs that end now.
    while (!ends_.empty() && ends_.top().time == now) {
      const auto ev = ends_.top();
      ends_.pop();
      const auto& j = job(ev.slot);
      if (j.generation != ev.generation || j.state != JobState::kRunning) continue;  // stale
      ++events;
      stop(ev.slot, now, true);
    }
    // 2. Requeued jobs eligible again, and arrivals.
    release_held(now);
    while (have_spec_ && spec_.submit == now) {
      ++events;
      submit(spec_, now);
      fetch_next_spec();
    }
    // 3. The policy's cycle.
    if (now == next_cycle) {
      ++events;
      cycle(now);
      next_cycle += period;
    }
    // 4. Scheduling.
    schedule(now);
  }
  result_.events = events;
  finish(now);
  result_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  result_.cpu_seconds = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
  return std::move(result_);
}

}  // namespace

RunResult simulate(Workload& workload, const std::string& policy, const Config& config,
                   const SimOptions& options) {
  Simulator sim(workload, policy, config, options);
  return sim.run();
}

}  // namespace gpufair::sim
