/*
 * preempt_bench: what preempt/gpufair's predicates cost against Slurm's own
 * preempt/qos, both loaded with dlopen and called through function
 * pointers the way slurmctld's preempt.c calls them (label "bench": it
 * prints figures and asserts no timing).
 *
 *   preempt_bench OURS.so PREEMPT_QOS.so [--jobs N] [--teams T] [--rounds R]
 *                 [--warm 1]
 *
 * A synthetic slurmctld: N job records (default 50,000) over T teams (50),
 * each team an account below root with one user association; QOS low,
 * normal and high (high Preempt=low), 40 % normal, 40 % low, 20 % high; one
 * job in ten running, the rest pending. Every record is followed by ~3 KB
 * of other allocations (details, strings), as in slurmctld, so a pass over
 * the records misses the caches the way a walk of job_list does.
 *
 * Cases, each for both plugins, interleaved, median of R rounds:
 *   predicate, normal: preemptable(job, preemptor) for every record, the
 *       preemptor a pending normal-QOS job (Preempt= empty): what
 *       _add_preemptable_job does for each job slurmctld tries to start;
 *   predicate, high:   the same with a pending high-QOS preemptor (every
 *       low job passes the QOS test);
 *   queue sort:       job_preempt_check(a, b) on pairs of pending jobs, as
 *       sort_job_queue2() does on every comparison.
 *   will-run walk, normal / high: the same predicate calls
 *       inside what _add_preemptable_job() does around them (our reading of
 *       slurmctld 22.05 and 24.11, emulated): job_list followed node by
 *       node, the het job test, then for an allowed candidate Slurm's own
 *       exemption tests (the job's priority, the QOS preempt-exempt time
 *       under an assoc_mgr QOS lock, time()) and the running test of
 *       job_overlap_and_running(), which drops every pending candidate.
 *       ns per candidate: what a job's will-run test costs per job in the
 *       system with each plugin.
 * each with no engine registered (preempt/gpufair without priority/gpufair),
 * with an engine whose last cycle allows no reclaim, and with one where a
 * team below its entitlement waits and another is over its own
 * (gpufair_reclaim_possible() true). Every pass but the queue sort's starts
 * with cold caches (a 64 MiB buffer is written in between; --warm 1: not).
 *
 * Checked (not timed): without reclaim, every pair ours allows preempt/qos
 * allows too.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "slurm_compat.h"
#include "src/common/assoc_mgr.h"
#include "src/common/bitstring.h"
#include "src/common/log.h"

#include "gpufair/c_api.h"

typedef bool (*preemptable_fn)(job_record_t *preemptee,
			       job_record_t *preemptor);
typedef bool (*check_fn)(job_queue_rec_t *preemptor,
			 job_queue_rec_t *preemptee);

typedef struct {
	const char *name;
	void *handle;
	preemptable_fn preemptable;
	check_fn check;
} plugin_t;

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

enum { QOS_LOW = 1, QOS_NORMAL = 2, QOS_HIGH = 3, QOS_COUNT = 4 };
enum { ENGINE_NONE, ENGINE_QUIET, ENGINE_RECLAIM, ENGINE_CASES };
static const char *engine_case[] = { "no engine", "engine, no reclaim",
				     "engine, reclaim possible" };

static size_t njobs = 50000, nteams = 50, rounds = 9;
static bool warm; /* --warm 1: no eviction before the will-run passes */
static job_record_t **jobs;
static job_queue_rec_t *queue;   /* the pending jobs */
static size_t *partner;          /* queue[i] is compared with queue[partner[i]] */
static size_t nqueue;
static job_record_t *pre_normal, *pre_high;
/* job_list: one node per record, allocated next to it (as list_append at
 * submission does). */
typedef struct list_node {
	struct list_node *next;
	job_record_t *job;
} list_node_t;
static list_node_t *job_list_head;
static slurmdb_qos_rec_t qos[QOS_COUNT];
static slurmdb_tres_rec_t tres_cpu = { .type = "cpu" },
			  tres_mem = { .type = "mem" },
			  tres_gpu = { .type = "gres", .name = "gpu" };
static slurmdb_tres_rec_t *tres_array[] = { &tres_cpu, &tres_mem, &tres_gpu };
static gpufair_engine_t *engines[ENGINE_CASES];
static char *evict_buf;
#define EVICT_BYTES (64u << 20)
static volatile unsigned sink;

static uint64_t _now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void _evict(void)
{
	for (size_t i = 0; i < EVICT_BYTES; i += 64)
		evict_buf[i]++;
	sink += (unsigned char)evict_buf[EVICT_BYTES / 2];
}

static void _load(plugin_t *p, const char *path)
{
	int (*init)(void);

	p->handle = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
	if (!p->handle) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		exit(1);
	}
	p->name = dlsym(p->handle, "plugin_type");
	p->preemptable = (preemptable_fn)dlsym(p->handle,
					       "preempt_p_preemptable");
	p->check = (check_fn)dlsym(p->handle, "preempt_p_job_preempt_check");
	init = (int (*)(void))dlsym(p->handle, "init");
	if (!p->name || !p->preemptable || !p->check || !init || init()) {
		fprintf(stderr, "%s: not a preempt plugin\n", path);
		exit(1);
	}
}

/* root -> teamNN -> (user root), the tree sacctmgr builds. */
static slurmdb_assoc_rec_t *_team_user_assocs(void)
{
	static slurmdb_assoc_usage_t root_usage;
	static slurmdb_assoc_rec_t root = { .acct = "root", .id = 1,
					    .usage = &root_usage };
	slurmdb_assoc_rec_t *users = calloc(nteams, sizeof(*users));

	for (size_t t = 0; t < nteams; t++) {
		slurmdb_assoc_rec_t *acct = calloc(1, sizeof(*acct));
		char name[32];

		snprintf(name, sizeof(name), "team%02u", (unsigned)(t + 1));
		acct->acct = strdup(name);
		acct->id = (uint32_t)(2 + 2 * t);
		acct->usage = calloc(1, sizeof(*acct->usage));
		acct->usage->parent_assoc_ptr = &root;
		users[t].acct = acct->acct;
		users[t].user = "root";
		users[t].id = acct->id + 1;
		users[t].usage = calloc(1, sizeof(*users[t].usage));
		users[t].usage->parent_assoc_ptr = acct;
	}
	return users;
}

/* A pending job of team01 with that QOS. */
static job_record_t *_pending_of(uint32_t q)
{
	for (size_t i = 0; i < njobs; i += nteams)
		if (jobs[i]->qos_ptr->id == q && jobs[i]->job_state == JOB_PENDING)
			return jobs[i];
	fprintf(stderr, "no pending job of team01 with QOS %u\n", q);
	exit(1);
}

static void _build_jobs(void)
{
	slurmdb_assoc_rec_t *users = _team_user_assocs();
	const uint32_t qos_of[5] = { QOS_NORMAL, QOS_NORMAL, QOS_LOW, QOS_LOW,
				     QOS_HIGH };
	uint32_t seed = 12345;

	for (int q = 1; q < QOS_COUNT; q++) {
		qos[q].id = (uint32_t)q;
		qos[q].priority = (uint32_t)(q * 100);
	}
	qos[QOS_LOW].name = "low";
	qos[QOS_NORMAL].name = "normal";
	qos[QOS_HIGH].name = "high";
	g_qos_count = QOS_COUNT;
	qos[QOS_HIGH].preempt_bitstr = bit_alloc(QOS_COUNT);
	bit_set(qos[QOS_HIGH].preempt_bitstr, QOS_LOW);

	jobs = calloc(njobs, sizeof(*jobs));
	queue = calloc(njobs, sizeof(*queue));
	for (size_t i = 0; i < njobs; i++) {
		job_record_t *j = calloc(1, sizeof(*j));
		size_t t = i % nteams;
		char *filler;

		seed = seed * 1103515245u + 12345u;
		j->job_id = (uint32_t)(1000 + i);
		j->user_id = 0;
		j->assoc_ptr = &users[t];
		j->assoc_id = users[t].id;
		j->account = (char *)users[t].acct;
		j->qos_ptr = &qos[qos_of[(seed >> 20) % 5]];
		j->qos_id = j->qos_ptr->id;
		j->priority = 1000000 - (uint32_t)(seed % 500000);
		j->details = calloc(1, sizeof(*j->details));
		j->details->submit_time = 1700000000 + (time_t)i;
		j->tres_req_cnt = calloc(3, sizeof(uint64_t));
		j->tres_req_cnt[2] = 1 + (seed >> 16) % 8;
		if ((seed >> 12) % 10 == 0) {
			j->job_state = JOB_RUNNING;
			j->start_time = 1700100000;
			j->tres_alloc_cnt = calloc(3, sizeof(uint64_t));
			j->tres_alloc_cnt[2] = j->tres_req_cnt[2];
		} else {
			j->job_state = JOB_PENDING;
			queue[nqueue++].job_ptr = j;
		}
		/* What else slurmctld allocates per job (script, env,
		 * strings, bitmaps), touched, and the job_list node. */
		filler = malloc(2048 + (seed >> 8) % 2048);
		filler[0] = 1;
		jobs[i] = j;
		{
			static list_node_t **tail = &job_list_head;

			*tail = calloc(1, sizeof(list_node_t));
			(*tail)->job = j;
			tail = &(*tail)->next;
		}
	}
	partner = calloc(nqueue, sizeof(*partner));
	for (size_t i = 0; i < nqueue; i++) {
		seed = seed * 1103515245u + 12345u;
		partner[i] = (seed >> 4) % nqueue;
	}
	/* Pending preemptors of team01: normal and high QOS. */
	pre_normal = _pending_of(QOS_NORMAL);
	pre_high = _pending_of(QOS_HIGH);
}

static gpufair_engine_t *_engine(bool reclaim)
{
	gpufair_knobs_t k;
	char err[1024], name[32];
	gpufair_engine_t *e;
	const int64_t now = 1700200000;

	memset(&k, 0, sizeof(k));
	e = gpufair_engine_new("team_level=1,reclaim=all", &k, err, sizeof(err));
	if (!e) {
		fprintf(stderr, "engine: %s\n", err);
		exit(1);
	}
	for (size_t t = 0; t < nteams; t++) {
		snprintf(name, sizeof(name), "team%02u", (unsigned)(t + 1));
		gpufair_team_id(e, name);
	}
	if (reclaim) {
		/* team02 holds the whole cluster, team01 waits. */
		gpufair_job_t run = { .job_id = 1, .team = 1, .gpus = 64,
				      .start_time = now - 3600,
				      .submit_time = now - 7200 };
		gpufair_job_t wait = { .job_id = 2, .team = 0, .gpus = 8,
				       .submit_time = now - 600,
				       .priority = 1000 };

		gpufair_set_cluster_gpus(e, 64);
		gpufair_cycle_begin(e, now);
		gpufair_observe_running(e, &run);
		gpufair_observe_pending(e, &wait);
		gpufair_cycle_end(e, now);
	}
	CHECK(gpufair_reclaim_possible(e) == (reclaim ? 1 : 0),
	      "reclaim_possible %d, wanted %d", gpufair_reclaim_possible(e),
	      reclaim);
	return e;
}

/*
 * One candidate of slurmctld's will-run walk (_add_preemptable_job and what
 * it calls, as we read them in 22.05 and 24.11; not their code): returns
 * whether it would become a preemption candidate.
 */
static bool _will_run_candidate(const plugin_t *p, job_record_t *job,
				job_record_t *preemptor)
{
	assoc_mgr_lock_t qos_read = { .qos = READ_LOCK };
	time_t exempt_until;

	if (job->het_job_id && !job->het_job_list)
		return false;
	if (!p->preemptable(job, preemptor))
		return false;
	if (job->priority > 0xfffffff0u) /* min_exempt_priority */
		return false;
	if (preemptor->details &&
	    preemptor->details->expanding_jobid == job->job_id)
		return false;
	assoc_mgr_lock(&qos_read); /* acct_policy_is_job_preempt_exempt */
	exempt_until = job->start_time +
		       ((job->part_ptr && job->part_ptr->qos_ptr) ?
				job->part_ptr->qos_ptr->preempt_exempt_time :
				job->qos_ptr->preempt_exempt_time);
	assoc_mgr_unlock(&qos_read);
	if (time(NULL) < exempt_until)
		return false;
	return IS_JOB_RUNNING(job) || IS_JOB_SUSPENDED(job);
}

/* One pass of a case; returns the number of pairs allowed. */
static size_t _pass(const plugin_t *p, int which, bool *allowed)
{
	size_t yes = 0;

	if (which >= 3) {
		job_record_t *pre = which == 3 ? pre_normal : pre_high;
		size_t i = 0;

		for (list_node_t *n = job_list_head; n; n = n->next, i++) {
			bool ok = _will_run_candidate(p, n->job, pre);

			yes += ok;
			if (allowed)
				allowed[i] = ok;
		}
	} else if (which < 2) {
		job_record_t *pre = which == 0 ? pre_normal : pre_high;

		for (size_t i = 0; i < njobs; i++) {
			bool ok = p->preemptable(jobs[i], pre);

			yes += ok;
			if (allowed)
				allowed[i] = ok;
		}
	} else {
		for (size_t i = 0; i < nqueue; i++) {
			bool ok = p->check(&queue[partner[i]], &queue[i]);

			yes += ok;
			if (allowed)
				allowed[i] = ok;
		}
	}
	return yes;
}

static int _cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void _case(const plugin_t *pl, int ec, int which)
{
	static const char *what[] = { "predicate, normal preemptor",
				      "predicate, high preemptor",
				      "queue sort",
				      "will-run walk, normal",
				      "will-run walk, high" };
	size_t calls = which != 2 ? njobs : nqueue;
	uint64_t *ns[2];
	size_t yes[2];
	bool *allowed[2];
	double med[2];

	for (int k = 0; k < 2; k++) {
		ns[k] = calloc(rounds, sizeof(uint64_t));
		allowed[k] = calloc(calls, sizeof(bool));
		yes[k] = _pass(&pl[k], which, allowed[k]); /* warm-up */
	}
	if (ec != ENGINE_RECLAIM)
		for (size_t i = 0; i < calls; i++)
			CHECK(!allowed[1][i] || allowed[0][i],
			      "%s, %s: call %zu allowed by %s, not by %s",
			      engine_case[ec], what[which], i, pl[1].name,
			      pl[0].name);
	for (size_t r = 0; r < rounds; r++)
		for (int n = 0; n < 2; n++) {
			int k = (int)((r + n) % 2); /* alternate who goes first */
			uint64_t t0;

			if (which != 2 && !warm)
				_evict();
			t0 = _now_ns();
			_pass(&pl[k], which, NULL);
			ns[k][r] = _now_ns() - t0;
		}
	for (int k = 0; k < 2; k++) {
		qsort(ns[k], rounds, sizeof(uint64_t), _cmp_u64);
		med[k] = (double)ns[k][rounds / 2] / (double)calls;
	}
	printf("%-26s | %-28s | %7.1f | %7.1f | %5.2f | %zu / %zu\n",
	       engine_case[ec], what[which], med[0], med[1], med[1] / med[0],
	       yes[0], yes[1]);
	for (int k = 0; k < 2; k++) {
		free(ns[k]);
		free(allowed[k]);
	}
}

int main(int argc, char **argv)
{
	log_options_t lo = LOG_OPTS_STDERR_ONLY;
	plugin_t pl[2];

	if (argc < 3) {
		fprintf(stderr, "usage: %s OURS.so PREEMPT_QOS.so [--jobs N] [--teams T] [--rounds R] [--warm 0|1]\n",
			argv[0]);
		return 2;
	}
	for (int i = 3; i + 1 < argc; i += 2) {
		size_t v = strtoul(argv[i + 1], NULL, 10);

		if (!strcmp(argv[i], "--jobs") && v >= 10)
			njobs = v;
		else if (!strcmp(argv[i], "--teams") && v >= 2 && v <= 99)
			nteams = v;
		else if (!strcmp(argv[i], "--rounds") && v >= 1)
			rounds = v;
		else if (!strcmp(argv[i], "--warm"))
			warm = v != 0;
		else {
			fprintf(stderr, "bad option %s %s\n", argv[i],
				argv[i + 1]);
			return 2;
		}
	}
	lo.stderr_level = LOG_LEVEL_ERROR;
	log_init("preempt_bench", lo, 0, NULL);
	slurm_conf.preempt_mode = PREEMPT_MODE_REQUEUE;
	slurm_conf.last_update = 1;
	assoc_mgr_tres_array = tres_array;
	g_tres_count = 3;

	_load(&pl[0], argv[2]); /* preempt/qos first: the baseline */
	_load(&pl[1], argv[1]);
	_build_jobs();
	evict_buf = calloc(1, EVICT_BYTES);
	engines[ENGINE_NONE] = NULL;
	engines[ENGINE_QUIET] = _engine(false);
	engines[ENGINE_RECLAIM] = _engine(true);

	printf("%zu jobs (%zu pending), %zu teams, median of %zu rounds, ns per call\n",
	       njobs, nqueue, nteams, rounds);
	printf("%-26s | %-28s | %7s | %7s | %5s | allowed (qos / ours)\n",
	       "case", "calls", pl[0].name, pl[1].name, "ratio");
	for (int ec = 0; ec < ENGINE_CASES; ec++) {
		gpufair_global_set(engines[ec]);
		for (int which = 0; which < 5; which++)
			_case(pl, ec, which);
	}
	gpufair_global_set(NULL);
	for (int k = 1; k >= 0; k--) {
		void (*fini)(void) = (void (*)(void))dlsym(pl[k].handle, "fini");

		if (fini)
			fini();
	}
	for (int ec = 1; ec < ENGINE_CASES; ec++)
		gpufair_engine_free(engines[ec]);
	if (failures) {
		fprintf(stderr, "%d failure(s)\n", failures);
		return 1;
	}
	return 0;
}
