// fifo: the situation the problem statement starts from. One global queue in
// submit order; a `high` job may preempt a `low` job of its own team whenever
// it likes (preempt/qos restricted to the team; with preempt_scope=any, of
// any team). Nothing is charged, nothing is judged.
#include "policies.h"

namespace gpufair::sim {

void FifoPolicy::add_account(std::int32_t, const std::string&, std::int32_t, double) {}

std::uint64_t FifoPolicy::priority(const SimJob&, TimePoint) const {
  // Constant: the simulator's tie-break (earlier submit, then lower job id)
  // is the FIFO order itself.
  return 0;
}

PreemptVerdict FifoPolicy::allow_preemption(const SimJob& preemptor, const SimJob& victim,
                                            TimePoint) const {
  if (preemptor.team != victim.team && !any_team_) return {false, false, "different teams"};
  return {true, false, "higher rank"};
}

RecordedPreemption FifoPolicy::record_preemption(const SimJob&, const SimJob&, TimePoint) {
  return {};
}

}  // namespace gpufair::sim
