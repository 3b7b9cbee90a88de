// The C door into the core. Every entry point catches everything: no C++
// exception or type crosses into Slurm's C. Only gpufair_* symbols leave
// libgpufair.so (default visibility here + the version script).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#pragma GCC visibility push(default)
#include "gpufair/c_api.h"
#pragma GCC visibility pop

#include "gpufair/config.h"
#include "gpufair/engine.h"
#include "gpufair/priority.h"
#include "gpufair/qos_rank.h"
#include "gpufair/state_file.h"

struct gpufair_engine {
  explicit gpufair_engine(gpufair::Config c) : engine(std::move(c)) {}
  gpufair::Engine engine;
};

namespace {

using gpufair::Config;
using gpufair::JobRef;

void put(char* buf, size_t len, const std::string& text) {
  if (!buf || len == 0) return;
  std::snprintf(buf, len, "%s", text.c_str());
}

// Run `body`, mapping exceptions to error codes and messages.
template <typename Body>
int guarded(char* err, size_t errlen, Body&& body) {
  try {
    return body();
  } catch (const std::invalid_argument& e) {
    put(err, errlen, e.what());
    return GPUFAIR_ERR_ARG;
  } catch (const std::bad_alloc&) {
    put(err, errlen, "out of memory");
    return GPUFAIR_ERR_INTERNAL;
  } catch (const std::exception& e) {
    put(err, errlen, std::string("internal error: ") + e.what());
    return GPUFAIR_ERR_INTERNAL;
  } catch (...) {
    put(err, errlen, "internal error: unknown exception");
    return GPUFAIR_ERR_INTERNAL;
  }
}

// A count from the engine; 0 for a NULL engine or on any error.
template <typename Count>
int32_t count_or_zero(const gpufair_engine_t* e, Count count) {
  if (!e) return 0;
  int32_t out = 0;
  guarded(nullptr, 0, [&] {
    out = count(e->engine);
    return GPUFAIR_OK;
  });
  return out;
}

gpufair::Result<gpufair::SlurmKnobs> to_knobs(const gpufair_knobs_t* k) {
  gpufair::SlurmKnobs out;
  if (!k || !k->knobs_set) return out;
  out.set = true;
  out.decay_half_life = k->decay_half_life_s;  // 0 is meaningful: no decay
  if (k->calc_period_s != 0) out.calc_period = k->calc_period_s;
  if (k->max_age_s != 0) out.max_age = k->max_age_s;
  switch (k->usage_reset_period) {
    case GPUFAIR_RESET_NONE: out.usage_reset = gpufair::ResetPeriod::kNone; break;
    case GPUFAIR_RESET_NOW: out.usage_reset = gpufair::ResetPeriod::kNow; break;
    case GPUFAIR_RESET_DAILY: out.usage_reset = gpufair::ResetPeriod::kDaily; break;
    case GPUFAIR_RESET_WEEKLY: out.usage_reset = gpufair::ResetPeriod::kWeekly; break;
    case GPUFAIR_RESET_MONTHLY: out.usage_reset = gpufair::ResetPeriod::kMonthly; break;
    case GPUFAIR_RESET_QUARTERLY: out.usage_reset = gpufair::ResetPeriod::kQuarterly; break;
    case GPUFAIR_RESET_YEARLY: out.usage_reset = gpufair::ResetPeriod::kYearly; break;
    default:
      return gpufair::Error{"PriorityUsageResetPeriod='" + std::to_string(k->usage_reset_period) +
                            "': unknown reset period; accepted: GPUFAIR_RESET_NONE.."
                            "GPUFAIR_RESET_YEARLY (0..6)"};
  }
  out.weight_age = k->weight_age;
  out.weight_fairshare = k->weight_fairshare;
  out.weight_job_size = k->weight_job_size;
  out.weight_partition = k->weight_partition;
  out.weight_qos = k->weight_qos;
  out.favor_small = k->favor_small != 0;
  if (k->tres_billing_weights) out.tres_billing_weights = k->tres_billing_weights;
  out.weight_assoc = k->weight_assoc;
  if (k->tres_cnt < 0 || (k->tres_cnt > 0 && !k->tres_weights))
    return gpufair::Error{"PriorityWeightTRES: " + std::to_string(k->tres_cnt) +
                          " TRES weights without an array"};
  if (k->tres_weights) out.tres_weights.assign(k->tres_weights, k->tres_weights + k->tres_cnt);
  out.size_relative = (k->flags & GPUFAIR_PRIO_SIZE_RELATIVE) != 0;
  out.raw.assoc = (k->flags & GPUFAIR_PRIO_NO_NORMAL_ASSOC) != 0;
  out.raw.partition = (k->flags & GPUFAIR_PRIO_NO_NORMAL_PART) != 0;
  out.raw.qos = (k->flags & GPUFAIR_PRIO_NO_NORMAL_QOS) != 0;
  out.raw.tres = (k->flags & GPUFAIR_PRIO_NO_NORMAL_TRES) != 0;
  if (k->preempt_type) out.preempt_type = k->preempt_type;
  out.in_team = (k->flags & GPUFAIR_PRIO_DEPTH_OBLIVIOUS) ? gpufair::InTeamAlgo::kDepthOblivious
                : (k->flags & GPUFAIR_PRIO_NO_FAIR_TREE)  ? gpufair::InTeamAlgo::kClassic
                                                          : gpufair::InTeamAlgo::kFairTree;
  return out;
}

gpufair::Result<Config> build_config(const char* params, const gpufair_knobs_t* knobs) {
  auto k = to_knobs(knobs);
  if (!k.ok()) return k.error();
  return gpufair::parse_config(params ? params : "", *k);
}

// The C API's association ids are the core's + 1, so that a zero-filled
// struct means "none".
gpufair::AssocId to_assoc(int32_t c) { return c > 0 ? c - 1 : -1; }

JobRef to_ref(const gpufair_job_t& j) {
  JobRef r;
  r.id = j.job_id;
  r.team = j.team;
  r.assoc = to_assoc(j.assoc);
  r.user = j.user_id;
  r.rank = j.rank;
  r.gpus = j.gpus;
  r.submit = j.submit_time;
  r.eligible = j.eligible_time;
  r.start = j.start_time;
  r.priority = j.priority;
  r.runnable = j.held_back == 0;
  if (j.has_usage_factor) r.usage_factor = j.usage_factor;
  return r;
}

std::atomic<gpufair_engine_t*> g_engine{nullptr};

// The batch calls convert C records to core ones in stack-sized chunks, so
// the plugin's cycle allocates nothing here; body(chunk, first index).
template <typename Core, typename C, typename Convert, typename Body>
void in_chunks(const C* in, size_t n, Convert convert, Body body) {
  constexpr size_t kChunk = 256;
  Core chunk[kChunk];
  for (size_t base = 0; base < n; base += kChunk) {
    const size_t len = std::min(kChunk, n - base);
    for (size_t i = 0; i < len; ++i) chunk[i] = convert(in[base + i]);
    body(std::span<const Core>(chunk, len), base);
  }
}

gpufair::PriorityInput to_input(const gpufair_prio_input_t& in) {
  gpufair::PriorityInput p;
  p.team = in.team;
  p.assoc = to_assoc(in.assoc);
  p.gpus = in.gpus;
  p.eligible = in.eligible_time;
  p.qos_norm = in.qos_norm;
  p.qos_raw = in.qos_raw;
  p.partition_norm = in.partition_norm;
  p.partition_raw = in.partition_raw;
  p.assoc_norm = in.assoc_norm;
  p.assoc_raw = in.assoc_raw;
  p.tres = in.tres;
  p.time_limit_min = in.time_limit_min;
  p.site = in.site;
  p.nice = in.nice;
  p.rank = in.has_rank ? in.rank : -1;
  p.job = in.job_id;
  return p;
}

// One real preemption into the engine, by one of its record_* calls.
// 1 = bait, 0 = not, <0 error.
using RecordFn = gpufair::BaitDecision (gpufair::Engine::*)(const JobRef&, const JobRef&, gpufair::TimePoint);
int record_event(const char* what, RecordFn record, gpufair_engine_t* e, const gpufair_job_t* preemptor,
                 const gpufair_job_t* victim, int64_t when, char* reason, size_t reasonlen) {
  if (!e || !preemptor || !victim) {
    put(reason, reasonlen, std::string(what) + ": NULL argument");
    return -GPUFAIR_ERR_ARG;
  }
  int out = -GPUFAIR_ERR_INTERNAL;
  const int rc = guarded(reason, reasonlen, [&] {
    const auto d = (e->engine.*record)(to_ref(*preemptor), to_ref(*victim), when);
    put(reason, reasonlen, d.reason);
    out = d.bait ? 1 : 0;
    return GPUFAIR_OK;
  });
  return rc == GPUFAIR_OK ? out : -rc;
}

// One association report into the C struct.
void to_c(const gpufair::AssocReport& r, gpufair_assoc_report_t* out) {
  std::memset(out, 0, sizeof *out);
  out->team = r.team;
  out->is_team = r.parent < 0 ? 1 : 0;
  out->live = r.live ? 1 : 0;
  out->usage_gpu_s = r.usage_gpu_s;
  out->raw_usage_gpu_s = r.raw_usage_gpu_s;
  out->shares_norm = r.shares_norm;
  out->usage_efctv = r.usage_efctv;
  out->level_fs = r.level_fs;
  out->in_team = r.in_team;
  out->fairshare = r.fairshare;
}

}  // namespace

extern "C" {

const char* gpufair_version(void) { return "0.1.0"; }

int gpufair_config_check(const char* params, const gpufair_knobs_t* knobs, char* err,
                         size_t errlen) {
  return guarded(err, errlen, [&] {
    auto c = build_config(params, knobs);
    if (!c.ok()) {
      put(err, errlen, c.error().message);
      return GPUFAIR_ERR_CONFIG;
    }
    put(err, errlen, "");
    return GPUFAIR_OK;
  });
}

int gpufair_config_describe(const gpufair_engine_t* e, char* buf, size_t len) {
  if (!e || !buf || len == 0) return GPUFAIR_ERR_ARG;
  return guarded(nullptr, 0, [&] {
    const std::string text = gpufair::describe(e->engine.config());
    put(buf, len, text);
    return text.size() < len ? GPUFAIR_OK : GPUFAIR_ERR_ARG;  // truncated
  });
}

gpufair_engine_t* gpufair_engine_new(const char* params, const gpufair_knobs_t* knobs,
                                     char* err, size_t errlen) {
  gpufair_engine_t* out = nullptr;
  guarded(err, errlen, [&] {
    auto c = build_config(params, knobs);
    if (!c.ok()) {
      put(err, errlen, c.error().message);
      return GPUFAIR_ERR_CONFIG;
    }
    out = new gpufair_engine(std::move(c).value());
    return GPUFAIR_OK;
  });
  return out;
}

int gpufair_engine_reconfigure(gpufair_engine_t* e, const char* params,
                               const gpufair_knobs_t* knobs, char* err, size_t errlen) {
  if (!e) {
    put(err, errlen, "gpufair_engine_reconfigure: engine is NULL");
    return GPUFAIR_ERR_ARG;
  }
  return guarded(err, errlen, [&] {
    auto c = build_config(params, knobs);
    if (!c.ok()) {
      put(err, errlen, c.error().message);
      return GPUFAIR_ERR_CONFIG;
    }
    e->engine.reconfigure(std::move(c).value());
    return GPUFAIR_OK;
  });
}

void gpufair_engine_free(gpufair_engine_t* e) {
  if (!e) return;
  gpufair_engine_t* expected = e;
  g_engine.compare_exchange_strong(expected, nullptr);  // never leave a dangling global
  delete e;
}

int64_t gpufair_calc_period(const gpufair_engine_t* e) {
  if (!e) return 0;
  int64_t out = 0;
  guarded(nullptr, 0, [&] {
    out = e->engine.config().calc_period;
    return GPUFAIR_OK;
  });
  return out;
}

int gpufair_qos_ranks(size_t n, const uint32_t* priority, const uint32_t* preempts, size_t n_pairs,
                      int32_t* rank_out) {
  if (n > 0 && (!priority || !rank_out)) return GPUFAIR_ERR_ARG;
  if (n_pairs > 0 && !preempts) return GPUFAIR_ERR_ARG;
  return guarded(nullptr, 0, [&] {
    std::vector<std::uint32_t> prio(priority, priority + n);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
    pairs.reserve(n_pairs);
    for (size_t k = 0; k < n_pairs; ++k) pairs.emplace_back(preempts[2 * k], preempts[2 * k + 1]);
    const auto r = gpufair::qos_ranks(prio, pairs);
    std::copy(r.begin(), r.end(), rank_out);
    return GPUFAIR_OK;
  });
}

namespace {
// rank + 1; 0 = not published. Relaxed atomics: a reader sees the old or the
// new rank of each QOS, never a torn value.
std::atomic<std::int32_t> g_qos_rank[GPUFAIR_QOS_RANK_IDS];
}  // namespace

void gpufair_qos_ranks_publish(const uint32_t* ids, const int32_t* ranks, size_t n) {
  bool set[GPUFAIR_QOS_RANK_IDS] = {};
  for (size_t i = 0; ids && ranks && i < n; ++i) {
    if (ids[i] >= GPUFAIR_QOS_RANK_IDS || ranks[i] < 0 || ranks[i] == INT32_MAX) continue;
    g_qos_rank[ids[i]].store(ranks[i] + 1, std::memory_order_relaxed);
    set[ids[i]] = true;
  }
  for (size_t id = 0; id < GPUFAIR_QOS_RANK_IDS; ++id)
    if (!set[id]) g_qos_rank[id].store(0, std::memory_order_relaxed);
}

int32_t gpufair_qos_rank_lookup(uint32_t id, int32_t fallback) {
  if (id >= GPUFAIR_QOS_RANK_IDS) return fallback;
  const std::int32_t v = g_qos_rank[id].load(std::memory_order_relaxed);
  return v > 0 ? v - 1 : fallback;
}

int32_t gpufair_job_rank(int preempt_by, uint32_t qos_id, int32_t qos_priority, uint32_t partition_tier) {
  if (preempt_by == GPUFAIR_PREEMPT_BY_PARTITION)
    return gpufair::in_team_rank(gpufair::PreemptBy::kPartition, 0, partition_tier);
  return gpufair::in_team_rank(gpufair::PreemptBy::kQos, gpufair_qos_rank_lookup(qos_id, qos_priority), 0);
}

int gpufair_reclaim_possible(const gpufair_engine_t* e) { return e && e->engine.reclaim_possible() ? 1 : 0; }

int gpufair_preempt_any_team(const gpufair_engine_t* e) {
  if (!e) return 0;
  int out = 0;
  guarded(nullptr, 0, [&] {
    out = e->engine.config().preempt_scope == gpufair::PreemptScope::kAny ? 1 : 0;
    return GPUFAIR_OK;
  });
  return out;
}

int32_t gpufair_team_id(gpufair_engine_t* e, const char* account_path) {
  if (!e || !account_path || !*account_path) return -1;
  int32_t out = -1;
  guarded(nullptr, 0, [&] {
    out = e->engine.team_for_account(account_path);
    return GPUFAIR_OK;
  });
  return out;
}

int gpufair_set_shares(gpufair_engine_t* e, int32_t team, double shares) {
  if (!e) return GPUFAIR_ERR_ARG;
  return guarded(nullptr, 0, [&] {
    e->engine.set_shares(team, shares);
    return GPUFAIR_OK;
  });
}

int32_t gpufair_assoc_id(gpufair_engine_t* e, const char* account_path, const char* user) {
  if (!e || !account_path || !*account_path) return 0;
  int32_t out = 0;
  guarded(nullptr, 0, [&] {
    const gpufair::AssocId id = e->engine.assoc_for(account_path, user ? user : "");
    out = id >= 0 ? id + 1 : 0;
    return GPUFAIR_OK;
  });
  return out;
}

int gpufair_set_assoc_shares(gpufair_engine_t* e, int32_t assoc, double shares) {
  if (!e || assoc <= 0) return GPUFAIR_ERR_ARG;
  return guarded(nullptr, 0, [&] {
    e->engine.set_assoc_shares(to_assoc(assoc), shares);
    return GPUFAIR_OK;
  });
}

int gpufair_assocs_refreshed(gpufair_engine_t* e) {
  if (!e) return GPUFAIR_ERR_ARG;
  return guarded(nullptr, 0, [&] {
    e->engine.assocs_refreshed();
    return GPUFAIR_OK;
  });
}

int32_t gpufair_assoc_count(const gpufair_engine_t* e) {
  return count_or_zero(e, [](const gpufair::Engine& g) { return g.assoc_count(); });
}

int gpufair_set_cluster_gpus(gpufair_engine_t* e, double gpus) {
  if (!e) return GPUFAIR_ERR_ARG;
  return guarded(nullptr, 0, [&] {
    e->engine.set_cluster_gpus(gpus);
    return GPUFAIR_OK;
  });
}

int32_t gpufair_team_count(const gpufair_engine_t* e) {
  return count_or_zero(e, [](const gpufair::Engine& g) { return g.team_count(); });
}

int gpufair_cycle_begin(gpufair_engine_t* e, int64_t now) {
  if (!e) return GPUFAIR_ERR_ARG;
  return guarded(nullptr, 0, [&] {
    e->engine.begin_cycle(now);
    return GPUFAIR_OK;
  });
}

int gpufair_observe_running(gpufair_engine_t* e, const gpufair_job_t* job) {
  if (!e || !job) return GPUFAIR_ERR_ARG;
  return guarded(nullptr, 0, [&] {
    // The running charge is up to the cycle's time, which the engine knows
    // from cycle_begin. Before the first cycle there is no such time, and
    // charging "up to 0" would be nonsense: refuse.
    const int64_t now = e->engine.cycle_time();
    if (now == 0) return GPUFAIR_ERR_ARG;
    e->engine.observe_running(to_ref(*job), now);
    return GPUFAIR_OK;
  });
}

int gpufair_observe_pending(gpufair_engine_t* e, const gpufair_job_t* job) {
  if (!e || !job) return GPUFAIR_ERR_ARG;
  return guarded(nullptr, 0, [&] {
    e->engine.observe_pending(to_ref(*job));
    return GPUFAIR_OK;
  });
}

int64_t gpufair_observe_pending_many(gpufair_engine_t* e, const gpufair_job_t* jobs, size_t n) {
  if (n == 0) return 0;
  if (!e || !jobs) return GPUFAIR_ERR_ARG;
  int64_t seen = 0;
  const int rc = guarded(nullptr, 0, [&] {
    in_chunks<gpufair::JobRef>(jobs, n, to_ref, [&](auto chunk, size_t) {
      seen += static_cast<int64_t>(e->engine.observe_pending(chunk));
    });
    return GPUFAIR_OK;
  });
  return rc == GPUFAIR_OK ? seen : rc;
}

int gpufair_cycle_end(gpufair_engine_t* e, int64_t now) {
  if (!e) return GPUFAIR_ERR_ARG;
  return guarded(nullptr, 0, [&] {
    e->engine.end_cycle(now);
    return GPUFAIR_OK;
  });
}

int gpufair_job_ended(gpufair_engine_t* e, uint64_t job_id, int64_t end_time) {
  if (!e) return GPUFAIR_ERR_ARG;
  return guarded(nullptr, 0, [&] {
    e->engine.job_ended(job_id, end_time);
    return GPUFAIR_OK;
  });
}

int gpufair_job_finished(gpufair_engine_t* e, const gpufair_job_t* job, int64_t end_time) {
  if (!e || !job) return GPUFAIR_ERR_ARG;
  return guarded(nullptr, 0, [&] {
    e->engine.job_ended(to_ref(*job), end_time);
    return GPUFAIR_OK;
  });
}

uint32_t gpufair_claim_priority(const gpufair_engine_t* e, uint64_t job_id, int64_t now) {
  if (!e) return 0;
  uint32_t prio = 0;
  guarded(nullptr, 0, [&] {
    if (e->engine.claimed(job_id, now)) prio = gpufair::kMaxPriority;
    return GPUFAIR_OK;
  });
  return prio;
}

uint32_t gpufair_priority(const gpufair_engine_t* e, const gpufair_prio_input_t* in,
                          int64_t now, gpufair_factors_t* out) {
  if (!e || !in) return 1;  // never 0: that means "held" to Slurm
  uint32_t prio = 1;
  guarded(nullptr, 0, [&] {
    const gpufair::PriorityFactors f = e->engine.priority(to_input(*in), now);
    prio = f.priority;
    if (out) {
      out->age = f.age;
      out->fairshare = f.fairshare;
      out->job_size = f.job_size;
      out->partition = f.partition;
      out->qos = f.qos;
      out->w_age = f.w_age;
      out->w_fairshare = f.w_fairshare;
      out->w_job_size = f.w_job_size;
      out->w_partition = f.w_partition;
      out->w_qos = f.w_qos;
      out->penalty = f.penalty;
      out->nice = f.nice;
      out->priority = f.priority;
      out->assoc = f.assoc;
      out->w_assoc = f.w_assoc;
      out->w_tres = f.w_tres;
      out->site = f.site;
      out->team_fairshare = f.team_fairshare;
      out->in_team = f.in_team;
      out->scavenger_last = f.scavenger_last ? 1 : 0;
      out->claimed = f.claimed ? 1 : 0;
    }
    return GPUFAIR_OK;
  });
  return prio;
}

double gpufair_tres_term(const gpufair_engine_t* e, const double* count, const double* total,
                         size_t n, double* each) {
  if (each)
    for (size_t i = 0; i < n; ++i) each[i] = 0;
  if (!e || !count || !total) return 0;
  double sum = 0;
  guarded(nullptr, 0, [&] {
    sum = e->engine.tres_term(count, total, n, each);
    return GPUFAIR_OK;
  });
  return sum;
}

int gpufair_priorities(const gpufair_engine_t* e, const gpufair_prio_input_t* in, size_t n,
                       int64_t now, uint32_t* out) {
  if (n == 0) return GPUFAIR_OK;
  if (!e || !in || !out) return GPUFAIR_ERR_ARG;
  return guarded(nullptr, 0, [&] {
    in_chunks<gpufair::PriorityInput>(in, n, to_input, [&](auto chunk, size_t base) {
      e->engine.priorities(chunk, now, std::span<uint32_t>(out + base, chunk.size()));
    });
    return GPUFAIR_OK;
  });
}

int gpufair_preempt_allowed(const gpufair_engine_t* e, const gpufair_job_t* preemptor,
                            const gpufair_job_t* victim, int64_t now, char* reason,
                            size_t reasonlen) {
  if (!e || !preemptor || !victim) {
    put(reason, reasonlen, "gpufair_preempt_allowed: NULL argument");
    return -GPUFAIR_ERR_ARG;
  }
  int out = -GPUFAIR_ERR_INTERNAL;
  const int rc = guarded(reason, reasonlen, [&] {
    const bool want = reason && reasonlen > 0;
    const auto c = e->engine.check_preemption(to_ref(*preemptor), to_ref(*victim), now, want);
    if (want) put(reason, reasonlen, c.reason);
    out = !c.allowed ? 0 : c.reclaim ? GPUFAIR_PREEMPT_RECLAIM : 1;
    return GPUFAIR_OK;
  });
  return rc == GPUFAIR_OK ? out : -rc;
}


int gpufair_record_preemption(gpufair_engine_t* e, const gpufair_job_t* preemptor,
                              const gpufair_job_t* victim, int64_t when, char* reason,
                              size_t reasonlen) {
  return record_event(__func__, &gpufair::Engine::record_preemption, e, preemptor, victim, when, reason,
                      reasonlen);
}

int gpufair_record_resv_preemption(gpufair_engine_t* e, const gpufair_job_t* preemptor,
                                   const gpufair_job_t* victim, int64_t when, char* reason,
                                   size_t reasonlen) {
  return record_event(__func__, &gpufair::Engine::record_resv_preemption, e, preemptor, victim, when,
                      reason, reasonlen);
}

namespace {
// Preemptions already reported, direct-mapped by victim id (see c_api.h).
struct Claim {
  uint64_t victim = 0;
  int64_t key = 0;
  bool used = false;
};
std::mutex g_claim_mu;
Claim g_claims[GPUFAIR_CLAIM_SLOTS];
}  // namespace

int gpufair_preemption_claim(uint64_t victim, int64_t key) {
  std::lock_guard lock(g_claim_mu);
  Claim& c = g_claims[victim % GPUFAIR_CLAIM_SLOTS];
  if (c.used && c.victim == victim && c.key == key) return 0;
  c = Claim{victim, key, true};
  return 1;
}

namespace {
// Who preempts whom (see c_api.h): one word per slot, victim << 32 |
// preemptor, so that a reader never sees half of one pair and half of
// another. The predicate threads write the notes on every allowed pair:
// relaxed order, no lock.
std::atomic<uint64_t> g_noted[GPUFAIR_CLAIM_SLOTS];
std::atomic<uint64_t> g_pinned[GPUFAIR_CLAIM_SLOTS];
uint32_t preemptor_in(const std::atomic<uint64_t>* table, uint32_t victim) {
  const uint64_t w = table[victim % GPUFAIR_CLAIM_SLOTS].load(std::memory_order_relaxed);
  return static_cast<uint32_t>(w >> 32) == victim ? static_cast<uint32_t>(w) : 0;
}
}  // namespace

void gpufair_preemptor_note(uint32_t victim, uint32_t preemptor) {
  g_noted[victim % GPUFAIR_CLAIM_SLOTS].store((static_cast<uint64_t>(victim) << 32) | preemptor,
                                              std::memory_order_relaxed);
}

uint32_t gpufair_preemptor_noted(uint32_t victim) { return preemptor_in(g_noted, victim); }

void gpufair_preemptor_pin(uint32_t victim) {
  const uint32_t p = preemptor_in(g_noted, victim);
  if (p) g_pinned[victim % GPUFAIR_CLAIM_SLOTS].store((static_cast<uint64_t>(victim) << 32) | p,
                                                      std::memory_order_relaxed);
}

uint32_t gpufair_preemptor_pinned(uint32_t victim) { return preemptor_in(g_pinned, victim); }

int gpufair_team_report(const gpufair_engine_t* e, int32_t team, int64_t now,
                        gpufair_team_report_t* out) {
  if (!e || !out) return GPUFAIR_ERR_ARG;
  return guarded(nullptr, 0, [&] {
    const gpufair::TeamReport r = e->engine.team_report(team, now);
    std::memset(out, 0, sizeof *out);
    std::snprintf(out->name, sizeof out->name, "%s", r.name.c_str());
    out->usage_gpu_s = r.usage_gpu_s;
    out->raw_usage_gpu_s = r.raw_usage_gpu_s;
    out->shares = r.shares;
    out->shares_norm = r.shares_norm;
    out->usage_norm = r.usage_norm;
    out->fairshare = r.fairshare;
    out->effective_fairshare = r.effective_fairshare;
    out->penalty = r.penalty;
    out->bait_detections = r.bait_detections;
    out->in_team_preemptions = r.in_team_preemptions;
    out->price_total_gpu_s = r.price_total_gpu_s;
    out->priced_jumps = r.priced_jumps;
    out->reclaims_made = r.reclaims_made;
    out->reclaimed_from = r.reclaimed_from;
    out->held_gpus = r.held_gpus;
    out->entitled_gpus = r.entitled_gpus;
    return GPUFAIR_OK;
  });
}

int gpufair_assoc_report(const gpufair_engine_t* e, int32_t assoc, int64_t now,
                         gpufair_assoc_report_t* out) {
  if (!e || !out || assoc <= 0) return GPUFAIR_ERR_ARG;
  return guarded(nullptr, 0, [&] {
    to_c(e->engine.assoc_report(to_assoc(assoc), now), out);
    return GPUFAIR_OK;
  });
}

int64_t gpufair_assoc_reports(const gpufair_engine_t* e, int64_t now, gpufair_assoc_report_t* out,
                              size_t n) {
  if (!e || (n > 0 && !out)) return -GPUFAIR_ERR_ARG;
  int64_t count = 0;
  const int rc = guarded(nullptr, 0, [&] {
    const std::vector<gpufair::AssocReport> all = e->engine.assoc_reports(now);
    for (size_t i = 0; i < all.size() && i < n; ++i) to_c(all[i], &out[i]);
    count = static_cast<int64_t>(all.size());
    return GPUFAIR_OK;
  });
  return rc == GPUFAIR_OK ? count : -rc;
}

int gpufair_state_save(const gpufair_engine_t* e, const char* path, char* err, size_t errlen) {
  if (!e || !path || !*path) {
    put(err, errlen, "gpufair_state_save: NULL engine or empty path");
    return GPUFAIR_ERR_ARG;
  }
  return guarded(err, errlen, [&] {
    const auto bytes = e->engine.save_state();
    auto r = gpufair::write_file_atomically(path, bytes);
    if (!r.ok()) {
      put(err, errlen, r.error().message);
      return GPUFAIR_ERR_IO;
    }
    return GPUFAIR_OK;
  });
}

int gpufair_state_load(gpufair_engine_t* e, const char* path, char* err, size_t errlen) {
  if (!e || !path || !*path) {
    put(err, errlen, "gpufair_state_load: NULL engine or empty path");
    return GPUFAIR_ERR_ARG;
  }
  return guarded(err, errlen, [&] {
    auto bytes = gpufair::read_whole_file(path);
    if (!bytes.ok()) {
      put(err, errlen, bytes.error().message);
      return GPUFAIR_ERR_IO;
    }
    auto r = e->engine.load_state(*bytes);
    if (!r.ok()) {
      put(err, errlen, std::string(path) + ": " + r.error().message);
      return GPUFAIR_ERR_STATE;
    }
    return GPUFAIR_OK;
  });
}

void gpufair_global_set(gpufair_engine_t* e) { g_engine.store(e); }

gpufair_engine_t* gpufair_global_get(void) { return g_engine.load(); }

int gpufair_global_reclaim_possible(void) {
  const gpufair_engine_t* e = g_engine.load(std::memory_order_acquire);
  return e && e->engine.reclaim_possible() ? 1 : 0;
}

}  // extern "C"
