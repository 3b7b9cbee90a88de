#include "scenario.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <set>

#include "gpufair/config.h"
#include "rng.h"
#include "text_util.h"
#include "yaml_doc.h"

namespace gpufair::sim {
namespace {

// Bounds that keep a typo (per_hour: 1e6 over 1000 days) from exhausting
// memory: a scenario is a test bench, not a production trace.
constexpr Seconds kMaxDuration = 100LL * 365 * 86400;
constexpr size_t kMaxScenarioJobs = 5'000'000;

class VectorSource final : public JobSource {
 public:
  explicit VectorSource(std::vector<JobSpec> jobs) : jobs_(std::move(jobs)) {}
  bool next(JobSpec& job) override {
    if (pos_ >= jobs_.size()) return false;
    job = jobs_[pos_++];
    return true;
  }
  void rewind() override { pos_ = 0; }

 private:
  std::vector<JobSpec> jobs_;
  size_t pos_ = 0;
};

// Reads one scenario file; every error carries file:line.
class ScenarioReader {
 public:
  explicit ScenarioReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const YamlNode& at, const std::string& why) const {
    throw SourceError{path_ + ":" + std::to_string(at.line) + ": " + why};
  }

  void check_keys(const YamlNode& node, std::initializer_list<const char*> allowed, const char* where) const {
    if (!node.is_map()) fail(node, std::string(where) + " must be a mapping");
    for (const auto& [k, v] : node.fields) {
      bool ok = false;
      for (const char* a : allowed) ok = ok || k == a;
      if (!ok) {
        std::string list;
        for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        fail(v, "unknown key '" + k + "' in " + where + " (accepted: " + list + ")");
      }
    }
  }

  std::string scalar(const YamlNode& n, const char* what) const {
    if (!n.is_scalar()) fail(n, std::string(what) + " must be a single value");
    return n.scalar;
  }

  double number(const YamlNode& n, const char* what, double lo, double hi) const {
    double v = 0;
    const auto s = scalar(n, what);
    if (!parse_number(trim(s), v) || v < lo || v > hi)
      fail(n, std::string(what) + " '" + s + "' is not a number in [" + fmt(lo, 0) + ", " + fmt(hi, 0) + "]");
    return v;
  }

  Seconds duration(const YamlNode& n, const char* what) const {
    const auto s = scalar(n, what);
    const auto r = parse_duration(trim(s));
    if (!r) fail(n, std::string(what) + " '" + s + "': " + r.error().message);
    if (*r < 0) fail(n, std::string(what) + " must not be negative");
    if (*r > kMaxDuration) fail(n, std::string(what) + " '" + s + "' is longer than 100 years");
    return *r;
  }

  bool boolean(const YamlNode& n, const char* what) const {
    const auto s = lower(scalar(n, what));
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
    fail(n, std::string(what) + " '" + s + "' is not true or false");
  }

  std::vector<std::string> names(const YamlNode& n, const char* what) const {
    std::vector<std::string> out;
    if (n.is_scalar()) out.push_back(n.scalar);
    else if (n.is_seq())
      for (const auto& i : n.items) out.push_back(scalar(i, what));
    else fail(n, std::string(what) + " must be a name or a list of names");
    if (out.empty()) fail(n, std::string(what) + " is an empty list");
    for (const auto& s : out)
      if (s.empty()) fail(n, std::string(what) + " has an empty name");
    return out;
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// GPU counts: one value, a list (uniform choice) or value -> weight.
struct GpuChoice {
  std::vector<std::int32_t> values;
  std::vector<double> cumulative;
  std::int32_t draw(Rng& rng) const {
    if (values.size() == 1) return values[0];
    const double u = rng.uniform() * cumulative.back();
    for (size_t i = 0; i < values.size(); ++i)
      if (u < cumulative[i]) return values[i];
    return values.back();
  }
};

GpuChoice read_gpus(const ScenarioReader& r, const YamlNode& n) {
  GpuChoice c;
  double total = 0;
  auto add = [&](const YamlNode& at, double v, double w) {
    if (v != std::floor(v)) r.fail(at, "gpus must be whole numbers");
    c.values.push_back(static_cast<std::int32_t>(v));
    total += w;
    c.cumulative.push_back(total);
  };
  if (n.is_scalar()) {
    add(n, r.number(n, "gpus", 0, 1e6), 1);  // 0: a GPU-less job
  } else if (n.is_seq()) {
    for (const auto& i : n.items) add(i, r.number(i, "gpus", 0, 1e6), 1);
  } else if (n.is_map()) {
    for (const auto& [k, v] : n.fields) {
      double g = 0;
      if (!parse_number(trim(k), g) || g < 1 || g > 1e6) r.fail(v, "gpus key '" + k + "' is not a GPU count");
      add(v, g, r.number(v, "gpus weight", 0, 1e9));
    }
  }
  if (c.values.empty()) r.fail(n, "gpus needs at least one value");
  if (total <= 0) r.fail(n, "gpus weights add up to 0");
  return c;
}

struct RuntimeDist {
  enum class Kind { kFixed, kExponential, kUniform, kLognormal } kind = Kind::kFixed;
  double a = 0, b = 0;  // fixed: a; exponential: mean a; uniform: [a, b]; lognormal: median a, sigma b
  double lo = 1, hi = 1e12;
  Seconds draw(Rng& rng) const {
    double v = a;
    switch (kind) {
      case Kind::kFixed: break;
      case Kind::kExponential: v = rng.exponential(a); break;
      case Kind::kUniform: v = a + (b - a) * rng.uniform(); break;
      case Kind::kLognormal: v = a * std::exp(b * rng.normal()); break;
    }
    return static_cast<Seconds>(std::llround(std::clamp(v, lo, hi)));
  }
};

RuntimeDist read_runtime(const ScenarioReader& r, const YamlNode& n) {
  RuntimeDist d;
  if (n.is_scalar()) {
    d.a = static_cast<double>(r.duration(n, "runtime"));
    d.lo = std::min(d.lo, d.a);
    return d;
  }
  r.check_keys(n, {"dist", "value", "mean", "min", "max", "median", "sigma"}, "runtime");
  const auto* dist = n.find("dist");
  const std::string kind = dist ? lower(r.scalar(*dist, "dist")) : "fixed";
  auto need = [&](const char* key) -> const YamlNode& {
    const auto* v = n.find(key);
    if (!v) r.fail(n, std::string("runtime with dist ") + kind + " needs '" + key + "'");
    return *v;
  };
  if (const auto* v = n.find("min")) d.lo = static_cast<double>(r.duration(*v, "runtime min"));
  if (const auto* v = n.find("max")) d.hi = static_cast<double>(r.duration(*v, "runtime max"));
  if (d.hi < d.lo) r.fail(n, "runtime max is below min");
  if (kind == "fixed") {
    d.a = static_cast<double>(r.duration(need("value"), "runtime value"));
  } else if (kind == "exponential") {
    d.kind = RuntimeDist::Kind::kExponential;
    d.a = static_cast<double>(r.duration(need("mean"), "runtime mean"));
  } else if (kind == "uniform") {
    d.kind = RuntimeDist::Kind::kUniform;
    d.a = d.lo = static_cast<double>(r.duration(need("min"), "runtime min"));
    d.b = d.hi = static_cast<double>(r.duration(need("max"), "runtime max"));
  } else if (kind == "lognormal") {
    d.kind = RuntimeDist::Kind::kLognormal;
    d.a = static_cast<double>(r.duration(need("median"), "runtime median"));
    d.b = r.number(need("sigma"), "runtime sigma", 0, 10);
  } else {
    r.fail(*dist, "runtime dist '" + kind + "' is not fixed, exponential, uniform or lognormal");
  }
  return d;
}

// A generated job before names are interned, with its place in the file for
// a stable order among equal submit times.
struct Draft {
  JobSpec spec;
  std::string account, user;
  std::uint64_t order;
};

void generate_workload(const ScenarioReader& r, const YamlNode& w, const std::string& team,
                       Seconds duration, Rng rng, std::uint64_t& order, std::vector<Draft>& out) {
  r.check_keys(w, {"type", "per_hour", "gpus", "runtime", "qos", "label", "start", "end", "accounts", "users",
                   "interval", "jitter", "count", "array"},
               "workload");
  const auto* type_node = w.find("type");
  if (!type_node) r.fail(w, "workload needs 'type' (poisson or placeholder)");
  const auto type = lower(r.scalar(*type_node, "type"));
  const bool placeholder = type == "placeholder";
  if (!placeholder && type != "poisson") r.fail(*type_node, "workload type '" + type + "' is not poisson or placeholder");

  const auto* gpus_node = w.find("gpus");
  const auto* runtime_node = w.find("runtime");
  if (!gpus_node) r.fail(w, "workload needs 'gpus'");
  if (!runtime_node) r.fail(w, "workload needs 'runtime'");
  const auto gpus = read_gpus(r, *gpus_node);
  const auto runtime = read_runtime(r, *runtime_node);
  int rank = kRankLow;
  if (const auto* q = w.find("qos")) {
    const auto s = lower(r.scalar(*q, "qos"));
    const auto qos_rank = rank_of_qos(s);
    if (!qos_rank) r.fail(*q, "qos '" + s + "' is not low, mid or high");
    rank = *qos_rank;
  }
  Label label = placeholder ? Label::kBait : Label::kHonest;
  if (const auto* l = w.find("label")) {
    const auto s = lower(r.scalar(*l, "label"));
    if (s == "bait") label = Label::kBait;
    else if (s == "honest") label = Label::kHonest;
    else if (s == "none") label = Label::kNone;
    else r.fail(*l, "label '" + s + "' is not bait, honest or none");
  }
  const Seconds start = w.find("start") ? r.duration(*w.find("start"), "start") : 0;
  const Seconds end = w.find("end") ? r.duration(*w.find("end"), "end") : duration;
  if (end < start) r.fail(w, "workload end is before its start");
  const auto accounts = w.find("accounts") ? r.names(*w.find("accounts"), "accounts") : std::vector<std::string>{team};
  for (const auto& a : accounts)
    if (lower(a) != team && lower(a).rfind(team + "/", 0) != 0)
      r.fail(*w.find("accounts"), "account '" + a + "' is not '" + team + "' or below it");
  const auto users = w.find("users") ? r.names(*w.find("users"), "users") : std::vector<std::string>{team + "-user"};

  std::uint64_t n = 0;
  auto emit = [&](TimePoint at) {
    if (out.size() >= kMaxScenarioJobs)
      r.fail(w, "the scenario would generate more than " + std::to_string(kMaxScenarioJobs) +
                    " jobs; use a trace file for runs that large");
    Draft d;
    d.spec.submit = at;
    d.spec.gpus = gpus.draw(rng);
    d.spec.runtime = runtime.draw(rng);
    d.spec.rank = rank;
    d.spec.label = label;
    d.account = lower(accounts[n % accounts.size()]);
    d.user = users[n % users.size()];
    d.order = order++;
    ++n;
    out.push_back(std::move(d));
  };

  if (!placeholder) {
    for (const char* k : {"interval", "jitter", "count", "array"})
      if (w.find(k)) r.fail(*w.find(k), std::string("'") + k + "' only applies to placeholder workloads");
    const auto* rate_node = w.find("per_hour");
    if (!rate_node) r.fail(w, "poisson workload needs 'per_hour'");
    const double rate = r.number(*rate_node, "per_hour", 0, 1e6);
    if (rate <= 0) return;
    // Refuse before generating: the expected count is known up front.
    if (rate * static_cast<double>(end - start) / 3600.0 > static_cast<double>(kMaxScenarioJobs))
      r.fail(*rate_node, "per_hour " + fmt(rate, 2) + " over this window would generate more than " +
                             std::to_string(kMaxScenarioJobs) + " jobs; use a trace file for runs that large");
    const double mean_gap = 3600.0 / rate;
    double t = static_cast<double>(start);
    for (;;) {
      t += rng.exponential(mean_gap);
      const auto at = static_cast<TimePoint>(std::floor(t));
      if (at >= end) break;
      emit(at);
    }
    return;
  }
  if (w.find("per_hour")) r.fail(*w.find("per_hour"), "'per_hour' only applies to poisson workloads");
  const Seconds interval = w.find("interval") ? r.duration(*w.find("interval"), "interval") : 3600;
  const Seconds jitter = w.find("jitter") ? r.duration(*w.find("jitter"), "jitter") : 0;
  const auto count = static_cast<std::int64_t>(w.find("count") ? r.number(*w.find("count"), "count", 1, 100000) : 1);
  const bool array = w.find("array") ? r.boolean(*w.find("array"), "array") : false;
  if (jitter > 0 && interval > 0 && jitter * 2 > interval)
    r.fail(*w.find("jitter"), "jitter must be at most half the interval");
  const double rounds = interval > 0 ? std::ceil(static_cast<double>(end - start) / static_cast<double>(interval)) : 1;
  if (rounds * static_cast<double>(count) > static_cast<double>(kMaxScenarioJobs))
    r.fail(w, "placeholders every " + std::to_string(interval) + " s over this window would generate more than " +
                  std::to_string(kMaxScenarioJobs) + " jobs; use a trace file for runs that large");
  for (Seconds round = start; round < end; round += interval) {
    TimePoint base = round;
    if (jitter > 0) base += static_cast<TimePoint>(rng.below(static_cast<std::uint64_t>(2 * jitter + 1))) - jitter;
    base = std::clamp<TimePoint>(base, start, end - 1);
    for (std::int64_t i = 0; i < count; ++i) {
      const TimePoint at = array || interval == 0 ? base : base + i * interval / count;
      if (at < end) emit(std::min<TimePoint>(at, end - 1));
    }
    if (interval == 0) break;
  }
}

}  // namespace

std::unique_ptr<JobSource> make_vector_source(std::vector<JobSpec> jobs) {
  return std::make_unique<VectorSource>(std::move(jobs));
}

Scenario load_scenario(const std::string& path, std::uint64_t seed_override) {
  const ScenarioReader r(path);
  const YamlNode root = load_yaml_file(path);
  r.check_keys(root, {"name", "description", "seed", "duration", "measure_from", "gaming_team", "cluster", "policy", "teams"},
               "the scenario");
  Scenario sc;
  sc.name = root.find("name") ? r.scalar(*root.find("name"), "name") : path;
  sc.description = root.find("description") ? r.scalar(*root.find("description"), "description") : "";
  if (const auto* s = root.find("seed")) sc.seed = static_cast<std::uint64_t>(r.number(*s, "seed", 0, 9.0e15));
  if (seed_override) sc.seed = seed_override;
  const auto* dur = root.find("duration");
  if (!dur) r.fail(root, "the scenario needs 'duration' (how long jobs arrive and the run lasts)");
  const Seconds duration = r.duration(*dur, "duration");
  if (duration <= 0) r.fail(*dur, "duration must be > 0");
  auto& o = sc.options;
  o.horizon = duration;
  if (const auto* m = root.find("measure_from")) {
    o.measure_from = r.duration(*m, "measure_from");
    if (o.measure_from >= duration) r.fail(*m, "measure_from must be before the end of the run");
  }
  const auto* cluster = root.find("cluster");
  if (!cluster) r.fail(root, "the scenario needs 'cluster' with at least 'gpus'");
  r.check_keys(*cluster, {"gpus", "gpus_per_node", "backfill", "backfill_interval", "backfill_depth", "backfill_window", "preempt_mode", "handoff"}, "cluster");
  if (!cluster->find("gpus")) r.fail(*cluster, "cluster needs 'gpus'");
  o.gpus = static_cast<std::int32_t>(r.number(*cluster->find("gpus"), "gpus", 1, 1e8));
  if (const auto* v = cluster->find("gpus_per_node")) {
    o.gpus_per_node = static_cast<std::int32_t>(r.number(*v, "gpus_per_node", 0, 1024));
    if (o.gpus_per_node > 0 && o.gpus % o.gpus_per_node != 0) r.fail(*v, "gpus is not a multiple of gpus_per_node");
  }
  if (const auto* v = cluster->find("backfill")) o.backfill = r.boolean(*v, "backfill");
  if (const auto* v = cluster->find("backfill_interval")) {
    o.backfill_interval = r.duration(*v, "backfill_interval");
    if (o.backfill_interval <= 0) r.fail(*v, "backfill_interval must be > 0");
  }
  if (const auto* v = cluster->find("backfill_depth")) o.backfill_depth = static_cast<std::int32_t>(r.number(*v, "backfill_depth", 1, 1e7));
  if (const auto* v = cluster->find("backfill_window")) {
    o.backfill_window = r.duration(*v, "backfill_window");
    if (o.backfill_window <= 0) r.fail(*v, "backfill_window must be > 0");
  }
  if (const auto* v = cluster->find("preempt_mode")) {
    const auto s = lower(r.scalar(*v, "preempt_mode"));
    if (s == "requeue") o.preempt_mode = PreemptMode::kRequeue;
    else if (s == "cancel") o.preempt_mode = PreemptMode::kCancel;
    else r.fail(*v, "preempt_mode '" + s + "' is not requeue or cancel");
  }
  if (const auto* v = cluster->find("handoff")) {
    const auto s = lower(r.scalar(*v, "handoff"));
    const auto h = handoff_named(s);
    if (!h) r.fail(*v, "handoff '" + s + "' is not priority or preemptor");
    o.handoff = *h;
  }
  if (const auto* p = root.find("policy")) {
    if (!p->is_map()) r.fail(*p, "policy must be a mapping of PriorityParameters keys");
    for (const auto& [k, v] : p->fields) sc.policy_params.emplace_back(k, r.scalar(v, "policy value"));
  }
  const auto* teams = root.find("teams");
  if (!teams || !teams->is_seq() || teams->items.empty()) r.fail(teams ? *teams : root, "the scenario needs a non-empty 'teams' list");

  Rng master(sc.seed);
  std::vector<Draft> drafts;
  std::uint64_t order = 0;
  std::set<std::string> seen;
  for (size_t ti = 0; ti < teams->items.size(); ++ti) {
    const auto& t = teams->items[ti];
    r.check_keys(t, {"name", "shares", "gaming", "workloads"}, "team");
    if (!t.find("name")) r.fail(t, "team needs 'name'");
    const auto name = lower(r.scalar(*t.find("name"), "name"));
    if (name.empty() || name.find('/') != std::string::npos) r.fail(*t.find("name"), "team name must be a top-level account name");
    if (!seen.insert(name).second) r.fail(*t.find("name"), "team '" + name + "' appears twice");
    if (const auto* s = t.find("shares")) sc.workload.shares[name] = r.number(*s, "shares", 0, 1e9);
    if (const auto* g = t.find("gaming"); g && r.boolean(*g, "gaming")) {
      if (!sc.workload.gaming_team.empty()) r.fail(*g, "only one team can be the gaming team");
      sc.workload.gaming_team = name;
    }
    const auto* ws = t.find("workloads");
    if (!ws || !ws->is_seq()) r.fail(t, "team '" + name + "' needs a 'workloads' list");
    for (size_t wi = 0; wi < ws->items.size(); ++wi)
      generate_workload(r, ws->items[wi], name, duration, master.fork(ti * 1000 + wi + 1), order, drafts);
  }
  if (const auto* g = root.find("gaming_team")) {
    const auto name = lower(r.scalar(*g, "gaming_team"));
    if (!seen.count(name)) r.fail(*g, "gaming_team '" + name + "' is not one of the teams");
    sc.workload.gaming_team = name;
  }
  std::stable_sort(drafts.begin(), drafts.end(), [](const Draft& a, const Draft& b) {
    return a.spec.submit != b.spec.submit ? a.spec.submit < b.spec.submit : a.order < b.order;
  });
  std::vector<JobSpec> jobs;
  jobs.reserve(drafts.size());
  for (auto& d : drafts) {
    d.spec.account = sc.workload.accounts.intern(d.account);
    d.spec.user = sc.workload.users.intern(d.user);
    jobs.push_back(d.spec);
  }
  sc.job_count = jobs.size();
  sc.workload.description = sc.description;
  sc.workload.source = make_vector_source(std::move(jobs));
  return sc;
}

}  // namespace gpufair::sim
