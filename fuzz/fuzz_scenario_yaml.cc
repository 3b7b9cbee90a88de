// libFuzzer target: the simulator's YAML scenario reader (sim/scenario.h),
// libyaml underneath (sim/yaml_doc.h).
//
// The input is the whole YAML file. Checked on every input:
//   - load_yaml_string() and load_scenario() either succeed or throw
//     SourceError with a non-empty message (any other exception escaping is a
//     bug and aborts the target);
//   - an accepted scenario's jobs are well-formed: submit in [0, duration),
//     non-decreasing, gpus >= 1, runtime >= 0, account/user interned, and
//     job_count matches what the source yields; the same seed gives the same
//     jobs twice.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "job_spec.h"
#include "scenario.h"
#include "yaml_doc.h"

using gpufair::sim::JobSpec;
using gpufair::sim::SourceError;

namespace {

using fuzz_util::fail;
using fuzz_util::MemFile;



std::vector<JobSpec> drain(gpufair::sim::Scenario& sc) {
  std::vector<JobSpec> jobs;
  JobSpec j;
  while (sc.workload.source->next(j)) jobs.push_back(j);
  return jobs;
}

bool same(const std::vector<JobSpec>& a, const std::vector<JobSpec>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].submit != b[i].submit || a[i].account != b[i].account || a[i].user != b[i].user ||
        a[i].gpus != b[i].gpus || a[i].runtime != b[i].runtime || a[i].rank != b[i].rank ||
        a[i].label != b[i].label)
      return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz_util::target_name = "fuzz_scenario_yaml";
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)gpufair::sim::load_yaml_string(text, "fuzz.yaml");
  } catch (const SourceError& e) {
    if (e.message.empty()) fail("load_yaml_string: SourceError with an empty message");
  }

  static MemFile file{"fuzz_scenario_yaml"};
  file.set(data, size);
  gpufair::sim::Scenario sc;
  try {
    sc = gpufair::sim::load_scenario(file.path);
  } catch (const SourceError& e) {
    if (e.message.empty()) fail("load_scenario: SourceError with an empty message");
    return 0;
  }
  const auto duration = sc.options.horizon;
  if (duration <= 0) fail("an accepted scenario has no positive duration");
  std::vector<JobSpec> jobs = drain(sc);
  if (jobs.size() != sc.job_count) fail("job_count differs from the jobs the source yields");
  gpufair::TimePoint last = 0;
  for (const auto& j : jobs) {
    if (j.submit < 0 || j.submit >= duration) fail("a job submitted outside [0, duration)");
    if (j.submit < last) fail("jobs out of submit order");
    last = j.submit;
    if (j.gpus < 0) fail("a job with negative gpus");  // 0 = a CPU-only job
    if (j.runtime < 0) fail("a job with a negative runtime");
    if (j.account < 0 || static_cast<std::size_t>(j.account) >= sc.workload.accounts.size()) fail("bad account index");
    if (j.user < 0 || static_cast<std::size_t>(j.user) >= sc.workload.users.size()) fail("bad user index");
  }
  sc.workload.source->rewind();
  if (!same(drain(sc), jobs)) fail("rewind() does not replay the same jobs");
  auto again = gpufair::sim::load_scenario(file.path);
  if (!same(drain(again), jobs)) fail("the same file and seed give different jobs");
  return 0;
}
