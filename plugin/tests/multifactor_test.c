/*
 * priority/multifactor's keys and flags under priority/gpufair, at the
 * plugin's level (label "plugin"), outside slurmctld:
 *  1. the key table (prio_multifactor_keys.c): slurm.conf settings it
 *     refuses, naming key, value and what to use instead; those it accepts;
 *  2. a job record into the core's priority inputs (prio_input.c): site
 *     factor and nice without NICE_OFFSET, association, QOS and partition
 *     priority (normalised and raw), the time limit or the partition's, the
 *     PriorityWeightTRES term over the partition's totals; and the
 *     (partition, QOS) pairs of a job in several partitions, in PriorityTier
 *     order where the release sorts them.
 * Linked with libslurmfull (slurm_conf, lists) and libgpufair.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/common/log.h"

#include "priority_gpufair.h"

/* What priority_gpufair.c and slurmctld define in the real thing. */
const char plugin_type[] = "priority/gpufair";
gfp_t gfp = GFP_INITIALIZER;
int slurmctld_tres_cnt = 3;

/* prio_teams.c's lookup, as the cycle's map answers it: association id
 * 3 is the core's association 12 (the test checks it reaches the input). */
extern int32_t gfp_job_assoc_locked(const job_record_t *job, bool walk_tree)
{
	(void)walk_tree;
	return job->assoc_id == 3 ? 12 : 0;
}

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

typedef struct {
	const char *name;
	uint16_t flags;           /* PriorityFlags */
	uint16_t damping;         /* FairShareDampeningFactor */
	bool ok;
	const char *says[3];      /* in the error, when refused */
} key_case_t;

static void test_key_table(void)
{
	const key_case_t cases[] = {
		{ "Slurm's defaults (Fair Tree)", PRIORITY_FLAGS_FAIR_TREE, 1,
		  true, { NULL } },
		{ "NO_FAIR_TREE", 0, 1, true, { NULL } },
		{ "DEPTH_OBLIVIOUS", PRIORITY_FLAGS_DEPTH_OBLIVIOUS, 1, true,
		  { NULL } },
		{ "every flag multifactor knows",
		  GF_PRIORITY_FLAGS_KNOWN, 1, true, { NULL } },
		{ "FairShareDampeningFactor=10", PRIORITY_FLAGS_FAIR_TREE, 10,
		  false, { "FairShareDampeningFactor=10",
			   "not supported by priority/gpufair",
			   "FairShareDampeningFactor=1" } },
		{ "an unknown flag bit", PRIORITY_FLAGS_FAIR_TREE | 0x4000, 1,
		  false, { "PriorityFlags=0x4020", "0x4000", "unknown" } },
		{ "both at once", 0x4000, 3, false,
		  { "FairShareDampeningFactor=3", "; PriorityFlags=0x4000",
		    NULL } },
	};
	char err[4096];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const key_case_t *c = &cases[i];
		bool ok;

		slurm_conf.priority_flags = c->flags;
		slurm_conf.fs_dampening_factor = c->damping;
		ok = gfp_multifactor_keys_ok(err, sizeof(err));
		CHECK(ok == c->ok, "%s: ok=%d, expected %d (%s)", c->name, ok,
		      c->ok, err);
		CHECK(ok == !err[0], "%s: error text '%s' with ok=%d", c->name,
		      err, ok);
		for (int j = 0; j < 3 && c->says[j]; j++)
			CHECK(strstr(err, c->says[j]), "%s: '%s' not in '%s'",
			      c->name, c->says[j], err);
		/* A zero-length buffer still gives the verdict. */
		CHECK(gfp_multifactor_keys_ok(err, 0) == c->ok, "%s: no buffer",
		      c->name);
		gfp_multifactor_keys_log(); /* must not crash on any of them */
	}
	slurm_conf.priority_flags = PRIORITY_FLAGS_FAIR_TREE;
	slurm_conf.fs_dampening_factor = 1;
}

/* --- inputs ------------------------------------------------------------- */

static int _name_order(void *x, void *arg)
{
	part_record_t *p = x;
	char *out = arg;

	strcat(out, p->name);
	strcat(out, ",");
	return 0;
}

typedef struct {
	int n;
	char seen[256];
	double part_norm[8];
} slots_seen_t;

static void _slot(job_record_t *job, part_record_t *part,
		  slurmdb_qos_rec_t *qos, int slot, void *arg)
{
	slots_seen_t *s = arg;
	gpufair_prio_input_t in;

	CHECK(slot == s->n, "slot %d in order %d", slot, s->n);
	strcat(s->seen, part->name);
	strcat(s->seen, qos ? qos->name : "?");
	strcat(s->seen, ",");
	gfp_prio_input(&in, job, 0, part, qos, true, NULL);
	if (slot < 8)
		s->part_norm[slot] = in.partition_norm;
	s->n++;
}

static void test_inputs(void)
{
	/* PriorityWeightTRES=CPU=1000,GRES/gpu=4000 by position, weight 500
	 * for the association. */
	const double tres_w[] = { 1000, 0, 4000 };
	gpufair_knobs_t k = { .knobs_set = 1, .weight_assoc = 500,
			      .tres_weights = tres_w, .tres_cnt = 3 };
	char err[1024];
	uint64_t req[] = { 4, 1000, 2 }, alloc_none[] = { 0, 0, 0 };
	uint64_t tres_a[] = { 64, 256000, 16 }, tres_b[] = { 16, 64000, 4 };
	slurmdb_qos_usage_t qu = { .norm_priority = 0.25 };
	slurmdb_qos_rec_t qos = { .name = "high", .priority = 100,
				  .usage = &qu };
	part_record_t pa = { .name = "a", .priority_tier = 1,
			     .priority_job_factor = 10, .norm_priority = 0.5,
			     .tres_cnt = tres_a, .max_time = 600 };
	part_record_t pb = { .name = "b", .priority_tier = 5,
			     .priority_job_factor = 20, .norm_priority = 1.0,
			     .tres_cnt = tres_b, .max_time = 60 };
	job_details_t details = { .submit_time = 1000, .begin_time = 1000,
				  .accrue_time = 1100,
				  .nice = NICE_OFFSET + 40 };
	job_record_t job = { .job_id = 7, .assoc_id = 3, .qos_ptr = &qos,
			     .part_ptr = &pa, .details = &details,
			     .tres_req_cnt = req, .tres_alloc_cnt = NULL,
			     .time_limit = NO_VAL,
			     .site_factor = NICE_OFFSET - 250 };
	gf_assoc_prio_t assoc_map[4] = { [3] = { .norm = 0.75, .raw = 30 } };
	gpufair_prio_input_t in;
	slots_seen_t seen = { 0 };
	char order[64] = "";
	uint32_t *arr;
	int n;

	gfp.engine = gpufair_engine_new(NULL, &k, err, sizeof(err));
	CHECK(gfp.engine, "engine: %s", err);
	if (!gfp.engine)
		return;
	gfp.tres_weighted = true;
	gfp.gpus.gpu_pos = -1;
	gfp.assoc_prio = assoc_map;
	gfp.team_of_assoc_len = 4;

	gfp_prio_input(&in, &job, 2, NULL, NULL, false, NULL);
	CHECK(in.team == 2, "team %d", in.team);
	CHECK(in.assoc == 12, "its association inside the team: %d", in.assoc);
	CHECK(in.eligible_time == 1100, "age from the accrue time: %ld",
	      (long)in.eligible_time);
	CHECK(in.nice == 40, "nice %d", in.nice);
	CHECK(in.site == -250, "site %ld", (long)in.site);
	CHECK(in.assoc_norm == 0.75 && in.assoc_raw == 30,
	      "assoc %.2f/%.0f", in.assoc_norm, in.assoc_raw);
	CHECK(in.qos_norm == 0.25 && in.qos_raw == 100, "qos %.2f/%.0f",
	      in.qos_norm, in.qos_raw);
	CHECK(in.partition_norm == 0.5 && in.partition_raw == 10,
	      "partition %.2f/%.0f", in.partition_norm, in.partition_raw);
	CHECK(in.time_limit_min == 600, "no limit: the partition's, %.0f",
	      in.time_limit_min);
	/* 4/64 CPUs x 1000 + 2/16 GPUs x 4000 */
	CHECK(fabs(in.tres - (62.5 + 500)) < 1e-9, "tres %.3f", in.tres);
	/* Its in-team rank, for scavenger_order=last: by QOS, the QOS's
	 * Priority until the cycle publishes the Preempt= ranks; by
	 * partition, the partition's PriorityTier. */
	CHECK(in.has_rank == 1 && in.rank == 100, "rank by QOS %d (%d)",
	      in.rank, in.has_rank);
	gfp.rank_by = GPUFAIR_PREEMPT_BY_PARTITION;
	gfp_prio_input(&in, &job, 2, NULL, NULL, false, NULL);
	CHECK(in.has_rank == 1 && in.rank == 1, "rank by partition %d",
	      in.rank);
	gfp.rank_by = GPUFAIR_PREEMPT_BY_QOS;

	/* Another partition: its own factor and TRES totals. */
	job.time_limit = 30;
	gfp_prio_input(&in, &job, 2, &pb, NULL, false, NULL);
	CHECK(in.partition_norm == 1.0 && in.partition_raw == 20,
	      "partition b %.2f", in.partition_norm);
	CHECK(fabs(in.tres - (250 + 2000)) < 1e-9, "tres in b %.3f", in.tres);
	CHECK(in.time_limit_min == 30, "the job's limit %.0f",
	      in.time_limit_min);

	/* Allocated TRES win over requested ones, as in multifactor; sprio
	 * gets each weighted value. */
	{
		double each[3] = { -1, -1, -1 };

		job.tres_alloc_cnt = alloc_none;
		gfp_prio_input(&in, &job, 2, &pa, NULL, false, each);
		CHECK(in.tres == 0 && each[0] == 0 && each[2] == 0,
		      "allocated none: %.1f", in.tres);
		job.tres_alloc_cnt = NULL;
		gfp_prio_input(&in, &job, 2, &pa, NULL, false, each);
		CHECK(each[0] == 62.5 && each[1] == 0 && each[2] == 500,
		      "each %.1f %.1f %.1f", each[0], each[1], each[2]);
	}

	/* An association the map does not know: read from the record only
	 * when the caller may (walk_tree). */
	{
		slurmdb_assoc_usage_t au = { .priority_norm = 0.2 };
		slurmdb_assoc_rec_t a = { .id = 9, .priority = 8,
					  .usage = &au };

		job.assoc_id = 9;
		job.assoc_ptr = &a;
		gfp_prio_input(&in, &job, 2, NULL, NULL, false, NULL);
		CHECK(in.assoc_norm == 0 && in.assoc_raw == 0,
		      "no walk: no assoc");
		gfp_prio_input(&in, &job, 2, NULL, NULL, true, NULL);
		CHECK(in.assoc_norm == 0.2 && in.assoc_raw == 8,
		      "walk: %.2f/%.0f", in.assoc_norm, in.assoc_raw);
		job.assoc_ptr = NULL;
	}

	/* One partition: no priority array. */
	CHECK(!gfp_prio_array_prepare(&job, &n) && n == 0, "single: n=%d", n);
	CHECK(gfp_for_each_slot(&job, _slot, &seen) == 0, "single: slots");

	/* Submitted to a and b: one priority per partition, in the order
	 * the scheduler tries them (PriorityTier, highest first). */
	job.part_ptr_list = list_create(NULL);
	list_append(job.part_ptr_list, &pa);
	list_append(job.part_ptr_list, &pb);
	arr = gfp_prio_array_prepare(&job, &n);
	CHECK(arr && n == 2, "array for 2 partitions: n=%d", n);
	list_for_each(job.part_ptr_list, _name_order, order);
#if GF_PRIO_SORTS_PARTS
	CHECK(!strcmp(order, "b,a,"), "sorted by tier: %s", order);
#endif
	CHECK(gfp_for_each_slot(&job, _slot, &seen) == 2, "two slots");
	CHECK(!strcmp(seen.seen, !strcmp(order, "b,a,") ? "bhigh,ahigh," :
			       "ahigh,bhigh,"),
	      "slots '%s' for order %s", seen.seen, order);
	CHECK(seen.part_norm[0] != seen.part_norm[1],
	      "each slot has its partition's factor");
	CHECK(gfp_prio_replaces(5, 7, PRIORITY_FLAGS_INCR_ONLY) &&
	      !gfp_prio_replaces(7, 5, PRIORITY_FLAGS_INCR_ONLY) &&
	      gfp_prio_replaces(7, 5, 0) && !gfp_prio_replaces(5, 5, 0),
	      "INCR_ONLY");
	FREE_NULL_LIST(job.part_ptr_list);
	CHECK(!gf_prio_array_for(&job, 0) && !gf_prio_array(&job),
	      "one priority again: the array is dropped");

	gfp.assoc_prio = NULL;
	gfp.team_of_assoc_len = 0;
	gpufair_engine_free(gfp.engine);
	gfp.engine = NULL;
}

int main(void)
{
	log_options_t lo = LOG_OPTS_STDERR_ONLY;

	log_init("multifactor_test", lo, 0, NULL);
	test_key_table();
	test_inputs();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("OK: multifactor keys and priority inputs\n");
	return 0;
}
