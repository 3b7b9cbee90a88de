// The simulator's pending queue: every pending job in priority order, built
// for a queue that keeps growing (an overloaded cluster).
//
// The order is rebuilt once per calc period (the policy's cycle gives every
// job a new priority); between cycles jobs only arrive (submit, requeue) and
// leave (start). So the queue is a sorted vector from the last rebuild, in
// which a job that left is only marked (a tombstone: its slot's queue epoch
// no longer matches), plus an ordered set of the jobs that arrived since.
// Walking it in order merges the two. Compared with one std::set of every
// pending job, the per-cycle rebuild is one sort of a flat vector instead of
// n node allocations and inserts, and a walk touches contiguous memory.
//
// The order is exactly the one a single ordered set of the same keys would
// give (the keys are unique: the job id breaks every tie), including while
// the queue changes under a walk: a job that arrives behind the walk's
// position is visited, one that arrives before it is not, as with set
// iterators.
#pragma once

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "gpufair/job.h"
#include "job_spec.h"

namespace gpufair::sim {

// Queue order: higher priority first, then earlier submit, then lower id.
// Job ids are handed out at submit, in submit order, so "earlier submit,
// then lower id" is "lower id" (a requeued job keeps both), and the whole
// order fits one 64-bit number: the priority's complement above the id.
// Priorities are 32-bit, as in Slurm (a larger one would compare as 2^32-1;
// no policy returns one), and ids below 2^32 (Simulator::submit checks).
struct PendKey {
  std::uint64_t order;
  std::uint32_t slot;
  std::uint32_t epoch;  // which stay in the queue this key belongs to

  static std::uint64_t order_of(std::uint64_t priority, JobId id) {
    const std::uint64_t p = priority < 0xFFFFFFFFull ? priority : 0xFFFFFFFFull;
    return ((0xFFFFFFFFull - p) << 32) | (id & 0xFFFFFFFFull);
  }
  JobId id() const { return order & 0xFFFFFFFFull; }
  bool operator<(const PendKey& o) const { return order < o.order; }
};

// Sorts keys by order, the same result as std::sort (the keys are unique):
// a least-significant-byte radix sort over the bytes in which the keys
// differ, for the per-cycle sort of a long queue; std::sort below that.
inline void sort_keys(std::vector<PendKey>& keys, std::vector<PendKey>& scratch) {
  const std::size_t n = keys.size();
  if (n < 2048) {
    std::sort(keys.begin(), keys.end());
    return;
  }
  std::uint64_t varying = 0;
  for (const auto& k : keys) varying |= k.order ^ keys[0].order;
  scratch.resize(n);
  for (int shift = 0; shift < 64; shift += 8) {
    if (((varying >> shift) & 0xFF) == 0) continue;
    std::size_t count[257] = {};
    for (const auto& k : keys) ++count[((k.order >> shift) & 0xFF) + 1];
    for (int b = 0; b < 256; ++b) count[b + 1] += count[b];
    for (const auto& k : keys) scratch[count[(k.order >> shift) & 0xFF]++] = k;
    keys.swap(scratch);
  }
}

class PendingQueue {
 public:
  class Walk;

  std::size_t size() const { return live_; }
  bool empty() const { return live_ == 0; }

  // A job enters the queue; its key's epoch is assigned here.
  PendKey insert(PendKey k) {
    if (k.slot >= epoch_of_.size()) {
      epoch_of_.resize(static_cast<std::size_t>(k.slot) + 1, 0);
      in_fresh_.resize(static_cast<std::size_t>(k.slot) + 1, 0);
    }
    k.epoch = ++epoch_;
    if (k.epoch == 0) k.epoch = ++epoch_;  // 0 means "not queued"
    epoch_of_[k.slot] = k.epoch;
    in_fresh_[k.slot] = 1;
    fresh_.insert(k);
    ++fresh_version_;
    ++live_;
    return k;
  }

  // A queued job leaves (`k` as returned by insert or by the last rebuild).
  void erase(const PendKey& k) {
    if (!contains(k)) return;
    epoch_of_[k.slot] = 0;
    if (in_fresh_[k.slot]) {
      fresh_.erase(k);
      ++fresh_version_;
      in_fresh_[k.slot] = 0;
    }
    --live_;
  }

  bool contains(const PendKey& k) const {
    return k.slot < epoch_of_.size() && epoch_of_[k.slot] == k.epoch && k.epoch != 0;
  }

  // The first job in order (the queue must not be empty).
  const PendKey& front() {
    skip_dead_head();
    if (fresh_.empty()) return sorted_[head_];
    if (head_ == sorted_.size()) return *fresh_.begin();
    return *fresh_.begin() < sorted_[head_] ? *fresh_.begin() : sorted_[head_];
  }

  // Every queued key in order, into `out` (cleared first).
  void collect(std::vector<PendKey>& out) const;

  // Replace the whole order: `keys` are the queued jobs with their new
  // priorities (same slots and epochs), sorted by the caller. `keys` gets
  // the old buffer back, for reuse.
  void rebuild(std::vector<PendKey>& keys) {
    for (const auto& k : fresh_) in_fresh_[k.slot] = 0;
    fresh_.clear();
    ++fresh_version_;
    sorted_.swap(keys);
    head_ = 0;
    live_ = sorted_.size();
  }

  Walk walk() const;

 private:
  friend class Walk;
  void skip_dead_head() {
    while (head_ < sorted_.size() && !contains(sorted_[head_])) ++head_;
  }

  std::vector<PendKey> sorted_;
  std::size_t head_ = 0;  // sorted_[0, head_) are all gone
  std::set<PendKey> fresh_;
  std::uint64_t fresh_version_ = 0;
  std::vector<std::uint32_t> epoch_of_;  // by slot: epoch of its queued key, 0 = not queued
  std::vector<std::uint8_t> in_fresh_;   // by slot: its key is in fresh_
  std::uint32_t epoch_ = 0;
  std::size_t live_ = 0;
};

// A walk over the queue in order. It tolerates the queue changing between
// steps (jobs leaving anywhere, jobs arriving anywhere) exactly like a loop
// over a std::set that reads the current element and advances its iterator
// before acting on it: the position is the job that followed the one last
// returned at the time it was returned, so an arrival that sorts after that
// job is still to come, and one that sorts before it is not.
class PendingQueue::Walk {
 public:
  explicit Walk(const PendingQueue& q) : q_(&q), i_(q.head_), f_(q.fresh_.begin()), version_(q.fresh_version_) {}

  // The next queued job in order, or nullptr at the end.
  const PendKey* next() {
    if (at_end_) return nullptr;
    if (version_ != q_->fresh_version_) {
      f_ = started_ ? q_->fresh_.lower_bound(succ_) : q_->fresh_.begin();
      version_ = q_->fresh_version_;
    }
    const PendKey* pick = take();
    if (!pick) return nullptr;
    cur_ = *pick;
    started_ = true;
    // The iterator's advance: remember where the walk stands now.
    const PendKey* s = peek_sorted();
    const PendKey* f = f_ != q_->fresh_.end() ? &*f_ : nullptr;
    if (s && (!f || *s < *f)) succ_ = *s;
    else if (f) succ_ = *f;
    else at_end_ = true;
    return &cur_;
  }

 private:
  const PendKey* peek_sorted() {
    while (i_ < q_->sorted_.size() && !q_->contains(q_->sorted_[i_])) ++i_;
    return i_ < q_->sorted_.size() ? &q_->sorted_[i_] : nullptr;
  }
  const PendKey* take() {
    const PendKey* s = peek_sorted();
    const PendKey* f = f_ != q_->fresh_.end() ? &*f_ : nullptr;
    if (s && (!f || *s < *f)) {
      ++i_;
      return s;
    }
    if (f) {
      ++f_;
      return f;
    }
    return nullptr;
  }

  const PendingQueue* q_;
  std::size_t i_;
  std::set<PendKey>::const_iterator f_;
  std::uint64_t version_;
  PendKey cur_{}, succ_{};
  bool started_ = false, at_end_ = false;
};

inline PendingQueue::Walk PendingQueue::walk() const { return Walk(*this); }

inline void PendingQueue::collect(std::vector<PendKey>& out) const {
  out.clear();
  out.reserve(live_);
  // A plain merge: nothing changes under it.
  auto f = fresh_.begin();
  for (std::size_t i = head_; i < sorted_.size(); ++i) {
    const PendKey& s = sorted_[i];
    if (!contains(s)) continue;
    for (; f != fresh_.end() && *f < s; ++f) out.push_back(*f);
    out.push_back(s);
  }
  for (; f != fresh_.end(); ++f) out.push_back(*f);
}

}  // namespace gpufair::sim
