// libFuzzer target: the state file loader (Engine::load_state) on arbitrary
// bytes, and the save -> load -> save round trip.
//
// Every input is tried twice:
//   1. as it is: a rejection must carry a non-empty message, and must leave
//      the engine's previous state untouched (its saved bytes are unchanged);
//   2. if it starts with the magic, with its frame repaired (payload length
//      and FNV-1a checksum recomputed): this lets mutations of a valid state
//      file reach the payload decoder instead of dying at the checksum.
// Whenever a load is accepted: save() -> load() into a fresh engine -> save()
// must give identical bytes; the loaded engine must survive a cycle, reports
// and priority queries, and its numbers must be finite.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "gpufair/config.h"
#include "gpufair/engine.h"
#include "gpufair/state.h"

namespace {

[[noreturn]] void fail(const char* what, std::span<const std::uint8_t> input) {
  std::fprintf(stderr, "fuzz_state: %s (input %zu bytes)\n", what, input.size());
  std::abort();
}

const gpufair::Config& config() {
  static const gpufair::Config c = [] {
    auto r = gpufair::parse_config("");
    if (!r.ok()) {
      std::fprintf(stderr, "fuzz_state: default config rejected: %s\n", r.error().message.c_str());
      std::abort();
    }
    return *r;
  }();
  return c;
}

// An engine with a little state of its own, so a rejected load can be seen
// not to disturb it.
void seed_engine(gpufair::Engine& e) {
  gpufair::TeamId a = e.team_for_account("seed_a");
  e.set_cluster_gpus(32);
  e.begin_cycle(1000);
  gpufair::JobRef j;
  j.id = 1;
  j.team = a;
  j.gpus = 2;
  j.submit = 900;
  j.start = 950;
  e.observe_running(j, 1000);
  e.end_cycle(1000);
}

void exercise(gpufair::Engine& e, std::span<const std::uint8_t> input) {
  // The loaded state must be usable: a cycle after its own last cycle time,
  // reports, a priority per team. Numbers must stay finite.
  const gpufair::TimePoint now = 2'000'000'000;
  e.begin_cycle(now);
  e.end_cycle(now);
  for (const auto& r : e.report(now)) {
    if (!std::isfinite(r.usage_gpu_s) || !std::isfinite(r.penalty) ||
        !std::isfinite(r.fairshare) || !std::isfinite(r.effective_fairshare))
      fail("a loaded state gives a non-finite usage, penalty or fair share", input);
    if (r.fairshare < 0 || r.fairshare > 1 || r.effective_fairshare < 0 || r.effective_fairshare > 1)
      fail("a loaded state gives a fair-share factor outside [0,1]", input);
  }
  for (gpufair::TeamId t = 0; t < e.team_count(); ++t) {
    gpufair::PriorityInput in;
    in.team = t;
    in.gpus = 1;
    in.eligible = now - 3600;
    auto f = e.priority(in, now);
    if (f.priority == 0) fail("priority 0 (held) computed from a loaded state", input);
  }
}

void try_load(std::span<const std::uint8_t> bytes) {
  gpufair::Engine e(config());
  seed_engine(e);
  const std::vector<std::uint8_t> before = e.save_state();
  auto r = e.load_state(bytes);
  if (!r.ok()) {
    if (r.error().message.empty()) fail("load_state rejected the input with an empty message", bytes);
    if (e.save_state() != before) fail("a rejected load changed the engine's state", bytes);
    return;
  }
  const std::vector<std::uint8_t> s1 = e.save_state();
  gpufair::Engine e2(config());
  auto r2 = e2.load_state(s1);
  if (!r2.ok()) {
    std::fprintf(stderr, "fuzz_state: reload error: %s\n", r2.error().message.c_str());
    fail("the engine's own saved state does not load back", bytes);
  }
  const std::vector<std::uint8_t> s2 = e2.save_state();
  if (s1 != s2) fail("save -> load -> save is not byte-identical", bytes);
  exercise(e2, bytes);
}

void put_le64(std::uint8_t* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::uint8_t> in(data, size);
  try_load(in);

  if (size >= gpufair::kStateHeaderSize &&
      std::memcmp(data, gpufair::kStateMagic, sizeof gpufair::kStateMagic) == 0) {
    std::vector<std::uint8_t> fixed(data, data + size);
    std::span<const std::uint8_t> payload(fixed.data() + gpufair::kStateHeaderSize,
                                          size - gpufair::kStateHeaderSize);
    put_le64(fixed.data() + 12, payload.size());
    put_le64(fixed.data() + 20, gpufair::fnv1a64(payload));
    if (fixed != std::vector<std::uint8_t>(data, data + size)) try_load(fixed);
  }
  return 0;
}
