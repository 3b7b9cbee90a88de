/*****************************************************************************\
 *  prio_report.c - a job's priority and its breakdown, and what sprio
 *  shows (sshare: prio_sshare.c).
 *
 *  Entry points here and the locks they run under:
 *  priority_p_get_priority_factors_list() (sprio) Slurm 22.05: no lock
 *              held, we take { job, node, part READ } then { assoc, qos
 *              READ } like multifactor. From 23.02 the caller holds
 *              { job, node, part READ } and QOS READ, so we take no
 *              slurmctld or assoc_mgr lock (assoc after QOS would invert
 *              assoc_mgr's order) and find teams from the cycle's map
 *              only. Then map_lock READ. With PrivateData=jobs the
 *              coordinator test (assoc_mgr_is_user_acct_coord) takes
 *              assoc_mgr's user READ, after assoc/QOS: its lock order.
\*****************************************************************************/

#include <inttypes.h>
#include <string.h>

#include "src/common/log.h"
#include "src/common/xstring.h"

#include "priority_gpufair.h"

/* The sprio breakdown (weighted factors, as multifactor stores them).
 * tres_each: the weighted TRES values (NULL: none), which the breakdown
 * takes over with a copy of the weights. */
static void _fill_factors(gf_job_factors_t *out, const gpufair_factors_t *f,
			  const job_record_t *job, double *tres_each,
			  const double *tres_w, int tres_n)
{
	out->priority_age = f->w_age;
	out->priority_fs = f->w_fairshare;
	out->priority_js = f->w_job_size;
	out->priority_part = f->w_partition;
	out->priority_qos = f->w_qos;
	out->priority_assoc = f->w_assoc;
	/* Stored like multifactor's, NICE_OFFSET added; sprio subtracts it. */
	out->priority_site = job->site_factor;
	out->nice = job->details ? job->details->nice : NICE_OFFSET;
	if (f->scavenger_last || f->claimed) {
		/* scavenger_order=last: priority 1; preemptor_claim: the top
		 * priority, in the site term. sprio, which adds the terms up
		 * itself, must come to the priority too. */
		out->priority_site = (double)NICE_OFFSET +
				     (f->claimed ? (double)f->site : 0);
		out->nice = NICE_OFFSET;
		if (tres_each && tres_n > 0)
			memset(tres_each, 0, tres_n * sizeof(double));
	}
	out->priority_tres = tres_each;
	out->tres_names = NULL; /* packed from assoc_mgr_tres_name_array */
	out->tres_weights = NULL;
	out->tres_cnt = 0;
	if (tres_each && tres_w && tres_n > 0) {
		out->tres_cnt = tres_n;
		out->tres_weights = xcalloc(tres_n, sizeof(double));
		memcpy(out->tres_weights, tres_w, tres_n * sizeof(double));
	}
}

typedef struct {
	int32_t team;
	time_t now;
	uint16_t flags;
	uint32_t *array;
} set_slots_t;

/* One entry of the priority array at submit (multifactor's
 * _priority_each_partition / _priority_each_qos). */
static void _set_slot(job_record_t *job, part_record_t *part,
		      slurmdb_qos_rec_t *qos, int slot, void *arg)
{
	set_slots_t *s = arg;
	gpufair_prio_input_t in;
	uint32_t prio;

	gfp_prio_input(&in, job, s->team, part, qos, true, NULL);
	prio = gpufair_priority(gfp.engine, &in, s->now, NULL);
	if (gfp_prio_replaces(s->array[slot], prio, s->flags))
		s->array[slot] = prio;
	log_flag(PRIO, "%s: %pJ in partition %s%s%s: %u", plugin_type, job,
		 part ? part->name : "?", qos ? " QOS " : "",
		 qos ? qos->name : "", s->array[slot]);
}

/*
 * The cycle does not store the breakdown (one cache miss per job less on its
 * hottest loop): priority_p_get_priority_factors_list() recomputes it on
 * demand. Here, at submit, it is stored, and the priority array of a job in
 * several partitions is filled.
 */
extern uint32_t gfp_set_job_priority_locked(job_record_t *job, time_t now)
{
	gpufair_prio_input_t in;
	gpufair_factors_t f;
	uint32_t prio;
	int n;
	set_slots_t s = {
		.team = gfp_job_team_locked(job, true),
		.now = now,
		.flags = __atomic_load_n(&gfp.flags, __ATOMIC_RELAXED),
	};

	gfp_prio_input(&in, job, s.team, NULL, NULL, true, NULL);
	prio = gpufair_priority(gfp.engine, &in, now, &f);
	if (!job->prio_factors)
		job->prio_factors = xmalloc(sizeof(gf_job_factors_t));
	_fill_factors(job->prio_factors, &f, job, NULL, NULL, 0);
	log_flag(PRIO, "%s: %pJ team=%d gpus=%.2f age=%.3f fs=%.3f (penalty %.2f) size=%.3f part=%.3f qos=%.3f assoc=%.3f tres=%.1f site=%"PRId64" nice=%d -> %u%s",
		 plugin_type, job, in.team, in.gpus, f.age, f.fairshare,
		 f.penalty, f.job_size, f.partition, f.qos, f.assoc, f.w_tres,
		 f.site, f.nice, prio,
		 f.scavenger_last ? " (sorted last: it would start as a scavenger, scavenger_order=last)" :
		 f.claimed ? " (first: it preempted and claims what its victims free, preemptor_claim)" : "");
	if ((s.array = gfp_prio_array_prepare(job, &n)))
		gfp_for_each_slot(job, _set_slot, &s);
	return prio ? prio : 1;
}

/* ---------------------------------------------------------------------- */
/* sprio                                                                    */

typedef struct {
	gf_factors_request_t *req; /* filters; NULL from 24.05 */
	uid_t uid;
	list_t *parts;    /* partition filter, NULL = all */
	list_t *out;
	time_t now;
	uint16_t flags;
	double *tres_w;   /* PriorityWeightTRES, for the rows; NULL = none */
	int tres_n;
} factors_ctx_t;

static int _find_ptr(void *x, void *key)
{
	return x == key;
}

static int _find_u32(void *x, void *key)
{
	return *(uint32_t *)x == *(uint32_t *)key;
}

/* One sprio row: the job in one partition (and QOS), as multifactor's
 * rows of a job in several partitions (_filter_job; 24.11:
 * _create_prio_list_qos). */
static void _append_row(job_record_t *job, part_record_t *part,
			slurmdb_qos_rec_t *qos, int slot, void *arg)
{
	factors_ctx_t *ctx = arg;
	priority_factors_object_t *row;

	(void)slot;
	if (!part)
		part = job->part_ptr;
	if (!qos)
		qos = job->qos_ptr;
	if (!part ||
	    (ctx->parts && !list_find_first(ctx->parts, _find_ptr, part)))
		return;
	row = xmalloc(sizeof(*row));
	if (job->direct_set_prio) {
		row->direct_prio = job->priority;
	} else {
		/* The factors of the job's current priority: computed at the
		 * last cycle (or at submit, if it came later) from the team
		 * factors that are still cached. */
		gpufair_prio_input_t in;
		gpufair_factors_t f;
		time_t at = gfp.prev_cycle;
		double *each = ctx->tres_w ?
			xcalloc(ctx->tres_n, sizeof(double)) : NULL;

		if (job->details && job->details->submit_time > at)
			at = job->details->submit_time;
		gfp_prio_input(&in, job,
			       gfp_job_team_locked(job,
						   !GF_FACTORS_CALLER_LOCKS),
			       part, qos, !GF_FACTORS_CALLER_LOCKS, each);
		gpufair_priority(gfp.engine, &in, (int64_t)at, &f);
		_fill_factors(gf_row_factors(row), &f, job, each, ctx->tres_w,
			      ctx->tres_n);
	}
	gf_row_names(row, job->account, qos ? qos->name : NULL);
	row->cluster_name = NULL;
	row->job_id = job->job_id;
	row->partition = part->name;
	row->user_id = job->user_id;
	list_append(ctx->out, row);
}

/* sprio's private-data rule, multifactor's: PrivateData=jobs hides other
 * users' jobs except from operators and the coordinators of the job's
 * account, or, when the MCS plugin enforces private data, from users
 * outside the job's MCS label. */
static bool _may_see(uid_t uid, job_record_t *job)
{
	if (!(slurm_conf.private_data & PRIVATE_DATA_JOBS) ||
	    job->user_id == uid || validate_operator(uid))
		return true;
	/* Up to 22.05 we hold assoc READ here (taken below), from 23.02 no
	 * assoc_mgr lock: the MCS check must not take it again. */
	if (slurm_mcs_get_privatedata() == 1)
		return mcs_g_check_mcs_label(uid, job->mcs_label,
					     !GF_FACTORS_CALLER_LOCKS) == 0;
	return gf_is_acct_coord(uid, job->account);
}

static int _rows_of_job(void *x, void *arg)
{
	job_record_t *job = x;
	factors_ctx_t *ctx = arg;
	time_t use_time;

	if (!(ctx->flags & PRIORITY_FLAGS_CALCULATE_RUNNING) &&
	    !IS_JOB_PENDING(job))
		return 0;
	if (IS_JOB_REVOKED(job) || !job->priority || !job->details)
		return 0;
	use_time = (ctx->flags & PRIORITY_FLAGS_ACCRUE_ALWAYS) ?
		job->details->submit_time : job->details->begin_time;
	if (!use_time || use_time > ctx->now)
		return 0;
	if (ctx->req && ctx->req->job_id_list &&
	    !list_find_first(ctx->req->job_id_list, _find_u32, &job->job_id))
		return 0;
	if (ctx->req && ctx->req->uid_list &&
	    !list_find_first(ctx->req->uid_list, _find_u32, &job->user_id))
		return 0;
	if (!_may_see(ctx->uid, job))
		return 0;

	if (!gfp_for_each_slot(job, _append_row, ctx))
		_append_row(job, NULL, NULL, 0, ctx);
	return 0;
}

/* The partitions named in sprio's -p filter (22.05's request only). */
static list_t *_partition_filter(const char *names)
{
	list_t *parts;
	char *copy, *save = NULL;

	if (!names)
		return NULL;
	parts = list_create(NULL);
	copy = xstrdup(names);
	for (char *tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		part_record_t *p = find_part_record(tok);

		if (p)
			list_append(parts, p);
	}
	xfree(copy);
	return parts;
}

extern GF_EXPORT list_t *priority_p_get_priority_factors_list(
	GF_FACTORS_LIST_PARAMS)
{
	factors_ctx_t ctx = {
		.req = GF_FACTORS_REQUEST,
		.uid = uid,
		.now = time(NULL),
		.flags = __atomic_load_n(&gfp.flags, __ATOMIC_RELAXED),
	};
#if !GF_FACTORS_CALLER_LOCKS
	slurmctld_lock_t job_read_lock = {
		.job = READ_LOCK, .node = READ_LOCK, .part = READ_LOCK };
	assoc_mgr_lock_t locks = { .assoc = READ_LOCK, .qos = READ_LOCK };

	if (!req_msg)
		return NULL;
#endif
	if (!job_list || !gfp.engine)
		return NULL;
	/* Before our locks (from 23.02 the caller holds job and QOS READ). */
	ctx.tres_w = gfp_tres_weights_dup(&ctx.tres_n);

#if !GF_FACTORS_CALLER_LOCKS
	lock_slurmctld(job_read_lock);
	assoc_mgr_lock(&locks);
#endif
	pthread_rwlock_rdlock(&gfp.map_lock);
	if (ctx.req)
		ctx.parts = _partition_filter(ctx.req->partitions);
	ctx.out = list_create(gf_row_free);
	list_for_each(job_list, _rows_of_job, &ctx);
	pthread_rwlock_unlock(&gfp.map_lock);
#if !GF_FACTORS_CALLER_LOCKS
	assoc_mgr_unlock(&locks);
	unlock_slurmctld(job_read_lock);
#endif
	FREE_NULL_LIST(ctx.parts);
	xfree(ctx.tres_w);
	if (!list_count(ctx.out))
		FREE_NULL_LIST(ctx.out);
	return ctx.out;
}
