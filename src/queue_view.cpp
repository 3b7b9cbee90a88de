#include "gpufair/queue_view.h"

#include <algorithm>
#include <cassert>

namespace gpufair {

namespace {
// Ahead in the order slurmctld and the simulator start jobs: a higher
// priority, or the same one and waiting longer.
bool ahead(std::uint32_t pa, TimePoint sa, std::uint32_t pb, TimePoint sb) {
  return pa != pb ? pa > pb : sa < sb;
}
}  // namespace

void QueueView::add(const JobRef& job) {
  if (job.team < 0 || !job.runnable || !(job.gpus > 0)) return;
  const TimePoint since = job.eligible > 0 ? job.eligible : job.submit;
  jobs_.push_back({job.priority, job.team, static_cast<float>(job.gpus), since});
  frozen_ = false;
}

void QueueView::freeze() {
  const auto before = [](const Entry& a, const Entry& b) { return ahead(a.priority, a.since, b.priority, b.since); };
  const auto higher = [](const Entry& a, const Entry& b) { return a.priority > b.priority; };
  if (std::is_sorted(jobs_.begin(), jobs_.end(), higher)) {
    // A host that hands the jobs over in its queue order (the simulator)
    // gives them sorted by priority already: only runs of equal priority
    // may still need their waiting-since order. Such a run is usually in
    // that order but for a few jobs that wait since later than their place
    // says (requeued ones): keep the longest-suffix-sorted part in place,
    // sort the few others, merge. Linear for a run with few such jobs.
    std::vector<Entry> main, side;
    for (auto run = jobs_.begin(); run != jobs_.end();) {
      auto end = std::find_if(run, jobs_.end(), [&](const Entry& e) { return e.priority != run->priority; });
      if (!std::is_sorted(run, end, before)) {
        main.clear();
        side.clear();
        for (auto it = end; it != run;) {
          --it;
          if (main.empty() || !before(main.back(), *it)) main.push_back(*it);
          else side.push_back(*it);
        }
        std::reverse(main.begin(), main.end());
        std::sort(side.begin(), side.end(), before);
        std::merge(main.begin(), main.end(), side.begin(), side.end(), run, before);
      }
      run = end;
    }
  } else {
    std::sort(jobs_.begin(), jobs_.end(), before);
  }
  frozen_ = true;
}

bool QueueView::anyone_else_waiting(TeamId team) const {
  return std::any_of(jobs_.begin(), jobs_.end(), [&](const Entry& e) { return e.team != team; });
}

JumpCost QueueView::cost_of_jump(const JobRef& jumper, TimePoint now, Seconds cap,
                                 const std::vector<char>* entitled, std::vector<PassedJob>* passed) const {
  assert(frozen_);
  JumpCost out;
  if (!(jumper.gpus > 0)) return out;
  const TimePoint jumper_since = jumper.eligible > 0 ? jumper.eligible : jumper.submit;
  double left = jumper.gpus;
  for (const Entry& e : jobs_) {
    if (left <= 0 || !ahead(e.priority, e.since, jumper.priority, jumper_since)) break;
    if (e.team == jumper.team) continue;
    if (entitled && (static_cast<std::size_t>(e.team) >= entitled->size() ||
                     !(*entitled)[static_cast<std::size_t>(e.team)]))
      continue;
    const double take = std::min<double>(e.gpus, left);
    const Seconds wait = std::max<Seconds>(0, elapsed_between(e.since, now));
    out.gpu_s += take * static_cast<double>(std::min(wait, cap));
    if (passed) passed->push_back({take, std::min(wait, cap)});
    out.oldest_wait = std::max(out.oldest_wait, static_cast<double>(wait));
    ++out.jobs_ahead;
    left -= take;
  }
  out.skipped = static_cast<Seconds>(out.gpu_s / jumper.gpus);
  return out;
}

}  // namespace gpufair
