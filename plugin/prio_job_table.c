/*****************************************************************************\
 *  prio_job_table.c - which job records a cycle of priority/gpufair looks
 *  at, and in what order (the cycle's memory access pattern).
 *
 *  Locks: gfp_table_walk() runs in the cycle thread under the job WRITE
 *  and fed READ locks (and the assoc_mgr locks the cycle holds);
 *  gfp_table_notice() from priority_p_set() under the job WRITE lock;
 *  noticed_mutex (innermost) guards what the two share.
 *  gfp_table_walk_all_next() may run in any thread (an atomic flag).
\*****************************************************************************/

#include "src/common/log.h"

#include "priority_gpufair.h"

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
				   * (atomic: another thread) */

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
 * The records a walk looked at, their ids, and whether the table keeps them
 * (id and verdict are taken while the record's lines are in cache, so
 * rebuilding the table touches no record). Only the cycle thread touches
 * them, with the job WRITE lock held from the walk to the cycle's
 * re-prioritising loop, so the job pointers stay valid.
 *
 * Why a pointer array and prefetching: knowing the records in advance lets
 * the CPU fetch the next jobs' lines while it works on this one
 * (__builtin_prefetch); only the lines the policy needs are read.
 */
static job_record_t **walk;
static uint32_t *walk_id;
static bool *walk_keep;
static size_t walk_len, walk_cap;

#define GF_PREFETCH_RECORD 32 /* jobs ahead: the record itself */
#define GF_PREFETCH_REFS 16   /* jobs ahead: details and TRES counts */

extern void gfp_table_free(void)
{
	GFP_RESIZE(walk, walk_cap, 0);
	GFP_RESIZE(walk_id, walk_cap, 0);
	GFP_RESIZE(walk_keep, walk_cap, 0);
	walk_len = walk_cap = 0;
	GFP_RESIZE(tracked, tracked_cap, 0);
	GFP_RESIZE(adds, adds_cap, 0);
	tracked_len = tracked_cap = adds_len = adds_cap = 0;
	slurm_mutex_lock(&noticed_mutex);
	GFP_RESIZE(noticed, noticed_cap, 0);
	noticed_len = noticed_cap = 0;
	scan_next = 0;
	slurm_mutex_unlock(&noticed_mutex);
	cycles_since_full = 0;
	gfp_table_walk_all_next();
}

extern void gfp_table_walk_all_next(void)
{
	__atomic_store_n(&full_walk_due, true, __ATOMIC_SEQ_CST);
}

/* Room for n jobs in every walk buffer (the cycle's too: at most every job
 * is pending), so the walk itself never grows them but in the rare case
 * that job_list grew between list_count() and the walk. */
static void _reserve(size_t n)
{
	if (gfp_array_fits(walk_cap, n))
		return;
	n = gfp_array_room(n);
	GFP_RESIZE(walk, walk_cap, n);
	GFP_RESIZE(walk_id, walk_cap, n);
	GFP_RESIZE(walk_keep, walk_cap, n);
	gfp_cycle_reserve(n);
	walk_cap = n;
}

/* An array of gf_tracked_t with room for n entries (grown, or shrunk when
 * more than twice too big; the first n entries are kept). */
static void _fit_tracked(gf_tracked_t **a, size_t *cap, size_t n)
{
	if (gfp_array_fits(*cap, n))
		return;
	GFP_RESIZE(*a, *cap, gfp_array_room(n));
	*cap = gfp_array_room(n);
}

/* One more entry in an array of gf_tracked_t. */
static void _push_tracked(gf_tracked_t **a, size_t *len, size_t *cap,
			  uint32_t id, job_record_t *addr)
{
	if (*len == *cap)
		_fit_tracked(a, cap, *len + 1);
	(*a)[*len].id = id;
	(*a)[*len].addr = addr;
	(*len)++;
}

/* A job the id scan may not see: below the scanned range, or so far above
 * it (an admin's --jobid) that the id sequence will not get there soon. */
#define GF_SCAN_SLACK (1u << 16)
extern void gfp_table_notice(job_record_t *job)
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

/* Observes walk[i]; the table keeps it if it may still matter. */
static void _observe(size_t i, gfp_cycle_t *ctx)
{
	walk_id[i] = walk[i]->job_id;
	walk_keep[i] = gfp_observe_job(walk[i], ctx);
}

/*
 * One record more for the cycle, its lines already prefetched: remember it,
 * prefetch what an earlier one points to, and observe a still earlier one.
 * Doing the work GF_PREFETCH_RECORD jobs behind lets the CPU fetch records
 * (and, in a list walk, follow the list) while it works on jobs whose
 * records arrived. _walk_job, the list_for_each callback, prefetches first.
 */
static void _walk_prefetched(job_record_t *x, gfp_cycle_t *ctx)
{
	if (walk_len == walk_cap)
		_reserve(walk_len + 1);
	walk[walk_len++] = x;
	if (walk_len > GF_PREFETCH_REFS)
		gfp_prefetch_refs(walk[walk_len - 1 - GF_PREFETCH_REFS]);
	if (walk_len > GF_PREFETCH_RECORD)
		_observe(walk_len - 1 - GF_PREFETCH_RECORD, ctx);
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
static void _walk_tracked(gfp_cycle_t *ctx)
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
	_fit_tracked(&tracked, &tracked_cap, tracked_len + adds_len);
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

	_fit_tracked(&tracked, &tracked_cap, walk_len);
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

extern void gfp_table_walk(gfp_cycle_t *ctx)
{
	size_t done;
	uint32_t next_id;
	bool table_ok;

	walk_len = 0;
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
			gfp_prefetch_refs(walk[i + GF_PREFETCH_REFS]);
		_observe(i, ctx);
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
	/* adds is scratch from here on: after a burst of new jobs (or the
	 * periodic walk's old table) its pages go back. */
	adds_len = 0;
	_fit_tracked(&adds, &adds_cap, 0);
	ctx->tracked = (int)tracked_len;
}
