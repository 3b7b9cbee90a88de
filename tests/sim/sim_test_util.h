// Helpers shared by the simulator tests: temporary files and running a
// scenario or a small inline trace through one policy.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>

#include "counterfactual.h"
#include "gpufair/config.h"
#include "run_result.h"
#include "scenario.h"
#include "simulator.h"
#include "trace_csv.h"

namespace gpufair::sim::testing {

inline std::string scenario_path(const std::string& name) {
  return std::string(GPUFAIR_SIM_SCENARIOS) + "/" + name + ".yaml";
}

// A file under the test's temporary directory, removed at destruction.
class TempFile {
 public:
  explicit TempFile(const std::string& contents, const std::string& suffix = ".csv") {
    static int counter = 0;
    path_ = (std::filesystem::temp_directory_path() /
             ("gpufair-sim-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + suffix))
                .string();
    std::ofstream(path_) << contents;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline Config config_from(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string s;
  for (const auto& [k, v] : params) s += (s.empty() ? "" : ",") + k + "=" + v;
  auto c = parse_config(s);
  if (!c) throw std::runtime_error("bad test config: " + c.error().message);
  return *c;
}

// extra: PriorityParameters keys on top of the scenario's (gpufair-sim --set).
inline RunResult run_scenario(const std::string& name, const std::string& policy, std::uint64_t seed = 0,
                              const std::vector<std::pair<std::string, std::string>>& extra = {}) {
  auto sc = load_scenario(scenario_path(name), seed);
  auto params = sc.policy_params;
  for (const auto& kv : extra) params.push_back(kv);
  return simulate(sc.workload, policy, config_from(params), sc.options);
}

// The scenario as given and with its gaming team honest (bait-labelled jobs
// dropped), same seed and policy: gpufair-sim --counterfactual.
// null_bait: the "gamer" submits its bait as 1-GPU 1-second jobs (the noise
// floor of gain and harm).
inline Counterfactual run_counterfactual(const std::string& name, const std::string& policy,
                                         std::uint64_t seed = 0,
                                         const std::vector<std::pair<std::string, std::string>>& extra = {},
                                         bool null_bait = false) {
  auto sc = load_scenario(scenario_path(name), seed);
  auto params = sc.policy_params;
  for (const auto& kv : extra) params.push_back(kv);
  const Config config = config_from(params);
  SimOptions gaming_options = sc.options;
  gaming_options.null_bait = null_bait;
  const RunResult gaming = simulate(sc.workload, policy, config, gaming_options);
  SimOptions honest_options = sc.options;
  honest_options.drop_bait = true;
  const RunResult honest = simulate(sc.workload, policy, config, honest_options);
  auto c = compare_counterfactual(gaming, honest);
  if (!c) throw std::runtime_error(name + ": no gaming team");
  return *c;
}

inline RunResult run_trace(const std::string& csv, const std::string& policy, SimOptions options,
                           const std::string& params = "calc_period=60") {
  TempFile f(csv);
  Workload w;
  w.source = open_trace(f.path(), w, {});
  auto c = parse_config(params);
  if (!c) throw std::runtime_error("bad test config: " + c.error().message);
  return simulate(w, policy, *c, options);
}

// The name is a string_view, not a const std::string&: the result refers into
// r only, and a literal name then makes no temporary std::string that GCC 14's
// -Wdangling-reference would take the result to refer to.
inline const TeamResult& team(const RunResult& r, std::string_view name) {
  for (const auto& t : r.teams)
    if (t.name == name) return t;
  throw std::runtime_error("no team " + std::string(name));
}

}  // namespace gpufair::sim::testing
