// gpufair-sim: the command line. See --help (kUsage below) for every option.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpufair/config.h"
#include "counterfactual.h"
#include "helios_convert.h"
#include "report.h"
#include "scenario.h"
#include "simulator.h"
#include "text_util.h"
#include "trace_csv.h"
#include "trace_generator.h"

namespace {

using namespace gpufair;
using namespace gpufair::sim;

constexpr const char* kUsage = R"(gpufair-sim: replay GPU jobs through fifo, Slurm's multifactor, or gpufair's policy core

usage:
  gpufair-sim (--trace FILE.csv | --scenario FILE.yaml) [options]
  gpufair-sim convert --from helios IN.csv [-o OUT.csv] [--skip-bad-rows]
  gpufair-sim generate [--jobs N] [--gpus N] [--teams N] [--load F] [--high-fraction F]
                       [--seed N] [-o OUT.csv]

input (one of):
  --trace FILE.csv        trace with header: submit,account,user,gpus,runtime[,qos][,label]
                          (submit/runtime in seconds, qos low|high, label bait|honest)
  --scenario FILE.yaml    synthetic workload, cluster and policy keys (sim/scenarios/)

cluster (a scenario sets these; the flags override it):
  --gpus N                GPUs in the cluster (required with --trace)
  --gpus-per-node K       jobs of <= K GPUs fit on one node, bigger ones take whole nodes
                          (default: one pool)
  --no-backfill           main scheduler only (default: EASY backfill every 30 s)
  --backfill-interval D   e.g. 30s, 1m (Slurm's bf_interval; default 30s)
  --backfill-depth N      jobs a backfill pass looks at (bf_max_job_test; default 500)
  --backfill-window D     no reservation for a start later than this (bf_window; default 1d)
  --requeue-hold D        a requeued victim may start again this long after it was preempted
                          (Slurm: the credential expiry window + 1 s; default 1201s, 0 = at once)
  --preempt-mode M        requeue (default; the victim goes back to the queue) or cancel
  --handoff H             who gets the GPUs a backfill preemption frees: priority (default,
                          Slurm's: the next passes give them in priority order) or preemptor
                          (the atomic model of the figures before 2026-12-06: it starts on
                          them at once); docs/design.md, "Who gets the GPUs a preemption
                          frees"
  --horizon D             stop at simulated time D (default: scenario duration, or when
                          every trace job is done)
  --measure-from D        count GPU-hours, shares and Jain from D (warm-up excluded)

policy:
  --policy P              fifo | multifactor | gpufair (default gpufair)
  --compare P1,P2,...     run the same input under several policies, side by side
  --set key=value         a PriorityParameters key (half_life, calc_period, max_age,
                          weight_*, bait_*, penalty_*, skip_charge, ...); repeatable;
                          bait_profile=recommended|fast sets the bait rule at once;
                          overrides the scenario's policy section. Applies to
                          multifactor too (half_life, calc_period, max_age, weights).
  --shares T=S[,T=S]      shares per team (default: scenario's, else default_shares)
  --gaming-team NAME      whose qos=high jobs the gaming advantage measures
                          (default: the scenario's, else the team with most bait labels)
  --seed N                replace the scenario's seed

output:
  --json FILE             the run as JSON (single policy)
  --out-dir DIR           DIR/<policy>.json for every policy run
  --null-bait             submit the jobs labelled bait as 1-GPU (or GPU-less) 1-second jobs:
                          with --counterfactual, the noise floor of gain and harm
  --counterfactual        also run each policy with the gaming team honest (its jobs
                          labelled bait dropped, same seed) and report gain (the
                          gamer's real-work p50/p90 wait honest / gaming, > 1 means
                          gaming paid) and harm (each other team's wait gaming /
                          honest); text, DIR/counterfactual.json, FILE.counterfactual.json
  --svg DIR               DIR/<policy>.svg: GPU-hour share over time, wait CDFs
  --decisions FILE        one line per in-team preemption with the detector's verdict
  --quiet                 no table on stdout
  --skip-bad-rows         count and skip malformed trace rows instead of stopping

Same input and seed give byte-identical JSON apart from the wall_seconds line.
)";

[[noreturn]] void usage_error(const std::string& why) {
  std::fprintf(stderr, "gpufair-sim: %s\n(see gpufair-sim --help)\n", why.c_str());
  std::exit(2);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const auto p = s.find(sep, start);
    out.push_back(s.substr(start, p - start));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return out;
}

Seconds duration_arg(const std::string& flag, const std::string& v) {
  const auto r = parse_duration(v);
  if (!r || *r < 0) usage_error(flag + " '" + v + "': " + (r ? "must not be negative" : r.error().message));
  return *r;
}

long long int_arg(const std::string& flag, const std::string& v, long long lo, long long hi) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || x < lo || x > hi)
    usage_error(flag + " '" + v + "' is not a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}

double real_arg(const std::string& flag, const std::string& v, double lo, double hi) {
  double x = 0;
  if (!parse_number(v, x) || x < lo || x > hi)
    usage_error(flag + " '" + v + "' is not a number in [" + fmt(lo, 2) + ", " + fmt(hi, 2) + "]");
  return x;
}

std::FILE* open_out(const std::string& path) {
  if (path.empty() || path == "-") return stdout;
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "gpufair-sim: %s: cannot write: %s\n", path.c_str(), std::strerror(errno));
    std::exit(1);
  }
  return f;
}

int run_convert(int argc, char** argv) {
  std::string from, in, out;
  bool skip = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--from") from = value();
    else if (a == "-o" || a == "--output") out = value();
    else if (a == "--skip-bad-rows") skip = true;
    else if (a == "--help" || a == "-h") { std::fputs(kUsage, stdout); return 0; }
    else if (!a.empty() && a[0] == '-') usage_error("convert: unknown option " + a);
    else if (in.empty()) in = a;
    else usage_error("convert: one input file only");
  }
  if (from != "helios") usage_error("convert: --from must be helios (SenseTime Helios cluster_log.csv)");
  if (in.empty()) usage_error("convert: no input file");
  std::FILE* f = open_out(out);
  try {
    const auto st = convert_helios(in, f, skip);
    if (f != stdout) std::fclose(f);
    std::fprintf(stderr, "converted %llu of %llu rows (%llu CPU-only, %llu never started, %llu bad)\n",
                 static_cast<unsigned long long>(st.written), static_cast<unsigned long long>(st.rows),
                 static_cast<unsigned long long>(st.cpu_only), static_cast<unsigned long long>(st.never_started),
                 static_cast<unsigned long long>(st.bad));
    for (const auto& e : st.errors) std::fprintf(stderr, "  skipped %s\n", e.c_str());
  } catch (const SourceError& e) {
    std::fprintf(stderr, "gpufair-sim: %s\n", e.message.c_str());
    return 1;
  }
  return 0;
}

int run_generate(int argc, char** argv) {
  GeneratorOptions o;
  std::string out;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--jobs") o.jobs = static_cast<std::uint64_t>(int_arg(a, value(), 1, 1'000'000'000));
    else if (a == "--gpus") o.gpus = static_cast<std::int32_t>(int_arg(a, value(), 1, 100'000'000));
    else if (a == "--teams") o.teams = static_cast<std::int32_t>(int_arg(a, value(), 1, 1'000'000));
    else if (a == "--load") o.load = real_arg(a, value(), 0.01, 100);
    else if (a == "--high-fraction") o.high_fraction = real_arg(a, value(), 0, 1);
    else if (a == "--seed") o.seed = static_cast<std::uint64_t>(int_arg(a, value(), 0, (1LL << 62)));
    else if (a == "-o" || a == "--output") out = value();
    else if (a == "--help" || a == "-h") { std::fputs(kUsage, stdout); return 0; }
    else usage_error("generate: unknown option " + a);
  }
  std::FILE* f = open_out(out);
  generate_trace(o, f);
  if (f != stdout && std::fclose(f) != 0) {
    std::fprintf(stderr, "gpufair-sim: %s: write failed\n", out.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "convert") == 0) return run_convert(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "generate") == 0) return run_generate(argc, argv);

  std::string trace, scenario_path, json, out_dir, svg, decisions_path, gaming, shares_arg;
  std::vector<std::string> policies, sets;
  bool quiet = false, skip_bad = false, no_backfill = false, counterfactual = false, null_bait = false;
  std::optional<std::int32_t> gpus, per_node;
  std::optional<Seconds> horizon, measure_from, bf_interval, bf_window, requeue_hold;
  std::optional<std::int32_t> bf_depth;
  std::optional<PreemptMode> preempt_mode;
  std::optional<Handoff> handoff;
  std::uint64_t seed = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") { std::fputs(kUsage, stdout); return 0; }
    else if (a == "--trace") trace = value();
    else if (a == "--scenario") scenario_path = value();
    else if (a == "--gpus") gpus = static_cast<std::int32_t>(int_arg(a, value(), 1, 100'000'000));
    else if (a == "--gpus-per-node") per_node = static_cast<std::int32_t>(int_arg(a, value(), 0, 1024));
    else if (a == "--no-backfill") no_backfill = true;
    else if (a == "--backfill-interval") bf_interval = duration_arg(a, value());
    else if (a == "--backfill-depth") bf_depth = static_cast<std::int32_t>(int_arg(a, value(), 1, 10'000'000));
    else if (a == "--backfill-window") bf_window = duration_arg(a, value());
    else if (a == "--requeue-hold") requeue_hold = duration_arg(a, value());
    else if (a == "--preempt-mode") {
      const auto v = value();
      if (v == "requeue") preempt_mode = PreemptMode::kRequeue;
      else if (v == "cancel") preempt_mode = PreemptMode::kCancel;
      else usage_error("--preempt-mode '" + v + "' is not requeue or cancel");
    } else if (a == "--handoff") {
      const auto v = value();
      handoff = handoff_named(v);
      if (!handoff) usage_error("--handoff '" + v + "' is not priority or preemptor");
    } else if (a == "--horizon") horizon = duration_arg(a, value());
    else if (a == "--measure-from") measure_from = duration_arg(a, value());
    else if (a == "--policy") policies = {value()};
    else if (a == "--compare") policies = split(value(), ',');
    else if (a == "--set") sets.push_back(value());
    else if (a == "--shares") shares_arg = value();
    else if (a == "--gaming-team") gaming = lower(value());
    else if (a == "--seed") seed = static_cast<std::uint64_t>(int_arg(a, value(), 1, (1LL << 62)));
    else if (a == "--json") json = value();
    else if (a == "--out-dir") out_dir = value();
    else if (a == "--svg") svg = value();
    else if (a == "--decisions") decisions_path = value();
    else if (a == "--quiet") quiet = true;
    else if (a == "--counterfactual") counterfactual = true;
    else if (a == "--null-bait") null_bait = true;
    else if (a == "--skip-bad-rows") skip_bad = true;
    else usage_error("unknown option " + a);
  }
  if (trace.empty() == scenario_path.empty()) usage_error("give exactly one of --trace or --scenario");
  if (policies.empty()) policies = {"gpufair"};
  for (const auto& p : policies)
    if (p != "fifo" && p != "multifactor" && p != "gpufair")
      usage_error("policy '" + p + "' is not fifo, multifactor or gpufair");
  if (!json.empty() && policies.size() > 1) usage_error("--json takes one policy; with --compare use --out-dir DIR");

  try {
    Workload workload;
    SimOptions options;
    std::vector<std::pair<std::string, std::string>> params;
    std::string title;
    if (!scenario_path.empty()) {
      auto sc = load_scenario(scenario_path, seed);
      workload = std::move(sc.workload);
      options = sc.options;
      params = sc.policy_params;
      title = sc.name;
    } else {
      if (!gpus) usage_error("--trace needs --gpus N");
      workload.source = open_trace(trace, workload, TraceOptions{skip_bad});
      title = trace;
    }
    if (gpus) options.gpus = *gpus;
    options.null_bait = null_bait;
    if (per_node) options.gpus_per_node = *per_node;
    if (no_backfill) options.backfill = false;
    if (bf_interval) options.backfill_interval = std::max<Seconds>(1, *bf_interval);
    if (bf_depth) options.backfill_depth = *bf_depth;
    if (bf_window) options.backfill_window = std::max<Seconds>(1, *bf_window);
    if (requeue_hold) options.requeue_hold = std::max<Seconds>(0, *requeue_hold);
    if (preempt_mode) options.preempt_mode = *preempt_mode;
    if (handoff) options.handoff = *handoff;
    if (horizon) options.horizon = *horizon;
    if (measure_from) options.measure_from = *measure_from;
    if (!gaming.empty()) options.gaming_team = gaming;
    if (!shares_arg.empty())
      for (const auto& kv : split(shares_arg, ',')) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos) usage_error("--shares entry '" + kv + "' is not team=shares");
        workload.shares[lower(kv.substr(0, eq))] = real_arg("--shares", kv.substr(eq + 1), 0, 1e9);
      }
    for (const auto& s : sets) {
      const auto eq = s.find('=');
      if (eq == std::string::npos || eq == 0) usage_error("--set '" + s + "' is not key=value");
      bool replaced = false;
      for (auto& [k, v] : params)
        if (k == s.substr(0, eq)) { v = s.substr(eq + 1); replaced = true; }
      if (!replaced) params.emplace_back(s.substr(0, eq), s.substr(eq + 1));
    }
    std::string param_string;
    for (const auto& [k, v] : params) param_string += (param_string.empty() ? "" : ",") + k + "=" + v;
    const auto config = parse_config(param_string);
    if (!config) {
      std::fprintf(stderr, "gpufair-sim: policy parameters: %s\n", config.error().message.c_str());
      return 2;
    }
    std::FILE* decisions = decisions_path.empty() ? nullptr : open_out(decisions_path);
    options.decisions = decisions;

    std::vector<RunResult> runs;
    for (const auto& p : policies) {
      if (decisions) std::fprintf(decisions, "# policy %s\n", p.c_str());
      runs.push_back(simulate(workload, p, *config, options));
      const auto& r = runs.back();
      if (!quiet) print_table(stdout, r, title);
      if (!json.empty()) write_text_file(json, to_json(r, title));
      if (!out_dir.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(out_dir, ec);
        write_text_file(out_dir + "/" + p + ".json", to_json(r, title));
      }
      if (!svg.empty()) write_svg(svg, r, title);
    }
    if (!quiet && runs.size() > 1) print_comparison(stdout, runs);
    if (counterfactual) {
      // The same workload, same seed, with the gaming team honest: its jobs
      // labelled bait (placeholders) never submitted.
      SimOptions honest_options = options;
      honest_options.drop_bait = true;
      honest_options.decisions = nullptr;
      std::vector<Counterfactual> cfs;
      for (size_t i = 0; i < policies.size(); ++i) {
        const RunResult honest = simulate(workload, policies[i], *config, honest_options);
        auto c = compare_counterfactual(runs[i], honest);
        if (!c) {
          std::fprintf(stderr, "gpufair-sim: --counterfactual needs a gaming team (scenario gaming_team, "
                               "--gaming-team, or bait labels in the trace)\n");
          return 2;
        }
        cfs.push_back(std::move(*c));
        if (!out_dir.empty()) write_text_file(out_dir + "/" + policies[i] + "-honest.json", to_json(honest, title + " (honest)"));
      }
      if (!quiet) print_counterfactual(stdout, cfs);
      if (!out_dir.empty()) write_text_file(out_dir + "/counterfactual.json", counterfactual_json(cfs, title));
      if (!json.empty()) write_text_file(json + ".counterfactual.json", counterfactual_json(cfs, title));
    }
    if (decisions && decisions != stdout) std::fclose(decisions);
  } catch (const SourceError& e) {
    std::fprintf(stderr, "gpufair-sim: %s\n", e.message.c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpufair-sim: %s\n", e.what());
    return 1;
  }
  return 0;
}
