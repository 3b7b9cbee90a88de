// A small deterministic random source for the simulator.
//
// Why our own: the distributions in <random> are not specified bit-for-bit,
// so the same seed could give different workloads on another libstdc++. The
// simulator promises "same seed -> byte-identical output", so every draw goes
// through this file (splitmix64 seeding, xoshiro256** stream, and inverse-CDF
// or Box-Muller transforms written down here).
#pragma once

#include <cmath>
#include <cstdint>

namespace gpufair::sim {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    std::uint64_t x = seed;
    for (auto& s : s_) s = splitmix(x);
  }

  std::uint64_t next_u64() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

  // Uniform integer in [0, n); n > 0.
  std::uint64_t below(std::uint64_t n) { return next_u64() % n; }

  double exponential(double mean) { return -mean * std::log1p(-uniform()); }

  double normal() {
    // Box-Muller; one value per call keeps the stream simple to reason about.
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }

  // A child stream: each team/workload gets its own, so adding a workload
  // does not shift the draws of the others.
  Rng fork(std::uint64_t salt) { return Rng(next_u64() ^ (salt * 0x9E3779B97F4A7C15ull)); }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t splitmix(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::uint64_t s_[4];
};

}  // namespace gpufair::sim
