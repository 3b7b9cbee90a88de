/*
 * preempt/gpufair on hand-built Slurm records, the whole plugin linked in
 * (preempt_gpufair.c, preempt_conf.c, preempt_rules.c, preempt_record.c)
 * with an engine shared as priority/gpufair shares it:
 *
 *  1. preempt/partition_prio's rule (preempt_rules.c), case by case: tier
 *     above, equal, below; the victim partition's PreemptMode=OFF; missing
 *     partitions; the queue sort's per-partition check with shared nodes;
 *     PreemptMode, GraceTime and the candidates' order from the partition.
 *  2. The plugin with preempt_by=partition: Slurm's partition rule, then
 *     the same-team rule on top exactly as with preempt_by=qos (another
 *     team's job is refused, preempt_scope=any lets it through); QOS
 *     Preempt= lists no longer matter; in-team ranks are the tiers.
 *  3. The real event: the grace-time query after an allowed pair reports
 *     the preemption to the core once, with the preemptor that pair named.
 *  4. Reclaim asked pair by pair, as Slurm asks: of a team over its
 *     entitlement, exactly the jobs the rule may take together are allowed
 *     (design.md, "Reclaim"), whichever of them Slurm then picks.
 */
#include <stdio.h>
#include <string.h>

#include "slurm_compat.h"
#include "src/common/assoc_mgr.h"
#include "src/common/bitstring.h"

#include "gpufair_slurm.h"
#include "preempt_conf.h"
#include "preempt_rules.h"

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

/* The plugin's entry points (preempt_gpufair.c). */
extern bool preempt_p_preemptable(job_record_t *preemptee,
				  job_record_t *preemptor);
extern bool preempt_p_job_preempt_check(job_queue_rec_t *preemptor,
					job_queue_rec_t *preemptee);
extern int preempt_p_get_data(job_record_t *job_ptr,
			      slurm_preempt_data_type_t data_type, void *data);

/* slurmctld's, which preempt_record.c looks the preemptor up with. */
#define NJOBS 8
static job_record_t *jobs[NJOBS];
job_record_t *find_job_record(uint32_t job_id)
{
	for (int i = 0; i < NJOBS; i++)
		if (jobs[i] && jobs[i]->job_id == job_id)
			return jobs[i];
	return NULL;
}

/* Associations: root -> teama -> (alice, ann); root -> teamb -> (bob). */
static slurmdb_assoc_usage_t u_root, u_a, u_alice, u_ann, u_b, u_bob;
static slurmdb_assoc_rec_t root = { .acct = "root", .usage = &u_root };
static slurmdb_assoc_rec_t teama = { .acct = "teama", .usage = &u_a };
static slurmdb_assoc_rec_t alice = { .acct = "teama", .user = "alice", .usage = &u_alice };
static slurmdb_assoc_rec_t ann = { .acct = "teama", .user = "ann", .usage = &u_ann };
static slurmdb_assoc_rec_t teamb = { .acct = "teamb", .usage = &u_b };
static slurmdb_assoc_rec_t bob = { .acct = "teamb", .user = "bob", .usage = &u_bob };

/* Partitions on four nodes: urgent (tier 10) and batch (tier 1) share
 * them all; other (tier 5) has node 3 only, elsewhere (tier 20) none of
 * batch's. */
static part_record_t urgent = { .name = "urgent", .priority_tier = 10,
				.preempt_mode = NO_VAL16, .grace_time = 0 };
static part_record_t batch = { .name = "batch", .priority_tier = 1,
			       .preempt_mode = PREEMPT_MODE_REQUEUE,
			       .grace_time = 30 };
static part_record_t peer = { .name = "peer", .priority_tier = 1,
			      .preempt_mode = NO_VAL16 };
static part_record_t frozen = { .name = "frozen", .priority_tier = 0,
				.preempt_mode = PREEMPT_MODE_OFF };
static part_record_t elsewhere = { .name = "elsewhere", .priority_tier = 20 };

/* QOS: high may preempt low (Preempt=low); Priority says the opposite of
 * the tiers, so a rank that followed the QOS would show. */
static slurmdb_qos_rec_t q_low = { .id = 1, .name = "low", .priority = 100 };
static slurmdb_qos_rec_t q_high = { .id = 2, .name = "high", .priority = 0 };

static void _setup(void)
{
	u_a.parent_assoc_ptr = &root;
	u_b.parent_assoc_ptr = &root;
	u_alice.parent_assoc_ptr = &teama;
	u_ann.parent_assoc_ptr = &teama;
	u_bob.parent_assoc_ptr = &teamb;
	urgent.node_bitmap = bit_alloc(4);
	bit_nset(urgent.node_bitmap, 0, 3);
	batch.node_bitmap = bit_copy(urgent.node_bitmap);
	peer.node_bitmap = bit_copy(urgent.node_bitmap);
	frozen.node_bitmap = bit_copy(urgent.node_bitmap);
	elsewhere.node_bitmap = bit_alloc(8);
	bit_set(elsewhere.node_bitmap, 6);
	q_high.preempt_bitstr = bit_alloc(8);
	bit_set(q_high.preempt_bitstr, q_low.id);
	slurm_conf.preempt_mode = PREEMPT_MODE_CANCEL;
}

static job_record_t _job(uint32_t id, slurmdb_assoc_rec_t *assoc,
			 part_record_t *part, slurmdb_qos_rec_t *qos,
			 uint32_t state)
{
	job_record_t j = { .job_id = id, .assoc_ptr = assoc,
			   .account = assoc->acct, .part_ptr = part,
			   .qos_ptr = qos, .job_state = state, .node_cnt = 1,
			   .start_time = state == JOB_RUNNING ? 1000 : 0 };
	return j;
}

static void test_partition_rule(void)
{
	const gf_preempt_rules_t *r = gf_preempt_rules(
		GPUFAIR_PREEMPT_BY_PARTITION);
	struct {
		const char *what;
		part_record_t *or, *ee;
		bool want;
	} cases[] = {
		{ "higher tier preempts lower", &urgent, &batch, true },
		{ "lower tier never", &batch, &urgent, false },
		{ "same tier never", &peer, &batch, false },
		{ "victim partition PreemptMode=OFF", &urgent, &frozen, false },
		{ "no victim partition", &urgent, NULL, false },
		{ "no preemptor partition", NULL, &batch, false },
		/* The job rule does not look at nodes: Slurm's candidate
		 * list only holds jobs on the preemptor's partition nodes. */
		{ "no shared nodes: the job rule allows", &elsewhere, &batch, true },
	};

	CHECK(r == &gf_rules_partition && !strcmp(r->name, "partition"),
	      "preempt_by=partition picks preempt/partition_prio's rule");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		job_record_t or = _job(11, &alice, cases[i].or, &q_low, JOB_PENDING);
		job_record_t ee = _job(12, &alice, cases[i].ee, &q_high, JOB_RUNNING);
		job_queue_rec_t qor = { .job_ptr = &or, .part_ptr = cases[i].or };
		job_queue_rec_t qee = { .job_ptr = &ee, .part_ptr = cases[i].ee };
		bool want_queue = cases[i].want && cases[i].or != &elsewhere;

		CHECK(r->preemptable(&ee, &or) == cases[i].want,
		      "preemptable: %s", cases[i].what);
		/* The queue sort also wants shared nodes, and ignores
		 * PreemptMode. */
		if (cases[i].ee == &frozen)
			want_queue = true;
		CHECK(r->queue_check(&qor, &qee) == want_queue,
		      "queue_check: %s", cases[i].what);
	}

	/* Per partition record: a job queued in batch and in urgent. */
	job_record_t a = _job(21, &alice, &batch, NULL, JOB_PENDING);
	job_record_t b = _job(22, &alice, &batch, NULL, JOB_PENDING);
	job_queue_rec_t in_urgent = { .job_ptr = &a, .part_ptr = &urgent };
	job_queue_rec_t in_batch = { .job_ptr = &b, .part_ptr = &batch };
	CHECK(r->queue_check(&in_urgent, &in_batch) &&
	      !r->queue_check(&in_batch, &in_urgent),
	      "queue_check uses the queue record's partition");

	/* PreemptMode, GraceTime, order: the partition's; the cluster's mode
	 * when the partition has none; GANG filtered out. */
	job_record_t j = _job(31, &alice, &batch, &q_high, JOB_RUNNING);
	uint32_t order = 0;
	CHECK(r->mode(&j) == PREEMPT_MODE_REQUEUE, "batch: REQUEUE");
	CHECK(r->grace_time(&j) == 30, "batch: GraceTime 30");
	j.part_ptr = &urgent;
	CHECK(r->mode(&j) == PREEMPT_MODE_CANCEL, "no partition mode: cluster's");
	CHECK(r->grace_time(&j) == 0, "urgent: no GraceTime");
	peer.preempt_mode = PREEMPT_MODE_SUSPEND | PREEMPT_MODE_GANG;
	j.part_ptr = &peer;
	CHECK(r->mode(&j) == PREEMPT_MODE_SUSPEND, "GANG filtered out");
	peer.preempt_mode = NO_VAL16;
	j.part_ptr = NULL;
	CHECK(r->mode(&j) == PREEMPT_MODE_CANCEL && r->grace_time(&j) == 0 &&
	      !r->order(&j, &order), "no partition");
	j.part_ptr = &urgent;
	j.node_cnt = 3;
	CHECK(gf_preempt_prio(r, &j) == ((10u << 16) | 3),
	      "order: tier, then node count (%#x)", gf_preempt_prio(r, &j));
	j.node_cnt = 70000;
	CHECK(gf_preempt_prio(r, &j) == ((10u << 16) | 0xffff), "node count clamps");

}

static gpufair_engine_t *_engine(const char *params)
{
	char err[1024];
	gpufair_engine_t *e = gpufair_engine_new(params, NULL, err, sizeof(err));

	CHECK(e, "engine %s: %s", params, err);
	gpufair_global_set(e);
	slurm_conf.last_update++; /* as slurmctld does on a reconfigure */
	return e;
}

static uint32_t _in_team(gpufair_engine_t *e, const char *team)
{
	gpufair_team_report_t r;

	if (gpufair_team_report(e, gpufair_team_id(e, team), 0, &r) !=
	    GPUFAIR_OK)
		return 9999;
	return r.in_team_preemptions;
}

static void test_plugin_partition_mode(void)
{
	gpufair_engine_t *e = _engine("preempt_by=partition,preempt_scope=team");
	/* alice's urgent job; ann's (same team) and bob's (teamb) batch
	 * jobs; a job of ann's in a partition of the same tier as batch. */
	job_record_t urg = _job(101, &alice, &urgent, &q_low, JOB_PENDING);
	job_record_t mine = _job(102, &ann, &batch, &q_high, JOB_RUNNING);
	job_record_t theirs = _job(103, &bob, &batch, &q_low, JOB_RUNNING);
	job_record_t same_tier = _job(104, &alice, &peer, &q_high, JOB_PENDING);
	job_queue_rec_t q_urg = { .job_ptr = &urg, .part_ptr = &urgent };
	job_queue_rec_t q_same = { .job_ptr = &same_tier, .part_ptr = &peer };
	job_record_t pend_mine = _job(105, &ann, &batch, &q_low, JOB_PENDING);
	job_queue_rec_t q_pend = { .job_ptr = &pend_mine, .part_ptr = &batch };
	job_record_t pend_theirs = _job(106, &bob, &batch, &q_low, JOB_PENDING);
	job_queue_rec_t q_theirs = { .job_ptr = &pend_theirs, .part_ptr = &batch };
	const gf_preempt_conf_t *c = gf_preempt_conf(e);
	gpufair_job_t gj;
	uint16_t mode = 0;
	uint32_t grace = 99, prio = 0;

	jobs[0] = &urg;
	jobs[1] = &mine;
	jobs[2] = &theirs;
	CHECK(c->rules == &gf_rules_partition && !c->any_team,
	      "snapshot: preempt_by=partition, preempt_scope=team");

	CHECK(preempt_p_preemptable(&mine, &urg),
	      "higher tier preempts its own team's lower-tier job");
	CHECK(!preempt_p_preemptable(&theirs, &urg),
	      "never another team's (no reclaim possible before a cycle)");
	CHECK(!preempt_p_preemptable(&urg, &mine), "lower tier never");
	/* high may preempt low by QOS, but the tiers are equal. */
	mine.qos_ptr = &q_low;
	CHECK(!preempt_p_preemptable(&mine, &same_tier),
	      "QOS Preempt= lists do not count under preempt_by=partition");
	mine.qos_ptr = &q_high;
	CHECK(preempt_p_job_preempt_check(&q_urg, &q_pend) &&
	      !preempt_p_job_preempt_check(&q_urg, &q_theirs) &&
	      !preempt_p_job_preempt_check(&q_same, &q_pend),
	      "queue sort: partition rule, then the same-team rule");

	CHECK(preempt_p_get_data(&mine, PREEMPT_DATA_MODE, &mode) ==
		      SLURM_SUCCESS && mode == PREEMPT_MODE_REQUEUE,
	      "PreemptMode from the victim's partition (%u)", mode);
	CHECK(preempt_p_get_data(&mine, PREEMPT_DATA_PRIO, &prio) ==
		      SLURM_SUCCESS && prio == ((1u << 16) | 1),
	      "candidates' order by tier (%#x)", prio);

	/* In-team ranks are the tiers, not the QOS (whose Priority says the
	 * opposite here). */
	gf_preempt_job(e, c, &urg, &gj);
	CHECK(gj.rank == 10, "preemptor rank = urgent's tier (%d)", gj.rank);
	gf_preempt_job(e, c, &mine, &gj);
	CHECK(gj.rank == 1, "victim rank = batch's tier (%d)", gj.rank);

	/* The real event: preemptable() allowed (urg, mine) above; the
	 * grace-time query reports it once, however often Slurm asks. */
	CHECK(preempt_p_preemptable(&mine, &urg), "allowed again");
	CHECK(preempt_p_get_data(&mine, PREEMPT_DATA_GRACE_TIME, &grace) ==
		      SLURM_SUCCESS && grace == 30,
	      "GraceTime from batch (%u)", grace);
	CHECK(_in_team(e, "teama") == 1, "recorded once (%u)",
	      _in_team(e, "teama"));
	CHECK(preempt_p_get_data(&mine, PREEMPT_DATA_GRACE_TIME, &grace) ==
		      SLURM_SUCCESS, "asked again");
	CHECK(_in_team(e, "teama") == 1, "still once (%u)", _in_team(e, "teama"));
	CHECK(_in_team(e, "teamb") == 0, "nothing for teamb");

	/* preempt_scope=any: Slurm's rule alone decides across teams. */
	gpufair_engine_free(e);
	e = _engine("preempt_by=partition,preempt_scope=any");
	CHECK(preempt_p_preemptable(&theirs, &urg),
	      "preempt_scope=any: another team's lower tier too");
	CHECK(!preempt_p_preemptable(&urg, &theirs), "still never upwards");

	/* preempt_by=qos (default): the same records follow the QOS again. */
	gpufair_engine_free(e);
	e = _engine("preempt_scope=team");
	CHECK(gf_preempt_conf(e)->rules == &gf_rules_qos, "qos by default");
	CHECK(!preempt_p_preemptable(&mine, &urg),
	      "preempt_by=qos: low may not preempt high, whatever the tiers");
	mine.qos_ptr = &q_low;
	CHECK(preempt_p_preemptable(&mine, &same_tier),
	      "preempt_by=qos: high preempts low in the same tier");
	CHECK(preempt_p_get_data(&mine, PREEMPT_DATA_MODE, &mode) ==
		      SLURM_SUCCESS && mode == PREEMPT_MODE_CANCEL,
	      "PreemptMode from the QOS, else the cluster's (%u)", mode);
	gpufair_global_set(NULL);
	gpufair_engine_free(e);
	memset(jobs, 0, sizeof(jobs));
}

/* GPUs as Slurm counts them: TRES 2 is gres/gpu. */
static slurmdb_tres_rec_t tres_cpu = { .type = "cpu" },
			  tres_mem = { .type = "mem" },
			  tres_gpu = { .type = "gres", .name = "gpu" };
static slurmdb_tres_rec_t *tres_array[] = { &tres_cpu, &tres_mem, &tres_gpu };

static void test_reclaim_pair_by_pair(void)
{
	/* 32 GPUs, teama and teamb active: 16 each. teama runs 28 (8, 8, 4,
	 * 4, 4, oldest first), 12 over; bob waits with 8. In reclaim order
	 * (youngest first, one rank) the three 4-GPU jobs are 12 together:
	 * those three, and not the 8-GPU ones, which would take teama to 8. */
	static const uint32_t gpus[5] = { 8, 8, 4, 4, 4 };
	const int64_t now = 1700000000;
	gpufair_engine_t *e = _engine("reclaim=all,preempt_scope=team");
	int32_t ta = gpufair_team_id(e, "teama"), tb = gpufair_team_id(e, "teamb");
	job_record_t run[5], waiting = _job(310, &bob, &batch, &q_low, JOB_PENDING);
	uint64_t alloc[5][3] = { { 0 } }, req[3] = { 0, 0, 8 };
	uint32_t allowed_gpus = 0;
	bool allowed[5];

	assoc_mgr_tres_array = tres_array;
	g_tres_count = 3;
	slurm_conf.last_update++; /* the TRES map is rebuilt with the snapshot */
	waiting.tres_req_cnt = req;
	waiting.details = NULL;
	gpufair_set_cluster_gpus(e, 32);
	gpufair_cycle_begin(e, now);
	for (int i = 0; i < 5; i++) {
		gpufair_job_t g = { .job_id = 301 + i, .team = ta,
				    .gpus = gpus[i],
				    .start_time = now - 3600 + 60 * i,
				    .submit_time = now - 7200 };

		run[i] = _job(301 + i, &alice, &batch, &q_low, JOB_RUNNING);
		run[i].start_time = g.start_time;
		alloc[i][2] = gpus[i];
		run[i].tres_alloc_cnt = alloc[i];
		run[i].tres_req_cnt = alloc[i];
		gpufair_observe_running(e, &g);
	}
	{
		gpufair_job_t w = { .job_id = 310, .team = tb, .gpus = 8,
				    .submit_time = now - 600,
				    .priority = 1000 };

		gpufair_observe_pending(e, &w);
	}
	gpufair_cycle_end(e, now);
	CHECK(gpufair_reclaim_possible(e), "a reclaim is possible");
	for (int i = 0; i < 5; i++) {
		allowed[i] = preempt_p_preemptable(&run[i], &waiting);
		if (allowed[i])
			allowed_gpus += gpus[i];
	}
	CHECK(!allowed[0] && !allowed[1] && allowed[2] && allowed[3] &&
		      allowed[4],
	      "allowed: %d %d %d %d %d, wanted the three 4-GPU jobs only",
	      allowed[0], allowed[1], allowed[2], allowed[3], allowed[4]);
	CHECK(28 - allowed_gpus >= 16,
	      "every allowed victim together leaves teama %u of its 16",
	      28 - allowed_gpus);
	gpufair_global_set(NULL);
	gpufair_engine_free(e);
	assoc_mgr_tres_array = NULL;
	g_tres_count = 0;
}

int main(void)
{
	_setup();
	test_partition_rule();
	test_plugin_partition_mode();
	test_reclaim_pair_by_pair();
	gf_preempt_conf_free();
	if (!failures)
		printf("OK: preempt/gpufair predicates on fake records\n");
	return failures ? 1 : 0;
}
