#include "gpu_pool.h"

#include <stdexcept>

namespace gpufair::sim {

GpuPool::GpuPool(std::int32_t gpus, std::int32_t gpus_per_node)
    : total_(gpus), per_node_(gpus_per_node), free_(gpus) {
  if (gpus <= 0) throw std::invalid_argument("the cluster needs at least one GPU");
  if (per_node_ < 0) throw std::invalid_argument("gpus per node must be >= 0");
  if (per_node_ > 0) {
    if (gpus % per_node_ != 0)
      throw std::invalid_argument("gpus (" + std::to_string(gpus) + ") is not a multiple of gpus per node (" +
                                  std::to_string(per_node_) + ")");
    const auto nodes = gpus / per_node_;
    node_free_.assign(static_cast<size_t>(nodes), per_node_);
    by_free_.resize(static_cast<size_t>(per_node_) + 1);
    for (std::int32_t n = 0; n < nodes; ++n) by_free_[static_cast<size_t>(per_node_)].insert(n);
    max_free_ = per_node_;
  }
}

std::int32_t GpuPool::held_gpus(std::int32_t gpus) const {
  if (flat() || gpus <= per_node_) return gpus;
  return (gpus + per_node_ - 1) / per_node_ * per_node_;
}


void GpuPool::set_node_free(std::int32_t node, std::int32_t value) {
  auto& cur = node_free_[static_cast<size_t>(node)];
  by_free_[static_cast<size_t>(cur)].erase(node);
  free_ += value - cur;
  cur = value;
  by_free_[static_cast<size_t>(cur)].insert(node);
  if (value > max_free_) max_free_ = value;
  while (max_free_ > 0 && by_free_[static_cast<size_t>(max_free_)].empty()) --max_free_;
}

bool GpuPool::place(std::int32_t gpus, std::vector<NodeShare>& placement) {
  placement.clear();
  if (flat()) {
    if (gpus > free_) return false;
    free_ -= gpus;
    return true;
  }
  if (gpus <= per_node_) {
    for (auto f = static_cast<size_t>(gpus); f < by_free_.size(); ++f) {
      if (by_free_[f].empty()) continue;
      const auto node = *by_free_[f].begin();
      set_node_free(node, static_cast<std::int32_t>(f) - gpus);
      placement.push_back({node, gpus});
      return true;
    }
    return false;
  }
  const auto nodes = static_cast<size_t>(held_gpus(gpus) / per_node_);
  auto& empty = by_free_[static_cast<size_t>(per_node_)];
  if (empty.size() < nodes) return false;
  std::vector<std::int32_t> chosen(empty.begin(), std::next(empty.begin(), static_cast<long>(nodes)));
  for (auto n : chosen) {
    set_node_free(n, 0);
    placement.push_back({n, per_node_});
  }
  return true;
}

bool GpuPool::place_on(std::int32_t gpus, const std::vector<std::int32_t>& nodes,
                       std::vector<NodeShare>& placement) {
  placement.clear();
  if (flat()) return place(gpus, placement);
  if (gpus <= per_node_) {
    for (auto n : nodes)
      if (node_free(n) >= gpus) {
        set_node_free(n, node_free(n) - gpus);
        placement.push_back({n, gpus});
        return true;
      }
    return false;
  }
  const auto need = static_cast<size_t>(held_gpus(gpus) / per_node_);
  std::vector<std::int32_t> chosen;
  for (auto n : nodes)
    if (node_free(n) == per_node_ && chosen.size() < need) chosen.push_back(n);
  if (chosen.size() < need) return false;
  for (auto n : chosen) {
    set_node_free(n, 0);
    placement.push_back({n, per_node_});
  }
  return true;
}

void GpuPool::release(std::int32_t gpus, const std::vector<NodeShare>& placement) {
  if (flat()) {
    free_ += gpus;
    return;
  }
  for (const auto& s : placement) set_node_free(s.node, node_free(s.node) + s.gpus);
}

}  // namespace gpufair::sim
