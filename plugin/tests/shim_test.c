/*
 * Unit tests of the shims' translation (gpufair_slurm.c) on hand-built Slurm
 * records: account paths and team identity from the association tree, GPUs
 * from the TRES arrays (typed GPUs weighted), rank, eligible time, and the
 * parsing of the core's describe text. Runs outside slurmctld, linked with
 * libslurmfull for assoc_mgr_tres_array / g_tres_count.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "slurm_compat.h"
#include "src/common/assoc_mgr.h"

#include "gpufair_slurm.h"

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

/* Association tree: root -> OrgA -> NLP -> (user alice); root -> teamb -> (user bob) */
static slurmdb_assoc_usage_t u_root, u_orga, u_nlp, u_alice, u_teamb, u_bob;
static slurmdb_assoc_rec_t root = { .acct = "root", .usage = &u_root };
static slurmdb_assoc_rec_t orga = { .acct = "OrgA", .usage = &u_orga };
static slurmdb_assoc_rec_t nlp = { .acct = "nlp", .usage = &u_nlp };
static slurmdb_assoc_rec_t alice = { .acct = "nlp", .user = "alice", .usage = &u_alice };
static slurmdb_assoc_rec_t teamb = { .acct = "teamb", .usage = &u_teamb };
static slurmdb_assoc_rec_t bob = { .acct = "teamb", .user = "bob", .usage = &u_bob };

static void test_paths(void)
{
	char buf[GF_PATH_MAX];

	u_orga.parent_assoc_ptr = &root;
	u_nlp.parent_assoc_ptr = &orga;
	u_alice.parent_assoc_ptr = &nlp;
	u_teamb.parent_assoc_ptr = &root;
	u_bob.parent_assoc_ptr = &teamb;

	CHECK(gf_account_path(&alice, buf, sizeof(buf)) == 2 &&
	      !strcmp(buf, "orga/nlp"), "alice path '%s'", buf);
	CHECK(gf_account_path(&nlp, buf, sizeof(buf)) == 2 &&
	      !strcmp(buf, "orga/nlp"), "nlp path '%s'", buf);
	CHECK(gf_account_path(&bob, buf, sizeof(buf)) == 1 &&
	      !strcmp(buf, "teamb"), "bob path '%s'", buf);
	CHECK(gf_account_path(&root, buf, sizeof(buf)) == 0 && !buf[0],
	      "root has no path ('%s')", buf);
	CHECK(gf_account_path(NULL, buf, sizeof(buf)) == 0, "NULL assoc");
	/* A small buffer truncates, never overflows. */
	CHECK(gf_account_path(&alice, buf, 4) == 2 && !strcmp(buf, "org"),
	      "truncated '%s'", buf);

	/* Team identity by level. */
	CHECK(gf_team_assoc(&alice, 1) == &orga, "alice level 1");
	CHECK(gf_team_assoc(&alice, 2) == &nlp, "alice level 2");
	CHECK(gf_team_assoc(&alice, 5) == &nlp, "short path is its own team");
	CHECK(gf_team_assoc(&bob, 1) == &teamb, "bob level 1");
	CHECK(gf_team_assoc(&bob, 2) == &teamb, "bob level 2 (short path)");
	CHECK(gf_team_assoc(&alice, 1) != gf_team_assoc(&bob, 1),
	      "different teams");
	CHECK(gf_team_assoc(&root, 1) == NULL, "root is no team");
	CHECK(gf_team_assoc(NULL, 1) == NULL, "NULL is no team");
}

static void test_gpus(void)
{
	/* TRES: cpu, mem, gres/gpu, gres/gpu:a100, gres/gpu:t4 */
	slurmdb_tres_rec_t cpu = { .type = "cpu" }, mem = { .type = "mem" };
	slurmdb_tres_rec_t gpu = { .type = "gres", .name = "gpu" };
	slurmdb_tres_rec_t a100 = { .type = "gres", .name = "gpu:a100" };
	slurmdb_tres_rec_t t4 = { .type = "gres", .name = "gpu:t4" };
	slurmdb_tres_rec_t *arr[] = { &cpu, &mem, &gpu, &a100, &t4 };
	uint64_t alloc[5] = { 16, 1000, 8, 2, 4 }, req[5] = { 4, 100, 3, 0, 0 };
	uint64_t none[5] = { 4, 100, 0, 0, 0 };
	job_record_t job = { 0 };
	gf_gpu_map_t map;
	double g;

	assoc_mgr_tres_array = arr;
	g_tres_count = 5;
	gf_gpu_map_build(&map,
			 "gpu_weight=1.5\ngpu_weight:a100=2\nteam_level=1\n");
	CHECK(map.gpu_pos == 2 && map.ntyped == 2, "positions %d/%d",
	      map.gpu_pos, map.ntyped);

	/* Running: 2 a100 at 2, 4 t4 at the untyped 1.5, 2 untyped at 1.5. */
	job.job_state = JOB_RUNNING;
	job.tres_alloc_cnt = alloc;
	job.tres_req_cnt = req;
	g = gf_job_gpus(&map, &job);
	CHECK(fabs(g - (2 * 2 + 4 * 1.5 + 2 * 1.5)) < 1e-9, "running gpus %g", g);

	/* Pending (also a requeued job with an old allocation): requested. */
	job.job_state = JOB_PENDING;
	g = gf_job_gpus(&map, &job);
	CHECK(fabs(g - 3 * 1.5) < 1e-9, "pending gpus %g", g);

	/* No GPUs at all, NO_CONSUME and missing arrays cost nothing. */
	job.tres_req_cnt = none;
	CHECK(gf_job_gpus(&map, &job) == 0, "no gpus");
	none[2] = NO_CONSUME_VAL64;
	CHECK(gf_job_gpus(&map, &job) == 0, "NO_CONSUME");
	job.tres_req_cnt = NULL;
	job.tres_alloc_cnt = NULL;
	CHECK(gf_job_gpus(&map, &job) == 0, "no arrays");

	/* Without weights every GPU is 1; without gres/gpu nothing counts. */
	job.job_state = JOB_RUNNING;
	job.tres_alloc_cnt = alloc;
	gf_gpu_map_build(&map, NULL);
	CHECK(gf_job_gpus(&map, &job) == 8, "unweighted %g",
	      gf_job_gpus(&map, &job));
	g_tres_count = 2;
	gf_gpu_map_build(&map, NULL);
	CHECK(map.gpu_pos == -1 && gf_job_gpus(&map, &job) == 0,
	      "no gpu TRES");
	assoc_mgr_tres_array = NULL;
	g_tres_count = 0;
}

static void test_job_fill(void)
{
	slurmdb_qos_rec_t qos = { .priority = 100 };
	job_details_t details = { .submit_time = 1000, .begin_time = 1200 };
	job_record_t job = { .job_id = 42, .user_id = 1001, .qos_ptr = &qos,
			     .details = &details, .start_time = 1500,
			     .job_state = JOB_RUNNING };
	gf_gpu_map_t map = { .gpu_pos = -1 };
	gpufair_job_t j;

	gf_job_fill(&j, &job, 7, &map, GPUFAIR_PREEMPT_BY_QOS);
	CHECK(j.job_id == 42 && j.team == 7 && j.user_id == 1001 &&
	      j.rank == 100 && j.gpus == 0 && j.submit_time == 1000 &&
	      j.eligible_time == 1200 && j.start_time == 1500,
	      "fill running");
	job.job_state = JOB_PENDING;
	gf_job_fill(&j, &job, 7, &map, GPUFAIR_PREEMPT_BY_QOS);
	CHECK(j.start_time == 0, "pending has no start");
	CHECK(gf_job_eligible(&job, true) == 1000, "ACCRUE_ALWAYS: submit");
	details.begin_time = 0;
	CHECK(gf_job_eligible(&job, false) == 1000, "no begin: submit");
	job.qos_ptr = NULL;
	CHECK(gf_job_rank(&job, GPUFAIR_PREEMPT_BY_QOS) == 0, "no QOS: rank 0");
	qos.priority = 0xffffffffu;
	job.qos_ptr = &qos;
	CHECK(gf_job_rank(&job, GPUFAIR_PREEMPT_BY_QOS) == INT32_MAX,
	      "huge QOS priority clamps");

	/* preempt_by=partition: the partition's tier, whatever the QOS. */
	part_record_t part = { .priority_tier = 7 };
	CHECK(gf_job_rank(&job, GPUFAIR_PREEMPT_BY_PARTITION) == 0,
	      "no partition: tier 0");
	job.part_ptr = &part;
	CHECK(gf_job_rank(&job, GPUFAIR_PREEMPT_BY_PARTITION) == 7,
	      "partition tier %d", gf_job_rank(&job, GPUFAIR_PREEMPT_BY_PARTITION));
	job.qos_ptr = NULL;
	gf_job_fill(&j, &job, 7, &map, GPUFAIR_PREEMPT_BY_PARTITION);
	CHECK(j.rank == 7, "fill ranks by tier without a QOS (%d)", j.rank);
	CHECK(gf_rank_by("team_level=1\npreempt_by=partition\n") ==
		      GPUFAIR_PREEMPT_BY_PARTITION &&
	      gf_rank_by("preempt_by=qos\n") == GPUFAIR_PREEMPT_BY_QOS &&
	      gf_rank_by(NULL) == GPUFAIR_PREEMPT_BY_QOS, "gf_rank_by");
}

static void test_describe(void)
{
	const char *d = "team_level=2\nstate_file=/x/y.state\ngpu_weight=1.5\n"
			"gpu_weight:a100=2\nbad=\n";
	char buf[64];

	CHECK(gf_describe_long(d, "team_level", 1) == 2, "team_level");
	CHECK(gf_describe_long(d, "level", 1) == 1, "no partial key match");
	CHECK(gf_describe_long(d, "bad", 9) == 9, "empty value: default");
	CHECK(gf_describe_double(d, "gpu_weight", 1) == 1.5, "gpu_weight");
	CHECK(gf_describe_double(d, "gpu_weight:a100", 1) == 2, "typed");
	CHECK(gf_describe_double(d, "gpu_weight:t4", 1.5) == 1.5, "absent");
	gf_describe_str(d, "state_file", buf, sizeof(buf));
	CHECK(!strcmp(buf, "/x/y.state"), "state_file '%s'", buf);
	gf_describe_str(d, "nothing", buf, sizeof(buf));
	CHECK(!buf[0], "absent string is empty");
	gf_describe_str(d, "state_file", buf, 4);
	CHECK(!strcmp(buf, "/x/"), "truncated '%s'", buf);
	CHECK(gf_describe_long(NULL, "team_level", 3) == 3, "NULL text");
}

int main(void)
{
	test_paths();
	test_gpus();
	test_job_fill();
	test_describe();
	if (!failures)
		printf("OK: shim translation\n");
	return failures ? 1 : 0;
}
