#include "gpufair/pending_queue.h"

namespace gpufair {

void OldestPendingByTeam::add(TeamId team, TimePoint since) {
  if (team < 0) return;
  if (oldest_.team < 0) {
    oldest_ = {team, since};
    return;
  }
  if (since < oldest_.since) {
    // The previous oldest becomes the oldest of "another team" only if it
    // belongs to a different team; otherwise other_ already is.
    if (oldest_.team != team) other_ = oldest_;
    oldest_ = {team, since};
  } else if (team != oldest_.team && (other_.team < 0 || since < other_.since)) {
    other_ = {team, since};
  }
}

std::optional<TimePoint> OldestPendingByTeam::oldest_other_than(TeamId team) const {
  if (oldest_.team >= 0 && oldest_.team != team) return oldest_.since;
  if (other_.team >= 0 && other_.team != team) return other_.since;
  return std::nullopt;
}

}  // namespace gpufair
