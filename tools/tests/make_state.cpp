// make_state FILE: write a gpufair state file with two teams, some usage,
// teamb's reservation taking its nodes back from a teama job on borrowed
// time, and one in-team preemption that skipped another team's queue
// (bait), through the same C API priority/gpufair uses. For the
// gpufair-show tests.
#include <cstdio>

#include "gpufair/c_api.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_state FILE\n");
    return 2;
  }
  char err[512];
  gpufair_engine_t* e = gpufair_engine_new("", nullptr, err, sizeof err);
  if (!e) {
    std::fprintf(stderr, "make_state: %s\n", err);
    return 1;
  }
  int32_t a = gpufair_team_id(e, "teama/nlp"), b = gpufair_team_id(e, "teamb");
  gpufair_set_cluster_gpus(e, 32);
  gpufair_set_shares(e, a, 100);
  gpufair_set_shares(e, b, 100);
  // Users gfa2 (sub-account teama/nlp) and gfb1 (teamb).
  int32_t ua = gpufair_assoc_id(e, "teama/nlp", "gfa2"), ub = gpufair_assoc_id(e, "teamb", "gfb1");
  gpufair_job_t victim{3, a, 1001, 0, 8, 900, 900, 990, 0, 0, ua, 0, 0};
  gpufair_job_t running_b{4, b, 1002, 10, 8, 100, 100, 200, 0, 0, ub, 0, 0};  // below its 16 entitled GPUs
  gpufair_job_t waiting_b{5, b, 1002, 10, 8, 100, 100, 0, 500, 0, ub, 0, 0};
  gpufair_job_t preemptor{8, a, 1001, 100, 8, 995, 995, 0, 100, 0, ua, 0, 0};
  gpufair_cycle_begin(e, 1000);
  gpufair_observe_running(e, &victim);
  gpufair_observe_running(e, &running_b);
  gpufair_observe_pending(e, &waiting_b);
  gpufair_observe_pending(e, &preemptor);
  gpufair_cycle_end(e, 1000);
  char reason[1024];
  gpufair_job_t borrower{6, a, 1001, 0, 8, 950, 950, 960, 0, 0, ua, 0, 0};
  gpufair_job_t resv_job{9, b, 1002, 10, 8, 990, 990, 0, 0, 0, ub, 0, 0};
  if (gpufair_record_resv_preemption(e, &resv_job, &borrower, 1000, reason, sizeof reason) != 0) {
    std::fprintf(stderr, "make_state: %s\n", reason);
    return 1;
  }
  int bait = gpufair_record_preemption(e, &preemptor, &victim, 1001, reason, sizeof reason);
  std::printf("record_preemption: %d %s\n", bait, reason);
  gpufair_cycle_begin(e, 1600);
  gpufair_observe_running(e, &running_b);
  gpufair_cycle_end(e, 1600);
  if (gpufair_state_save(e, argv[1], err, sizeof err) != GPUFAIR_OK) {
    std::fprintf(stderr, "make_state: %s\n", err);
    return 1;
  }
  gpufair_engine_free(e);
  return bait == 1 ? 0 : 1;
}
