#include "trace_generator.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "job_spec.h"
#include "rng.h"
#include "trace_csv.h"

namespace gpufair::sim {

void generate_trace(const GeneratorOptions& o, std::FILE* out) {
  Rng rng(o.seed);
  // GPU counts as in published ML cluster studies: mostly small jobs.
  const int sizes[] = {1, 1, 1, 1, 1, 2, 2, 4, 4, 8};
  double mean_gpus = 0;
  for (int s : sizes) mean_gpus += s;
  mean_gpus /= 10;
  const double median_runtime = 3600, sigma = 1.0;
  const double mean_runtime = median_runtime * std::exp(sigma * sigma / 2);
  const double rate = o.load * o.gpus / (mean_gpus * mean_runtime);  // jobs per second
  // Team weights ~ 1/(i+1): a few big teams and a long tail, like real clusters.
  std::vector<double> cum;
  double total = 0;
  for (int i = 0; i < o.teams; ++i) cum.push_back(total += 1.0 / (i + 1));
  std::vector<std::string> names;
  for (int i = 0; i < o.teams; ++i) names.push_back("team" + std::to_string(i));
  TraceWriter w(out, false);
  double t = 0;
  for (std::uint64_t n = 0; n < o.jobs; ++n) {
    t += rng.exponential(1.0 / rate);
    const double u = rng.uniform() * total;
    size_t team = 0;
    while (team + 1 < cum.size() && u >= cum[team]) ++team;
    const int gpus = sizes[rng.below(10)];
    const auto runtime = static_cast<Seconds>(std::llround(std::clamp(median_runtime * std::exp(sigma * rng.normal()), 60.0, 7 * 86400.0)));
    const int rank = rng.uniform() < o.high_fraction ? kRankHigh : kRankLow;
    w.write(static_cast<TimePoint>(t), names[team], names[team] + "-u" + std::to_string(rng.below(4)), gpus, runtime,
            rank, Label::kNone);
  }
}

}  // namespace gpufair::sim
