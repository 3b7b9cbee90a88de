#include <stdexcept>

#include "policies.h"

namespace gpufair::sim {

std::unique_ptr<SchedPolicy> make_policy(const std::string& policy, const Config& config) {
  if (policy == "fifo") return std::make_unique<FifoPolicy>(config.preempt_scope == PreemptScope::kAny);
  if (policy == "multifactor") return std::make_unique<MultifactorPolicy>(config);
  if (policy == "gpufair") return std::make_unique<GpufairPolicy>(config);
  throw std::invalid_argument("unknown policy '" + policy + "' (accepted: fifo, multifactor, gpufair)");
}

std::string team_of_account(const std::string& path, int level) {
  size_t pos = 0;
  for (int i = 0; i < level; ++i) {
    pos = path.find('/', pos);
    if (pos == std::string::npos) return path;
    if (i + 1 < level) ++pos;
  }
  return path.substr(0, pos);
}

}  // namespace gpufair::sim
