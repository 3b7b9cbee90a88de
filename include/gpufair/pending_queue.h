// Who is waiting: the two oldest pending jobs of *different* teams, so "the
// oldest waiting job of another team than T" is answered in O(1) without
// keeping the queue. Fed by Engine::observe_pending once per cycle.
#pragma once

#include <optional>

#include "gpufair/job.h"
#include "gpufair/time.h"

namespace gpufair {

class OldestPendingByTeam {
 public:
  void clear() { oldest_ = {}; other_ = {}; }
  bool empty() const { return oldest_.team < 0; }

  // A pending job of `team` waiting since `since` (its eligible/submit time).
  void add(TeamId team, TimePoint since);

  // Since when the oldest pending job of a team other than `team` waits;
  // nullopt when no other team has anything pending.
  std::optional<TimePoint> oldest_other_than(TeamId team) const;

 private:
  struct Slot {
    TeamId team = -1;
    TimePoint since = 0;
  };
  Slot oldest_;  // the oldest pending job overall
  Slot other_;   // the oldest pending job of a team other than oldest_.team
};

}  // namespace gpufair
