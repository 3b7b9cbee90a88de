// The cluster's GPUs: either one pool of N GPUs, or nodes x K GPUs where a job
// of at most K GPUs must fit on one node and a bigger job takes whole nodes
// (the placement rule of the issue; Slurm's cons_tres with --exclusive for
// multi-node jobs behaves the same way).
//
// Node mode keeps one ordered set of nodes per free-GPU count, so placing a
// job is O(K log nodes): best fit (the fullest node that still fits) and,
// among equals, the lowest node id, which keeps runs deterministic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

namespace gpufair::sim {

// A job's GPUs on one node.
struct NodeShare {
  std::int32_t node;
  std::int32_t gpus;
};

class GpuPool {
 public:
  // gpus_per_node == 0: one flat pool.
  GpuPool(std::int32_t gpus, std::int32_t gpus_per_node);

  std::int32_t total() const { return total_; }
  std::int32_t free() const { return free_; }
  bool flat() const { return per_node_ == 0; }
  std::int32_t gpus_per_node() const { return per_node_; }
  std::int32_t node_count() const { return static_cast<std::int32_t>(node_free_.size()); }
  std::int32_t node_free(std::int32_t node) const { return node_free_[static_cast<std::size_t>(node)]; }
  // Nodes with every GPU free (node mode only).
  std::int32_t empty_nodes() const {
    return flat() ? 0 : static_cast<std::int32_t>(by_free_.back().size());
  }

  // GPUs a request of `gpus` really holds: whole nodes above K.
  std::int32_t held_gpus(std::int32_t gpus) const;
  // Could `gpus` start now on free GPUs? O(1).
  bool fits(std::int32_t gpus) const {
    if (flat()) return gpus <= free_;
    if (gpus <= per_node_) return gpus <= max_free_;
    return static_cast<std::int64_t>(by_free_.back().size()) * per_node_ >= held_gpus(gpus);
  }
  // Nothing but a GPU-less job could start now.
  bool nothing_fits() const { return flat() ? free_ == 0 : max_free_ == 0; }
  // Take GPUs; false (and nothing taken) when they do not fit.
  bool place(std::int32_t gpus, std::vector<NodeShare>& placement);
  // Take GPUs on a given set of nodes (after preemption freed them).
  bool place_on(std::int32_t gpus, const std::vector<std::int32_t>& nodes,
                std::vector<NodeShare>& placement);
  void release(std::int32_t gpus, const std::vector<NodeShare>& placement);

 private:
  void set_node_free(std::int32_t node, std::int32_t value);

  std::int32_t total_, per_node_, free_;
  std::vector<std::int32_t> node_free_;
  std::vector<std::set<std::int32_t>> by_free_;  // free count -> nodes
  std::int32_t max_free_ = 0;                     // most free GPUs on one node
};

}  // namespace gpufair::sim
