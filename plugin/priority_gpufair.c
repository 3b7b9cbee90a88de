/*****************************************************************************\
 *  priority_gpufair.c - priority/gpufair: fair share on decayed GPU-hours
 *  per team, with the bait penalty, computed by the gpufair core.
 *****************************************************************************
 *  This shim only translates: Slurm's records and slurm.conf go in, the core
 *  (libgpufair.so, include/gpufair/c_api.h) decides, and priorities, sprio
 *  factors and sshare usage come back out. No policy is written here.
 *
 *  Locks each entry point runs under (Slurm 22.05, checked in its source):
 *
 *  init()      slurmctld main thread at start-up (controller.c), or lazily
 *              inside read_slurm_conf() at a restart, when Slurm may
 *              already hold the job/part WRITE locks: so init() takes no
 *              slurmctld or assoc_mgr lock at all (taking one deadlocked,
 *              EDEADLK); it loads the state and starts our thread, whose
 *              first cycle reads partitions, billing weights and GPU TRES
 *              under the locks below. Also loaded by sshare/sprio (outside
 *              slurmctld): then we do nothing at all.
 *  fini()      shutdown; no lock held. Stops our thread, saves the state.
 *  priority_p_set()           job WRITE lock held (job submit / requeue
 *              paths of job_mgr.c). We take assoc+qos READ, like multifactor,
 *              and noticed_mutex (innermost, a few instructions) to tell the
 *              cycle of a job its id scan will not find.
 *  priority_p_reconfig()      sometimes under the slurmctld config WRITE
 *              lock (all of conf/job/node/part), sometimes under none: we
 *              take no slurmctld lock here, only read slurm_conf.
 *  priority_p_set_assoc_usage() assoc lock held by the caller
 *              (assoc_mgr_get_shares, job_mgr QOS usage threshold).
 *  priority_p_calc_fs_factor() pure; also called inside sshare.
 *  priority_p_get_priority_factors_list() no lock held; we take
 *              { job READ, node READ, part READ } like multifactor.
 *  priority_p_job_end()       job WRITE lock held (acct_policy_job_fini);
 *              we take assoc+qos WRITE to give back grp_used_tres_run_secs.
 *  Our thread "gpufair": { job WRITE, part READ, fed READ } then assoc
 *              { assoc WRITE, qos READ, tres READ }, in that order
 *              (slurmctld locks before assoc_mgr locks, as everywhere);
 *              the state file is written after both are released.
\*****************************************************************************/

#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "slurm/slurm_errno.h"

#include "src/common/assoc_mgr.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/run_in_daemon.h"
#include "src/common/slurm_priority.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "gpufair_slurm.h"

/*
 * slurmctld-only data. sshare and sprio dlopen this plugin too, where these
 * symbols do not exist: weak references resolve to NULL there instead of
 * failing the load. (Functions are bound lazily and never called outside
 * slurmctld.)
 */
#pragma weak job_list
#pragma weak last_job_update
#pragma weak slurmctld_tres_cnt
#pragma weak part_list
#pragma weak default_part_loc

GF_EXPORT const char plugin_name[] = "Priority gpufair plugin (GPU fair share, bait penalty)";
GF_EXPORT const char plugin_type[] = "priority/gpufair";
GF_EXPORT const uint32_t plugin_version = SLURM_VERSION_NUMBER;

#define GF_STATE_FILE "gpufair.state"

/* Everything the plugin keeps; one instance per process. */
static struct {
	gpufair_engine_t *engine;     /* NULL outside slurmctld */
	int team_level;
	uint16_t flags;               /* PriorityFlags */
	char state_path[PATH_MAX];
	char *billing_weights;        /* TRESBillingWeights given to the core */
	bool warned_no_gpu_tres;      /* said once that gres/gpu is not tracked */
	/* Derived from the effective configuration by _after_config(), which
	 * reconfigure may run concurrently with the cycle: conf_mutex. It is
	 * only ever taken innermost (never while acquiring slurmctld locks). */
	pthread_mutex_t conf_mutex;
	char describe[8192];          /* effective config (config_describe) */

	/* Read on hot paths, rebuilt by the cycle thread: guarded by map_lock
	 * (the cycle thread, the only writer, reads them without it). */
	pthread_rwlock_t map_lock;
	gf_gpu_map_t gpus;
	int32_t *team_of_assoc;       /* assoc id -> team id (-1 unknown) */
	uint32_t team_of_assoc_len;
	gpufair_team_report_t *reports; /* by team id, for sshare */
	int32_t nreports;

	/* The cycle thread. */
	pthread_t thread;
	bool thread_running;
	pthread_mutex_t cycle_mutex;
	pthread_cond_t cycle_cond;
	bool shutdown;
	time_t prev_cycle;            /* `now` of the previous cycle */
} g = {
	.team_level = 1,
	.map_lock = PTHREAD_RWLOCK_INITIALIZER,
	.conf_mutex = PTHREAD_MUTEX_INITIALIZER,
	.cycle_mutex = PTHREAD_MUTEX_INITIALIZER,
	.cycle_cond = PTHREAD_COND_INITIALIZER,
};

static int _reset_period(uint16_t p)
{
	switch (p) {
	case PRIORITY_RESET_NOW: return GPUFAIR_RESET_NOW;
	case PRIORITY_RESET_DAILY: return GPUFAIR_RESET_DAILY;
	case PRIORITY_RESET_WEEKLY: return GPUFAIR_RESET_WEEKLY;
	case PRIORITY_RESET_MONTHLY: return GPUFAIR_RESET_MONTHLY;
	case PRIORITY_RESET_QUARTERLY: return GPUFAIR_RESET_QUARTERLY;
	case PRIORITY_RESET_YEARLY: return GPUFAIR_RESET_YEARLY;
	default: return GPUFAIR_RESET_NONE;
	}
}

/* The standard Priority* keys, as Slurm parsed them from slurm.conf. */
static void _knobs_from_conf(gpufair_knobs_t *k, const char *billing)
{
	memset(k, 0, sizeof(*k));
	k->decay_half_life_s = slurm_conf.priority_decay_hl;
	k->calc_period_s = slurm_conf.priority_calc_period;
	k->max_age_s = slurm_conf.priority_max_age;
	k->usage_reset_period = _reset_period(slurm_conf.priority_reset_period);
	k->weight_age = slurm_conf.priority_weight_age;
	k->weight_fairshare = slurm_conf.priority_weight_fs;
	k->weight_job_size = slurm_conf.priority_weight_js;
	k->weight_partition = slurm_conf.priority_weight_part;
	k->weight_qos = slurm_conf.priority_weight_qos;
	k->favor_small = slurm_conf.priority_favor_small ? 1 : 0;
	k->tres_billing_weights = billing;
	k->knobs_set = 1;
}

/* TRESBillingWeights of the default partition, else of the first partition
 * that has one. Caller holds the part READ lock. Returns an xstrdup. */
static int _first_billing(void *x, void *arg)
{
	part_record_t *part = x;
	char **out = arg;

	if (!*out && part->billing_weights_str && part->billing_weights_str[0])
		*out = xstrdup(part->billing_weights_str);
	return 0;
}

static char *_billing_weights_locked(void)
{
	char *w = NULL;

	if (default_part_loc && default_part_loc->billing_weights_str &&
	    default_part_loc->billing_weights_str[0])
		return xstrdup(default_part_loc->billing_weights_str);
	if (part_list)
		list_for_each(part_list, _first_billing, &w);
	return w;
}

/* Derived settings from the core's effective configuration; logs it. */
static void _after_config(const char *why)
{
	char desc[sizeof(g.describe)], file[PATH_MAX];

	if (gpufair_config_describe(g.engine, desc, sizeof(desc)) != GPUFAIR_OK)
		desc[0] = '\0';
	slurm_mutex_lock(&g.conf_mutex);
	memcpy(g.describe, desc, sizeof(desc));
	g.team_level = (int)gf_describe_long(desc, "team_level", 1);
	gf_describe_str(desc, "state_file", file, sizeof(file));
	if (file[0])
		snprintf(g.state_path, sizeof(g.state_path), "%s", file);
	else
		snprintf(g.state_path, sizeof(g.state_path), "%s/%s",
			 slurm_conf.state_save_location ?
			 slurm_conf.state_save_location : ".",
			 GF_STATE_FILE);
	g.flags = slurm_conf.priority_flags;
	slurm_mutex_unlock(&g.conf_mutex);

	for (char *p = desc; *p; p++)
		if (*p == '\n')
			*p = ' ';
	info("%s: %s: core %s, state %s, config: %s", plugin_type, why,
	     gpufair_version(), g.state_path, desc);
	if (g.flags & ~(PRIORITY_FLAGS_ACCRUE_ALWAYS |
			PRIORITY_FLAGS_CALCULATE_RUNNING |
			PRIORITY_FLAGS_FAIR_TREE |
			PRIORITY_FLAGS_DEPTH_OBLIVIOUS))
		info("%s: PriorityFlags other than ACCRUE_ALWAYS and CALCULATE_RUNNING have no effect",
		     plugin_type);
}

/* Load the state file; a corrupt one is kept aside and we start fresh. */
static void _load_state(void)
{
	char err[1024];
	struct stat st;
	int rc;

	if (stat(g.state_path, &st) < 0) {
		if (errno == ENOENT)
			info("%s: no state file %s, starting fresh",
			     plugin_type, g.state_path);
		else
			error("%s: cannot stat state file %s: %m; starting fresh",
			      plugin_type, g.state_path);
		return;
	}
	rc = gpufair_state_load(g.engine, g.state_path, err, sizeof(err));
	if (rc == GPUFAIR_OK) {
		info("%s: loaded state from %s (%d teams)", plugin_type,
		     g.state_path, gpufair_team_count(g.engine));
	} else if (rc == GPUFAIR_ERR_STATE) {
		char aside[PATH_MAX + 64];

		snprintf(aside, sizeof(aside), "%s.corrupt-%ld", g.state_path,
			 (long)time(NULL));
		if (rename(g.state_path, aside) < 0)
			error("%s: CORRUPT state file %s (%s) could not be renamed to %s: %m",
			      plugin_type, g.state_path, err, aside);
		else
			error("%s: CORRUPT state file %s: %s. Kept as %s for inspection; STARTING WITH EMPTY USAGE AND PENALTIES",
			      plugin_type, g.state_path, err, aside);
	} else {
		error("%s: cannot read state file %s: %s; starting fresh",
		      plugin_type, g.state_path, err);
	}
}

static void _save_state(void)
{
	char err[1024], path[PATH_MAX];

	if (!g.engine)
		return;
	slurm_mutex_lock(&g.conf_mutex);
	memcpy(path, g.state_path, sizeof(path));
	slurm_mutex_unlock(&g.conf_mutex);
	if (gpufair_state_save(g.engine, path, err, sizeof(err)) != GPUFAIR_OK)
		error("%s: saving state to %s failed: %s", plugin_type, path,
		      err);
}

/* ---------------------------------------------------------------------- */
/* Team and GPU lookups                                                     */

/* Team of an association, through the path below root. Caller holds the
 * assoc READ lock. */
static int32_t _team_of_assoc_locked(const slurmdb_assoc_rec_t *assoc)
{
	char path[GF_PATH_MAX];

	if (!assoc || !gf_account_path(assoc, path, sizeof(path)))
		return -1;
	return gpufair_team_id(g.engine, path);
}

/* Team of a job. Cached by association id (rebuilt every cycle); a miss
 * (an association newer than the last cycle) walks the account tree.
 * Caller holds the assoc READ lock and map_lock for reading (or is the
 * cycle thread, the only writer of the map). */
static int32_t _job_team_locked(const job_record_t *job)
{
	int32_t team = -1;

	if (job->assoc_id < g.team_of_assoc_len)
		team = g.team_of_assoc[job->assoc_id];
	if (team >= 0)
		return team;
	if (job->assoc_ptr)
		return _team_of_assoc_locked(job->assoc_ptr);
	if (job->account && job->account[0]) {
		/* No association (AccountingStorageEnforce without
		 * associations): the account name is the path. */
		char acct[GF_PATH_MAX];
		size_t i;

		for (i = 0; job->account[i] && i + 1 < sizeof(acct); i++)
			acct[i] = (char)tolower((unsigned char)job->account[i]);
		acct[i] = '\0';
		return gpufair_team_id(g.engine, acct);
	}
	return -1;
}

static void _prio_input(gpufair_prio_input_t *in, const job_record_t *job,
			int32_t team)
{
	memset(in, 0, sizeof(*in));
	in->team = team;
	in->gpus = gf_job_gpus(&g.gpus, job);
	in->eligible_time = gf_job_eligible(
		job, g.flags & PRIORITY_FLAGS_ACCRUE_ALWAYS);
	if (job->qos_ptr && job->qos_ptr->usage)
		in->qos_norm = job->qos_ptr->usage->norm_priority;
	if (job->part_ptr)
		in->partition_norm = job->part_ptr->norm_priority;
	if (in->qos_norm < 0 || in->qos_norm > 1 || in->qos_norm != in->qos_norm)
		in->qos_norm = 0;
	if (in->partition_norm < 0 || in->partition_norm > 1 ||
	    in->partition_norm != in->partition_norm)
		in->partition_norm = 0;
	/* details->nice is stored with NICE_OFFSET added (uint32). */
	in->nice = job->details ?
		(int32_t)((int64_t)job->details->nice - (int64_t)NICE_OFFSET) :
		0;
}

/* The sprio breakdown (weighted factors, as multifactor stores them). */
static void _fill_factors(priority_factors_object_t *obj,
			  const gpufair_factors_t *fp, const job_record_t *job)
{
	gpufair_factors_t f = *fp;

	obj->priority_age = f.w_age;
	obj->priority_fs = f.w_fairshare;
	obj->priority_js = f.w_job_size;
	obj->priority_part = f.w_partition;
	obj->priority_qos = f.w_qos;
	obj->priority_assoc = 0;
	obj->priority_site = NICE_OFFSET; /* sprio shows site - NICE_OFFSET: 0 */
	obj->nice = job->details ? job->details->nice : NICE_OFFSET;
}

/*
 * Priority of a pending job at submit (or update), with the sprio breakdown
 * stored in job->prio_factors. The cycle does not store the breakdown (one
 * cache miss per job less on its hottest loop):
 * priority_p_get_priority_factors_list() recomputes it on demand. Caller
 * holds the job WRITE lock, assoc/qos READ (or stronger) and map_lock for
 * reading.
 */
static uint32_t _set_job_priority_locked(job_record_t *job, time_t now)
{
	gpufair_prio_input_t in;
	gpufair_factors_t f;
	uint32_t prio;

	_prio_input(&in, job, _job_team_locked(job));
	prio = gpufair_priority(g.engine, &in, now, &f);
	if (!job->prio_factors)
		job->prio_factors = xmalloc(sizeof(priority_factors_object_t));
	_fill_factors(job->prio_factors, &f, job);
	log_flag(PRIO, "%s: %pJ team=%d gpus=%.2f age=%.3f fs=%.3f (penalty %.2f) size=%.3f part=%.3f qos=%.3f nice=%d -> %u",
		 plugin_type, job, in.team, in.gpus, f.age, f.fairshare,
		 f.penalty, f.job_size, f.partition, f.qos, f.nice, prio);
	return prio ? prio : 1;
}

/* ---------------------------------------------------------------------- */
/* The cycle                                                                */

typedef struct {
	time_t now;
	time_t since;     /* jobs that ended at or after this are reported */
	bool full_walk;   /* this cycle follows job_list (see below) */
	int running, pending, ended, reprioritised, tracked;
} cycle_ctx_t;

/*
 * Which records a cycle looks at.
 *
 * The cycle is bound by memory, not by the policy (the core costs ~70 ns per
 * job): following job_list costs one dependent cache miss per list node,
 * before the record itself is touched, and most records in job_list are
 * finished jobs waiting to be purged. So the cycle keeps its own table of
 * the jobs that matter (pending, running, suspended), by id, sorted, with
 * the record's address as last seen. It finds each record again with
 * find_job_record(), Slurm's own hash lookup, which returns NULL once a
 * record was purged: the table's addresses are never dereferenced, only
 * prefetched (a prefetch of freed memory is harmless), so a purge between
 * cycles cannot make us touch a freed record. Slurm has no purge callback,
 * hence the lookup.
 *
 * New records come from three places, all seen under the job WRITE lock:
 *   - job ids handed out since the last cycle, [scan_next, next job id):
 *     submissions, job array tasks split off their meta record, het job
 *     components; each is looked up once;
 *   - priority_p_set(), for ids below that range (an admin's --jobid, a
 *     job updated or released) or far above it (an admin's --jobid again):
 *     pushed onto `noticed`;
 *   - a full walk of job_list at the first cycle, after a reconfigure, when
 *     job ids wrapped or jumped, and every GF_FULL_WALK_CYCLES cycles. The
 *     periodic one catches what nothing announces: a *finished* job that an
 *     admin requeues (scontrol requeue) becomes pending again without any
 *     call into a priority plugin, and keeps its old priority until then.
 * A job leaves the table once it is finished and its end was charged.
 */
#define GF_FULL_WALK_CYCLES 10

typedef struct {
	uint32_t id;
	job_record_t *addr;   /* as last seen: only ever prefetched */
} gf_tracked_t;

static gf_tracked_t *tracked;     /* sorted by id, unique */
static size_t tracked_len, tracked_cap;
static gf_tracked_t *adds;        /* new this cycle, merged into tracked */
static size_t adds_len, adds_cap;
static unsigned cycles_since_full;
static bool full_walk_due = true; /* first cycle; reconfigure sets it
				   * (atomic: reconfigure is another thread) */

/* priority_p_set() appends the jobs it sees with ids below scan_next, or
 * far above, here (the others will be scanned). Its callers hold the job
 * WRITE lock as the cycle does, but noticed_mutex keeps this safe whatever
 * the caller; it guards scan_next too. */
static pthread_mutex_t noticed_mutex = PTHREAD_MUTEX_INITIALIZER;
static uint32_t scan_next;        /* ids below were looked up (no wrap) */
static gf_tracked_t *noticed;
static size_t noticed_len, noticed_cap;
#define GF_NOTICED_MAX (1 << 20)  /* beyond: a full walk instead */
static bool noticed_overflow;

/*
 * The cycle's other buffers, kept between cycles (only the cycle thread
 * touches them, with the job WRITE lock held from the walk to the
 * re-prioritising loop, so the job pointers stay valid):
 *   walk, walk_id, walk_keep: the records looked at, their ids, and
 *              whether the table keeps them (id and verdict are taken
 *              while the record's lines are in cache, so rebuilding the
 *              table touches no record);
 *   pend_job/pend_in/pend_old/pend_prio: the pending jobs to re-prioritise,
 *              their priority inputs, old and new priorities (parallel
 *              arrays, so the inputs go to the core in one call);
 *   wait_jobs: the pending jobs that could run now, for the bait detector
 *              (also one call).
 *
 * Why a pointer array and prefetching: knowing the records in advance lets
 * the CPU fetch the next jobs' lines while it works on this one
 * (__builtin_prefetch); only the lines the policy needs are read, and a
 * priority is only written (not read again) when it changed.
 */
static job_record_t **walk;
static uint32_t *walk_id;
static bool *walk_keep;
static size_t walk_len, walk_cap;
static job_record_t **pend_job;
static gpufair_prio_input_t *pend_in;
static uint32_t *pend_old, *pend_prio;
static size_t pend_len;   /* the buffers hold walk_cap entries each */
static gpufair_job_t *wait_jobs;  /* pending jobs that could run now */
static size_t wait_len;

#define GF_PREFETCH_RECORD 32 /* jobs ahead: the record itself */
#define GF_PREFETCH_REFS 16   /* jobs ahead: details and TRES counts */

static void _free_cycle_buffers(void)
{
	xfree(walk);
	xfree(walk_id);
	xfree(walk_keep);
	xfree(pend_job);
	xfree(pend_in);
	xfree(pend_old);
	xfree(pend_prio);
	xfree(wait_jobs);
	walk_len = walk_cap = pend_len = wait_len = 0;
	xfree(tracked);
	xfree(adds);
	tracked_len = tracked_cap = adds_len = adds_cap = 0;
	slurm_mutex_lock(&noticed_mutex);
	xfree(noticed);
	noticed_len = noticed_cap = 0;
	scan_next = 0;
	slurm_mutex_unlock(&noticed_mutex);
	cycles_since_full = 0;
	__atomic_store_n(&full_walk_due, true, __ATOMIC_SEQ_CST);
}

/* Room for n jobs in every walk buffer (at most every job is pending), so
 * the walk itself never grows them but in the rare case that job_list grew
 * between list_count() and the walk. */
static void _reserve(size_t n)
{
	if (n <= walk_cap)
		return;
	n = MAX(n, 2 * walk_cap);
	xrecalloc(walk, n, sizeof(*walk));
	xrecalloc(walk_id, n, sizeof(*walk_id));
	xrecalloc(walk_keep, n, sizeof(*walk_keep));
	xrecalloc(pend_job, n, sizeof(*pend_job));
	xrecalloc(pend_in, n, sizeof(*pend_in));
	xrecalloc(pend_old, n, sizeof(*pend_old));
	xrecalloc(pend_prio, n, sizeof(*pend_prio));
	xrecalloc(wait_jobs, n, sizeof(*wait_jobs));
	walk_cap = n;
}

/* One more entry in an array of gf_tracked_t that grows by doubling. */
static void _push_tracked(gf_tracked_t **a, size_t *len, size_t *cap,
			  uint32_t id, job_record_t *addr)
{
	if (*len == *cap) {
		*cap = MAX((size_t)1024, 2 * *cap);
		xrecalloc(*a, *cap, sizeof(**a));
	}
	(*a)[*len].id = id;
	(*a)[*len].addr = addr;
	(*len)++;
}

/* From priority_p_set(): a job the id scan may not see (see above): below
 * the scanned range, or so far above it (an admin's --jobid) that the id
 * sequence will not get there soon. */
#define GF_SCAN_SLACK (1u << 16)
static void _notice(job_record_t *job)
{
	slurm_mutex_lock(&noticed_mutex);
	if (job->job_id < scan_next ||
	    job->job_id - scan_next >= GF_SCAN_SLACK) {
		if (noticed_len < GF_NOTICED_MAX)
			_push_tracked(&noticed, &noticed_len, &noticed_cap,
				      job->job_id, job);
		else
			noticed_overflow = true;
	}
	slurm_mutex_unlock(&noticed_mutex);
}

/* The lines of a job record that a pending job's observation reads (the
 * running jobs, a few, read more). Computes addresses only: safe on a
 * freed record. */
static void _prefetch_record(const job_record_t *job)
{
	const char *p = (const char *)job;

	__builtin_prefetch(p + offsetof(job_record_t, job_id));
	__builtin_prefetch(p + offsetof(job_record_t, job_state));
	__builtin_prefetch(p + offsetof(job_record_t, details));
	__builtin_prefetch(p + offsetof(job_record_t, end_time));
	__builtin_prefetch(p + offsetof(job_record_t, direct_set_prio));
	__builtin_prefetch(p + offsetof(job_record_t, tres_req_cnt));
	__builtin_prefetch(p + offsetof(job_record_t, assoc_id));
	__builtin_prefetch(p + offsetof(job_record_t, qos_ptr));
	__builtin_prefetch(p + offsetof(job_record_t, part_ptr));
	__builtin_prefetch(p + offsetof(job_record_t, priority));
}

/* What the record points to; by now the record itself is in cache. */
static void _prefetch_refs(const job_record_t *job)
{
	if (job->details) {
		__builtin_prefetch(&job->details->begin_time);
		__builtin_prefetch(&job->details->nice);
		if (g.flags & PRIORITY_FLAGS_ACCRUE_ALWAYS)
			__builtin_prefetch(&job->details->submit_time);
	}
	if (job->tres_req_cnt && g.gpus.gpu_pos >= 0) {
		__builtin_prefetch(&job->tres_req_cnt[g.gpus.gpu_pos]);
		for (int i = 0; i < g.gpus.ntyped; i++)
			__builtin_prefetch(&job->tres_req_cnt[g.gpus.typed_pos[i]]);
	}
}

/* Associations -> teams and shares. Caller holds assoc READ (or WRITE). */
static void _refresh_teams_locked(void)
{
	uint32_t max_id = 0, len;
	int32_t *map;
	ListIterator it;
	slurmdb_assoc_rec_t *a;

	if (!assoc_mgr_assoc_list)
		return;
	it = list_iterator_create(assoc_mgr_assoc_list);
	while ((a = list_next(it)))
		if (a->id > max_id)
			max_id = a->id;
	len = max_id + 1;
	map = xcalloc(len, sizeof(int32_t));
	for (uint32_t i = 0; i < len; i++)
		map[i] = -1;

	list_iterator_reset(it);
	while ((a = list_next(it))) {
		char path[GF_PATH_MAX];
		int depth = gf_account_path(a, path, sizeof(path));
		int32_t team;

		if (!depth)
			continue;
		team = gpufair_team_id(g.engine, path);
		map[a->id] = team;
		/* Team shares come from the account association that is the
		 * team (its depth is the team level, or less for a short
		 * path). SLURMDB_FS_USE_PARENT and unset keep the default. */
		if (!a->user && team >= 0 && depth <= g.team_level &&
		    a->shares_raw != SLURMDB_FS_USE_PARENT &&
		    a->shares_raw != NO_VAL && a->shares_raw != INFINITE)
			gpufair_set_shares(g.engine, team, (double)a->shares_raw);
	}
	list_iterator_destroy(it);

	pthread_rwlock_wrlock(&g.map_lock);
	xfree(g.team_of_assoc);
	g.team_of_assoc = map;
	g.team_of_assoc_len = len;
	pthread_rwlock_unlock(&g.map_lock);
}

/* GPU positions and billing weights; reconfigures the core when
 * TRESBillingWeights changed. Caller holds part READ and tres READ. */
static void _refresh_gpus_locked(void)
{
	char *w = _billing_weights_locked();

	if (xstrcmp(w, g.billing_weights)) {
		gpufair_knobs_t k;
		char err[2048];

		_knobs_from_conf(&k, w);
		if (gpufair_engine_reconfigure(g.engine,
					       slurm_conf.priority_params, &k,
					       err, sizeof(err)) != GPUFAIR_OK) {
			error("%s: TRESBillingWeights=%s rejected: %s; keeping the previous settings",
			      plugin_type, w ? w : "", err);
			xfree(w);
			return;
		}
		xfree(g.billing_weights);
		g.billing_weights = w;
		_after_config("TRESBillingWeights changed");
	} else {
		xfree(w);
	}
	pthread_rwlock_wrlock(&g.map_lock);
	slurm_mutex_lock(&g.conf_mutex);
	gf_gpu_map_build(&g.gpus, g.describe);
	slurm_mutex_unlock(&g.conf_mutex);
	pthread_rwlock_unlock(&g.map_lock);
	if ((g.gpus.gpu_pos < 0) != g.warned_no_gpu_tres) {
		g.warned_no_gpu_tres = (g.gpus.gpu_pos < 0);
		if (g.warned_no_gpu_tres)
			info("%s: no gres/gpu TRES (add it to AccountingStorageTRES); every job costs 0 GPU-hours",
			     plugin_type);
	}
	/* Weighted like the jobs' GPUs: an entitlement is a share of it. */
	if (g.gpus.gpu_pos >= 0)
		gpufair_set_cluster_gpus(g.engine, gf_cluster_gpus(&g.gpus));
}

/* Observes walk[i]; says in walk_keep[i] whether the table keeps it. */
static void _observe_job(size_t i, cycle_ctx_t *ctx)
{
	job_record_t *job = walk[i];
	gpufair_job_t j;

	walk_id[i] = job->job_id;
	/* Pending, running or suspended: looked at again next cycle. */
	walk_keep[i] = !IS_JOB_FINISHED(job) && !IS_JOB_REVOKED(job);
	if (IS_JOB_REVOKED(job))
		return;
	/* A job that stopped since the last cycle (finished, cancelled,
	 * preempted and requeued): charge it up to its end. Unknown ids are
	 * ignored by the core, so no bookkeeping is needed here. */
	if (job->end_time && job->end_time >= ctx->since &&
	    !IS_JOB_RUNNING(job) && !IS_JOB_SUSPENDED(job) &&
	    job->start_time && job->end_time >= job->start_time) {
		time_t end = MIN(job->end_time, ctx->now);

		gpufair_job_ended(g.engine, job->job_id, (int64_t)end);
		ctx->ended++;
	}

	if (IS_JOB_RUNNING(job)) {
		int32_t team = _job_team_locked(job);

		if (team < 0)
			return; /* no account: nothing to charge */
		gf_job_fill(&j, job, team, &g.gpus);
		/* A resumed job is charged from its resume on. */
		if (job->suspend_time > job->start_time)
			j.start_time = (int64_t)job->suspend_time;
		if (gpufair_observe_running(g.engine, &j) == GPUFAIR_OK)
			ctx->running++;
	} else if (IS_JOB_PENDING(job) && job->priority) {
		/* 0 = held: neither waiting nor re-prioritised. The arrays
		 * were sized for every job by _observe_all. Only the fields
		 * the policy needs are read (each line is a cache miss). */
		gpufair_prio_input_t *in = &pend_in[pend_len];

		_prio_input(in, job, _job_team_locked(job));
		/* direct_set_prio = set by an admin: leave it alone. */
		if (!job->direct_set_prio) {
			pend_job[pend_len] = job;
			pend_old[pend_len] = job->priority;
			pend_len++;
		}
		/* Only jobs that could run now are "waiting" for the bait
		 * judgement: not before their begin time. The core needs
		 * the team, rank and waiting-since time; eligible_time
		 * already falls back to the submit time (gf_job_eligible). */
		if (in->team < 0 ||
		    (job->details && job->details->begin_time > ctx->now))
			return;
		memset(&wait_jobs[wait_len], 0, sizeof(wait_jobs[0]));
		wait_jobs[wait_len].team = in->team;
		wait_jobs[wait_len].rank = gf_job_rank(job);
		wait_jobs[wait_len].gpus = in->gpus;
		wait_jobs[wait_len].eligible_time = in->eligible_time;
		/* A queue jump's price counts only jobs that could run now:
		 * waiting for GPUs or for higher-priority jobs, or not yet
		 * tried. Dependencies, limits, reservations and holds are
		 * other reasons, and such jobs lose nothing to a jump. */
		wait_jobs[wait_len].priority = job->priority;
		wait_jobs[wait_len].held_back =
			!(job->state_reason == WAIT_NO_REASON ||
			  job->state_reason == WAIT_PRIORITY ||
			  job->state_reason == WAIT_RESOURCES);
		wait_len++;
	}
}

/*
 * One record more for the cycle, its lines already prefetched: remember it,
 * prefetch what an earlier one points to, and observe a still earlier one.
 * Doing the work GF_PREFETCH_RECORD jobs behind lets the CPU fetch records
 * (and, in a list walk, follow the list) while it works on jobs whose
 * records arrived. _walk_job, the list_for_each callback, prefetches first.
 */
static void _walk_prefetched(job_record_t *x, cycle_ctx_t *ctx)
{
	if (walk_len == walk_cap)
		_reserve(walk_len + 1);
	walk[walk_len++] = x;
	if (walk_len > GF_PREFETCH_REFS)
		_prefetch_refs(walk[walk_len - 1 - GF_PREFETCH_REFS]);
	if (walk_len > GF_PREFETCH_RECORD)
		_observe_job(walk_len - 1 - GF_PREFETCH_RECORD, ctx);
}

static int _walk_job(void *x, void *arg)
{
	_prefetch_record(x);
	_walk_prefetched(x, arg);
	return 0;
}

/* The records the table names, each found again by id (purged ones are
 * skipped), their lines prefetched from their last address well before
 * the lookup reads job_id (the page walk too: these are cold). */
#define GF_PREFETCH_TRACKED (2 * GF_PREFETCH_RECORD)
static void _walk_tracked(cycle_ctx_t *ctx)
{
	for (size_t i = 0; i < tracked_len; i++) {
		job_record_t *job;

		if (i + GF_PREFETCH_TRACKED < tracked_len)
			_prefetch_record(tracked[i + GF_PREFETCH_TRACKED].addr);
		if ((job = find_job_record(tracked[i].id)))
			_walk_prefetched(job, ctx);
	}
}

static int _cmp_tracked(const void *a, const void *b)
{
	uint32_t x = ((const gf_tracked_t *)a)->id;
	uint32_t y = ((const gf_tracked_t *)b)->id;

	return (x > y) - (x < y);
}

/* Sorts by id (when needed: mostly the order is already right) and drops
 * repeated ids, keeping the first. */
static void _sort_unique(gf_tracked_t *a, size_t *len)
{
	size_t n = 0;
	bool sorted = true;

	for (size_t i = 1; i < *len && sorted; i++)
		sorted = a[i - 1].id <= a[i].id;
	if (!sorted)
		qsort(a, *len, sizeof(*a), _cmp_tracked);
	for (size_t i = 0; i < *len; i++)
		if (!n || a[n - 1].id != a[i].id)
			a[n++] = a[i];
	*len = n;
}

/* Whether id is in the sorted array b; *k is a cursor that only moves
 * forward, so asking for ascending ids walks b once. */
static bool _in_sorted(const gf_tracked_t *b, size_t nb, size_t *k,
		       uint32_t id)
{
	while (*k < nb && b[*k].id < id)
		(*k)++;
	return *k < nb && b[*k].id == id;
}

/*
 * The jobs that appeared since the last cycle, into the table. Returns
 * false when only a full walk can tell (ids wrapped or jumped, too many
 * noticed jobs); next_id is what get_next_job_id() would hand out now.
 */
static bool _track_new_jobs(uint32_t next_id)
{
	size_t old_len = tracked_len, n = 0, k = 0;
	bool overflow;

	if (next_id < scan_next ||
	    (uint64_t)(next_id - scan_next) >
		    2 * (uint64_t)list_count(job_list) + 1000)
		return false;

	/* Noticed ids are mostly below scan_next, so noticed then scanned is
	 * usually sorted already. */
	adds_len = 0;
	slurm_mutex_lock(&noticed_mutex);
	for (size_t i = 0; i < noticed_len; i++)
		_push_tracked(&adds, &adds_len, &adds_cap, noticed[i].id,
			      noticed[i].addr);
	noticed_len = 0;
	overflow = noticed_overflow;
	noticed_overflow = false;
	if (!overflow)
		for (uint32_t id = scan_next; id < next_id; id++) {
			job_record_t *job = find_job_record(id);

			if (job)
				_push_tracked(&adds, &adds_len, &adds_cap, id,
					      job);
		}
	scan_next = next_id;
	slurm_mutex_unlock(&noticed_mutex);
	if (overflow)
		return false;
	if (!adds_len)
		return true;

	/* Drop the ids the table has (they keep their entry), then merge
	 * the two sorted arrays from the back, in place. */
	_sort_unique(adds, &adds_len);
	for (size_t i = 0; i < adds_len; i++)
		if (!_in_sorted(tracked, old_len, &k, adds[i].id))
			adds[n++] = adds[i];
	adds_len = n;
	if (tracked_len + adds_len > tracked_cap) {
		tracked_cap = MAX(tracked_len + adds_len, 2 * tracked_cap);
		xrecalloc(tracked, tracked_cap, sizeof(*tracked));
	}
	tracked_len += adds_len;
	for (size_t out = tracked_len, a = adds_len, t = old_len; a > 0;
	     out--) {
		if (t > 0 && tracked[t - 1].id > adds[a - 1].id)
			tracked[out - 1] = tracked[--t];
		else
			tracked[out - 1] = adds[--a];
	}
	return true;
}

/* The table after a walk: the records it kept, in walk order (sorted after
 * a table walk, nearly so after a list walk). */
static void _retrack(void)
{
	size_t n = 0;

	if (walk_len > tracked_cap) {
		tracked_cap = MAX(walk_len, 2 * tracked_cap);
		xrecalloc(tracked, tracked_cap, sizeof(*tracked));
	}
	for (size_t i = 0; i < walk_len; i++)
		if (walk_keep[i]) {
			tracked[n].id = walk_id[i];
			tracked[n].addr = walk[i];
			n++;
		}
	tracked_len = n;
	_sort_unique(tracked, &tracked_len);
}

/*
 * After a periodic job_list walk: the live jobs it found that the table
 * (kept in `adds`, both sorted) did not name. Expected only after an admin
 * requeued a finished job; anything else is a path into pending or running
 * that the table does not know, worth a line in the log (the e2e tests
 * check that it stays silent but for that case).
 */
static void _report_missed(void)
{
	size_t missed = 0, k = 0;
	uint32_t first = 0;

	for (size_t i = 0; i < tracked_len; i++) {
		if (_in_sorted(adds, adds_len, &k, tracked[i].id))
			continue;
		if (!missed)
			first = tracked[i].id;
		missed++;
	}
	adds_len = 0;
	if (missed)
		info("%s: job_list walk found %zu live job(s) the job table had missed (first JobId=%u); tracked from now on",
		     plugin_type, missed, first);
}

/* The cycle's records once (see above), then the waiting jobs to the
 * core. Caller holds job WRITE and fed READ (get_next_job_id). */
static void _observe_all(cycle_ctx_t *ctx)
{
	size_t done;
	uint32_t next_id;
	bool table_ok;

	walk_len = 0;
	pend_len = 0;
	wait_len = 0;
	if (!job_list)
		return;
	next_id = get_next_job_id(true);
	table_ok = !__atomic_exchange_n(&full_walk_due, false,
					__ATOMIC_SEQ_CST) &&
		   next_id != (uint32_t)SLURM_ERROR &&
		   _track_new_jobs(next_id);
	ctx->full_walk = !table_ok ||
			 ++cycles_since_full >= GF_FULL_WALK_CYCLES;
	_reserve(ctx->full_walk ? (size_t)list_count(job_list) : tracked_len);
	if (ctx->full_walk) {
		list_for_each(job_list, _walk_job, ctx);
		slurm_mutex_lock(&noticed_mutex);
		noticed_len = 0; /* the walk saw them all */
		noticed_overflow = false;
		if (next_id != (uint32_t)SLURM_ERROR)
			scan_next = next_id;
		slurm_mutex_unlock(&noticed_mutex);
		cycles_since_full = 0;
	} else {
		_walk_tracked(ctx);
	}
	/* The last jobs of the walk, not yet observed. */
	done = walk_len > GF_PREFETCH_RECORD ? walk_len - GF_PREFETCH_RECORD : 0;
	for (size_t i = done; i < walk_len; i++) {
		if (i + GF_PREFETCH_REFS < walk_len)
			_prefetch_refs(walk[i + GF_PREFETCH_REFS]);
		_observe_job(i, ctx);
	}
	if (ctx->full_walk && table_ok) {
		/* A periodic walk with a table that was up to date: keep
		 * the table in `adds` to compare with what the walk found. */
		gf_tracked_t *t = adds;
		size_t c = adds_cap;

		adds = tracked;
		adds_len = tracked_len;
		adds_cap = tracked_cap;
		tracked = t;
		tracked_cap = c;
		tracked_len = 0;
		_retrack();
		_report_missed();
	} else {
		_retrack();
	}
	ctx->tracked = (int)tracked_len;
	if (wait_len) {
		int64_t seen = gpufair_observe_pending_many(g.engine, wait_jobs,
							    wait_len);

		ctx->pending = seen > 0 ? (int)seen : 0;
	}
}

/* New priorities from the cycle's team factors, in one call to the core;
 * only changed ones are written. */
static void _reprioritise_pending(cycle_ctx_t *ctx)
{
	if (gpufair_priorities(g.engine, pend_in, pend_len, (int64_t)ctx->now,
			       pend_prio) != GPUFAIR_OK) {
		error("%s: re-prioritising %zu pending jobs failed; they keep their priorities",
		      plugin_type, pend_len);
		pend_len = 0;
		return;
	}
	for (size_t i = 0; i < pend_len; i++) {
		uint32_t prio = pend_prio[i] ? pend_prio[i] : 1;

		/* The walk read the old priority, under the same job lock:
		 * a store without a load, which does not stall. */
		if (prio != pend_old[i]) {
			pend_job[i]->priority = prio;
			ctx->reprioritised++;
		}
	}
	pend_len = 0;
}

/*
 * Team usage and fair share into the association records so `sshare -l`
 * shows them: RawUsage = the team's decayed GPU-seconds, NormUsage = U/Utot,
 * EffectvUsage chosen so that Slurm's own formula 2^(-EffectvUsage/NormShares)
 * (which sshare evaluates through priority_p_calc_fs_factor) gives the
 * team's *effective* fair share, penalty included; FairShare (fs_factor) is
 * that value too. Caller holds assoc WRITE.
 */
static void _write_assoc_usage_locked(void)
{
	ListIterator it;
	slurmdb_assoc_rec_t *a;

	long double total = 0;

	if (!assoc_mgr_assoc_list)
		return;
	for (int32_t t = 0; t < g.nreports; t++)
		total += (long double)g.reports[t].usage_gpu_s;
	if (assoc_mgr_root_assoc && assoc_mgr_root_assoc->usage) {
		assoc_mgr_root_assoc->usage->usage_raw = total;
		assoc_mgr_root_assoc->usage->usage_norm = 1.0L;
		assoc_mgr_root_assoc->usage->usage_efctv = 1.0L;
	}
	it = list_iterator_create(assoc_mgr_assoc_list);
	while ((a = list_next(it))) {
		int32_t team = -1;
		const gpufair_team_report_t *r;
		long double eff;

		if (!a->usage)
			continue;
		if (a->id < g.team_of_assoc_len)
			team = g.team_of_assoc[a->id];
		if (team < 0 || team >= g.nreports)
			continue;
		r = &g.reports[team];
		a->usage->usage_raw = (long double)r->usage_gpu_s;
		a->usage->usage_norm = (long double)r->usage_norm;
		if (r->effective_fairshare > 0 && a->usage->shares_norm > 0)
			eff = -log2l((long double)r->effective_fairshare) *
			      (long double)a->usage->shares_norm;
		else if (a->usage->shares_norm > 0)
			eff = 64.0L * (long double)a->usage->shares_norm;
		else
			eff = (long double)r->usage_norm;
		a->usage->usage_efctv = (eff > 0) ? eff : 0; /* never -0 */
		a->usage->fs_factor = r->effective_fairshare;
		a->usage->level_fs = (long double)r->effective_fairshare;
	}
	list_iterator_destroy(it);
}

static void _collect_reports(time_t now)
{
	int32_t n = gpufair_team_count(g.engine);
	gpufair_team_report_t *r = n > 0 ? xcalloc(n, sizeof(*r)) : NULL;

	for (int32_t t = 0; t < n; t++)
		gpufair_team_report(g.engine, t, (int64_t)now, &r[t]);
	pthread_rwlock_wrlock(&g.map_lock);
	xfree(g.reports);
	g.reports = r;
	g.nreports = n;
	pthread_rwlock_unlock(&g.map_lock);
	for (int32_t t = 0; t < n; t++)
		log_flag(PRIO, "%s: team %s usage=%.1f GPU-h shares=%.3f fs=%.4f penalty=%.3f eff_fs=%.4f bait=%u in_team_preemptions=%u",
			 plugin_type, r[t].name, r[t].usage_gpu_s / 3600.0,
			 r[t].shares_norm, r[t].fairshare, r[t].penalty,
			 r[t].effective_fairshare, r[t].bait_detections,
			 r[t].in_team_preemptions);
}

static void _cycle(time_t now)
{
	/* fed READ: get_next_job_id() asserts it. */
	slurmctld_lock_t job_write_lock = {
		.job = WRITE_LOCK, .part = READ_LOCK, .fed = READ_LOCK };
	assoc_mgr_lock_t locks = {
		.assoc = WRITE_LOCK, .qos = READ_LOCK, .tres = READ_LOCK };
	cycle_ctx_t ctx = { .now = now, .since = g.prev_cycle };
	struct timespec t0, t1, t2;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	gpufair_cycle_begin(g.engine, (int64_t)now);

	lock_slurmctld(job_write_lock);
	assoc_mgr_lock(&locks);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	_refresh_gpus_locked();
	_refresh_teams_locked();
	gf_qos_ranks_refresh();
	_observe_all(&ctx);
	gpufair_cycle_end(g.engine, (int64_t)now);
	_collect_reports(now);
	_reprioritise_pending(&ctx);
	_write_assoc_usage_locked();
	assoc_mgr_unlock(&locks);
	if (ctx.reprioritised && &last_job_update)
		last_job_update = now;
	/* Under the job lock: sprio recomputes factors at this time. */
	g.prev_cycle = now;
	unlock_slurmctld(job_write_lock);

	clock_gettime(CLOCK_MONOTONIC, &t2);
	log_flag(PRIO, "%s: cycle (%s): %d running, %d pending, %d ended, %d re-prioritised, %d jobs tracked, %d teams; %.3f ms under locks (after %.3f ms waiting for them)",
		 plugin_type, ctx.full_walk ? "job_list" : "tracked jobs",
		 ctx.running, ctx.pending, ctx.ended, ctx.reprioritised,
		 ctx.tracked, gpufair_team_count(g.engine),
		 (t2.tv_sec - t1.tv_sec) * 1e3 + (t2.tv_nsec - t1.tv_nsec) / 1e6,
		 (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);

	/* Disk I/O outside every slurmctld lock. */
	_save_state();
}

static void *_cycle_thread(void *arg)
{
	(void)arg;
	/* Named like multifactor's "decay" so it shows in ps -L and top -H. */
	pthread_setname_np(pthread_self(), "gpufair");

	slurm_mutex_lock(&g.cycle_mutex);
	while (!g.shutdown) {
		struct timespec until;
		int64_t period;

		slurm_mutex_unlock(&g.cycle_mutex);
		_cycle(time(NULL));
		slurm_mutex_lock(&g.cycle_mutex);

		period = gpufair_calc_period(g.engine);
		if (period < 1)
			period = 1;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += period;
		if (!g.shutdown)
			pthread_cond_timedwait(&g.cycle_cond, &g.cycle_mutex,
					       &until);
	}
	slurm_mutex_unlock(&g.cycle_mutex);
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Plugin entry points (dispatch-table order of slurm_priority.c)          */

/*
 * init takes no slurmctld or assoc_mgr lock. slurmctld may load this plugin
 * lazily from inside read_slurm_conf(), which holds every slurmctld lock for
 * writing (at restart, _sync_nodes_to_comp_job() -> deallocate_nodes() ->
 * acct_policy_job_fini() -> priority_g_job_end() -> priority_g_init()); a
 * lock_slurmctld() here then fails with EDEADLK and slurmctld dies. So the
 * partition billing weights and the GPU TRES positions are read by the cycle
 * thread, whose first cycle runs at once (_refresh_gpus_locked).
 */
extern GF_EXPORT int init(void)
{
	gpufair_knobs_t k;
	char err[4096];

	/* sshare / sprio load us too: nothing to set up there, and above all
	 * no state file to touch. */
	if (!running_in_slurmctld()) {
		debug("%s loaded outside slurmctld", plugin_type);
		return SLURM_SUCCESS;
	}

	g.billing_weights = NULL; /* the first cycle reads the partitions' */
	_knobs_from_conf(&k, g.billing_weights);
	g.engine = gpufair_engine_new(slurm_conf.priority_params, &k, err,
				      sizeof(err));
	if (!g.engine) {
		error("%s: invalid configuration (PriorityParameters=%s): %s",
		      plugin_type,
		      slurm_conf.priority_params ? slurm_conf.priority_params
						 : "",
		      err);
		fatal("%s: refusing to start with an invalid configuration",
		      plugin_type);
	}
	_after_config("init");

	_load_state();
	gpufair_global_set(g.engine);

	g.shutdown = false;
	if (pthread_create(&g.thread, NULL, _cycle_thread, NULL))
		fatal("%s: cannot create the gpufair thread: %m", plugin_type);
	g.thread_running = true;

	debug("%s loaded", plugin_name);
	return SLURM_SUCCESS;
}

extern GF_EXPORT int fini(void)
{
	if (!g.engine)
		return SLURM_SUCCESS;

	slurm_mutex_lock(&g.cycle_mutex);
	g.shutdown = true;
	pthread_cond_broadcast(&g.cycle_cond);
	slurm_mutex_unlock(&g.cycle_mutex);
	if (g.thread_running) {
		pthread_join(g.thread, NULL);
		g.thread_running = false;
	}

	_save_state();
	/* preempt/gpufair is stopped by now (slurmctld ends its scheduler
	 * threads before unloading plugins); it sees NULL from here on. */
	gpufair_global_set(NULL);
	gpufair_engine_free(g.engine);
	g.engine = NULL;

	pthread_rwlock_wrlock(&g.map_lock);
	xfree(g.team_of_assoc);
	g.team_of_assoc_len = 0;
	xfree(g.reports);
	g.nreports = 0;
	pthread_rwlock_unlock(&g.map_lock);
	xfree(g.billing_weights);
	_free_cycle_buffers();
	return SLURM_SUCCESS;
}

/* Hot path at submit: reads the team factors cached by the last cycle. */
extern GF_EXPORT uint32_t priority_p_set(uint32_t last_prio, job_record_t *job_ptr)
{
	assoc_mgr_lock_t locks = { .assoc = READ_LOCK, .qos = READ_LOCK };
	uint32_t prio;

	if (g.engine)
		_notice(job_ptr);
	if (job_ptr->direct_set_prio && (job_ptr->priority > 1))
		return job_ptr->priority;
	if (!g.engine)
		return (last_prio >= 2) ? last_prio - 1 : 1;

	assoc_mgr_lock(&locks);
	pthread_rwlock_rdlock(&g.map_lock);
	prio = _set_job_priority_locked(job_ptr, time(NULL));
	pthread_rwlock_unlock(&g.map_lock);
	assoc_mgr_unlock(&locks);

	debug2("%s: initial priority for %pJ is %u", plugin_type, job_ptr, prio);
	return prio;
}

extern GF_EXPORT void priority_p_reconfig(bool assoc_clear)
{
	gpufair_knobs_t k;
	char err[4096];

	(void)assoc_clear;
	if (!g.engine)
		return;
	_knobs_from_conf(&k, g.billing_weights);
	if (gpufair_engine_reconfigure(g.engine, slurm_conf.priority_params, &k,
				       err, sizeof(err)) != GPUFAIR_OK) {
		error("%s: reconfigure rejected (PriorityParameters=%s): %s; keeping the previous settings",
		      plugin_type,
		      slurm_conf.priority_params ? slurm_conf.priority_params
						 : "",
		      err);
		return;
	}
	_after_config("reconfigured");
	/* FirstJobId/MaxJobId may have changed: the next cycle walks
	 * job_list. */
	__atomic_store_n(&full_walk_due, true, __ATOMIC_SEQ_CST);
	/* Recompute now rather than at the end of the old period. */
	slurm_mutex_lock(&g.cycle_mutex);
	pthread_cond_broadcast(&g.cycle_cond);
	slurm_mutex_unlock(&g.cycle_mutex);
}

/* An association's usage as the team's (see _write_assoc_usage_locked). */
extern GF_EXPORT void priority_p_set_assoc_usage(slurmdb_assoc_rec_t *assoc)
{
	int32_t team = -1;

	if (!assoc || !assoc->usage)
		return;
	pthread_rwlock_rdlock(&g.map_lock);
	if (assoc->id < g.team_of_assoc_len)
		team = g.team_of_assoc[assoc->id];
	if (team >= 0 && team < g.nreports) {
		const gpufair_team_report_t *r = &g.reports[team];

		assoc->usage->usage_norm = (long double)r->usage_norm;
		if (r->effective_fairshare > 0 && assoc->usage->shares_norm > 0)
			assoc->usage->usage_efctv =
				-log2l((long double)r->effective_fairshare) *
				(long double)assoc->usage->shares_norm;
		else
			assoc->usage->usage_efctv = (long double)r->usage_norm;
		if (!(assoc->usage->usage_efctv > 0))
			assoc->usage->usage_efctv = 0; /* never -0 */
		assoc->usage->fs_factor = r->effective_fairshare;
	} else {
		assoc->usage->usage_norm = 0;
		assoc->usage->usage_efctv = 0;
	}
	pthread_rwlock_unlock(&g.map_lock);
}

/* Slurm's classic formula; with the EffectvUsage we publish it yields the
 * team's effective (penalised) fair share. Pure: sshare calls it too. */
extern GF_EXPORT double priority_p_calc_fs_factor(long double usage_efctv,
					long double shares_norm)
{
	if (usage_efctv != usage_efctv || usage_efctv < 0 ||
	    fabsl(usage_efctv - (long double)NO_VAL) < 1e-6L)
		return 0.0;
	if (shares_norm <= 0 || shares_norm != shares_norm ||
	    fabsl(shares_norm - (long double)NO_VAL) < 1e-6L)
		return 0.0;
	return (double)powl(2.0L, -(usage_efctv / shares_norm));
}

typedef struct {
	priority_factors_request_msg_t *req;
	uid_t uid;
	List parts;    /* partition filter, NULL = all */
	List out;
	time_t now;
} factors_ctx_t;

static int _find_ptr(void *x, void *key)
{
	return x == key;
}

static int _find_u32(void *x, void *key)
{
	return *(uint32_t *)x == *(uint32_t *)key;
}

static void _append_factors(factors_ctx_t *ctx, job_record_t *job,
			    part_record_t *part)
{
	priority_factors_object_t *obj;

	if (ctx->parts && !list_find_first(ctx->parts, _find_ptr, part))
		return;
	obj = xmalloc(sizeof(*obj));
	if (job->direct_set_prio) {
		obj->direct_prio = job->priority;
	} else {
		/* The factors of the job's current priority: computed at the
		 * last cycle (or at submit, if it came later) from the team
		 * factors that are still cached. */
		gpufair_prio_input_t in;
		gpufair_factors_t f;
		time_t at = g.prev_cycle;

		if (job->details && job->details->submit_time > at)
			at = job->details->submit_time;
		_prio_input(&in, job, _job_team_locked(job));
		gpufair_priority(g.engine, &in, (int64_t)at, &f);
		_fill_factors(obj, &f, job);
	}
	obj->priority_tres = NULL;
	obj->tres_names = NULL;
	obj->tres_weights = NULL;
	obj->tres_cnt = 0;
	obj->cluster_name = NULL;
	obj->job_id = job->job_id;
	obj->partition = part->name;
	obj->user_id = job->user_id;
	list_append(ctx->out, obj);
}

static int _factors_of_job(void *x, void *arg)
{
	job_record_t *job = x;
	factors_ctx_t *ctx = arg;
	time_t use_time;

	if (!(g.flags & PRIORITY_FLAGS_CALCULATE_RUNNING) &&
	    !IS_JOB_PENDING(job))
		return 0;
	if (IS_JOB_REVOKED(job) || !job->priority || !job->details)
		return 0;
	use_time = (g.flags & PRIORITY_FLAGS_ACCRUE_ALWAYS) ?
		job->details->submit_time : job->details->begin_time;
	if (!use_time || use_time > ctx->now)
		return 0;
	if (ctx->req->job_id_list &&
	    !list_find_first(ctx->req->job_id_list, _find_u32, &job->job_id))
		return 0;
	if (ctx->req->uid_list &&
	    !list_find_first(ctx->req->uid_list, _find_u32, &job->user_id))
		return 0;
	if ((slurm_conf.private_data & PRIVATE_DATA_JOBS) &&
	    job->user_id != ctx->uid && !validate_operator(ctx->uid))
		return 0;

	if (job->part_ptr_list) {
		ListIterator it = list_iterator_create(job->part_ptr_list);
		part_record_t *p;

		while ((p = list_next(it)))
			_append_factors(ctx, job, p);
		list_iterator_destroy(it);
	} else if (job->part_ptr) {
		_append_factors(ctx, job, job->part_ptr);
	}
	return 0;
}

extern GF_EXPORT List priority_p_get_priority_factors_list(
	priority_factors_request_msg_t *req_msg, uid_t uid)
{
	slurmctld_lock_t job_read_lock = {
		.job = READ_LOCK, .node = READ_LOCK, .part = READ_LOCK };
	factors_ctx_t ctx = { .req = req_msg, .uid = uid, .now = time(NULL) };

	assoc_mgr_lock_t locks = { .assoc = READ_LOCK, .qos = READ_LOCK };

	if (!req_msg || !job_list || !g.engine)
		return NULL;

	lock_slurmctld(job_read_lock);
	assoc_mgr_lock(&locks);
	pthread_rwlock_rdlock(&g.map_lock);
	if (req_msg->partitions) {
		char *names = xstrdup(req_msg->partitions), *save = NULL;

		ctx.parts = list_create(NULL);
		for (char *tok = strtok_r(names, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			part_record_t *p = find_part_record(tok);

			if (p)
				list_append(ctx.parts, p);
		}
		xfree(names);
	}
	ctx.out = list_create(slurm_destroy_priority_factors_object);
	list_for_each(job_list, _factors_of_job, &ctx);
	pthread_rwlock_unlock(&g.map_lock);
	assoc_mgr_unlock(&locks);
	unlock_slurmctld(job_read_lock);
	FREE_NULL_LIST(ctx.parts);
	if (!list_count(ctx.out))
		FREE_NULL_LIST(ctx.out);
	return ctx.out;
}

/*
 * A job ended (acct_policy_job_fini; only with AccountingStorageEnforce
 * including "limits"). Charge it up to its end now rather than at the next
 * cycle, and give back the unused grp_used_tres_run_secs that
 * acct_policy_job_begin reserved (time limit x TRES), as priority/basic
 * does, since we never decay those counters ourselves.
 *
 * Preemptions are NOT recorded here: preempt/gpufair records them at the
 * grace-time query (see preempt_gpufair.c), which fires in every mode and
 * knows the preemptor. Here we only log them.
 */
extern GF_EXPORT void priority_p_job_end(job_record_t *job_ptr)
{
	assoc_mgr_lock_t locks = { .assoc = WRITE_LOCK, .qos = WRITE_LOCK };
	uint64_t limit_s;
	int tres_cnt = &slurmctld_tres_cnt ? slurmctld_tres_cnt : 0;

	if (!g.engine || !job_ptr)
		return;
	log_flag(PRIO, "%s: %pJ ended at %ld%s", plugin_type, job_ptr,
		 (long)job_ptr->end_time,
		 job_ptr->preempt_time ? " (preempted)" : "");
	gpufair_job_ended(g.engine, job_ptr->job_id,
			  (int64_t)(job_ptr->end_time ? job_ptr->end_time
						      : time(NULL)));

	if (!job_ptr->tres_alloc_cnt || !tres_cnt)
		return;
	/* Exactly what acct_policy_job_begin added (acct_policy.c
	 * _adjust_limit_usage): time limit x QOS UsageFactor x TRES, energy
	 * excluded. */
	limit_s = (uint64_t)job_ptr->time_limit * 60;
	if (job_ptr->qos_ptr && job_ptr->qos_ptr->usage_factor >= 0)
		limit_s *= job_ptr->qos_ptr->usage_factor;
	if (!limit_s)
		return;

	assoc_mgr_lock(&locks);
	for (int i = 0; i < tres_cnt; i++) {
		uint64_t give;

		if (i == TRES_ARRAY_ENERGY ||
		    job_ptr->tres_alloc_cnt[i] == NO_CONSUME_VAL64)
			continue;
		give = job_ptr->tres_alloc_cnt[i] * limit_s;
		if (job_ptr->qos_ptr && job_ptr->qos_ptr->usage &&
		    job_ptr->qos_ptr->usage->grp_used_tres_run_secs) {
			uint64_t *u = &job_ptr->qos_ptr->usage
					       ->grp_used_tres_run_secs[i];
			*u = (give > *u) ? 0 : *u - give;
		}
		for (slurmdb_assoc_rec_t *a = job_ptr->assoc_ptr;
		     a && a->usage; a = a->usage->parent_assoc_ptr) {
			uint64_t *u;

			if (!a->usage->grp_used_tres_run_secs)
				continue;
			u = &a->usage->grp_used_tres_run_secs[i];
			*u = (give > *u) ? 0 : *u - give;
		}
	}
	assoc_mgr_unlock(&locks);
}
