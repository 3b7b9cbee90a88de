// What the simulator replays: jobs as a user submitted them, before any
// scheduling decision. Both trace CSVs and YAML scenarios produce these.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpufair/time.h"

namespace gpufair::sim {

// Ground truth for scoring the bait detector (trace column `label`).
enum class Label : std::uint8_t { kNone, kHonest, kBait };

// In-team rank from the trace's `qos` column: a higher QOS may preempt a
// lower one of the same team (the problem statement's rule). `mid` is a
// QOS between the two (a site with three: a gamer may keep its placeholders
// at mid, above the other teams' usual low).
inline constexpr int kRankLow = 0;
inline constexpr int kRankMid = 1;
inline constexpr int kRankHigh = 2;

// The QOS name of a rank and back (nullopt: not low, mid or high).
inline const char* qos_name(int rank) { return rank >= kRankHigh ? "high" : rank == kRankMid ? "mid" : "low"; }
inline std::optional<int> rank_of_qos(std::string_view s) {
  if (s == "low") return kRankLow;
  if (s == "mid") return kRankMid;
  if (s == "high") return kRankHigh;
  return std::nullopt;
}

struct JobSpec {
  TimePoint submit = 0;
  std::int32_t account = -1;  // index into Workload::accounts (full path below root)
  std::int32_t user = -1;     // index into Workload::users
  std::int32_t gpus = 1;
  Seconds runtime = 0;        // if never preempted
  std::int32_t rank = kRankLow;
  Label label = Label::kNone;
};

// Names interned once so a million jobs cost a few integers each.
class NameTable {
 public:
  std::int32_t intern(const std::string& name) {
    auto [it, added] = index_.try_emplace(name, static_cast<std::int32_t>(names_.size()));
    if (added) names_.push_back(name);
    return it->second;
  }
  const std::string& name(std::int32_t id) const { return names_.at(static_cast<size_t>(id)); }
  size_t size() const { return names_.size(); }

 private:
  std::map<std::string, std::int32_t> index_;
  std::vector<std::string> names_;
};

// Pulls jobs in submit order. A trace file is streamed (memory stays
// proportional to active jobs); a scenario hands out its generated list.
class JobSource {
 public:
  virtual ~JobSource() = default;
  // False at the end. Errors are thrown as SourceError with file:line.
  virtual bool next(JobSpec& job) = 0;
  // Restart from the first job (for --compare, which replays one input per policy).
  virtual void rewind() = 0;
  // Rows skipped because of --skip-bad-rows.
  virtual std::uint64_t skipped_rows() const { return 0; }
};

struct SourceError {
  std::string message;  // "file:line: reason"
};

// A workload: where the jobs come from plus what the input says about teams.
struct Workload {
  std::unique_ptr<JobSource> source;
  NameTable accounts;                     // filled as the source is read
  NameTable users;
  std::map<std::string, double> shares;   // team name -> shares (missing = default_shares)
  std::string gaming_team;                // "" = none declared
  std::string description;
};

}  // namespace gpufair::sim
