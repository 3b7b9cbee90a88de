// The C API as the Slurm plugins use it: error codes, messages, NULLs, state
// files and the process-wide engine. Linked against libgpufair.so.
#include "gpufair/c_api.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

struct EngineHandle {
  explicit EngineHandle(const char* params = nullptr, const gpufair_knobs_t* knobs = nullptr) {
    e = gpufair_engine_new(params, knobs, err, sizeof err);
  }
  ~EngineHandle() { gpufair_engine_free(e); }
  gpufair_engine_t* e = nullptr;
  char err[1024] = "";
};

gpufair_job_t job(uint64_t id, int32_t team, int32_t rank, double gpus, int64_t submit,
                  int64_t start = 0) {
  gpufair_job_t j{};
  j.job_id = id;
  j.team = team;
  j.rank = rank;
  j.gpus = gpus;
  j.submit_time = submit;
  j.start_time = start;
  return j;
}

TEST(CApi, Version) { EXPECT_STREQ(gpufair_version(), "0.1.0"); }

TEST(CApi, ConfigCheck) {
  char err[512] = "x";
  EXPECT_EQ(gpufair_config_check(nullptr, nullptr, err, sizeof err), GPUFAIR_OK);
  EXPECT_STREQ(err, "");
  EXPECT_EQ(gpufair_config_check("half_lfe=7d,team_level=0", nullptr, err, sizeof err),
            GPUFAIR_ERR_CONFIG);
  EXPECT_TRUE(contains(err, "did you mean 'half_life'")) << err;
  EXPECT_TRUE(contains(err, "team_level='0'")) << err;
  // NULL or tiny buffers are fine: the message is dropped or truncated.
  EXPECT_EQ(gpufair_config_check("bogus=1", nullptr, nullptr, 0), GPUFAIR_ERR_CONFIG);
  char tiny[8];
  EXPECT_EQ(gpufair_config_check("bogus=1", nullptr, tiny, sizeof tiny), GPUFAIR_ERR_CONFIG);
  EXPECT_EQ(std::string(tiny).size(), 7u);
}

TEST(CApi, Knobs) {
  gpufair_knobs_t k{};
  k.knobs_set = 1;
  k.decay_half_life_s = 0;  // PriorityDecayHalfLife=0: no decay, not "default"
  k.usage_reset_period = GPUFAIR_RESET_QUARTERLY;
  k.weight_fairshare = 777;
  k.tres_billing_weights = "CPU=1,GRES/gpu:a100=2.5";
  EngineHandle h(nullptr, &k);
  ASSERT_NE(h.e, nullptr) << h.err;
  EXPECT_EQ(gpufair_calc_period(h.e), 300);  // 0 = Slurm's default
  char buf[4096];
  ASSERT_EQ(gpufair_config_describe(h.e, buf, sizeof buf), GPUFAIR_OK);
  EXPECT_TRUE(contains(buf, "half_life=0\n")) << buf;
  EXPECT_TRUE(contains(buf, "usage_reset=quarterly\n")) << buf;
  EXPECT_TRUE(contains(buf, "weight_fairshare=777\n")) << buf;
  EXPECT_TRUE(contains(buf, "gpu_weight:a100=2.5\n")) << buf;
  char small[16];
  EXPECT_EQ(gpufair_config_describe(h.e, small, sizeof small), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_config_describe(nullptr, buf, sizeof buf), GPUFAIR_ERR_ARG);

  k.usage_reset_period = 42;
  char err[512];
  EXPECT_EQ(gpufair_config_check(nullptr, &k, err, sizeof err), GPUFAIR_ERR_CONFIG);
  EXPECT_TRUE(contains(err, "PriorityUsageResetPeriod='42'")) << err;
}

TEST(CApi, ReconfigureKeepsOldConfigOnError) {
  EngineHandle h("calc_period=60,preempt_scope=any");
  ASSERT_NE(h.e, nullptr) << h.err;
  EXPECT_EQ(gpufair_preempt_any_team(h.e), 1);
  char err[512];
  EXPECT_EQ(gpufair_engine_reconfigure(h.e, "calc_period=abc", nullptr, err, sizeof err),
            GPUFAIR_ERR_CONFIG);
  EXPECT_TRUE(contains(err, "calc_period='abc'")) << err;
  EXPECT_EQ(gpufair_calc_period(h.e), 60);
  EXPECT_EQ(gpufair_engine_reconfigure(h.e, "calc_period=2m", nullptr, err, sizeof err), GPUFAIR_OK);
  EXPECT_EQ(gpufair_calc_period(h.e), 120);
  EXPECT_EQ(gpufair_preempt_any_team(h.e), 0);
  EXPECT_EQ(gpufair_engine_reconfigure(nullptr, "", nullptr, err, sizeof err), GPUFAIR_ERR_ARG);
}

TEST(CApi, QosRanksFromThePreemptRelation) {
  // normal (0) and scavenger (1) and urgent (2), every Priority 0; urgent
  // preempts normal, normal preempts scavenger.
  const uint32_t prio[] = {0, 0, 0};
  const uint32_t pairs[] = {2, 0, 0, 1};
  int32_t rank[3] = {-1, -1, -1};
  ASSERT_EQ(gpufair_qos_ranks(3, prio, pairs, 2, rank), GPUFAIR_OK);
  EXPECT_GT(rank[2], rank[0]);
  EXPECT_GT(rank[0], rank[1]);
  EXPECT_EQ(gpufair_qos_ranks(3, nullptr, pairs, 2, rank), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_qos_ranks(3, prio, nullptr, 2, rank), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_qos_ranks(0, nullptr, nullptr, 0, nullptr), GPUFAIR_OK);

  // The shared table: published ids answer, others fall back.
  const uint32_t ids[] = {1, 5, 9000};
  const int32_t ranks[] = {rank[0], rank[2], 7};
  gpufair_qos_ranks_publish(ids, ranks, 3);
  EXPECT_EQ(gpufair_qos_rank_lookup(1, -5), rank[0]);
  EXPECT_EQ(gpufair_qos_rank_lookup(5, -5), rank[2]);
  EXPECT_EQ(gpufair_qos_rank_lookup(2, -5), -5);
  EXPECT_EQ(gpufair_qos_rank_lookup(9000, -5), -5);  // beyond the table
  gpufair_qos_ranks_publish(ids, ranks, 1);             // replaces: 5 is gone
  EXPECT_EQ(gpufair_qos_rank_lookup(5, -5), -5);
  gpufair_qos_ranks_publish(nullptr, nullptr, 0);
  EXPECT_EQ(gpufair_qos_rank_lookup(1, -5), -5);
}

// gpufair_job_rank: the shared QOS table under preempt_by=qos, the tier
// under partition; and PreemptType reaches the core through the knobs.
TEST(CApi, JobRankFollowsPreemptBy) {
  const uint32_t ids[] = {3};
  const int32_t ranks[] = {0x20000};
  gpufair_qos_ranks_publish(ids, ranks, 1);
  EXPECT_EQ(gpufair_job_rank(GPUFAIR_PREEMPT_BY_QOS, 3, 5, 40), 0x20000);
  EXPECT_EQ(gpufair_job_rank(GPUFAIR_PREEMPT_BY_QOS, 4, 5, 40), 5);  // not published: its Priority
  EXPECT_EQ(gpufair_job_rank(GPUFAIR_PREEMPT_BY_PARTITION, 3, 5, 40), 40);
  EXPECT_EQ(gpufair_job_rank(GPUFAIR_PREEMPT_BY_PARTITION, 4, 5, 0), 0);
  gpufair_qos_ranks_publish(nullptr, nullptr, 0);

  gpufair_knobs_t k{};
  k.knobs_set = 1;
  k.preempt_type = "preempt/qos";
  char err[512];
  EXPECT_EQ(gpufair_config_check("preempt_by=partition", &k, err, sizeof err), GPUFAIR_ERR_CONFIG);
  EXPECT_TRUE(contains(err, "preempt_by='partition'")) << err;
  k.preempt_type = "preempt/gpufair";
  EXPECT_EQ(gpufair_config_check("preempt_by=partition", &k, err, sizeof err), GPUFAIR_OK) << err;
  EngineHandle h("preempt_by=partition", &k);
  ASSERT_NE(h.e, nullptr) << h.err;
  char desc[8192];
  ASSERT_EQ(gpufair_config_describe(h.e, desc, sizeof desc), GPUFAIR_OK);
  EXPECT_TRUE(contains(desc, "preempt_by=partition\n")) << desc;
}

// The shared record of reported preemptions: once per (victim, key); a
// new key (the victim started again) or a slot taken by another victim
// makes it new again.
TEST(CApi, PreemptionClaimsOncePerVictimAndKey) {
  const uint64_t v = 123456789;
  EXPECT_EQ(gpufair_preemption_claim(v, 1000), 1);
  EXPECT_EQ(gpufair_preemption_claim(v, 1000), 0);
  EXPECT_EQ(gpufair_preemption_claim(v, 1000), 0);
  EXPECT_EQ(gpufair_preemption_claim(v, 2000), 1);  // requeued and started again
  EXPECT_EQ(gpufair_preemption_claim(v + 1, 2000), 1);
  EXPECT_EQ(gpufair_preemption_claim(v, 2000), 0);  // another slot: kept
  EXPECT_EQ(gpufair_preemption_claim(v + GPUFAIR_CLAIM_SLOTS, 2000), 1);
  EXPECT_EQ(gpufair_preemption_claim(v, 2000), 1);  // same slot: forgotten
}

// Who preempts whom: the last pair noted for a victim; a pin keeps the
// pair of the moment (a gang suspension's preemptor, read a cycle later)
// whatever is noted after; a victim of the same slot takes it.
TEST(CApi, PreemptorNotesAndPins) {
  const uint32_t v = 4242;
  EXPECT_EQ(gpufair_preemptor_noted(v), 0u);
  EXPECT_EQ(gpufair_preemptor_pinned(v), 0u);
  gpufair_preemptor_pin(v);  // nothing noted: nothing pinned
  EXPECT_EQ(gpufair_preemptor_pinned(v), 0u);
  gpufair_preemptor_note(v, 7);
  gpufair_preemptor_note(v, 8);
  EXPECT_EQ(gpufair_preemptor_noted(v), 8u);
  gpufair_preemptor_pin(v);  // the mode query right before the suspension
  gpufair_preemptor_note(v, 9);  // later passes
  EXPECT_EQ(gpufair_preemptor_noted(v), 9u);
  EXPECT_EQ(gpufair_preemptor_pinned(v), 8u);
  gpufair_preemptor_note(v + GPUFAIR_CLAIM_SLOTS, 5);  // another victim, same slot
  EXPECT_EQ(gpufair_preemptor_noted(v), 0u);
  EXPECT_EQ(gpufair_preemptor_noted(v + GPUFAIR_CLAIM_SLOTS), 5u);
  EXPECT_EQ(gpufair_preemptor_pinned(v), 8u);
}

TEST(CApi, ReservationPreemptionThroughTheCApi) {
  EngineHandle h;
  ASSERT_NE(h.e, nullptr);
  const int32_t a = gpufair_team_id(h.e, "a"), b = gpufair_team_id(h.e, "b");
  gpufair_job_t borrower{1, a, 1001, 0, 8, 10, 10, 20, 0, 0, 0, 0, 0};  // no association
  gpufair_job_t resv{2, b, 1002, 0, 8, 30, 30, 0, 0, 0, 0, 0, 0};
  char reason[512];
  EXPECT_EQ(gpufair_record_resv_preemption(h.e, &resv, &borrower, 40, reason, sizeof reason), 0);
  EXPECT_TRUE(contains(reason, "borrowed time")) << reason;
  EXPECT_LT(gpufair_record_resv_preemption(nullptr, &resv, &borrower, 40, reason, sizeof reason), 0);
  EXPECT_TRUE(contains(reason, "gpufair_record_resv_preemption: NULL argument")) << reason;
  resv.team = 99;
  EXPECT_LT(gpufair_record_resv_preemption(h.e, &resv, &borrower, 40, reason, sizeof reason), 0);
}

TEST(CApi, NullAndBadArguments) {
  EngineHandle h;
  ASSERT_NE(h.e, nullptr);
  EXPECT_EQ(gpufair_team_id(h.e, nullptr), -1);
  EXPECT_EQ(gpufair_team_id(h.e, ""), -1);
  EXPECT_EQ(gpufair_team_id(nullptr, "a"), -1);
  EXPECT_EQ(gpufair_team_count(nullptr), 0);
  EXPECT_EQ(gpufair_set_shares(h.e, 3, 1.0), GPUFAIR_ERR_ARG);
  const int32_t a = gpufair_team_id(h.e, "a/b");
  EXPECT_EQ(gpufair_set_shares(h.e, a, std::nan("")), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_set_shares(h.e, a, 2.0), GPUFAIR_OK);
  EXPECT_EQ(gpufair_set_cluster_gpus(h.e, -3), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_set_cluster_gpus(nullptr, 3), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_cycle_begin(nullptr, 0), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_cycle_end(nullptr, 0), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_observe_running(h.e, nullptr), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_observe_pending(h.e, nullptr), GPUFAIR_ERR_ARG);
  const gpufair_job_t early = job(1, a, 0, 1, 10, 10);
  EXPECT_EQ(gpufair_observe_running(h.e, &early), GPUFAIR_ERR_ARG);  // no cycle yet
  const gpufair_job_t bad = job(1, 99, 0, 1, 0, 0);
  EXPECT_EQ(gpufair_observe_running(h.e, &bad), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_observe_pending(h.e, &bad), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_job_ended(nullptr, 1, 0), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_job_ended(h.e, 12345, 0), GPUFAIR_OK);  // unknown id: ignored
  EXPECT_EQ(gpufair_job_finished(nullptr, &early, 0), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_job_finished(h.e, nullptr, 0), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_job_finished(h.e, &bad, 20), GPUFAIR_OK);  // unknown team: nothing to charge
  EXPECT_EQ(gpufair_priority(nullptr, nullptr, 0, nullptr), 1u);
  char reason[256];
  const gpufair_job_t j = job(1, a, 0, 1, 0, 0);
  EXPECT_EQ(gpufair_preempt_allowed(nullptr, &j, &j, 0, reason, sizeof reason), -GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_record_preemption(h.e, nullptr, &j, 0, reason, sizeof reason), -GPUFAIR_ERR_ARG);
  EXPECT_TRUE(contains(reason, "NULL")) << reason;
  EXPECT_EQ(gpufair_record_preemption(h.e, &bad, &j, 0, reason, sizeof reason), -GPUFAIR_ERR_ARG);
  EXPECT_TRUE(contains(reason, "unknown team id 99")) << reason;
  gpufair_team_report_t r;
  EXPECT_EQ(gpufair_team_report(h.e, 99, 0, &r), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_team_report(h.e, a, 0, nullptr), GPUFAIR_ERR_ARG);
  gpufair_engine_free(nullptr);  // no-op
}

// PriorityWeightAssoc, PriorityWeightTRES, the site factor and the
// PriorityFlags that change the composition, through the C API as the
// plugin passes them.
TEST(CApi, MultifactorTermsThroughTheCApi) {
  const double tres_w[] = {0, 2000, 0, 4000};
  gpufair_knobs_t k{};
  k.knobs_set = 1;
  k.weight_assoc = 1000;
  k.weight_qos = 100;
  k.tres_weights = tres_w;
  k.tres_cnt = 4;
  EngineHandle h(nullptr, &k);
  ASSERT_NE(h.e, nullptr) << h.err;
  const double count[] = {16, 4, 9, 2}, total[] = {64, 16, 10, 8};
  double each[4];
  EXPECT_DOUBLE_EQ(gpufair_tres_term(h.e, count, total, 4, each), 500 + 1000);
  EXPECT_DOUBLE_EQ(each[0], 0);
  EXPECT_DOUBLE_EQ(each[1], 500);
  EXPECT_DOUBLE_EQ(each[3], 1000);
  EXPECT_DOUBLE_EQ(gpufair_tres_term(nullptr, count, total, 4, each), 0);
  EXPECT_DOUBLE_EQ(each[1], 0);  // cleared on error too

  gpufair_prio_input_t in{};
  in.team = gpufair_team_id(h.e, "a");
  in.assoc_norm = 0.5;
  in.assoc_raw = 3;
  in.qos_norm = 1;
  in.qos_raw = 40;
  in.tres = gpufair_tres_term(h.e, count, total, 4, nullptr);
  in.site = 77;
  in.nice = 7;
  gpufair_factors_t f{};
  EXPECT_EQ(gpufair_priority(h.e, &in, 0, &f), 500u + 100 + 1500 + 77 - 7);
  EXPECT_DOUBLE_EQ(f.assoc, 0.5);
  EXPECT_DOUBLE_EQ(f.w_assoc, 500);
  EXPECT_DOUBLE_EQ(f.w_tres, 1500);
  EXPECT_EQ(f.site, 77);

  k.flags = GPUFAIR_PRIO_NO_NORMAL_ASSOC | GPUFAIR_PRIO_NO_NORMAL_QOS | GPUFAIR_PRIO_NO_NORMAL_TRES;
  char err[512];
  ASSERT_EQ(gpufair_engine_reconfigure(h.e, nullptr, &k, err, sizeof err), GPUFAIR_OK) << err;
  in.tres = gpufair_tres_term(h.e, count, total, 4, nullptr);
  EXPECT_DOUBLE_EQ(in.tres, 4 * 2000 + 2 * 4000);
  EXPECT_EQ(gpufair_priority(h.e, &in, 0, &f), 3000u + 4000 + 16000 + 77 - 7);

  k.tres_cnt = 2;
  k.tres_weights = nullptr;
  EXPECT_EQ(gpufair_config_check(nullptr, &k, err, sizeof err), GPUFAIR_ERR_CONFIG);
  EXPECT_TRUE(contains(err, "PriorityWeightTRES")) << err;
}

// A job that started after a cycle and finished before the next: the
// plugin's walk reports it with its record, and it is charged once.
TEST(CApi, AJobFinishedBetweenCyclesIsChargedOnce) {
  EngineHandle h("half_life=0");
  ASSERT_NE(h.e, nullptr);
  const int32_t a = gpufair_team_id(h.e, "a");
  const int64_t t0 = 1'700'000'000;
  ASSERT_EQ(gpufair_cycle_begin(h.e, t0), GPUFAIR_OK);
  ASSERT_EQ(gpufair_cycle_end(h.e, t0), GPUFAIR_OK);
  const gpufair_job_t short_job = job(7, a, 0, 2, t0 + 10, t0 + 30);
  EXPECT_EQ(gpufair_job_ended(h.e, short_job.job_id, t0 + 150), GPUFAIR_OK);  // by id: unknown
  ASSERT_EQ(gpufair_cycle_begin(h.e, t0 + 300), GPUFAIR_OK);
  EXPECT_EQ(gpufair_job_finished(h.e, &short_job, t0 + 150), GPUFAIR_OK);
  EXPECT_EQ(gpufair_job_finished(h.e, &short_job, t0 + 150), GPUFAIR_OK);  // again: charged once
  ASSERT_EQ(gpufair_cycle_end(h.e, t0 + 300), GPUFAIR_OK);
  gpufair_team_report_t r;
  ASSERT_EQ(gpufair_team_report(h.e, a, t0 + 300, &r), GPUFAIR_OK);
  EXPECT_DOUBLE_EQ(r.raw_usage_gpu_s, 2 * 120.0);
}

TEST(CApi, CyclePriorityPreemptionAndReport) {
  EngineHandle h("half_life=0,bait_block=penalized");
  ASSERT_NE(h.e, nullptr);
  const int32_t gamer = gpufair_team_id(h.e, "gamer");
  const int32_t other = gpufair_team_id(h.e, "other");
  EXPECT_EQ(gpufair_team_count(h.e), 2);
  const int64_t t0 = 1'700'000'000;
  const gpufair_job_t waiting = job(1, other, 0, 8, t0 - 7200);
  const gpufair_job_t holder = job(2, gamer, 0, 8, t0 - 900, t0 - 600);
  ASSERT_EQ(gpufair_cycle_begin(h.e, t0), GPUFAIR_OK);
  ASSERT_EQ(gpufair_observe_running(h.e, &holder), GPUFAIR_OK);
  ASSERT_EQ(gpufair_observe_pending(h.e, &waiting), GPUFAIR_OK);
  ASSERT_EQ(gpufair_cycle_end(h.e, t0), GPUFAIR_OK);

  gpufair_prio_input_t in{};
  in.team = gamer;
  in.eligible_time = t0 - 100;
  gpufair_factors_t f{};
  const uint32_t p = gpufair_priority(h.e, &in, t0, &f);
  EXPECT_EQ(p, f.priority);
  EXPECT_GT(p, 1u);
  EXPECT_LT(f.fairshare, 1.0);  // 8 GPUs x 600 s charged from the holder's start

  char reason[1024];
  const gpufair_job_t cross = job(3, other, 10, 8, t0);
  EXPECT_EQ(gpufair_preempt_allowed(h.e, &cross, &holder, t0, reason, sizeof reason), 0);
  EXPECT_TRUE(contains(reason, "cross-team")) << reason;
  EXPECT_EQ(gpufair_preempt_allowed(h.e, &cross, &holder, t0, nullptr, 0), 0);
  const gpufair_job_t urgent = job(4, gamer, 10, 8, t0 - 60);
  EXPECT_EQ(gpufair_preempt_allowed(h.e, &urgent, &holder, t0, reason, sizeof reason), 1);
  EXPECT_EQ(gpufair_record_preemption(h.e, &urgent, &holder, t0, reason, sizeof reason), 1);
  EXPECT_TRUE(contains(reason, "bait")) << reason;

  gpufair_team_report_t r;
  ASSERT_EQ(gpufair_team_report(h.e, gamer, t0, &r), GPUFAIR_OK);
  EXPECT_STREQ(r.name, "gamer");
  EXPECT_GT(r.penalty, 0);
  EXPECT_EQ(r.bait_detections, 1u);
  EXPECT_EQ(r.in_team_preemptions, 1u);
  EXPECT_LT(r.effective_fairshare, r.fairshare);
  EXPECT_GT(r.price_total_gpu_s, 0);  // the jump's price
  EXPECT_EQ(r.priced_jumps, 1u);
  EXPECT_EQ(r.reclaims_made + r.reclaimed_from, 0u);
  // Now penalised: the same kind of preemption is refused before it happens.
  const gpufair_job_t holder2 = job(5, gamer, 0, 8, t0 - 900, t0 - 300);
  EXPECT_EQ(gpufair_preempt_allowed(h.e, &urgent, &holder2, t0, reason, sizeof reason), 0);
  EXPECT_TRUE(contains(reason, "bait_block=penalized")) << reason;
}

// Associations as the plugin passes them: ids >= 1 (0 = none, so a
// zero-filled struct has none), usage charged per user, Fair Tree by
// default and classic with NO_FAIR_TREE.
// preemptor_claim=all through the C API (an in-team jump; the default,
// jumpers, claims none): the preempt plugin asks for the
// claim's priority; the priority plugin's inputs carry the job id.
TEST(CApi, PreemptorClaimThroughTheCApi) {
  for (const bool on : {false, true}) {
    EngineHandle h(on ? "preemptor_claim=all" : "");
    const int32_t a = gpufair_team_id(h.e, "a");
    const int64_t t0 = 1'700'000'000;
    const gpufair_job_t low = job(2, a, 0, 8, t0 - 900, t0 - 600);
    ASSERT_EQ(gpufair_cycle_begin(h.e, t0), GPUFAIR_OK);
    ASSERT_EQ(gpufair_observe_running(h.e, &low), GPUFAIR_OK);
    ASSERT_EQ(gpufair_cycle_end(h.e, t0), GPUFAIR_OK);
    const gpufair_job_t urgent = job(4, a, 10, 8, t0 - 60);
    char reason[512];
    ASSERT_GE(gpufair_record_preemption(h.e, &urgent, &low, t0, reason, sizeof reason), 0) << reason;
    EXPECT_EQ(gpufair_claim_priority(h.e, 4, t0 + 1), on ? 0xFFFFFFFEu : 0u);
    EXPECT_EQ(gpufair_claim_priority(h.e, 2, t0 + 1), 0u);
    EXPECT_EQ(gpufair_claim_priority(nullptr, 4, t0 + 1), 0u);
    gpufair_prio_input_t in{};
    in.team = a;
    in.eligible_time = t0 - 60;
    in.job_id = 4;
    gpufair_factors_t f{};
    EXPECT_EQ(gpufair_priority(h.e, &in, t0 + 1, &f) == 0xFFFFFFFEu, on);
    EXPECT_EQ(f.claimed, on ? 1 : 0);
    in.job_id = 0;
    EXPECT_LT(gpufair_priority(h.e, &in, t0 + 1, nullptr), 0xFFFFFFFEu);
  }
}

TEST(CApi, AssociationsInsideATeam) {
  for (uint32_t flags : {0u, GPUFAIR_PRIO_NO_FAIR_TREE}) {
    gpufair_knobs_t k{};
    k.knobs_set = 1;
    k.decay_half_life_s = 0;
    k.weight_fairshare = 10000;
    k.flags = flags;
    EngineHandle h(nullptr, &k);
    ASSERT_NE(h.e, nullptr) << h.err;
    const int32_t team = gpufair_team_id(h.e, "teama");
    const int32_t heavy = gpufair_assoc_id(h.e, "teama", "heavy");
    const int32_t light = gpufair_assoc_id(h.e, "teama", "light");
    const int32_t account = gpufair_assoc_id(h.e, "teama", nullptr);
    EXPECT_GE(heavy, 1);
    EXPECT_GE(account, 1);
    EXPECT_NE(heavy, light);
    EXPECT_EQ(gpufair_assoc_id(h.e, "teama", ""), account);
    EXPECT_EQ(gpufair_assoc_id(h.e, "", "x"), 0);
    EXPECT_EQ(gpufair_assoc_id(h.e, nullptr, "x"), 0);
    EXPECT_EQ(gpufair_assoc_count(h.e), 3);
    EXPECT_EQ(gpufair_set_assoc_shares(h.e, heavy, 1), GPUFAIR_OK);
    EXPECT_EQ(gpufair_set_assoc_shares(h.e, 0, 1), GPUFAIR_ERR_ARG);
    EXPECT_EQ(gpufair_set_assoc_shares(h.e, heavy, NAN), GPUFAIR_ERR_ARG);
    EXPECT_EQ(gpufair_set_assoc_shares(h.e, light, -1), GPUFAIR_OK);  // fairshare=parent
    EXPECT_EQ(gpufair_set_assoc_shares(h.e, light, 1), GPUFAIR_OK);
    const int64_t t0 = 1'700'000'000;
    gpufair_job_t run = job(1, team, 0, 4, t0 - 100, t0 - 100);
    run.assoc = heavy;
    ASSERT_EQ(gpufair_cycle_begin(h.e, t0), GPUFAIR_OK);
    ASSERT_EQ(gpufair_observe_running(h.e, &run), GPUFAIR_OK);
    ASSERT_EQ(gpufair_cycle_end(h.e, t0), GPUFAIR_OK);
    EXPECT_EQ(gpufair_assocs_refreshed(h.e), GPUFAIR_OK);

    gpufair_assoc_report_t r{};
    ASSERT_EQ(gpufair_assoc_report(h.e, heavy, t0, &r), GPUFAIR_OK);
    EXPECT_DOUBLE_EQ(r.usage_gpu_s, 400);
    EXPECT_EQ(r.is_team, 0);
    EXPECT_EQ(r.team, team);
    ASSERT_EQ(gpufair_assoc_report(h.e, account, t0, &r), GPUFAIR_OK);
    EXPECT_EQ(r.is_team, 1);
    EXPECT_DOUBLE_EQ(r.in_team, 1.0);
    gpufair_assoc_report_t all[3];
    ASSERT_EQ(gpufair_assoc_reports(h.e, t0, all, 3), 3);
    EXPECT_DOUBLE_EQ(all[heavy - 1].usage_gpu_s, 400);
    EXPECT_EQ(all[account - 1].is_team, 1);
    EXPECT_EQ(gpufair_assoc_reports(h.e, t0, nullptr, 0), 3);  // just the count
    EXPECT_LT(gpufair_assoc_reports(h.e, t0, nullptr, 2), 0);
    EXPECT_EQ(gpufair_assoc_report(h.e, 0, t0, &r), GPUFAIR_ERR_ARG);
    EXPECT_EQ(gpufair_assoc_report(h.e, 99, t0, &r), GPUFAIR_ERR_ARG);

    gpufair_prio_input_t in{};
    in.team = team;
    gpufair_factors_t none{}, fh{}, fl{};
    gpufair_priority(h.e, &in, t0, &none);
    in.assoc = heavy;
    gpufair_priority(h.e, &in, t0, &fh);
    in.assoc = light;
    gpufair_priority(h.e, &in, t0, &fl);
    EXPECT_DOUBLE_EQ(fl.fairshare, none.fairshare);  // the best user: the team's
    EXPECT_LT(fh.fairshare, fl.fairshare);
    EXPECT_DOUBLE_EQ(fh.team_fairshare, fl.team_fairshare);
    // Fair Tree: 1/2 of 2 users; classic: 2^(-U/S) = 2^(-1/.5).
    EXPECT_DOUBLE_EQ(fh.in_team, flags ? 0.25 : 0.5) << flags;
    ASSERT_EQ(gpufair_assoc_report(h.e, heavy, t0, &r), GPUFAIR_OK);
    EXPECT_DOUBLE_EQ(r.fairshare, fh.fairshare);
    EXPECT_EQ(r.level_fs, flags ? 0.0 : 0.5) << "Fair Tree's S/U: .5 / 1";
  }
}

// The plugin's cycle uses the batch calls; they must decide exactly what the
// one-job calls decide (and skip, not fail on, a job of an unknown team).
TEST(CApi, BatchCallsMatchOneByOne) {
  EngineHandle one("half_life=0"), many("half_life=0");
  ASSERT_NE(one.e, nullptr);
  ASSERT_NE(many.e, nullptr);
  const int64_t t0 = 1'700'000'000;
  std::vector<gpufair_job_t> waiting;
  for (gpufair_engine_t* e : {one.e, many.e}) {
    const int32_t gamer = gpufair_team_id(e, "gamer");
    const int32_t other = gpufair_team_id(e, "other");
    ASSERT_EQ(gpufair_set_shares(e, other, 3.0), GPUFAIR_OK);
    waiting = {job(10, other, 0, 4, t0 - 7200), job(11, gamer, 0, 1, t0 - 9000),
               job(12, 99, 0, 1, t0 - 99999),  // unknown team: skipped
               job(13, other, 5, 2, t0 - 600)};
    const gpufair_job_t holder = job(2, gamer, 0, 8, t0 - 900, t0 - 600);
    ASSERT_EQ(gpufair_cycle_begin(e, t0), GPUFAIR_OK);
    ASSERT_EQ(gpufair_observe_running(e, &holder), GPUFAIR_OK);
    if (e == one.e) {
      for (const auto& w : waiting) gpufair_observe_pending(e, &w);
    } else {
      EXPECT_EQ(gpufair_observe_pending_many(e, waiting.data(), waiting.size()), 3);
    }
    ASSERT_EQ(gpufair_cycle_end(e, t0), GPUFAIR_OK);
  }
  // The jump's price comes from the runnable jobs of other teams ahead of it.
  const gpufair_job_t holder = job(2, 0, 0, 8, t0 - 900, t0 - 600);
  const gpufair_job_t urgent = job(4, 0, 10, 8, t0 - 60);
  char r1[1024], r2[1024];
  EXPECT_EQ(gpufair_record_preemption(one.e, &urgent, &holder, t0, r1, sizeof r1),
            gpufair_record_preemption(many.e, &urgent, &holder, t0, r2, sizeof r2));
  EXPECT_STREQ(r1, r2);
  EXPECT_TRUE(contains(r1, "7200")) << r1;  // other's job 10, not the unknown team's

  // More inputs than one internal chunk, every kind of input.
  std::vector<gpufair_prio_input_t> in(700);
  for (size_t i = 0; i < in.size(); ++i) {
    in[i].team = static_cast<int32_t>(i % 3) - (i % 7 == 0 ? 2 : 0);  // -2..2: unknown too
    in[i].gpus = static_cast<double>(i % 9);
    in[i].eligible_time = t0 - static_cast<int64_t>(i) * 97;
    in[i].qos_norm = (i % 4) / 4.0;
    in[i].partition_norm = (i % 5) / 5.0;
    in[i].nice = static_cast<int32_t>(i % 11) * 50 - 200;
  }
  std::vector<uint32_t> out(in.size(), 0);
  ASSERT_EQ(gpufair_priorities(many.e, in.data(), in.size(), t0 + 3600, out.data()), GPUFAIR_OK);
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i], gpufair_priority(many.e, &in[i], t0 + 3600, nullptr)) << "input " << i;
    EXPECT_GE(out[i], 1u);
  }
  EXPECT_NE(out[1], out[2]);  // not all the same number

  EXPECT_EQ(gpufair_priorities(many.e, in.data(), 0, t0, nullptr), GPUFAIR_OK);
  EXPECT_EQ(gpufair_priorities(nullptr, in.data(), 1, t0, out.data()), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_priorities(many.e, nullptr, 1, t0, out.data()), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_priorities(many.e, in.data(), 1, t0, nullptr), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_observe_pending_many(many.e, nullptr, 0), 0);
  EXPECT_EQ(gpufair_observe_pending_many(many.e, nullptr, 1), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_observe_pending_many(nullptr, waiting.data(), 1), GPUFAIR_ERR_ARG);
}

class CApiState : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpufair-capi-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(CApiState, SaveLoadAndErrors) {
  const std::string path = dir_ + "/gpufair.state";
  char err[512];
  EngineHandle a("half_life=0");
  const int32_t t = gpufair_team_id(a.e, "a");
  const gpufair_job_t j = job(1, t, 0, 2, 1000, 1000);
  gpufair_cycle_begin(a.e, 1100);
  gpufair_observe_running(a.e, &j);
  gpufair_cycle_end(a.e, 1100);
  ASSERT_EQ(gpufair_state_save(a.e, path.c_str(), err, sizeof err), GPUFAIR_OK) << err;

  EngineHandle b("half_life=0");
  ASSERT_EQ(gpufair_state_load(b.e, path.c_str(), err, sizeof err), GPUFAIR_OK) << err;
  gpufair_team_report_t r;
  ASSERT_EQ(gpufair_team_report(b.e, gpufair_team_id(b.e, "a"), 1100, &r), GPUFAIR_OK);
  EXPECT_DOUBLE_EQ(r.usage_gpu_s, 200);

  EXPECT_EQ(gpufair_state_load(b.e, (dir_ + "/missing").c_str(), err, sizeof err), GPUFAIR_ERR_IO);
  EXPECT_TRUE(contains(err, "No such file")) << err;
  { std::ofstream(path, std::ios::binary | std::ios::trunc) << "GPUFAIR1garbage"; }
  EXPECT_EQ(gpufair_state_load(b.e, path.c_str(), err, sizeof err), GPUFAIR_ERR_STATE);
  EXPECT_TRUE(contains(err, path)) << err;
  EXPECT_TRUE(contains(err, "truncated")) << err;
  EXPECT_EQ(gpufair_state_save(a.e, (dir_ + "/no/such/dir/f").c_str(), err, sizeof err), GPUFAIR_ERR_IO);
  EXPECT_EQ(gpufair_state_save(a.e, nullptr, err, sizeof err), GPUFAIR_ERR_ARG);
  EXPECT_EQ(gpufair_state_load(nullptr, path.c_str(), err, sizeof err), GPUFAIR_ERR_ARG);
}

TEST(CApi, OneGlobalEngine) {
  EXPECT_EQ(gpufair_global_get(), nullptr);
  char err[256];
  gpufair_engine_t* e = gpufair_engine_new(nullptr, nullptr, err, sizeof err);
  ASSERT_NE(e, nullptr);
  gpufair_global_set(e);
  EXPECT_EQ(gpufair_global_get(), e);
  gpufair_global_set(nullptr);
  EXPECT_EQ(gpufair_global_get(), nullptr);
  gpufair_global_set(e);
  gpufair_engine_free(e);  // freeing the registered engine clears the global
  EXPECT_EQ(gpufair_global_get(), nullptr);
}

// preempt/gpufair's one-call test: the registered engine's reclaim_possible.
TEST(CApi, GlobalReclaimPossible) {
  EngineHandle h("reclaim=all");
  ASSERT_NE(h.e, nullptr);
  const int32_t holder_team = gpufair_team_id(h.e, "holder");
  const int32_t waiter_team = gpufair_team_id(h.e, "waiter");
  const int64_t t0 = 1'700'000'000;
  const gpufair_job_t holder = job(1, holder_team, 0, 8, t0 - 7200, t0 - 3600);
  const gpufair_job_t waiting = job(2, waiter_team, 0, 8, t0 - 600);
  ASSERT_EQ(gpufair_set_cluster_gpus(h.e, 8), GPUFAIR_OK);
  EXPECT_EQ(gpufair_global_reclaim_possible(), 0);  // no engine registered
  gpufair_global_set(h.e);
  EXPECT_EQ(gpufair_global_reclaim_possible(), 0);  // no cycle yet
  ASSERT_EQ(gpufair_cycle_begin(h.e, t0), GPUFAIR_OK);
  ASSERT_EQ(gpufair_observe_running(h.e, &holder), GPUFAIR_OK);
  ASSERT_EQ(gpufair_observe_pending(h.e, &waiting), GPUFAIR_OK);
  ASSERT_EQ(gpufair_cycle_end(h.e, t0), GPUFAIR_OK);
  EXPECT_EQ(gpufair_reclaim_possible(h.e), 1);
  EXPECT_EQ(gpufair_global_reclaim_possible(), 1);
  gpufair_global_set(nullptr);
  EXPECT_EQ(gpufair_global_reclaim_possible(), 0);
}

}  // namespace
