// Engine: owns the per-team state and drives the pure rules (decay.h,
// fair_share.h, bait_detector.h, penalty.h, priority.h) under one lock.
#include "gpufair/engine.h"

#include <algorithm>
#include <atomic>
#include <array>
#include <climits>
#include <cmath>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <stdexcept>
#include <unordered_map>

#include "gpufair/bait_detector.h"
#include "gpufair/decay.h"
#include "gpufair/fair_share.h"
#include "gpufair/fair_tree.h"
#include "gpufair/queue_view.h"
#include "gpufair/penalty.h"
#include "gpufair/priority.h"
#include "gpufair/reset_period.h"
#include "gpufair/state.h"
#include "gpufair/teams.h"
#include "rw_lock.h"
#include "usage_ledger.h"

namespace gpufair {
namespace {

// Enough history for gpufair-show; bounded so memory is O(teams).
constexpr std::size_t kRecentDecisions = 16;

struct RunningJob {
  TeamId team = -1;
  AssocId assoc = -1;  // charged with its ancestors inside the team too
  double gpus = 0;
  double usage_factor = 1;  // QOS UsageFactor: scales the ledger's charge only
  TimePoint charged_until = 0;
  // Its place in its team's reclaim_order: the start the host reports
  // (first sight if none; 0 after a restart until the next cycle) and its
  // in-team rank.
  TimePoint start = 0;
  int rank = 0;
  std::uint64_t last_seen_cycle = 0;
  bool low_rank_start = false;  // its GPU-seconds count in the team's low_rank_gpu_s
  // Entered by a reclaim while still pending (move_reclaimed_gpus): it holds
  // its GPUs for the entitlement checks, but is charged nothing until a
  // cycle sees it running, from the start the host reports then.
  bool provisional = false;
  // ...and its own part of that memory, decayed alike: when it is displaced
  // this much moves to low_rank_preempted_gpu_s, so supply <= 1 by construction.
  DecayedValue low_rank_gpu_s;
};

// A running job's place in the order a reclaim takes a team's jobs in: the
// lowest rank first, the youngest first within a rank (as the simulator
// walks, but for ties in start; Slurm's candidates come by rank too, then in
// an order of its own, which the bound does not depend on:
// reclaim_refusal). `gpus` rides along and is not part of the order.
struct ReclaimOrder {
  int rank;
  TimePoint start;
  JobId id;
  double gpus = 0;
  bool operator<(const ReclaimOrder& o) const {
    if (rank != o.rank) return rank < o.rank;
    if (start != o.start) return start > o.start;
    return id > o.id;
  }
};

struct TeamState {
  std::string name;
  UsageLedger ledger;  // its jobs and the jump prices it paid
  double shares = 1;
  bool shares_set = false;  // from an association (else default_shares)
  DecayedValue penalty;
  DetectorMemory memory;
  bool rank_seen = false;
  int max_rank = 0;
  // The scale max_rank is on (preempt_by): QOS ranks and partition tiers do
  // not compare, so it is forgotten when preempt_by changes.
  PreemptBy rank_scale = PreemptBy::kQos;
  std::uint32_t bait_detections = 0, in_team_preemptions = 0;
  // Queue jumps and reclaim (design.md, "Jump price", "Reclaim").
  DecayedValue jump_price;        // prices paid, half-life bait_window: "jumped lately"
  double price_total_gpu_s = 0;   // every price paid since the last usage reset
  std::uint32_t priced_jumps = 0, reclaimed_from = 0, reclaims_made = 0;
  double held_gpus = 0;           // running now (weighted), from the running table
  // Its running GPU jobs in reclaim order, kept as they change, and, for
  // the checks, the same as an array with the GPUs of the jobs before each
  // place: rebuilt by the first check after a change (Slurm asks about
  // every running job for each preemptor it tries, between changes), so a
  // check is a binary search (over_without_earlier).
  std::set<ReclaimOrder> reclaim_order;
  mutable std::vector<ReclaimOrder> reclaim_places;
  mutable std::vector<double> gpus_before;
  mutable bool reclaim_places_stale = true;
  // Its scavenger episode (design.md, "Scavengers"): since the first and
  // until scavenger_window after the latest in-team preemption by a higher
  // rank; its lower-rank jobs started after scav_since are scavengers while
  // it lasts. 0/0 = never.
  TimePoint scav_since = 0, scav_until = 0;
  std::uint64_t pending_cycle = 0;  // last cycle it had a runnable pending job
  bool active = false;            // running or runnable pending: counts for entitlements
  std::deque<BaitDecision> recent;
  // The last few preemptors: one preemptor displacing several victims is
  // one queue jump, and its start was counted when it preempted.
  std::array<JobId, 8> recent_preemptors{};
  std::uint8_t next_preemptor_slot = 0;

  bool is_recent_preemptor(JobId id) const {
    return id != 0 && std::find(recent_preemptors.begin(), recent_preemptors.end(), id) !=
                          recent_preemptors.end();
  }
  void remember_preemptor(JobId id) {
    recent_preemptors[next_preemptor_slot % recent_preemptors.size()] = id;
    next_preemptor_slot = static_cast<std::uint8_t>((next_preemptor_slot + 1) % recent_preemptors.size());
  }
};

// An association inside a team (design.md, "Fair share inside a team"): a
// sub-account or a user, or the team's own account (the root of its tree).
struct AssocState {
  std::string account;  // path below root, normalised (roll_up_account)
  std::string user;     // "" = the account's own association
  TeamId team = -1;
  AssocId parent = -1;  // -1: the team's own account
  UsageLedger ledger;   // its jobs' and its subtree's (no jump prices)
  double shares = 1;    // raw; kUseParentShares: fairshare=parent
  bool shares_set = false;
  bool live = true;     // named by the host since its last refresh (assocs_refreshed)
  std::uint64_t named = 0;
};

// What a priority reads of an association, computed once per cycle.
struct AssocFactors {
  TeamId team = -1;
  double in_team = 1;
  TreeShare share;  // for the reports
};

bool finite_nonneg(double v) { return std::isfinite(v) && v >= 0; }

std::string assoc_key(std::string_view account, std::string_view user) {
  std::string k(account);
  k.push_back('\0');
  k += user;
  return k;
}

// The deepest account path an association may have (Slurm's account trees
// are a few levels deep; the plugin walks at most 32).
constexpr int kMaxAssocDepth = 64;

// Accounts in a path ("a/b/c": 3), and the path one level up.
int path_depth(std::string_view path) {
  return path.empty() ? 0 : 1 + static_cast<int>(std::count(path.begin(), path.end(), '/'));
}
std::string_view path_parent(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string_view{} : path.substr(0, slash);
}

// What something worth `worth` at time t is worth at time `as_of`: decayed
// when t is earlier, grown back when t is later (a job that ended after the
// last cycle: the next cycle decays it back). The growth is capped at 2^64
// so that an absurd end time cannot overflow to infinity.
double worth_at(double worth, TimePoint t, TimePoint as_of, Seconds half_life) {
  if (t <= as_of) return decayed(worth, elapsed_between(t, as_of), half_life);
  if (half_life <= 0) return worth;
  const double up = static_cast<double>(elapsed_between(as_of, t)) / static_cast<double>(half_life);
  return worth * std::exp2(std::min(up, 64.0));
}

// Add `worth`, valued at time t, to a lazily decayed value: exact whether t
// is after the value's own time (DecayedValue::add) or before it.
void add_worth(DecayedValue& v, double worth, TimePoint t, Seconds half_life) {
  if (t >= v.as_of) {
    v.add(worth, t, half_life);
  } else {
    v.value += decayed(worth, elapsed_between(t, v.as_of), half_life);
  }
}

// When a job could first run: its eligible time, or its submit time.
TimePoint eligible_since(const JobRef& j) { return j.eligible > 0 ? j.eligible : j.submit; }

TimePoint saturating_add(TimePoint t, Seconds d) {
  TimePoint out;
  return __builtin_add_overflow(t, d, &out) ? (d > 0 ? INT64_MAX : INT64_MIN) : out;
}

}  // namespace

struct Engine::Impl {
  mutable WriterPreferringRwLock mu;
  // Guards the reclaim_places rebuilds, done by readers under `mu` shared
  // (writers, which mark them stale, hold `mu` exclusively).
  mutable std::mutex reclaim_places_mu;
  Config config;
  std::vector<TeamState> teams;
  std::unordered_map<std::string, TeamId> team_ids;
  std::unordered_map<JobId, RunningJob> running;
  // How many of `running` this cycle has seen (last_seen_cycle == cycle_no):
  // when all of them, end_cycle has no vanished job to look for and skips
  // its walk of the table (0.2 s of the 1M-job replay's 10 at load 1.0).
  std::size_t running_seen = 0;
  // preemptor_claim: preemptors not yet seen running, and when they
  // preempted (not in the state: a restart forgets them, kClaimFor at most).
  std::unordered_map<JobId, TimePoint> claims;
  // What this preemption frees is the preemptor's if the configured mode
  // is at least `needs` (jumpers < reclaims < all); from its first preemption:
  // preempting again does not extend it.
  void claim(const JobRef& preemptor, TimePoint when, PreemptorClaim needs) {
    if (preemptor.id == 0 || config.jump.preemptor_claim < needs) return;
    auto [it, fresh] = claims.try_emplace(preemptor.id, when);
    if (!fresh && elapsed_between(it->second, when) > kClaimFor) it->second = when;
  }
  bool claimed(JobId id, TimePoint now) const {
    if (claims.empty() || id == 0) return false;
    const auto it = claims.find(id);
    return it != claims.end() && elapsed_between(it->second, now) <= kClaimFor;
  }
  // A queue jump's price, open until its preemptor stops running (design.md,
  // "Jump price"): a passed job's start can be pushed back by at most the time
  // the jumper holds the GPUs, so each passed job is finally charged
  // min(its capped wait, the jumper's run) and the rest is refunded. Charged
  // in full at the jump, so the price bites at once.
  struct OpenPrice {
    TeamId team = -1;
    TimePoint when = 0;   // the jump
    TimePoint as_of = 0;  // last_cycle at the jump: the charge's worth decays from there
    double charged = 0;   // GPU-seconds charged: skip_charge x sum of gpus x wait over `passed`
    std::vector<PassedJob> passed;
  };
  std::unordered_map<JobId, OpenPrice> open_prices;

  // The jumper `id` stopped after running `ran` seconds (0: it never
  // started): charge what it held the GPUs for, refund the rest at its
  // decayed worth.
  void settle_price(JobId id, Seconds ran) {
    const auto it = open_prices.find(id);
    if (it == open_prices.end()) return;
    OpenPrice p = std::move(it->second);
    open_prices.erase(it);
    if (p.team < 0 || static_cast<std::size_t>(p.team) >= teams.size()) return;
    double full = 0, held = 0;
    const Seconds held_for = std::max<Seconds>(ran, 0);
    for (const PassedJob& x : p.passed) {
      full += x.gpus * static_cast<double>(x.wait);
      held += x.gpus * static_cast<double>(std::min(x.wait, held_for));
    }
    if (!(full > 0)) return;
    const double owed = p.charged * std::min(1.0, held / full);
    const double refund = std::max(0.0, p.charged - owed);
    TeamState& t = teams[static_cast<std::size_t>(p.team)];
    if (refund > 0) {
      const Seconds since = std::max<Seconds>(0, elapsed_between(p.as_of, last_cycle));
      const double worth = refund * decay_factor(since, config.decay_half_life);
      t.ledger.usage = std::max(0.0, t.ledger.usage - worth);
      t.ledger.raw_usage = std::max(0.0, t.ledger.raw_usage - refund);
      t.price_total_gpu_s = std::max(0.0, t.price_total_gpu_s - refund);
    }
    for (BaitDecision& d : t.recent) {
      if (d.preemptor != id || d.reclaim || !(d.charged_gpu_s > 0)) continue;
      char buf[128];
      std::snprintf(buf, sizeof buf, "; settled: held the GPUs %llds, price %.0f GPU-s (%.0f refunded)",
                    static_cast<long long>(held_for), owed, refund);
      d.charged_gpu_s = owed;
      d.reason += buf;
    }
  }
  // The jumper `id` leaves the running table at `end`.
  void settle_on_stop(JobId id, const RunningJob& r, TimePoint end) {
    if (open_prices.empty()) return;
    const auto it = open_prices.find(id);
    if (it == open_prices.end()) return;
    // It started at or after its jump (a start unknown after a restart counts from the jump).
    settle_price(id, elapsed_between(std::max(r.start, it->second.when), end));
  }
  // Jobs no cycle could have seen running (design.md, "Usage ledger"): the
  // time of the last cycle's end, and the jobs that stopped lately having
  // started at or after it, with the cycle they stopped in, so that a job
  // reported stopped twice (the host's end hook, then its cycle walk) is
  // charged once. Kept two cycles, and in the saved state (format 8).
  TimePoint walked_until = 0;
  std::unordered_map<JobId, std::uint64_t> stopped_lately;
  // Jobs taken out of the running table while they may still run: a
  // reclaim's victim (it runs out its GraceTime), a job a cycle did not
  // report (suspended, or a walk that missed it). Each with the time it is
  // charged up to: seen running again, it is charged on from there, not
  // from its start again. Kept kChargedThroughFor; in the saved state.
  std::unordered_map<JobId, TimePoint> charged_through;
  static constexpr Seconds kChargedThroughFor = 86400;  // one day
  void note_stop(JobId id, const RunningJob& r) {
    if (r.start >= walked_until) stopped_lately.try_emplace(id, cycle_no);
  }
  // A job in the running table stopped at `end`: charge it up to there,
  // settle its jump price, forget it. False if it is not running (then its
  // run is over: no longer charged_through).
  bool stop_running(JobId id, TimePoint end) {
    auto it = running.find(id);
    if (it == running.end()) {
      charged_through.erase(id);  // its run is over
      return false;
    }
    // A reclaimer no cycle saw running (provisional): a pending job's end
    // is the one backfill planned. Nothing ran, nothing to charge.
    if (!it->second.provisional) {
      charge(it->second, end);
      settle_on_stop(it->first, it->second, end);
    }
    leave_team(it->first, it->second);
    erase_running(it, /*note=*/!it->second.provisional);  // (one that never ran: no end to remember)
    return true;
  }
  // A reclaimer entered while still pending (provisional) whose run ends
  // before any cycle sees it: the stopped job's record has its real start,
  // so it is charged from there as a cycle would have (stop_running charges
  // a provisional one nothing: without a record its end may be the one
  // backfill planned).
  void take_provisional_start(const JobRef& job, TimePoint end) {
    const auto it = running.find(job.id);
    if (it == running.end() || !it->second.provisional) return;
    if (job.start <= 0 || job.start > end || !finite_nonneg(job.usage_factor)) return;
    RunningJob& r = it->second;
    leave_team(it->first, r);  // its place in reclaim_order moves to the real start
    r.provisional = false;
    r.charged_until = std::max(r.charged_until, job.start);
    r.start = job.start;  // and note_stop then knows the walk may report it again
    r.usage_factor = job.usage_factor;
    enter_team(it->first, r);
  }
  // A stopped job that is not in the running table: if it started after the
  // last cycle's end, charge its run from its start.
  void charge_unseen(const JobRef& job, TimePoint end) {
    if (job.id == 0 || job.team < 0 || static_cast<std::size_t>(job.team) >= teams.size()) return;
    if (!finite_nonneg(job.gpus) || !(job.gpus > 0) || !finite_nonneg(job.usage_factor)) return;
    if (job.start <= 0 || end <= job.start || job.start < walked_until) return;
    if (!stopped_lately.try_emplace(job.id, cycle_no).second) return;
    RunningJob r;
    r.team = job.team;
    r.assoc = assoc_of_team(job.assoc, job.team) ? job.assoc : -1;
    r.gpus = job.gpus;
    r.usage_factor = job.usage_factor;
    r.charged_until = job.start;
    r.start = job.start;
    r.rank = job.rank;
    charge(r, end);
    settle_on_stop(job.id, r, end);
  }
  double cluster_gpus = 0;

  // Associations inside the teams (design.md, "Fair share inside a team").
  std::vector<AssocState> assocs;
  std::unordered_map<std::string, AssocId> assoc_ids;  // assoc_key(account, user)
  std::uint64_t assoc_generation = 0;  // assocs named in it are live at the next refresh
  std::vector<AssocFactors> assoc_factors;  // by id, as of the last recompute

  bool have_cycle = false;
  TimePoint last_cycle = 0;  // the ledger's time: usage is worth as of it

  // The latest leap (design.md, "Usage ledger"): a cycle that came more than
  // leap_bound() after the one before. It is charged and decayed as real
  // time, but remembered, so that a clock coming back to before `to` (the
  // leap was a step forward) can take it back: the gap is then taken to have
  // lasted `assumed` (one calc_period, the time between two cycles), and
  // every time stamped after it moves back by the rest. Not saved in the
  // state: a restart forgets it.
  struct Leap {
    bool active = false;
    TimePoint from = 0, to = 0;
    Seconds assumed = 0;
  };
  Leap leap;
  std::uint64_t cycle_no = 0;
  bool reset_now_pending = false;

  // Who waits: filled during a cycle (current), read by preemption events
  // from the last complete cycle (last), never half-filled.
  QueueView queue_current, queue_last;
  double active_shares = 0;  // shares of the active teams, as of the last recompute

  // The per-cycle table every priority() reads.
  std::vector<TeamFactors> factors;
  TimePoint factors_time = 0;
  double usage_total = 0, shares_total = 0;  // as of the last recompute
  PriorityParams prio;

  // One pending job of a known team (observe_pending).
  void note_pending(const JobRef& job);
  void note_running(const JobRef& job, TimePoint now);

  void check_team(TeamId team, const char* what) const {
    if (team < 0 || static_cast<std::size_t>(team) >= teams.size()) {
      throw std::invalid_argument(std::string(what) + ": unknown team id " + std::to_string(team) +
                                  " (" + std::to_string(teams.size()) + " teams known)");
    }
  }

  void apply_config(Config c) {
    // The leap's part of usage was worked out with the old half-life.
    if (c.decay_half_life != config.decay_half_life) forget_leap();
    const bool relink = c.team_level != config.team_level;
    config = std::move(c);
    forget_ranks_of_another_scale();
    if (relink) relink_assocs();
    for (auto& t : teams)
      if (!t.shares_set) t.shares = config.default_shares;
    if (config.usage_reset == ResetPeriod::kNow) reset_now_pending = true;
    recompute_factors(factors_time);
  }

  void recompute_factors(TimePoint now) {
    usage_total = 0;
    shares_total = 0;
    for (const auto& t : teams) {
      usage_total += t.ledger.usage;
      shares_total += t.shares;
    }
    active_shares = 0;
    for (auto& t : teams) {
      t.active = t.held_gpus > 0 || t.pending_cycle == cycle_no;
      if (t.active) active_shares += t.shares;
    }
    // Scavengers: from the jump on, whoever comes to wait (a job that
    // arrives between cycles must not wait for the next one to reclaim).
    bool someone_below_waits = false, someone_reclaimable = false, someone_scavenges = false;
    for (const auto& t : teams) {
      const double e = entitled_gpus(t);
      if (t.pending_cycle == cycle_no && t.held_gpus + 1e-9 < e) someone_below_waits = true;
      if (config.jump.reclaim != Reclaim::kOff && t.held_gpus > e + 1e-9 &&
          (config.jump.reclaim == Reclaim::kAll || jumped_lately(t, now)))
        someone_reclaimable = true;
      if (config.jump.reclaim != Reclaim::kOff && in_episode(t, now)) someone_scavenges = true;
    }
    reclaim_possible.store((cluster_gpus > 0 && someone_below_waits && someone_reclaimable) || someone_scavenges,
                           std::memory_order_relaxed);
    below_entitlement.resize(teams.size());
    for (std::size_t i = 0; i < teams.size(); ++i)
      // Cluster size unknown (set_cluster_gpus never called): count everyone.
      below_entitlement[i] = cluster_gpus <= 0 || teams[i].held_gpus + 1e-9 < entitled_gpus(teams[i]) ? 1 : 0;
    factors.resize(teams.size());
    for (std::size_t i = 0; i < teams.size(); ++i) {
      const auto& t = teams[i];
      TeamFactors& f = factors[i];
      f.fairshare = fair_share_factor(t.ledger.usage, usage_total, t.shares, shares_total);
      f.penalty = t.penalty.at(now, config.penalty.half_life);
      f.effective = effective_fair_share(f.fairshare, f.penalty);
    }
    refresh_bands();
    recompute_in_team();
    factors_time = now;
    prio.weights = config.weights;
    prio.max_age = config.max_age;
    prio.cluster_gpus = cluster_gpus;
    prio.favor_small = config.favor_small;
    prio.size_relative = config.size_relative;
    prio.raw = config.raw;
  }

  // Each team's band (fair_share.h): every job of a team with a higher
  // factor above every job of a team with a lower one.
  void refresh_bands() {
    std::vector<double> eff(factors.size());
    for (std::size_t i = 0; i < factors.size(); ++i) eff[i] = factors[i].effective;
    const std::vector<double> band = team_bands(eff);
    for (std::size_t i = 0; i < factors.size(); ++i) factors[i].band = band[i];
  }

  // ---- Associations inside a team (design.md, "Fair share inside a team") ----

  // The association of (account path, user), made with its parents if new:
  // a user's parent is its account; an account's is the account one level
  // up, or none when it is its team's own (at or above team_level).
  AssocId intern_assoc(std::string_view account, std::string_view user) {
    const std::string key = assoc_key(account, user);
    if (auto it = assoc_ids.find(key); it != assoc_ids.end()) return it->second;
    AssocState a;
    a.account = std::string(account);
    a.user = std::string(user);
    a.named = assoc_generation;
    link(a);
    const AssocId id = static_cast<AssocId>(assocs.size());
    assocs.push_back(std::move(a));
    assoc_ids.emplace(key, id);
    return id;
  }
  void link(AssocState& a) {
    a.team = intern_team(roll_up_account(a.account, config.team_level));
    if (!a.user.empty()) a.parent = intern_assoc(a.account, "");
    else if (path_depth(a.account) > config.team_level) a.parent = intern_assoc(path_parent(a.account), "");
    else a.parent = -1;
  }
  // team_level changed (or a state was loaded): every association's team and parent again.
  void relink_assocs() {
    for (std::size_t i = 0; i < assocs.size(); ++i) {
      AssocState a = assocs[i];  // link may grow the vector
      link(a);
      assocs[i].team = a.team;
      assocs[i].parent = a.parent;
    }
  }
  bool assoc_of_team(AssocId a, TeamId team) const {
    return a >= 0 && static_cast<std::size_t>(a) < assocs.size() && assocs[static_cast<std::size_t>(a)].team == team;
  }

  // Every team's tree, by the configured algorithm (fair_tree.h): parents
  // before children (an association is deeper than its parent), live ones
  // only; a job of one left out keeps its team's factor.
  void recompute_in_team() {
    std::vector<std::vector<AssocId>> by_team(teams.size());
    std::vector<AssocId> order(assocs.size());
    for (std::size_t i = 0; i < assocs.size(); ++i) order[i] = static_cast<AssocId>(i);
    auto depth = [&](AssocId a) {
      const AssocState& s = assocs[static_cast<std::size_t>(a)];
      return 2 * path_depth(s.account) + (s.user.empty() ? 0 : 1);
    };
    std::stable_sort(order.begin(), order.end(), [&](AssocId x, AssocId y) { return depth(x) < depth(y); });
    for (AssocId a : order) {
      const AssocState& s = assocs[static_cast<std::size_t>(a)];
      if (s.team >= 0 && static_cast<std::size_t>(s.team) < by_team.size()) by_team[static_cast<std::size_t>(s.team)].push_back(a);
    }
    assoc_factors.assign(assocs.size(), AssocFactors{});
    std::vector<int> index(assocs.size(), -1);
    std::vector<TreeNode> nodes;
    std::vector<AssocId> ids;
    for (std::size_t t = 0; t < by_team.size(); ++t) {
      nodes.clear();
      ids.clear();
      for (AssocId a : by_team[t]) {
        const AssocState& s = assocs[static_cast<std::size_t>(a)];
        int parent = -1;
        if (s.parent >= 0) {
          parent = index[static_cast<std::size_t>(s.parent)];
          if (parent < 0 || !s.live) continue;  // left out, and so its subtree
        } else if (!nodes.empty()) {
          continue;  // one root per team
        }
        index[static_cast<std::size_t>(a)] = static_cast<int>(nodes.size());
        nodes.push_back(TreeNode{parent, !s.user.empty(), s.shares_set ? s.shares : 1.0, s.ledger.usage});
        ids.push_back(a);
      }
      const std::vector<TreeShare> out = in_team_shares(nodes, config.in_team);
      for (std::size_t k = 0; k < ids.size(); ++k) {
        AssocFactors& f = assoc_factors[static_cast<std::size_t>(ids[k])];
        f.team = static_cast<TeamId>(t);
        f.in_team = out[k].factor;
        f.share = out[k];
      }
    }
  }
  // The factor inside its team of a job's association; 1 (the team's
  // best) when it has none or it is not ranked.
  double in_team_factor(AssocId a, TeamId team) const {
    if (a < 0 || static_cast<std::size_t>(a) >= assoc_factors.size()) return 1.0;
    const AssocFactors& f = assoc_factors[static_cast<std::size_t>(a)];
    return f.team == team && team >= 0 ? f.in_team : 1.0;
  }

  TeamId intern_team(const std::string& name) {
    if (name.empty()) return -1;
    auto it = team_ids.find(name);
    if (it != team_ids.end()) return it->second;
    const TeamId id = static_cast<TeamId>(teams.size());
    TeamState t;
    t.name = name;
    t.shares = config.default_shares;
    t.penalty.as_of = factors_time;
    const double shares = t.shares;
    teams.push_back(std::move(t));
    team_ids.emplace(name, id);
    // A new team has no usage, so its factor is known without touching the
    // others (whose factors move slightly with Stot; end_cycle refreshes
    // them): keeps interning 10,000 teams linear. Its band waits for the
    // cycle too (its jobs get its factor until then).
    shares_total += shares;
    const double f = fair_share_factor(0, usage_total, shares, shares_total);
    factors.push_back(TeamFactors{f, f, 0, 0});
    return id;
  }

  // Every ledger: the teams' and the associations'.
  template <class F>
  void for_each_ledger(F&& f) {
    for (auto& t : teams) f(t.ledger);
    for (auto& a : assocs) f(a.ledger);
  }

  void reset_usage(TimePoint boundary) {
    for_each_ledger([](UsageLedger& l) { l.reset(); });
    for (auto& t : teams) t.price_total_gpu_s = 0;
    open_prices.clear();  // charged to ledgers that are now empty
    for (auto& [id, job] : running) job.charged_until = std::max(job.charged_until, boundary);
  }

  // ---- The usage ledger and the clock (design.md, "Usage ledger") ----------
  //
  // Usage is worth as of last_cycle. Each interval a job ran is charged at
  // its decayed worth, gpus x decayed_integral(length) as of its end, so the
  // ledger equals the continuous integral whatever the period. The clock:
  //   gap <= leap_bound()     an ordinary cycle;
  //   gap >  leap_bound()     real time (slurmctld suspended or down: jobs ran
  //                           on), charged and decayed at once, but kept as
  //                           the leap, to be taken back if the clock returns;
  //   back to before the leap's end: the leap was a step forward: undo_leap;
  //   back by <= leap_bound() the ledger pauses until the clock catches up
  //                           (those seconds were counted early, not twice);
  //   back by more            rebase: the step takes no time, nothing is
  //                           charged or decayed for it, and the ledger goes
  //                           on from the clock's time (no freeze).
  // The bound: at least an hour, ten periods, so that late cycles are not
  // leaps; it is also the longest the ledger ever pauses.
  Seconds leap_bound() const { return std::max<Seconds>(10 * config.calc_period, 3600); }

  // Where time point t would be had the leap lasted leap.assumed.
  TimePoint without_leap(TimePoint t) const {
    if (t <= leap.from) return t;
    if (t >= leap.to) return t - (elapsed_between(leap.from, leap.to) - leap.assumed);
    return leap.from + std::min<Seconds>(elapsed_between(leap.from, t), leap.assumed);
  }

  // Every time stamp that a clock step may have to move.
  template <class F>
  void for_each_stamp(F&& f) {
    for (auto& t : teams) {
      for (DecayedValue* v : {&t.penalty, &t.jump_price, &t.memory.in_team_preemptions,
                              &t.memory.low_rank_gpu_s, &t.memory.low_rank_preempted_gpu_s,
                              &t.memory.started_gpus, &t.memory.preemptor_gpus})
        f(v->as_of);
      f(t.scav_since);
      f(t.scav_until);
    }
    for (auto& [id, j] : running) {
      f(j.charged_until);
      f(j.low_rank_gpu_s.as_of);
    }
    f(walked_until);
    for (auto& [id, p] : open_prices) {
      f(p.when);
      f(p.as_of);
    }
    f(factors_time);
    f(last_cycle);
  }

  // The leap stands for good (a new leap, a changed half-life, a load).
  void forget_leap() {
    leap = Leap{};
    for_each_ledger([](UsageLedger& l) { l.forget_leap(); });
  }

  // The clock came back to before the leap's end: take back what the leap
  // charged and decayed beyond `assumed`, and move every later time stamp
  // back by the same amount.
  void undo_leap() {
    for_each_ledger([](UsageLedger& l) { l.undo_leap(); });
    for_each_stamp([this](TimePoint& s) { s = without_leap(s); });
    forget_leap();
  }

  // The clock stepped back by more than leap_bound() with no leap to undo:
  // the step takes no time. Nothing is charged or decayed for it; stamps
  // after the clock's time come back to it, so decay and charging go on.
  void rebase(TimePoint now) {
    for_each_stamp([now](TimePoint& s) { s = std::min(s, now); });
    for_each_ledger([](UsageLedger& l) { l.forget_far(); });
  }

  // begin_cycle's part: bring the ledger to `now`.
  void advance_ledger(TimePoint now) {
    if (leap.active && now < leap.to) undo_leap();
    const Seconds dt = elapsed_between(last_cycle, now);
    const Seconds bound = leap_bound();
    if (dt < -bound) return rebase(now);
    if (dt <= 0) return;  // paused until the clock passes last_cycle
    const Seconds h = config.decay_half_life;
    const double f = decay_factor(dt, h);
    if (dt > bound) {
      // The leap's part of usage: its worth now less its worth had the gap
      // lasted `assumed`, in which what was charged for the time beyond one
      // period after the last cycle (far_*) would not have run at all.
      forget_leap();
      leap = Leap{true, last_cycle, now, std::min(config.calc_period, dt)};
      const double f_assumed = decay_factor(leap.assumed, h);
      for_each_ledger([&](UsageLedger& l) {
        l.begin_leap(f, f_assumed);
        l.decay(f, false);
      });
    } else {
      const bool decay_leap_part = leap.active;
      for_each_ledger([&](UsageLedger& l) { l.decay(f, decay_leap_part); });
    }
    if (reset_boundary_crossed(config.usage_reset, last_cycle, now)) {
      reset_usage(reset_period_start(config.usage_reset, now));
    }
    last_cycle = now;
  }

  // What one GPU running `len` seconds up to `until` is worth as of the
  // last cycle. Every job a cycle reports was last charged at the previous
  // cycle, so they all ask for the same value: it is kept for the last
  // (len, until, last_cycle, half-life) asked (an exp2 and an expm1 once a
  // cycle, not once a job: 0.5 s of the 1M-job replay's 10.6 s at load 1.0).
  struct RunWorthMemo {
    Seconds len = -1, half_life = 0;
    TimePoint until = 0, as_of = 0;
    double value = 0;
  } run_worth_memo;
  double run_worth(Seconds len, TimePoint until) {
    RunWorthMemo& k = run_worth_memo;
    const Seconds h = config.decay_half_life;
    if (k.len != len || k.until != until || k.as_of != last_cycle || k.half_life != h) {
      k = {len, h, until, last_cycle, worth_at(decayed_integral(len, h), until, last_cycle, h)};
    }
    return k.value;
  }

  // Charge a job from charged_until to `until`: raw usage gpus x seconds,
  // usage its decayed worth as of the ledger's time, both times its QOS
  // UsageFactor, and the detector's low-rank memory likewise with half-life
  // bait_window but unscaled (the GPUs were held whatever they cost).
  // The team's ledger and those of the job's association and its parents
  // inside the team get the same charge.
  void charge(RunningJob& job, TimePoint until) {
    if (until <= job.charged_until) return;
    const TimePoint start = job.charged_until;
    const Seconds len = elapsed_between(start, until);
    const Seconds h = config.decay_half_life;
    const double g = job.gpus * job.usage_factor;
    TeamState& t = teams[static_cast<std::size_t>(job.team)];
    UsageCharge c;
    c.worth = g * run_worth(len, until);
    c.raw = g * static_cast<double>(len);
    if (have_cycle) {
      // Time more than a period past the last cycle: inside the next
      // cycle's gap; part of the leap if that gap is one.
      const TimePoint near_end = saturating_add(last_cycle, config.calc_period);
      if (until > near_end) {
        const Seconds far = elapsed_between(std::max(start, near_end), until);
        c.far_worth = g * worth_at(decayed_integral(far, h), until, last_cycle, h);
        c.far_raw = g * static_cast<double>(far);
      }
    }
    if (leap.active) {
      // Its worth had the leap lasted `assumed`; the difference is the leap's.
      const TimePoint a = without_leap(start), b = without_leap(until);
      const Seconds lf_len = elapsed_between(a, b);
      const double lf = g * worth_at(decayed_integral(lf_len, h), b, without_leap(last_cycle), h);
      c.leap_worth = c.worth - lf;
      c.leap_raw = c.raw - g * static_cast<double>(lf_len);
    }
    t.ledger.add(c);
    if (assoc_of_team(job.assoc, job.team))
      for (AssocId a = job.assoc; a >= 0; a = assocs[static_cast<std::size_t>(a)].parent)
        assocs[static_cast<std::size_t>(a)].ledger.add(c);
    if (job.low_rank_start) {
      const Seconds w = config.bait.window;
      const double w_worth = job.gpus * decayed_integral(len, w);  // as of `until`
      add_worth(t.memory.low_rank_gpu_s, w_worth, until, w);
      add_worth(job.low_rank_gpu_s, w_worth, until, w);
    }
    job.charged_until = until;
  }

  const QueueView& queue_view() const { return queue_last; }

  // GPUs a team is entitled to now: its share of the cluster among the teams
  // that run or wait (a team with nothing to do leaves its share to others).
  double entitled_gpus(const TeamState& t) const {
    const double s = active_shares + (t.active ? 0 : t.shares);
    return s > 0 ? cluster_gpus * t.shares / s : 0;
  }

  // Per team: holds fewer GPUs than it is entitled to (a jump ahead of its
  // waiting jobs takes GPUs it was entitled to). As of the last cycle's
  // holdings; rebuilt by recompute_factors.
  std::vector<char> below_entitlement;
  std::atomic<bool> reclaim_possible{false};

  // What a jump passed: the runnable jobs ahead of it of teams below their
  // entitlement (design.md, "Jump price"). The detector's `skipped` uses
  // the same view: counting teams over their share too made the busy honest
  // team of honest-busy.yaml bait in 30 of its 45 jumps (8 of 35 with it).
  JumpCost jump_cost(const JobRef& jumper, TimePoint when, std::vector<PassedJob>* passed = nullptr) const {
    return queue_view().cost_of_jump(jumper, when, config.jump.price_cap, &below_entitlement, passed);
  }

  // banked_jump=refuse (design.md, "Jump price"): an in-team jump by a team
  // below its entitlement (as of the last cycle, cluster size known) onto a
  // victim that started before the preemptor became eligible. Such GPUs were
  // banked in advance; GPUs the team got while the preemptor already waited
  // (a victim started at or after that) are fair game. A victim with no
  // start time is not refused.
  bool banked(const JobRef& preemptor, const JobRef& victim) const {
    if (config.jump.banked_jump != BankedJump::kRefuse || cluster_gpus <= 0) return false;
    if (preemptor.team < 0 || static_cast<std::size_t>(preemptor.team) >= below_entitlement.size() ||
        !below_entitlement[static_cast<std::size_t>(preemptor.team)])
      return false;
    return victim.start > 0 && victim.start < eligible_since(preemptor);
  }

  bool jumped_lately(const TeamState& t, TimePoint now) const {
    return t.jump_price.at(now, config.bait.window) >= 1.0 ||
           t.penalty.at(now, config.penalty.half_life) >= config.bait.block_penalty;
  }

  void add_held(TeamId team, double gpus) {
    auto& h = teams[static_cast<std::size_t>(team)].held_gpus;
    h = std::max(0.0, h + gpus);
  }

  static void order_insert(TeamState& t, const ReclaimOrder& place) {
    t.reclaim_order.insert(place);
    t.reclaim_places_stale = true;
  }
  static void order_erase(TeamState& t, const ReclaimOrder& place) {
    if (t.reclaim_order.erase(place)) t.reclaim_places_stale = true;
  }

  // A job enters or leaves the running table's per-team accounts: its
  // team's held GPUs and reclaim_order.
  void enter_team(JobId id, const RunningJob& r) {
    add_held(r.team, r.gpus);
    if (r.gpus > 0) order_insert(teams[static_cast<std::size_t>(r.team)], {r.rank, r.start, id, r.gpus});
  }
  void leave_team(JobId id, const RunningJob& r) {
    add_held(r.team, -r.gpus);
    order_erase(teams[static_cast<std::size_t>(r.team)], {r.rank, r.start, id});
  }
  // The running table's own bookkeeping: whether this cycle saw a job.
  void mark_seen(RunningJob& r, bool inserted) {
    if (inserted || r.last_seen_cycle != cycle_no) ++running_seen;
    r.last_seen_cycle = cycle_no;
  }
  void erase_running(std::unordered_map<JobId, RunningJob>::iterator it, bool note = true) {
    if (note) note_stop(it->first, it->second);
    if (it->second.last_seen_cycle == cycle_no) --running_seen;
    running.erase(it);
  }

  // A recorded reclaim moves GPUs between teams at once: the victim leaves
  // the running table (charged up to now, as if it ended), the reclaimer
  // enters it (charged from now). Both teams' held GPUs are then right for
  // every later check until the next cycle sees the jobs again; Slurm asks
  // the preempt predicates on many scheduler passes per cycle.
  void move_reclaimed_gpus(const JobRef& reclaimer, const JobRef& victim, TimePoint when) {
    if (auto it = running.find(victim.id); it != running.end()) {
      charge(it->second, when);
      settle_on_stop(it->first, it->second, when);
      leave_team(it->first, it->second);
      // With a GraceTime it runs on until Slurm requeues it, and the next
      // cycles see it running: charged on from here.
      if (!it->second.provisional) charged_through[it->first] = std::max(it->second.charged_until, when);
      erase_running(it);
    }
    if (!finite_nonneg(reclaimer.gpus)) return;
    auto [it, inserted] = running.try_emplace(reclaimer.id);
    if (!inserted) return;  // already seen running: the next cycle updates it
    TeamState& t = teams[static_cast<std::size_t>(reclaimer.team)];
    RunningJob& r = it->second;
    r.team = reclaimer.team;
    r.assoc = assoc_of_team(reclaimer.assoc, reclaimer.team) ? reclaimer.assoc : -1;
    r.gpus = reclaimer.gpus;
    r.charged_until = when;
    r.start = when;
    r.rank = reclaimer.rank;
    r.provisional = true;
    mark_seen(r, true);
    r.low_rank_start = is_low_rank(t, reclaimer.rank);
    t.memory.started_gpus.add(reclaimer.gpus, when, config.bait.window);
    enter_team(it->first, r);
  }

  // ---- Scavengers (design.md, "Scavengers") ---------------------------------
  // A team that displaced one of its own jobs by a higher rank within
  // scavenger_window is in a scavenger episode.
  bool in_episode(const TeamState& t, TimePoint now) const {
    return config.jump.scavenger_window > 0 && now < t.scav_until;
  }
  // A running job that is a scavenger now: of a lower rank in its team,
  // started after its team's episode began (strictly: a job that started in
  // the same second as the first jump, such as a reclaimer, is not one),
  // and younger than bait_young. A job that held its GPUs that long without
  // anyone wanting them is protected again: requeueing it would lose real
  // work of an honest team, and a slot holder is taken young if at all.
  bool is_scavenger(const TeamState& t, const JobRef& j, TimePoint now) const {
    return in_episode(t, now) && j.start > t.scav_since && elapsed_between(j.start, now) < config.bait.young &&
           is_low_rank(t, j.rank);
  }
  // A pending job that would start as a scavenger: such jobs may not
  // reclaim, so that a reclaimer is never a scavenger (no ping-pong).
  bool would_scavenge(const TeamState& t, const JobRef& j, TimePoint now) const {
    return in_episode(t, now) && is_low_rank(t, j.rank);
  }
  void note_in_team_jump(TeamState& t, const JobRef& preemptor, const JobRef& victim, TimePoint when) {
    const Seconds w = config.jump.scavenger_window;
    if (w <= 0 || preemptor.rank <= victim.rank) return;
    if (when >= t.scav_until) t.scav_since = when;
    t.scav_until = std::max(t.scav_until, saturating_add(when, w));
    // Other teams may take its scavengers from now on, not from the next
    // cycle: the flag only lets the preempt plugin ask (end_cycle recomputes).
    if (config.jump.reclaim != Reclaim::kOff) reclaim_possible.store(true, std::memory_order_relaxed);
  }

  // The reclaim rule (design.md, "Reclaim" and "Scavengers"). Empty string
  // = allowed; *scavenger says by which rule.
  const char* reclaim_refusal(const JobRef& reclaimer, const JobRef& victim, TimePoint now,
                              bool* scavenger = nullptr) const {
    if (scavenger) *scavenger = false;
    if (config.jump.reclaim == Reclaim::kOff) return "reclaim=off";
    if (reclaimer.team < 0 || victim.team < 0 || reclaimer.team == victim.team) return "same team";
    if (static_cast<std::size_t>(reclaimer.team) >= teams.size() ||
        static_cast<std::size_t>(victim.team) >= teams.size())
      return "unknown team";
    if (!reclaimer.runnable || !(reclaimer.gpus > 0)) return "the reclaiming job is not runnable or uses no GPUs";
    const TeamState& r = teams[static_cast<std::size_t>(reclaimer.team)];
    const TeamState& v = teams[static_cast<std::size_t>(victim.team)];
    if (would_scavenge(r, reclaimer, now))
      return "the reclaiming job would run as a scavenger (its team preempted its own jobs within "
             "scavenger_window)";
    // A scavenger is open to every other team's job, whatever its rank:
    // ranks order a team's own jobs, and a placeholder kept at a middle QOS,
    // above the others' usual one, must not be out of their reach
    // (adversarial/middle-rank-bait).
    if (is_scavenger(v, victim, now)) {
      if (scavenger) *scavenger = true;
      return "";
    }
    if (victim.rank > reclaimer.rank)
      return "the victim outranks the reclaiming job (only a scavenger may be taken by a lower rank)";
    if (r.held_gpus + reclaimer.gpus > entitled_gpus(r) + 1e-9)
      return "the reclaiming team would exceed its entitlement";
    const double excess = v.held_gpus - entitled_gpus(v);
    if (excess <= 1e-9) return "the victim's team is not over its entitlement";
    if (config.jump.reclaim == Reclaim::kJumpers && !jumped_lately(v, now))
      return "the victim's team has not jumped the queue lately (reclaim=jumpers)";
    if (!over_without_earlier(v, victim, excess))
      return "the victim's team is not over its entitlement without the jobs a reclaim takes first (lower "
             "ranks, younger ones)";
    return "";
  }

  // Would the victim's team still hold more than its entitlement if the
  // reclaimer had already taken every job of that team that comes before
  // the victim in reclaim order (a lower rank, or the same and younger)?
  // Slurm asks about each (preemptor, victim) pair alone, with nothing
  // chosen yet, and takes allowed victims in that order; so the rule looks
  // at the victim's place among its team's jobs, not at what was chosen.
  // Whatever set of allowed victims one preemptor takes, all but the last
  // in that order come before it, so their GPUs were counted in its sum:
  // the team ends less than that victim's GPUs below its entitlement, as
  // when victims are taken in order while the team is over. Every job
  // before the victim is of no higher rank than it, so the reclaimer could
  // take it too. A binary search in reclaim_places (BM_ReclaimCheckBigTeam:
  // design.md, "Reclaim").
  bool over_without_earlier(const TeamState& v, const JobRef& victim, double excess) const {
    ReclaimOrder key{victim.rank, victim.start, victim.id};
    if (const auto vit = running.find(victim.id); vit != running.end() && vit->second.team == victim.team)
      key = {vit->second.rank, vit->second.start, victim.id};
    std::lock_guard places_lock(reclaim_places_mu);
    if (v.reclaim_places_stale) {
      v.reclaim_places.assign(v.reclaim_order.begin(), v.reclaim_order.end());
      v.gpus_before.resize(v.reclaim_places.size() + 1);
      double sum = 0;
      for (std::size_t i = 0; i < v.reclaim_places.size(); ++i) {
        v.gpus_before[i] = sum;
        sum += v.reclaim_places[i].gpus;
      }
      v.gpus_before[v.reclaim_places.size()] = sum;
      v.reclaim_places_stale = false;
    }
    const auto at = std::lower_bound(v.reclaim_places.begin(), v.reclaim_places.end(), key);
    return v.gpus_before[static_cast<std::size_t>(at - v.reclaim_places.begin())] < excess - 1e-9;
  }

  // scavenger_order=last: a pending job that would start as a scavenger
  // (would_scavenge) sorts after every other job.
  bool sorts_last(const PriorityInput& in, TimePoint now) const {
    if (config.jump.scavenger_order != ScavengerOrder::kLast || in.rank < 0 || in.team < 0 ||
        static_cast<std::size_t>(in.team) >= teams.size())
      return false;
    const TeamState& t = teams[static_cast<std::size_t>(in.team)];
    return in_episode(t, now) && is_low_rank(t, in.rank);
  }
  bool is_low_rank(const TeamState& t, int rank) const {
    return rank <= 0 || (t.rank_seen && rank < t.max_rank);
  }

  void see_rank(TeamState& t, int rank) {
    if (!t.rank_seen || rank > t.max_rank) t.max_rank = rank;
    t.rank_seen = true;
    t.rank_scale = config.preempt_by;
  }

  // A team's top rank seen under another preempt_by (a reconfigure, or a
  // state saved before one) would make every rank of the new scale look
  // lower (QOS ranks of a Preempt= chain are >= 2^16, tiers below): the
  // next jobs observed set it again.
  void forget_ranks_of_another_scale() {
    for (auto& t : teams)
      if (t.rank_seen && t.rank_scale != config.preempt_by) {
        t.rank_seen = false;
        t.max_rank = 0;
      }
  }

  // The team's counts at `when` as they would be after this preemption.
  RecentCounts counts_with_event(const TeamState& t, const JobRef& preemptor,
                                 const JobRef& victim, TimePoint when) const {
    const Seconds w = config.bait.window;
    RecentCounts c;
    // Jumps, not victims: a preemptor that takes several victims, or that
    // preempts again because Slurm handed the GPUs it freed to a job ahead
    // of it, is one jump.
    const bool new_jump = !t.is_recent_preemptor(preemptor.id);
    c.in_team_preemptions = t.memory.in_team_preemptions.at(when, w) + (new_jump ? 1 : 0);
    c.low_rank_gpu_s = t.memory.low_rank_gpu_s.at(when, w);
    c.low_rank_preempted_gpu_s = t.memory.low_rank_preempted_gpu_s.at(when, w);
    if (preemptor.rank > victim.rank) {
      const VictimSupply v = victim_supply(victim, when);
      c.low_rank_preempted_gpu_s += v.in_memory + v.outside;
      c.low_rank_gpu_s += v.outside;
    }
    c.started_gpus = t.memory.started_gpus.at(when, w);
    c.preemptor_gpus = t.memory.preemptor_gpus.at(when, w);
    if (new_jump) {
      c.preemptor_gpus += preemptor.gpus;
      // It starts now; if the host already reported it running, it was counted.
      if (running.find(preemptor.id) == running.end()) c.started_gpus += preemptor.gpus;
    }
    return c;
  }

  // A displaced low-rank victim's GPU-seconds for the detector's supply:
  // the part already in the team's low-rank memory (decayed alike), and the
  // part outside it (since the last charge, or its whole run, decayed, when
  // it was never counted as a low-rank job).
  struct VictimSupply {
    double in_memory = 0, outside = 0;
  };
  VictimSupply victim_supply(const JobRef& v, TimePoint when) const {
    const Seconds w = config.bait.window;
    VictimSupply out;
    auto it = running.find(v.id);
    if (it != running.end() && it->second.low_rank_start) {
      const RunningJob& r = it->second;
      out.in_memory = r.low_rank_gpu_s.at(when, w);
      out.outside = r.gpus * decayed_integral(elapsed_between(r.charged_until, when), w);
      return out;
    }
    if (v.start <= 0 || !finite_nonneg(v.gpus)) return out;
    out.outside = v.gpus * decayed_integral(std::max<Seconds>(0, elapsed_between(v.start, when)), w);
    return out;
  }

  // Live totals (not the cached ones: reports must be exact at any time).
  std::pair<double, double> live_totals() const {
    double u_total = 0, s_total = 0;
    for (const auto& t : teams) {
      u_total += t.ledger.usage;
      s_total += t.shares;
    }
    return {u_total, s_total};
  }

  TeamReport report(TeamId id, TimePoint now, double u_total, double s_total) const {
    const TeamState& t = teams[static_cast<std::size_t>(id)];
    TeamReport r;
    r.name = t.name;
    // Usage is as of the last cycle; the view decays it to `now` (every team
    // by the same factor, so the shares of usage and the factors stay).
    const Seconds since_cycle = have_cycle ? std::max<Seconds>(0, elapsed_between(last_cycle, now)) : 0;
    r.usage_gpu_s = decayed(t.ledger.usage, since_cycle, config.decay_half_life);
    r.raw_usage_gpu_s = t.ledger.raw_usage;
    r.shares = t.shares;
    r.shares_norm = s_total > 0 ? t.shares / s_total : 0;
    r.usage_norm = u_total > 0 ? t.ledger.usage / u_total : 0;
    r.fairshare = fair_share_factor(t.ledger.usage, u_total, t.shares, s_total);
    r.penalty = t.penalty.at(now, config.penalty.half_life);
    r.effective_fairshare = effective_fair_share(r.fairshare, r.penalty);
    r.bait_detections = t.bait_detections;
    r.in_team_preemptions = t.in_team_preemptions;
    r.price_total_gpu_s = t.price_total_gpu_s;
    r.priced_jumps = t.priced_jumps;
    r.reclaimed_from = t.reclaimed_from;
    r.reclaims_made = t.reclaims_made;
    r.held_gpus = t.held_gpus;
    r.entitled_gpus = entitled_gpus(t);
    if (in_episode(t, now)) {
      r.scavenger_since = t.scav_since;
      r.scavenger_until = t.scav_until;
    }
    r.recent_jump_price_gpu_s = t.jump_price.at(now, config.bait.window);
    r.jumped_lately = jumped_lately(t, now);
    r.recent.assign(t.recent.begin(), t.recent.end());
    return r;
  }

  // An association: its own ledger and its place in the team as of the
  // last cycle; the team's own account reports the team's figures (what
  // the teams are ranked by, jump prices included).
  AssocReport assoc_report(AssocId id, TimePoint now, double u_total, double s_total) const {
    const AssocState& a = assocs[static_cast<std::size_t>(id)];
    AssocReport r;
    r.account = a.account;
    r.user = a.user;
    r.team = a.team;
    r.parent = a.parent;
    r.live = a.live;
    r.shares = a.shares_set ? a.shares : 1.0;
    const Seconds since_cycle = have_cycle ? std::max<Seconds>(0, elapsed_between(last_cycle, now)) : 0;
    r.usage_gpu_s = decayed(a.ledger.usage, since_cycle, config.decay_half_life);
    r.raw_usage_gpu_s = a.ledger.raw_usage;
    const bool ranked = static_cast<std::size_t>(id) < assoc_factors.size() &&
                        assoc_factors[static_cast<std::size_t>(id)].team == a.team && a.team >= 0;
    const TeamFactors none{0, 0, 0, 0};
    const TeamFactors& tf = a.team >= 0 && static_cast<std::size_t>(a.team) < factors.size()
                                ? factors[static_cast<std::size_t>(a.team)] : none;
    if (a.parent < 0 && a.team >= 0) {
      const TeamReport t = report(a.team, now, u_total, s_total);
      r.usage_gpu_s = t.usage_gpu_s;
      r.raw_usage_gpu_s = t.raw_usage_gpu_s;
      r.shares_norm = t.shares_norm;
      r.usage_efctv = t.usage_norm;
      // What its jobs get: the team's factor as of the last cycle (the
      // other associations' too). Under Fair Tree its level fair share is
      // S/U among the teams, the penalty included: 2^(-1/LF) is that
      // factor, so LF orders the teams as they are ranked.
      const double f = tf.effective;
      if (config.in_team == InTeamAlgo::kFairTree)
        r.level_fs = f >= 1 ? std::numeric_limits<double>::infinity() : f > 0 ? -1.0 / std::log2(f) : 0;
      r.in_team = 1;
      r.fairshare = f;
      return r;
    }
    if (ranked) {
      const TreeShare& sh = assoc_factors[static_cast<std::size_t>(id)].share;
      r.shares_norm = sh.shares_norm;
      r.usage_efctv = sh.usage_efctv;
      r.level_fs = sh.level_fs;
      r.in_team = sh.factor;
    }
    r.fairshare = job_fair_share(tf.effective, tf.band, r.in_team);
    return r;
  }
};

Engine::Engine(Config config) : impl_(std::make_unique<Impl>()) {
  impl_->apply_config(std::move(config));
}

Engine::~Engine() = default;

void Engine::reconfigure(Config config) {
  std::unique_lock lock(impl_->mu);
  impl_->apply_config(std::move(config));
}

Config Engine::config() const {
  std::shared_lock lock(impl_->mu);
  return impl_->config;
}

TeamId Engine::team_for_account(std::string_view account_path) {
  std::unique_lock lock(impl_->mu);
  return impl_->intern_team(roll_up_account(account_path, impl_->config.team_level));
}

AssocId Engine::assoc_for(std::string_view account_path, std::string_view user) {
  std::unique_lock lock(impl_->mu);
  Impl& m = *impl_;
  const std::string account = roll_up_account(account_path, INT_MAX);
  if (account.empty() || path_depth(account) > kMaxAssocDepth) return -1;
  const AssocId id = m.intern_assoc(account, user);
  m.assocs[static_cast<std::size_t>(id)].named = m.assoc_generation;
  return id;
}

void Engine::set_assoc_shares(AssocId assoc, double shares) {
  std::unique_lock lock(impl_->mu);
  Impl& m = *impl_;
  if (assoc < 0 || static_cast<std::size_t>(assoc) >= m.assocs.size())
    throw std::invalid_argument("set_assoc_shares: unknown association id " + std::to_string(assoc));
  if (std::isnan(shares) || shares == std::numeric_limits<double>::infinity())
    throw std::invalid_argument("set_assoc_shares: shares must be a finite number >= 0 or negative for "
                                "fairshare=parent, got " + std::to_string(shares));
  AssocState& a = m.assocs[static_cast<std::size_t>(assoc)];
  a.shares = shares < 0 ? kUseParentShares : shares;
  a.shares_set = true;
  a.named = m.assoc_generation;
}

void Engine::assocs_refreshed() {
  std::unique_lock lock(impl_->mu);
  Impl& m = *impl_;
  for (auto& a : m.assocs) a.live = a.named == m.assoc_generation;
  ++m.assoc_generation;
}

std::int32_t Engine::assoc_count() const {
  std::shared_lock lock(impl_->mu);
  return static_cast<std::int32_t>(impl_->assocs.size());
}

void Engine::set_shares(TeamId team, double shares) {
  std::unique_lock lock(impl_->mu);
  impl_->check_team(team, "set_shares");
  if (!finite_nonneg(shares)) {
    throw std::invalid_argument("set_shares: shares must be a finite number >= 0, got " +
                                std::to_string(shares));
  }
  Impl& m = *impl_;
  auto& t = m.teams[static_cast<std::size_t>(team)];
  // Hosts set every team's shares each cycle: update this team's factor in
  // O(1) from the cached totals; end_cycle recomputes all of them exactly.
  m.shares_total += shares - t.shares;
  t.shares = shares;
  t.shares_set = true;
  TeamFactors& f = m.factors[static_cast<std::size_t>(team)];
  f.fairshare = fair_share_factor(t.ledger.usage, m.usage_total, t.shares, m.shares_total);
  f.effective = effective_fair_share(f.fairshare, f.penalty);
}

void Engine::set_cluster_gpus(double gpus) {
  std::unique_lock lock(impl_->mu);
  if (!finite_nonneg(gpus)) {
    throw std::invalid_argument("set_cluster_gpus: must be a finite number >= 0, got " +
                                std::to_string(gpus));
  }
  impl_->cluster_gpus = gpus;
  impl_->prio.cluster_gpus = gpus;
}

std::int32_t Engine::team_count() const {
  std::shared_lock lock(impl_->mu);
  return static_cast<std::int32_t>(impl_->teams.size());
}

std::string Engine::team_name(TeamId team) const {
  std::shared_lock lock(impl_->mu);
  if (team < 0 || static_cast<std::size_t>(team) >= impl_->teams.size()) return {};
  return impl_->teams[static_cast<std::size_t>(team)].name;
}

void Engine::begin_cycle(TimePoint now) {
  std::unique_lock lock(impl_->mu);
  Impl& m = *impl_;
  if (m.have_cycle) {
    m.advance_ledger(now);
  } else {
    m.last_cycle = now;
    m.have_cycle = true;
  }
  if (m.reset_now_pending) {
    m.reset_usage(now);
    m.reset_now_pending = false;
  }
  ++m.cycle_no;
  m.running_seen = 0;
  m.queue_current.clear();
}

void Engine::observe_running(const JobRef& job, TimePoint now) {
  std::unique_lock lock(impl_->mu);
  impl_->note_running(job, now);
}

void Engine::observe_running(std::span<const JobRef> jobs, TimePoint now) {
  std::unique_lock lock(impl_->mu);
  for (const JobRef& job : jobs) impl_->note_running(job, now);
}

void Engine::Impl::note_running(const JobRef& job, TimePoint now) {
  Impl& m = *this;
  m.check_team(job.team, "observe_running");
  if (!finite_nonneg(job.gpus)) {
    throw std::invalid_argument("observe_running: job " + std::to_string(job.id) +
                                " has invalid gpus " + std::to_string(job.gpus));
  }
  if (!finite_nonneg(job.usage_factor)) {
    throw std::invalid_argument("observe_running: job " + std::to_string(job.id) +
                                " has invalid usage_factor " + std::to_string(job.usage_factor) +
                                " (accepted: a finite number >= 0)");
  }
  TeamState& t = m.teams[static_cast<std::size_t>(job.team)];
  auto [it, inserted] = m.running.try_emplace(job.id);
  RunningJob& r = it->second;
  // Its place in reclaim_order before this report (none if new or GPU-less).
  const bool was_ordered = !inserted && r.gpus > 0;
  const TeamId old_team = r.team;
  const ReclaimOrder old_place{r.rank, r.start, job.id, r.gpus};
  if (!inserted) m.add_held(r.team, -r.gpus);
  const TimePoint reported_start = (job.start > 0 && job.start <= now) ? job.start : now;
  if (inserted) {
    // First sight: charge from its start (it may have started between cycles).
    r.charged_until = reported_start;
    r.start = r.charged_until;
    bool same_run = false;
    if (!m.charged_through.empty()) {
      if (const auto it = m.charged_through.find(job.id); it != m.charged_through.end()) {
        // Back after a reclaim took it out (its GraceTime) or a cycle missed
        // it, the same run (a start no later than its charge): charged up
        // to there already, and no new start. A later start is a new run
        // (requeued, resumed).
        same_run = job.start <= it->second;
        if (same_run) r.charged_until = std::max(r.charged_until, it->second);
        m.charged_through.erase(it);
      }
    }
    if (!same_run) {
      if (m.is_low_rank(t, job.rank)) r.low_rank_start = true;
      if (!t.is_recent_preemptor(job.id)) {  // a preemptor's start was counted when it preempted
        t.memory.started_gpus.add(job.gpus, now, m.config.bait.window);
      }
    }
  } else if (r.provisional) {
    // A reclaimer seen running for the first time: charged from its start.
    r.provisional = false;
    r.charged_until = std::max(r.charged_until, reported_start);
  }
  m.see_rank(t, job.rank);
  if (job.start > 0) r.start = job.start;
  r.rank = job.rank;
  r.team = job.team;
  r.assoc = m.assoc_of_team(job.assoc, job.team) ? job.assoc : -1;
  r.gpus = job.gpus;
  m.add_held(r.team, r.gpus);
  // Most reports change nothing of its place: the set is left alone then
  // (every running job is reported every cycle; re-inserting each one made
  // BM_CycleBigTeam 2.7x slower).
  const ReclaimOrder place{r.rank, r.start, job.id, r.gpus};
  const bool ordered = r.gpus > 0;
  if (was_ordered != ordered || old_team != r.team || old_place < place || place < old_place ||
      old_place.gpus != place.gpus) {
    if (was_ordered) m.order_erase(m.teams[static_cast<std::size_t>(old_team)], old_place);
    if (ordered) m.order_insert(t, place);
  }
  // As multifactor: the factor in force when a period is charged applies
  // to the whole period (an admin may change a QOS's UsageFactor).
  r.usage_factor = job.usage_factor;
  m.mark_seen(r, inserted);
  if (!m.claims.empty()) m.claims.erase(job.id);  // it started: the claim is taken
  m.charge(r, now);
}

void Engine::Impl::note_pending(const JobRef& job) {
  see_rank(teams[static_cast<std::size_t>(job.team)], job.rank);
  if (job.runnable) teams[static_cast<std::size_t>(job.team)].pending_cycle = cycle_no;
  queue_current.add(job);
}

void Engine::observe_pending(const JobRef& job) {
  std::unique_lock lock(impl_->mu);
  impl_->check_team(job.team, "observe_pending");
  impl_->note_pending(job);
}

std::size_t Engine::observe_pending(std::span<const JobRef> jobs) {
  std::unique_lock lock(impl_->mu);
  Impl& m = *impl_;
  std::size_t seen = 0;
  for (const JobRef& job : jobs) {
    if (job.team < 0 || static_cast<std::size_t>(job.team) >= m.teams.size()) continue;
    m.note_pending(job);
    ++seen;
  }
  return seen;
}

void Engine::end_cycle(TimePoint now) {
  std::unique_lock lock(impl_->mu);
  Impl& m = *impl_;
  // Jobs the host no longer reports ended without telling us: they are
  // charged up to the last cycle that saw them, which is already done.
  if (m.running_seen != m.running.size()) {
    std::erase_if(m.running, [&](const auto& kv) {
      if (kv.second.last_seen_cycle == m.cycle_no) return false;
      if (!kv.second.provisional) {  // (a provisional one is a reclaimer that never ran)
        m.settle_on_stop(kv.first, kv.second, kv.second.charged_until);
        m.note_stop(kv.first, kv.second);
        m.charged_through[kv.first] = kv.second.charged_until;  // suspended, or missed: it may come back
      }
      m.leave_team(kv.first, kv.second);
      return true;
    });
    m.running_seen = m.running.size();
  }
  if (!m.charged_through.empty())
    std::erase_if(m.charged_through,
                  [&](const auto& kv) { return elapsed_between(kv.second, now) > Impl::kChargedThroughFor; });
  // A job that stopped before this cycle's walk is reported in it at the latest.
  if (!m.stopped_lately.empty())
    std::erase_if(m.stopped_lately, [&](const auto& kv) { return kv.second + 1 < m.cycle_no; });
  m.walked_until = now;
  // A jumper that has not started within jump_price_cap of its jump (at
  // least kClaimFor) took nothing by it: its whole price goes back.
  if (!m.open_prices.empty()) {
    const Seconds wait_for = std::max(m.config.jump.price_cap, kClaimFor);
    std::vector<JobId> unstarted;
    for (const auto& [id, p] : m.open_prices)
      if (elapsed_between(p.when, now) > wait_for && m.running.find(id) == m.running.end())
        unstarted.push_back(id);
    for (JobId id : unstarted) m.settle_price(id, 0);
  }
  std::erase_if(m.claims, [&](const auto& kv) { return elapsed_between(kv.second, now) > kClaimFor; });
  m.queue_current.freeze();
  std::swap(m.queue_last, m.queue_current);
  m.recompute_factors(now);
}

TimePoint Engine::cycle_time() const {
  std::shared_lock lock(impl_->mu);
  return impl_->have_cycle ? impl_->last_cycle : 0;
}

void Engine::job_ended(const JobRef& job, TimePoint end) {
  std::unique_lock lock(impl_->mu);
  Impl& m = *impl_;
  m.take_provisional_start(job, end);
  if (!m.stop_running(job.id, end)) m.charge_unseen(job, end);
}

void Engine::job_ended(JobId job, TimePoint end) {
  std::unique_lock lock(impl_->mu);
  // Not running: ignored, its claim too. slurmctld's pending jobs carry the
  // start and end backfill planned for them, and the plugin's walk reports
  // every job with an end time (a requeued one's is real); a claim ends
  // when its job is seen running, or lapses.
  impl_->stop_running(job, end);
}

PriorityFactors Engine::priority(const PriorityInput& in, TimePoint now) const {
  std::shared_lock lock(impl_->mu);
  const Impl& m = *impl_;
  static const TeamFactors kUnknownTeam{0, 0, 0, 0};
  const TeamFactors& f = (in.team >= 0 && static_cast<std::size_t>(in.team) < m.factors.size())
                             ? m.factors[static_cast<std::size_t>(in.team)]
                             : kUnknownTeam;
  PriorityFactors p = compute_priority(in, f, m.in_team_factor(in.assoc, in.team), m.prio, now);
  if (m.claimed(in.job, now)) {
    // sprio adds the weighted terms up itself: the site term carries it.
    p.w_age = p.w_fairshare = p.w_job_size = p.w_partition = p.w_qos = p.w_assoc = p.w_tres = 0;
    p.site = kMaxPriority;
    p.nice = 0;
    p.priority = kMaxPriority;
    p.claimed = true;
  } else if (m.sorts_last(in, now)) {
    // sprio adds the weighted terms up itself: all 0, so it shows 1 too.
    p.w_age = p.w_fairshare = p.w_job_size = p.w_partition = p.w_qos = p.w_assoc = p.w_tres = 0;
    p.site = 0;
    p.nice = 0;
    p.priority = 1;
    p.scavenger_last = true;
  }
  return p;
}

void Engine::priorities(std::span<const PriorityInput> in, TimePoint now,
                        std::span<std::uint32_t> out) const {
  if (out.size() < in.size()) throw std::invalid_argument("priorities: output span too small");
  std::shared_lock lock(impl_->mu);
  const Impl& m = *impl_;
  const TeamFactors unknown{0, 0, 0, 0};
  for (std::size_t i = 0; i < in.size(); ++i) {
    const TeamId team = in[i].team;
    const TeamFactors& f = (team >= 0 && static_cast<std::size_t>(team) < m.factors.size())
                               ? m.factors[static_cast<std::size_t>(team)]
                               : unknown;
    out[i] = compute_priority(in[i], f, m.in_team_factor(in[i].assoc, team), m.prio, now).priority;
    if (m.claimed(in[i].job, now)) out[i] = kMaxPriority;
    else if (m.sorts_last(in[i], now)) out[i] = 1;
  }
}

double Engine::tres_term(const double* count, const double* total, std::size_t n,
                         double* each) const {
  std::shared_lock lock(impl_->mu);
  const Config& c = impl_->config;
  return gpufair::tres_term(c.tres_weights, count, total, n, c.raw.tres, each);
}

PreemptCheck Engine::allow_preemption(const JobRef& preemptor, const JobRef& victim,
                                      TimePoint now) const {
  return check_preemption(preemptor, victim, now, true);
}

PreemptCheck Engine::check_preemption(const JobRef& preemptor, const JobRef& victim,
                                      TimePoint now, bool want_reason) const {
  std::shared_lock lock(impl_->mu);
  const Impl& m = *impl_;
  PreemptCheck out;
  // Cheapest test first: most pairs slurmctld asks about are cross-team.
  if (preemptor.team != victim.team || preemptor.team < 0) {
    if (m.config.preempt_scope == PreemptScope::kAny) return out;
    bool scavenger = false;
    const char* why = m.reclaim_refusal(preemptor, victim, now, &scavenger);
    if (*why == '\0') {
      out.reclaim = true;
      if (want_reason)
        out.reason = scavenger ? "reclaim: the victim is a scavenger (its team preempted its own jobs within "
                                 "scavenger_window)"
                               : "reclaim: the preemptor's team is below its entitlement, the victim's over it";
      return out;
    }
    out.allowed = false;
    if (want_reason) out.reason = std::string("cross-team preemption refused (preempt_scope=team; no reclaim: ") + why + ")";
    return out;
  }
  if (m.banked(preemptor, victim)) {
    out.allowed = false;
    out.banked = true;
    if (want_reason) {
      char buf[224];
      std::snprintf(buf, sizeof buf,
                    "refused (banked_jump=refuse): the team is below its entitlement and the victim started "
                    "%llds before the preemptor became eligible; it may displace only jobs started since",
                    static_cast<long long>(elapsed_between(victim.start, eligible_since(preemptor))));
      out.reason = buf;
    }
    return out;
  }
  if (m.config.bait.block == BaitBlock::kNever) return out;
  if (static_cast<std::size_t>(preemptor.team) >= m.teams.size()) return out;
  if (m.is_scavenger(m.teams[static_cast<std::size_t>(preemptor.team)], victim, now)) {
    // Its GPUs are open to any team's job: taking them skips nobody, so it
    // is never bait (banked_jump, above, still applies).
    if (want_reason) out.reason = "the victim is its team's own scavenger: its GPUs were open to any job";
    return out;
  }
  const TeamState& t = m.teams[static_cast<std::size_t>(preemptor.team)];
  const double penalty = t.penalty.at(now, m.config.penalty.half_life);
  if (m.config.bait.block == BaitBlock::kPenalized && penalty < m.config.bait.block_penalty) {
    return out;
  }
  const RecentCounts counts = m.counts_with_event(t, preemptor, victim, now);
  const JumpCost cost = m.jump_cost(preemptor, now);
  if (!want_reason) {
    if (judge_preemption_quiet(m.config.bait, preemptor, victim, now, cost, counts).bait)
      out.allowed = false;
    return out;
  }
  BaitEvidence e = judge_preemption(m.config.bait, preemptor, victim, now, cost, counts);
  if (!e.bait) return out;
  out.allowed = false;
  char buf[160];
  if (m.config.bait.block == BaitBlock::kAlways) {
    std::snprintf(buf, sizeof buf, "refused (bait_block=always): ");
  } else {
    std::snprintf(buf, sizeof buf, "refused (bait_block=penalized, team penalty %.2f >= %.2f): ",
                  penalty, m.config.bait.block_penalty);
  }
  out.reason = buf + e.reason;
  return out;
}

bool Engine::claimed(JobId job, TimePoint now) const {
  std::shared_lock lock(impl_->mu);
  return impl_->claimed(job, now);
}

bool Engine::may_reclaim(const JobRef& reclaimer, TimePoint now) const {
  std::shared_lock lock(impl_->mu);
  const Impl& m = *impl_;
  if (m.config.jump.reclaim == Reclaim::kOff || !reclaimer.runnable || !(reclaimer.gpus > 0)) return false;
  if (reclaimer.team < 0 || static_cast<std::size_t>(reclaimer.team) >= m.teams.size()) return false;
  return !m.would_scavenge(m.teams[static_cast<std::size_t>(reclaimer.team)], reclaimer, now);
}

bool Engine::reclaim_possible() const { return impl_->reclaim_possible.load(std::memory_order_relaxed); }

PreemptCheck Engine::check_reclaim(const JobRef& reclaimer, const JobRef& victim, TimePoint now) const {
  std::shared_lock lock(impl_->mu);
  PreemptCheck out;
  bool scavenger = false;
  const char* why = impl_->reclaim_refusal(reclaimer, victim, now, &scavenger);
  out.allowed = out.reclaim = *why == '\0';
  out.reason = !out.allowed ? why : scavenger ? "reclaim allowed: the victim is a scavenger" : "reclaim allowed";
  return out;
}

namespace {
// A decision about one preemption, before it is judged.
BaitDecision decision_of(const JobRef& preemptor, const JobRef& victim, TimePoint when) {
  BaitDecision d;
  d.preemptor = preemptor.id;
  d.victim = victim.id;
  d.team = preemptor.team;
  d.when = when;
  d.in_team = preemptor.team == victim.team;
  return d;
}

void remember(std::deque<BaitDecision>& recent, BaitDecision d) {
  recent.push_back(std::move(d));
  while (recent.size() > kRecentDecisions) recent.pop_front();
}
}  // namespace

BaitDecision Engine::record_preemption(const JobRef& preemptor, const JobRef& victim,
                                       TimePoint when) {
  std::unique_lock lock(impl_->mu);
  Impl& m = *impl_;
  m.check_team(preemptor.team, "record_preemption (preemptor)");
  TeamState& t = m.teams[static_cast<std::size_t>(preemptor.team)];
  BaitDecision d = decision_of(preemptor, victim, when);
  if (!d.in_team && m.config.preempt_scope != PreemptScope::kAny) {
    // Not an in-team jump: the reclaim rule let it through.
    m.check_team(victim.team, "record_preemption (victim)");
    TeamState& v = m.teams[static_cast<std::size_t>(victim.team)];
    d.reclaim = true;
    const bool scavenger = m.is_scavenger(v, victim, when);
    // What a jump or a reserve took goes back with a claim; a rebalancing
    // of a team merely over its entitlement is left to fair-share order.
    m.claim(preemptor, when,
            scavenger || m.jumped_lately(v, when) ? PreemptorClaim::kJumpers : PreemptorClaim::kReclaims);
    char buf[320];
    if (scavenger) {
      std::snprintf(buf, sizeof buf,
                    "reclaim of a scavenger: team %s took %.1f GPUs from a job of team %s that started after "
                    "it preempted its own jobs (scavenger_window; holding %.1f of its %.1f entitled GPUs)",
                    t.name.c_str(), victim.gpus, v.name.c_str(), v.held_gpus, m.entitled_gpus(v));
    } else {
      std::snprintf(buf, sizeof buf,
                    "reclaim: team %s (holding %.1f of its %.1f entitled GPUs) took back %.1f GPUs from "
                    "team %s (holding %.1f of its %.1f)",
                    t.name.c_str(), t.held_gpus, m.entitled_gpus(t), victim.gpus, v.name.c_str(),
                    v.held_gpus, m.entitled_gpus(v));
    }
    d.reason = buf;
    ++t.reclaims_made;
    ++v.reclaimed_from;
    m.move_reclaimed_gpus(preemptor, victim, when);
    BaitDecision dv = d;
    dv.team = victim.team;
    remember(v.recent, std::move(dv));
    remember(t.recent, d);
    return d;
  }
  m.claim(preemptor, when, PreemptorClaim::kAll);
  // A jump onto its own scavenger skipped nobody: any team's waiting job
  // could have taken those GPUs. It is free, and never bait.
  const bool onto_scavenger = d.in_team && m.is_scavenger(t, victim, when);
  std::vector<PassedJob> passed;
  const JumpCost cost = onto_scavenger ? JumpCost{} : m.jump_cost(preemptor, when, &passed);
  d.skipped = cost.skipped;

  BaitEvidence e;
  const bool new_jump = !t.is_recent_preemptor(preemptor.id);
  if (d.in_team) {
    const RecentCounts counts = m.counts_with_event(t, preemptor, victim, when);
    const Seconds w = m.config.bait.window;
    if (new_jump) t.memory.in_team_preemptions.add(1, when, w);
    if (preemptor.rank > victim.rank) {
      const Impl::VictimSupply v = m.victim_supply(victim, when);
      t.memory.low_rank_preempted_gpu_s.add(v.in_memory + v.outside, when, w);
      t.memory.low_rank_gpu_s.add(v.outside, when, w);
      // Counted in full now: what it runs until it ends is usage only.
      auto it = m.running.find(victim.id);
      if (it != m.running.end()) it->second.low_rank_start = false;
    }
    if (new_jump && finite_nonneg(preemptor.gpus)) {
      t.memory.preemptor_gpus.add(preemptor.gpus, when, w);
      if (m.running.find(preemptor.id) == m.running.end()) {
        t.memory.started_gpus.add(preemptor.gpus, when, w);
      }
      t.remember_preemptor(preemptor.id);
    }
    ++t.in_team_preemptions;
    e = judge_preemption(m.config.bait, preemptor, victim, when, cost, counts);
    m.note_in_team_jump(t, preemptor, victim, when);
  } else {
    e = judge_preemption(m.config.bait, preemptor, victim, when, cost, RecentCounts{});
  }
  d.bait = e.bait;
  d.score = e.score;
  d.reason = std::move(e.reason);

  // The price: every queue jump pays for the queue time it took from
  // others, bait or not; one preemptor displacing several victims is one
  // jump and pays once.
  if (new_jump && cost.gpu_s > 0) {
    d.charged_gpu_s = m.config.penalty.skip_charge * cost.gpu_s;
    t.ledger.usage += d.charged_gpu_s;
    t.ledger.raw_usage += d.charged_gpu_s;
    t.jump_price.add(d.charged_gpu_s, when, m.config.bait.window);
    t.price_total_gpu_s += d.charged_gpu_s;
    ++t.priced_jumps;
    m.usage_total += d.charged_gpu_s;
    if (preemptor.id != 0 && d.charged_gpu_s > 0)
      m.open_prices[preemptor.id] = {preemptor.team, when, m.last_cycle, d.charged_gpu_s, std::move(passed)};
  }
  char buf[224];
  if (onto_scavenger) {
    std::snprintf(buf, sizeof buf, "; onto its own scavenger (open to any job): skipped nobody, price 0");
  } else {
    std::snprintf(buf, sizeof buf,
                  "; price %.0f GPU-s for %u runnable jobs ahead of teams below their entitlement "
                  "(mean %llds skipped, cap %llds)",
                  d.charged_gpu_s, cost.jobs_ahead, static_cast<long long>(cost.skipped),
                  static_cast<long long>(m.config.jump.price_cap));
  }
  d.reason += buf;
  if (d.bait) {
    t.penalty.advance_to(when, m.config.penalty.half_life);
    const double before = t.penalty.value;
    t.penalty.value = penalty_after_bait(m.config.penalty, before, d.score);
    d.penalty_added = t.penalty.value - before;
    ++t.bait_detections;
    std::snprintf(buf, sizeof buf, "; penalty +%.3f -> %.3f", d.penalty_added, t.penalty.value);
    d.reason += buf;
  }
  if (d.bait || d.charged_gpu_s > 0) {
    // Update this team's factor now (the price and penalty must bite at
    // once); the other teams' factors move only slightly with Utot and are
    // refreshed by end_cycle.
    TeamFactors& f = m.factors[static_cast<std::size_t>(preemptor.team)];
    f.fairshare = fair_share_factor(t.ledger.usage, m.usage_total, t.shares, m.shares_total);
    f.penalty = t.penalty.at(when, m.config.penalty.half_life);
    f.effective = effective_fair_share(f.fairshare, f.penalty);
    // Its band and its neighbours' follow at once, so that a team whose
    // factor fell below another's never keeps jobs above it (O(teams log
    // teams), on a preemption only).
    m.refresh_bands();
  }
  remember(t.recent, d);
  return d;
}

BaitDecision Engine::record_resv_preemption(const JobRef& preemptor, const JobRef& victim,
                                            TimePoint when) {
  std::unique_lock lock(impl_->mu);
  Impl& m = *impl_;
  m.check_team(preemptor.team, "record_resv_preemption (preemptor)");
  TeamState& t = m.teams[static_cast<std::size_t>(preemptor.team)];
  const bool victim_known = victim.team >= 0 && static_cast<std::size_t>(victim.team) < m.teams.size();
  BaitDecision d = decision_of(preemptor, victim, when);
  d.reservation = true;
  const std::string whose = d.in_team        ? std::string("the same team")
                            : victim_known ? "team " + m.teams[static_cast<std::size_t>(victim.team)].name
                                           : std::string("no known team");
  char buf[448];
  std::snprintf(buf, sizeof buf,
                "reservation: job %llu of team %s took back its reservation's nodes (MaxStartDelay) from job "
                "%llu of %s, which ran there on borrowed time; Slurm preempts such a job whatever the "
                "preemption rules: not a queue jump, no price, not judged",
                static_cast<unsigned long long>(preemptor.id), t.name.c_str(),
                static_cast<unsigned long long>(victim.id), whose.c_str());
  d.reason = buf;
  if (!d.in_team && victim_known) {
    BaitDecision dv = d;
    dv.team = victim.team;
    remember(m.teams[static_cast<std::size_t>(victim.team)].recent, std::move(dv));
  }
  remember(t.recent, d);
  return d;
}

TeamReport Engine::team_report(TeamId team, TimePoint now) const {
  std::shared_lock lock(impl_->mu);
  impl_->check_team(team, "team_report");
  const auto [u_total, s_total] = impl_->live_totals();
  return impl_->report(team, now, u_total, s_total);
}

AssocReport Engine::assoc_report(AssocId assoc, TimePoint now) const {
  std::shared_lock lock(impl_->mu);
  if (assoc < 0 || static_cast<std::size_t>(assoc) >= impl_->assocs.size())
    throw std::invalid_argument("assoc_report: unknown association id " + std::to_string(assoc));
  const auto [u_total, s_total] = impl_->live_totals();
  return impl_->assoc_report(assoc, now, u_total, s_total);
}

std::vector<AssocReport> Engine::assoc_reports(TimePoint now) const {
  std::shared_lock lock(impl_->mu);
  std::vector<AssocReport> out;
  out.reserve(impl_->assocs.size());
  const auto [u_total, s_total] = impl_->live_totals();
  for (std::size_t i = 0; i < impl_->assocs.size(); ++i)
    out.push_back(impl_->assoc_report(static_cast<AssocId>(i), now, u_total, s_total));
  return out;
}

std::vector<TeamReport> Engine::report(TimePoint now) const {
  std::shared_lock lock(impl_->mu);
  std::vector<TeamReport> out;
  out.reserve(impl_->teams.size());
  const auto [u_total, s_total] = impl_->live_totals();
  for (std::size_t i = 0; i < impl_->teams.size(); ++i) {
    out.push_back(impl_->report(static_cast<TeamId>(i), now, u_total, s_total));
  }
  return out;
}

// ---- State -----------------------------------------------------------------

namespace {

void write_value(ByteWriter& w, const DecayedValue& v) {
  w.f64(v.value);
  w.i64(v.as_of);
}

DecayedValue read_value(ByteReader& r) {
  DecayedValue v;
  v.value = r.f64();
  v.as_of = r.i64();
  if (r.ok() && !finite_nonneg(v.value)) r.fail("a decayed value is negative or not finite");
  return v;
}

double read_nonneg(ByteReader& r, const char* what) {
  const double v = r.f64();
  if (r.ok() && !finite_nonneg(v)) r.fail(std::string(what) + " is negative or not finite");
  return v;
}

}  // namespace

namespace {
// A table keyed by job id, sorted by id: the same state always saves to the
// same bytes.
template <class Table>
std::vector<std::pair<JobId, const typename Table::mapped_type*>> by_job_id(const Table& table) {
  std::vector<std::pair<JobId, const typename Table::mapped_type*>> out;
  out.reserve(table.size());
  for (const auto& [id, v] : table) out.emplace_back(id, &v);
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  return out;
}
}  // namespace

std::vector<std::uint8_t> Engine::save_state() const {
  std::shared_lock lock(impl_->mu);
  const Impl& m = *impl_;
  ByteWriter w;
  w.u8(m.have_cycle ? 1 : 0);
  w.i64(m.last_cycle);
  w.f64(m.cluster_gpus);
  w.u64(m.teams.size());
  for (const auto& t : m.teams) {
    w.str(t.name);
    w.f64(t.ledger.usage);
    w.f64(t.ledger.raw_usage);
    w.f64(t.shares);
    w.u8(t.shares_set ? 1 : 0);
    write_value(w, t.penalty);
    write_value(w, t.memory.in_team_preemptions);
    write_value(w, t.memory.low_rank_gpu_s);            // format 3 (counts before)
    write_value(w, t.memory.low_rank_preempted_gpu_s);  // format 3 (counts before)
    write_value(w, t.memory.started_gpus);    // format 2
    write_value(w, t.memory.preemptor_gpus);  // format 2
    w.u8(t.next_preemptor_slot);              // format 2
    for (JobId id : t.recent_preemptors) w.u64(id);
    // 0 = no rank seen, 1 = on the QOS scale, 2 = partition tiers (readers
    // before 2 exists take any non-zero as seen: it only ever gets reset).
    w.u8(!t.rank_seen ? 0 : t.rank_scale == PreemptBy::kPartition ? 2 : 1);
    w.i64(t.max_rank);
    w.u32(t.bait_detections);
    w.u32(t.in_team_preemptions);
    write_value(w, t.jump_price);  // format 3
    w.f64(t.price_total_gpu_s);
    w.u32(t.priced_jumps);
    w.u32(t.reclaimed_from);
    w.u32(t.reclaims_made);
    w.i64(t.scav_since);  // format 4
    w.i64(t.scav_until);
    w.u64(t.recent.size());
    for (const auto& d : t.recent) {
      w.u64(d.preemptor);
      w.u64(d.victim);
      w.i64(d.when);
      w.u8(d.in_team ? 1 : 0);
      // format 3: bit 1 = reclaim; bit 2 = reservation (older readers ignore it)
      w.u8((d.bait ? 1 : 0) | (d.reclaim ? 2 : 0) | (d.reservation ? 4 : 0));
      w.f64(d.score);
      w.i64(d.skipped);
      w.f64(d.charged_gpu_s);
      w.f64(d.penalty_added);
      w.str(d.reason);
    }
  }
  // Format 5: the associations inside the teams, in id order.
  w.u64(m.assocs.size());
  for (const auto& a : m.assocs) {
    w.str(a.account);
    w.str(a.user);
    w.f64(a.ledger.usage);
    w.f64(a.ledger.raw_usage);
    w.f64(a.shares);
    w.u8((a.shares_set ? 1 : 0) | (a.live ? 2 : 0));
  }
  const auto jobs = by_job_id(m.running);
  w.u64(jobs.size());
  for (const auto& [id, jp] : jobs) {
    const RunningJob& j = *jp;
    w.u64(id);
    w.u32(static_cast<std::uint32_t>(j.team));
    w.f64(j.gpus);
    w.i64(j.charged_until);
    w.u8((j.low_rank_start ? 1 : 0) | (j.provisional ? 2 : 0));  // bit 2: format 8
    write_value(w, j.low_rank_gpu_s);  // format 3
    w.u32(static_cast<std::uint32_t>(j.assoc));  // format 5; -1 = none
    w.f64(j.usage_factor);                       // format 6
  }
  // Format 7: the jump prices still open (their jumpers not stopped yet).
  const auto prices = by_job_id(m.open_prices);
  w.u64(prices.size());
  for (const auto& [id, pp] : prices) {
    const Impl::OpenPrice& p = *pp;
    w.u64(id);
    w.u32(static_cast<std::uint32_t>(p.team));
    w.i64(p.when);
    w.i64(p.as_of);
    w.f64(p.charged);
    w.u64(p.passed.size());
    for (const PassedJob& x : p.passed) {
      w.f64(x.gpus);
      w.i64(x.wait);
    }
  }
  // Format 8: the jobs charged from their start because no cycle saw them
  // run, whose end the host may report again (its end hook, then its walk):
  // saved with the charge they belong to, so a restart between the two
  // reports does not charge them twice.
  const auto stopped = by_job_id(m.stopped_lately);
  w.u64(stopped.size());
  for (const auto& kv : stopped) w.u64(kv.first);
  // ...and the jobs taken out of the running table that may still run (a
  // reclaim's victim in its GraceTime), with the time they are charged to.
  const auto through = by_job_id(m.charged_through);
  w.u64(through.size());
  for (const auto& [id, t] : through) {
    w.u64(id);
    w.i64(*t);
  }
  return frame_state(w.bytes());
}

Result<void> Engine::load_state(std::span<const std::uint8_t> bytes) {
  auto frame = unframe_state(bytes);
  if (!frame.ok()) return frame.error();
  ByteReader r(frame->bytes);

  // Decode everything into temporaries first: on any error the engine is
  // left exactly as it was.
  const bool have_cycle = r.u8() != 0;
  const TimePoint last_cycle = r.i64();
  const double cluster_gpus = read_nonneg(r, "cluster GPUs");
  const std::uint64_t team_count = r.count(100);
  std::vector<TeamState> teams;
  for (std::uint64_t i = 0; i < team_count && r.ok(); ++i) {
    TeamState t;
    t.name = r.str();
    if (r.ok() && t.name.empty()) r.fail("a team has an empty name");
    t.ledger.usage = read_nonneg(r, "team usage");
    t.ledger.raw_usage = read_nonneg(r, "team raw usage");
    t.shares = read_nonneg(r, "team shares");
    t.shares_set = r.u8() != 0;
    t.penalty = read_value(r);
    t.memory.in_team_preemptions = read_value(r);
    t.memory.low_rank_gpu_s = read_value(r);
    t.memory.low_rank_preempted_gpu_s = read_value(r);
    if (frame->version < 3) {  // job counts then, GPU-seconds now: start afresh
      t.memory.low_rank_gpu_s = {};
      t.memory.low_rank_preempted_gpu_s = {};
    }
    if (frame->version >= 2) {
      t.memory.started_gpus = read_value(r);
      t.memory.preemptor_gpus = read_value(r);
      t.next_preemptor_slot = static_cast<std::uint8_t>(r.u8() % t.recent_preemptors.size());
      for (JobId& id : t.recent_preemptors) id = r.u64();
    }
    const std::uint8_t seen = r.u8();
    t.rank_seen = seen != 0;
    t.rank_scale = seen == 2 ? PreemptBy::kPartition : PreemptBy::kQos;
    const std::int64_t max_rank = r.i64();
    if (r.ok() && (max_rank < INT_MIN || max_rank > INT_MAX)) r.fail("a team's max rank is out of range");
    t.max_rank = static_cast<int>(max_rank);
    t.bait_detections = r.u32();
    t.in_team_preemptions = r.u32();
    if (frame->version >= 3) {
      t.jump_price = read_value(r);
      t.price_total_gpu_s = read_nonneg(r, "a team's total jump price");
      t.priced_jumps = r.u32();
      t.reclaimed_from = r.u32();
      t.reclaims_made = r.u32();
    }
    if (frame->version >= 4) {
      t.scav_since = r.i64();
      t.scav_until = r.i64();
    }
    const std::uint64_t n_recent = r.count(60);
    for (std::uint64_t k = 0; k < n_recent && r.ok(); ++k) {
      BaitDecision d;
      d.preemptor = r.u64();
      d.victim = r.u64();
      d.when = r.i64();
      d.in_team = r.u8() != 0;
      const std::uint8_t flags = r.u8();
      d.bait = (flags & 1) != 0;
      d.reclaim = (flags & 2) != 0;
      d.reservation = (flags & 4) != 0;
      d.score = r.f64();
      d.skipped = r.i64();
      d.charged_gpu_s = r.f64();
      d.penalty_added = r.f64();
      d.reason = r.str();
      d.team = static_cast<TeamId>(i);
      t.recent.push_back(std::move(d));
      if (t.recent.size() > kRecentDecisions) t.recent.pop_front();
    }
    teams.push_back(std::move(t));
  }
  struct SavedAssoc {
    std::string account, user;
    double usage = 0, raw = 0, shares = 1;
    bool shares_set = false, live = true;
  };
  std::vector<SavedAssoc> assocs;
  if (frame->version >= 5) {
    const std::uint64_t n = r.count(33);
    for (std::uint64_t i = 0; i < n && r.ok(); ++i) {
      SavedAssoc a;
      a.account = r.str();
      a.user = r.str();
      if (r.ok() && (a.account.empty() || roll_up_account(a.account, INT_MAX) != a.account ||
                     path_depth(a.account) > kMaxAssocDepth || a.account.find('\0') != std::string::npos ||
                     a.user.find('\0') != std::string::npos))
        r.fail("an association's account path '" + a.account + "' is empty, not normalised or deeper than " +
               std::to_string(kMaxAssocDepth) + " accounts, or a name has a NUL");
      a.usage = read_nonneg(r, "an association's usage");
      a.raw = read_nonneg(r, "an association's raw usage");
      a.shares = r.f64();
      if (r.ok() && (std::isnan(a.shares) || std::isinf(a.shares)))
        r.fail("an association's shares are not a finite number");
      const std::uint8_t flags = r.u8();
      a.shares_set = (flags & 1) != 0;
      a.live = (flags & 2) != 0;
      assocs.push_back(std::move(a));
    }
  }
  struct SavedJob {
    JobId id;
    RunningJob job;
  };
  std::vector<SavedJob> jobs;
  const std::uint64_t job_count = r.count(frame->version >= 6 ? 57 : frame->version >= 5 ? 49 : frame->version >= 3 ? 45 : 29);
  for (std::uint64_t i = 0; i < job_count && r.ok(); ++i) {
    SavedJob s{};
    s.id = r.u64();
    const std::uint32_t team = r.u32();
    if (r.ok() && team >= teams.size()) r.fail("a running job names team " + std::to_string(team) + " which does not exist");
    s.job.team = static_cast<TeamId>(team);
    s.job.gpus = read_nonneg(r, "a running job's GPUs");
    s.job.charged_until = r.i64();
    const std::uint8_t flags = r.u8();
    s.job.low_rank_start = (flags & 1) != 0;
    s.job.provisional = frame->version >= 8 && (flags & 2) != 0;
    if (frame->version >= 3) s.job.low_rank_gpu_s = read_value(r);
    if (frame->version >= 5) {
      s.job.assoc = static_cast<AssocId>(r.u32());
      if (r.ok() && (s.job.assoc < -1 || s.job.assoc >= static_cast<std::int64_t>(assocs.size())))
        r.fail("a running job names association " + std::to_string(s.job.assoc) + " which does not exist");
    }
    // Before format 6 every job was charged at 1.
    if (frame->version >= 6) s.job.usage_factor = read_nonneg(r, "a running job's usage factor");
    jobs.push_back(s);
  }
  struct SavedPrice {
    JobId id;
    Impl::OpenPrice price;
  };
  std::vector<SavedPrice> prices;
  if (frame->version >= 7) {
    const std::uint64_t n = r.count(44);
    for (std::uint64_t i = 0; i < n && r.ok(); ++i) {
      SavedPrice s{};
      s.id = r.u64();
      const std::uint32_t team = r.u32();
      if (r.ok() && team >= teams.size())
        r.fail("an open jump price names team " + std::to_string(team) + " which does not exist");
      s.price.team = static_cast<TeamId>(team);
      s.price.when = r.i64();
      s.price.as_of = r.i64();
      s.price.charged = read_nonneg(r, "an open jump price");
      const std::uint64_t passed = r.count(16);
      for (std::uint64_t k = 0; k < passed && r.ok(); ++k) {
        PassedJob x;
        x.gpus = read_nonneg(r, "a passed job's GPUs");
        x.wait = r.i64();
        if (r.ok() && x.wait < 0) r.fail("a passed job's wait is negative");
        s.price.passed.push_back(x);
      }
      prices.push_back(std::move(s));
    }
  }
  std::vector<JobId> stopped;  // before format 8: none (a second report may charge again)
  std::vector<std::pair<JobId, TimePoint>> through;
  if (frame->version >= 8) {
    const std::uint64_t n = r.count(8);
    for (std::uint64_t i = 0; i < n && r.ok(); ++i) stopped.push_back(r.u64());
    const std::uint64_t k = r.count(16);
    for (std::uint64_t i = 0; i < k && r.ok(); ++i) {
      const JobId id = r.u64();
      through.emplace_back(id, r.i64());
    }
  }
  if (r.ok() && r.remaining() != 0) r.fail(std::to_string(r.remaining()) + " unexpected bytes after the payload");
  if (!r.ok()) return Error{"state is corrupt: " + r.failure()};
  {
    std::unordered_map<std::string, int> names;
    for (const auto& t : teams)
      if (++names[t.name] > 1) return Error{"state is corrupt: team '" + t.name + "' appears twice"};
    std::unordered_map<std::string, int> keys;
    for (const auto& a : assocs)
      if (++keys[assoc_key(a.account, a.user)] > 1)
        return Error{"state is corrupt: association '" + a.account + "' user '" + a.user + "' appears twice"};
  }

  std::unique_lock lock(impl_->mu);
  Impl& m = *impl_;
  // Merge by team name: ids already handed out stay valid.
  std::vector<TeamId> id_of(teams.size());
  for (std::size_t i = 0; i < teams.size(); ++i) {
    TeamState& saved = teams[i];
    auto it = m.team_ids.find(saved.name);
    TeamId id;
    if (it == m.team_ids.end()) {
      id = static_cast<TeamId>(m.teams.size());
      m.team_ids.emplace(saved.name, id);
      m.teams.emplace_back();
    } else {
      id = it->second;
    }
    id_of[i] = id;
    TeamState& cur = m.teams[static_cast<std::size_t>(id)];
    if (cur.shares_set) {  // the live association wins over the saved one
      saved.shares = cur.shares;
      saved.shares_set = true;
    } else if (!saved.shares_set) {
      saved.shares = m.config.default_shares;
    }
    for (auto& d : saved.recent) d.team = id;
    cur = std::move(saved);
  }
  // Associations likewise, by (account, user), linked under the current
  // team_level; the host's shares win over the saved ones.
  std::vector<AssocId> assoc_id_of(assocs.size());
  for (std::size_t i = 0; i < assocs.size(); ++i) {
    const SavedAssoc& saved = assocs[i];
    const bool known = m.assoc_ids.count(assoc_key(saved.account, saved.user)) != 0;
    const AssocId id = m.intern_assoc(saved.account, saved.user);
    assoc_id_of[i] = id;
    AssocState& cur = m.assocs[static_cast<std::size_t>(id)];
    cur.ledger = UsageLedger{};
    cur.ledger.usage = saved.usage;
    cur.ledger.raw_usage = saved.raw;
    if (!cur.shares_set) {
      cur.shares = saved.shares < 0 ? kUseParentShares : saved.shares;
      cur.shares_set = saved.shares_set;
    }
    if (!known) cur.live = saved.live;
  }
  m.running.clear();
  for (auto& t : m.teams) {
    t.held_gpus = 0;
    t.reclaim_order.clear();
    t.reclaim_places_stale = true;
  }
  for (auto& s : jobs) {
    s.job.team = id_of[static_cast<std::size_t>(s.job.team)];
    if (s.job.assoc >= 0) s.job.assoc = assoc_id_of[static_cast<std::size_t>(s.job.assoc)];
    if (!m.assoc_of_team(s.job.assoc, s.job.team)) s.job.assoc = -1;
    s.job.last_seen_cycle = m.cycle_no;
    m.running[s.id] = s.job;
    m.enter_team(s.id, s.job);
  }
  m.running_seen = m.running.size();
  m.open_prices.clear();
  for (auto& s : prices) {
    s.price.team = id_of[static_cast<std::size_t>(s.price.team)];
    m.open_prices[s.id] = std::move(s.price);
  }
  m.have_cycle = have_cycle;
  m.last_cycle = last_cycle;
  // Jobs that started after the saved state's last cycle were not seen by it.
  m.walked_until = have_cycle ? last_cycle : 0;
  m.stopped_lately.clear();
  for (const JobId id : stopped) m.stopped_lately.emplace(id, m.cycle_no);
  m.charged_through.clear();
  for (const auto& [id, t] : through) m.charged_through.emplace(id, t);
  m.forget_leap();
  m.for_each_ledger([](UsageLedger& l) { l.forget_far(); });
  if (m.cluster_gpus <= 0) m.cluster_gpus = cluster_gpus;
  m.forget_ranks_of_another_scale();
  m.recompute_factors(have_cycle ? last_cycle : m.factors_time);
  return {};
}

}  // namespace gpufair
