// The saved-state frame (design.md, "State"):
//   magic "GPUFAIR1" | u32 format version | u64 payload length |
//   u64 FNV-1a-64 of payload | payload            (all little-endian)
// plus the little-endian byte writer/reader the Engine fills the payload with.
// Every read is bounds-checked; a bad input is an Error, never UB.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/result.h"

namespace gpufair {

inline constexpr char kStateMagic[8] = {'G', 'P', 'U', 'F', 'A', 'I', 'R', '1'};
// 1: first format. 2: adds per-team started/preemptor GPU memory and the
// last preemptors (bait_w_jump); version 1 files still load (those start at 0).
// 3: the detector's low-rank memory in GPU-seconds (was job counts: reset
// on load), jump prices and reclaim counters, the reclaim flag of decisions.
// 4: each team's scavenger episode (since, until); older files load with none.
//    Later, within 4: a team's "rank seen" byte says the scale of its top
//    rank (1 = QOS ranks, 2 = partition tiers; older readers take 2 as seen),
//    and a decision's flags byte marks reservation decisions (bit 2).
// 5: the associations inside the teams (account, user, usage, shares) and
// each running job's association; older files load with none (every
// association starts at 0 usage).
// 6: each running job's QOS UsageFactor (older files: 1).
// 7: the jump prices still open, settled when their jumpers stop (older
// files: none, so the prices charged before stand in full).
// 8: the ids of the jobs that stopped lately and were charged from their
// start, no cycle having seen them run, and the jobs taken out of the
// running table that may still run (a reclaim's victim in its GraceTime)
// with the time they are charged to (older files: none of either); a
// running job's flags byte marks a reclaimer not yet seen running (bit 2).
inline constexpr std::uint32_t kStateFormatVersion = 8;
inline constexpr std::size_t kStateHeaderSize = 8 + 4 + 8 + 8;

std::uint64_t fnv1a64(std::span<const std::uint8_t> bytes);

// Wrap a payload in the frame.
std::vector<std::uint8_t> frame_state(std::span<const std::uint8_t> payload);
// Check the frame; returns the payload (a view into `bytes`) and its version.
struct StatePayload {
  std::uint32_t version = 0;
  std::span<const std::uint8_t> bytes;
};
Result<StatePayload> unframe_state(std::span<const std::uint8_t> bytes);

class ByteWriter {
 public:
  void u8(std::uint8_t v) { out_.push_back(v); }
  void u32(std::uint32_t v);
  void u64(std::uint64_t v);
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void f64(double v);
  void str(std::string_view s);
  std::vector<std::uint8_t>& bytes() { return out_; }

 private:
  std::vector<std::uint8_t> out_;
};

// Reads until the first failure; after that every read returns 0/"" and
// ok() is false, so a decoder can read a whole record and check once.
class ByteReader {
 public:
  explicit ByteReader(std::span<const std::uint8_t> in) : in_(in) {}
  std::uint8_t u8();
  std::uint32_t u32();
  std::uint64_t u64();
  std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
  double f64();
  std::string str();
  // A count of records each at least min_record_bytes long: fails (instead of
  // allocating) when the remaining input cannot hold that many.
  std::uint64_t count(std::size_t min_record_bytes);
  bool ok() const { return ok_; }
  std::size_t remaining() const { return in_.size() - pos_; }
  const std::string& failure() const { return failure_; }
  void fail(std::string why);

 private:
  bool take(std::size_t n);
  std::span<const std::uint8_t> in_;
  std::size_t pos_ = 0;
  bool ok_ = true;
  std::string failure_;
};

}  // namespace gpufair
