/*
 * prio_usage.c and prio_usage_clock.c on hand-built Slurm records: the usage
 * Slurm's limits read, charged, decayed, reset and given back as
 * multifactor's decay thread does (its formulas are written out again here,
 * independently). Runs outside slurmctld, linked with libslurmfull for
 * assoc_mgr's locks and lists; slurmctld's own symbols are stubs below.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "priority_gpufair.h"

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)
#define NEAR(a, b) (fabsl((long double)(a) - (long double)(b)) <= \
		    1e-9L * (1 + fabsl((long double)(b))))

/* --- slurmctld's symbols, as far as the two files use them --------------- */
gfp_t gfp;
const char plugin_type[] = "priority/gpufair";
int slurmctld_tres_cnt = 6;  /* TRES_ARRAY_* up to BILLING, then gres/gpu */
uint16_t accounting_enforce = ACCOUNTING_ENFORCE_LIMITS;
list_t *job_list;
#define GPU 5
static double billing = 2.0;

extern double calc_job_billable_tres(job_record_t *job, time_t start,
				     bool locked)
{
	(void)job;
	(void)start;
	(void)locked;
	return billing;
}
extern void lock_slurmctld(slurmctld_lock_t l) { (void)l; }
extern void unlock_slurmctld(slurmctld_lock_t l) { (void)l; }

/* --- records -------------------------------------------------------------- */
static char *names[] = { "cpu", "mem", "energy", "node", "billing", "gres/gpu" };

typedef struct {
	slurmdb_assoc_rec_t root, team, user;
	slurmdb_assoc_usage_t u_root, u_team, u_user;
	slurmdb_qos_rec_t qos, part_qos;
	slurmdb_qos_usage_t q_usage, pq_usage;
	part_record_t part;
	job_record_t job;
	uint64_t alloc[6];
} world_t;

static void _usage_arrays(slurmdb_assoc_usage_t *u)
{
	u->usage_tres_raw = calloc(6, sizeof(long double));
	u->grp_used_tres_run_secs = calloc(6, sizeof(uint64_t));
}

static void _world(world_t *w, double factor, uint32_t qos_flags)
{
	memset(w, 0, sizeof(*w));
	w->root.acct = "root";
	w->team.acct = "team";
	w->user.acct = "team";
	w->user.user = "alice";
	w->root.usage = &w->u_root;
	w->team.usage = &w->u_team;
	w->user.usage = &w->u_user;
	w->u_team.parent_assoc_ptr = &w->root;
	w->u_user.parent_assoc_ptr = &w->team;
	_usage_arrays(&w->u_root);
	_usage_arrays(&w->u_team);
	_usage_arrays(&w->u_user);
	w->user.leaf_usage = &w->u_user;
	w->qos.name = "q";
	w->qos.usage = &w->q_usage;
	w->qos.usage_factor = factor;
	w->qos.flags = qos_flags;
	w->part_qos.name = "partq";
	w->part_qos.usage = &w->pq_usage;
	w->part_qos.usage_factor = 1;
	w->q_usage.usage_tres_raw = calloc(6, sizeof(long double));
	w->q_usage.grp_used_tres_run_secs = calloc(6, sizeof(uint64_t));
	w->pq_usage.usage_tres_raw = calloc(6, sizeof(long double));
	w->pq_usage.grp_used_tres_run_secs = calloc(6, sizeof(uint64_t));
	w->part.qos_ptr = &w->part_qos;

	w->alloc[TRES_ARRAY_CPU] = 2;
	w->alloc[TRES_ARRAY_ENERGY] = 7;  /* never counted */
	w->alloc[GPU] = 4;
	w->job.job_id = 42;
	w->job.magic = JOB_MAGIC;
	w->job.job_state = JOB_RUNNING;
	w->job.start_time = 1000;
	w->job.time_limit = 10; /* minutes */
	w->job.end_time = w->job.end_time_exp = 1000 + 600;
	w->job.tres_alloc_cnt = w->alloc;
	w->job.qos_ptr = &w->qos;
	w->job.part_ptr = &w->part;
	w->job.assoc_ptr = &w->user;

	FREE_NULL_LIST(assoc_mgr_assoc_list);
	FREE_NULL_LIST(assoc_mgr_qos_list);
	assoc_mgr_assoc_list = list_create(NULL);
	list_append(assoc_mgr_assoc_list, &w->root);
	list_append(assoc_mgr_assoc_list, &w->team);
	list_append(assoc_mgr_assoc_list, &w->user);
	assoc_mgr_qos_list = list_create(NULL);
	list_append(assoc_mgr_qos_list, &w->qos);
	list_append(assoc_mgr_qos_list, &w->part_qos);
	FREE_NULL_LIST(job_list);
	job_list = list_create(NULL);
	list_append(job_list, &w->job);
}

/* What acct_policy_job_begin reserves: time limit x TRES x UsageFactor. */
static void _reserve(world_t *w, double factor)
{
	uint64_t secs = (uint64_t)(600 * factor);
	slurmdb_assoc_usage_t *a[] = { &w->u_root, &w->u_team, &w->u_user };

	for (int i = 0; i < 6; i++) {
		if (i == TRES_ARRAY_ENERGY)
			continue;
		for (int k = 0; k < 3; k++)
			a[k]->grp_used_tres_run_secs[i] += w->alloc[i] * secs;
		w->q_usage.grp_used_tres_run_secs[i] += w->alloc[i] * secs;
		w->pq_usage.grp_used_tres_run_secs[i] += w->alloc[i] * secs;
	}
}

static void _cycle(world_t *w, time_t now)
{
	(void)w;
	gfp_usage_begin_locked(now);
	gfp_usage_job_locked(&w->job, now);
	gfp_usage_clock_end_locked(now);
}

static bool _run_secs_zero(world_t *w)
{
	for (int i = 0; i < 6; i++)
		if (w->u_root.grp_used_tres_run_secs[i] ||
		    w->u_team.grp_used_tres_run_secs[i] ||
		    w->u_user.grp_used_tres_run_secs[i] ||
		    w->q_usage.grp_used_tres_run_secs[i] ||
		    w->pq_usage.grp_used_tres_run_secs[i])
			return false;
	return true;
}

/* A job runs through three cycles and ends; table-driven over the QOS
 * UsageFactor and NoDecay. hl = 600 s. */
static void test_run_and_end(void)
{
	static const struct { double f; uint32_t flags; } cases[] = {
		{ 1, 0 }, { 0.5, 0 }, { 2, 0 }, { 0, 0 }, { 1, QOS_FLAG_NO_DECAY },
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		double f = cases[c].f, d = 1 - 0.693 / 600;
		bool flat = cases[c].flags & QOS_FLAG_NO_DECAY;
		long double want, want_flat;
		world_t w;

		_world(&w, f, cases[c].flags);
		memset(&gfp_uclock, 0, sizeof(gfp_uclock));
		gfp_usage_clock_reconfigure();
		_reserve(&w, f);
		_cycle(&w, 980);   /* the first cycle only sets the clock */
		CHECK(!w.u_user.usage_tres_raw[GPU], "case %zu: first cycle charged", c);
		_cycle(&w, 1100);  /* ran 100 s (from its start at 1000) */
		_cycle(&w, 1160);  /* 60 s more */
		w.job.job_state = JOB_COMPLETE | JOB_COMPLETING;
		w.job.end_time = 1190;
		gfp_usage_job_end(&w.job);  /* 30 s, and the rest given back */

		/* Multifactor: decay then add r d^r per period. */
		want = (100 * powl(d, 100) * powl(d, 60) + 60 * powl(d, 60) +
			30 * powl(d, 30)) * f;
		want_flat = (100 + 60 + 30) * f;
		CHECK(NEAR(w.u_user.usage_tres_raw[GPU], want * 4),
		      "case %zu: user GPU usage %Lf, want %Lf", c,
		      w.u_user.usage_tres_raw[GPU], want * 4);
		CHECK(NEAR(w.u_root.usage_tres_raw[GPU], want * 4) &&
		      NEAR(w.u_team.usage_tres_raw[GPU], want * 4),
		      "case %zu: parents charged alike", c);
		CHECK(NEAR(w.u_user.usage_tres_raw[TRES_ARRAY_CPU], want * 2),
		      "case %zu: CPU usage", c);
		CHECK(!w.u_user.usage_tres_raw[TRES_ARRAY_ENERGY],
		      "case %zu: energy counted", c);
		CHECK(NEAR(w.u_team.grp_used_wall, want), "case %zu: wall %f", c,
		      w.u_team.grp_used_wall);
		CHECK(NEAR(w.q_usage.usage_tres_raw[GPU],
			   (flat ? want_flat : want) * 4),
		      "case %zu: QOS GPU usage %Lf", c, w.q_usage.usage_tres_raw[GPU]);
		CHECK(NEAR(w.q_usage.usage_raw, (flat ? want_flat : want) * billing),
		      "case %zu: QOS usage_raw %Lf", c, w.q_usage.usage_raw);
		CHECK(NEAR(w.pq_usage.usage_tres_raw[GPU], want * 4),
		      "case %zu: partition QOS charged at the job's factor", c);
		CHECK(!w.u_user.usage_raw && !w.u_team.usage_raw,
		      "case %zu: an association's usage_raw is gpufair's", c);
		CHECK(_run_secs_zero(&w),
		      "case %zu: reservation not given back exactly: user gpu %lu, qos %lu",
		      c, (unsigned long)w.u_user.grp_used_tres_run_secs[GPU],
		      (unsigned long)w.q_usage.grp_used_tres_run_secs[GPU]);
		CHECK(w.job.end_time_exp == (time_t)NO_VAL,
		      "case %zu: end_time_exp not NO_VAL", c);
		/* A second end (acct_policy_job_fini checks NO_VAL, but a
		 * caller that does not) changes nothing. */
		want = w.u_user.usage_tres_raw[GPU];
		gfp_usage_job_end(&w.job);
		CHECK(w.u_user.usage_tres_raw[GPU] == want,
		      "case %zu: charged twice", c);
	}
}

/* A cycle while the job runs takes what ran out of the reservation. */
static void test_running_reservation(void)
{
	world_t w;

	_world(&w, 1, 0);
	memset(&gfp_uclock, 0, sizeof(gfp_uclock));
	gfp_usage_clock_reconfigure();
	_reserve(&w, 1);
	_cycle(&w, 990);
	_cycle(&w, 1250);
	CHECK(w.u_team.grp_used_tres_run_secs[GPU] == 4 * (600 - 250),
	      "run secs %lu, want %d",
	      (unsigned long)w.u_team.grp_used_tres_run_secs[GPU], 4 * 350);
	/* Past the time limit: nothing more to take, no underflow. */
	_cycle(&w, 1700);
	CHECK(w.u_team.grp_used_tres_run_secs[GPU] == 0, "past the limit: %lu",
	      (unsigned long)w.u_team.grp_used_tres_run_secs[GPU]);
	/* Pending and finished jobs are not charged. */
	w.job.job_state = JOB_PENDING;
	{
		long double before = w.u_team.usage_tres_raw[GPU] *
				     powl(1 - 0.693 / 600, 100);

		_cycle(&w, 1800);
		CHECK(NEAR(w.u_team.usage_tres_raw[GPU], before),
		      "pending job charged");
	}
}

/* Without enforce=limits: no TRES usage, no run seconds; wall is kept. */
static void test_without_limits(void)
{
	world_t w;

	_world(&w, 1, 0);
	accounting_enforce = 0;
	memset(&gfp_uclock, 0, sizeof(gfp_uclock));
	gfp_usage_clock_reconfigure();
	_cycle(&w, 1000);
	_cycle(&w, 1100);
	CHECK(!w.u_team.usage_tres_raw[GPU] && w.u_team.grp_used_wall > 0,
	      "without limits: tres %Lf wall %f", w.u_team.usage_tres_raw[GPU],
	      w.u_team.grp_used_wall);
	accounting_enforce = ACCOUNTING_ENFORCE_LIMITS;
}

/* PriorityUsageResetPeriod=NOW zeroes it all once; the clock file
 * round-trips; after a restart the reservation made again is taken back
 * to the clock. */
static void test_reset_and_restart(void)
{
	char dir[] = "/tmp/gpufair-usage-test-XXXXXX";
	world_t w;

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	slurm_conf.state_save_location = dir;
	_world(&w, 1, QOS_FLAG_NO_DECAY);
	memset(&gfp_uclock, 0, sizeof(gfp_uclock));
	gfp_usage_clock_reconfigure();
	_reserve(&w, 1);
	_cycle(&w, 990);
	_cycle(&w, 1100);
	gfp_usage_clock_save();

	/* A restart: acct_policy reserved the whole limit again. */
	memset(&gfp_uclock, 0, sizeof(gfp_uclock));
	for (int i = 0; i < 6; i++)
		w.u_team.grp_used_tres_run_secs[i] = w.alloc[i] * 600;
	gfp_usage_clock_load();
	CHECK(gfp_uclock.last_ran == 1100 && gfp_uclock.restore,
	      "clock file: last_ran %ld", (long)gfp_uclock.last_ran);
	slurm_conf.priority_reset_period = PRIORITY_RESET_NOW;
	gfp_usage_clock_reconfigure();
	w.u_team.usage_raw = 123; /* gpufair's: not reset here */
	_cycle(&w, 1150);
	CHECK(w.u_team.grp_used_tres_run_secs[GPU] == 4 * (600 - 150),
	      "after the restart: %lu, want %d",
	      (unsigned long)w.u_team.grp_used_tres_run_secs[GPU], 4 * 450);
	/* Reset before this cycle's charge: only its 50 s are left. */
	CHECK(NEAR(w.u_team.usage_tres_raw[GPU], 4 * 50 * powl(1 - 0.693 / 600, 50)),
	      "reset: %Lf", w.u_team.usage_tres_raw[GPU]);
	CHECK(NEAR(w.q_usage.usage_tres_raw[GPU], 4 * 50),
	      "NoDecay QOS reset too: %Lf", w.q_usage.usage_tres_raw[GPU]);
	CHECK(w.u_team.usage_raw == 123, "association usage_raw touched");
	slurm_conf.priority_reset_period = PRIORITY_RESET_NONE;
	{
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/priority_last_decay_ran", dir);
		unlink(path);
		rmdir(dir);
	}
}

int main(void)
{
	assoc_mgr_tres_name_array = names;
	slurm_conf.priority_decay_hl = 600;
	slurm_conf.priority_reset_period = PRIORITY_RESET_NONE;
	test_run_and_end();
	test_running_reservation();
	test_without_limits();
	test_reset_and_restart();
	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	else
		printf("usage_test: all checks passed\n");
	return failures ? 1 : 0;
}
