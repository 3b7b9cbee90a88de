// A synthetic trace for speed runs: Poisson arrivals sized so the cluster
// runs at a chosen load, a skewed spread of jobs over teams, realistic GPU
// counts and log-normal runtimes. Deterministic for a seed.
#pragma once

#include <cstdint>
#include <cstdio>

namespace gpufair::sim {

struct GeneratorOptions {
  std::uint64_t jobs = 1000000;
  std::int32_t gpus = 10000;   // the cluster the load is computed for
  std::int32_t teams = 50;
  double load = 0.9;           // offered GPU-time / capacity
  double high_fraction = 0.05; // share of qos=high jobs
  std::uint64_t seed = 1;
};

// Writes a trace CSV (with a header) to out.
void generate_trace(const GeneratorOptions& options, std::FILE* out);

}  // namespace gpufair::sim
