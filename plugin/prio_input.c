/*****************************************************************************\
 *  prio_input.c - what a job's priority is computed from, and the priority
 *  array of a job that may run in several partitions (from 24.11 also with
 *  several QOS).
 *
 *  A priority is computed for one (partition, QOS) pair: the partition
 *  gives its PriorityJobFactor and its TRES totals (PriorityWeightTRES is
 *  normalised by them), the QOS its Priority. A job submitted to several
 *  partitions has one priority per pair, kept in its priority array
 *  (slurm_compat.h says where each release keeps it), which the scheduler
 *  queues it with, and sprio shows one row per pair: as multifactor does.
 *  Everything else (team and association, GPUs, age, association
 *  Priority, site factor, nice) is the job's own. The composition itself is the core's (priority.h).
 *
 *  Locks: the callers' (priority_gpufair.h): the job and part locks, QOS
 *  READ, map_lock READ or the cycle thread; assoc READ only to read an
 *  association the cycle's map does not know yet (walk_tree).
\*****************************************************************************/

#include <string.h>

#include "src/common/log.h"

#include "priority_gpufair.h"

/* A TRES count that means "none" to the priority. */
static double _tres_count(uint64_t v)
{
	return (v == NO_VAL64 || v == INFINITE64 || v == NO_CONSUME_VAL64) ?
		0 : (double)v;
}

/*
 * multifactor's _get_tres_factors: the job's TRES (allocated when it has
 * that TRES allocated, else requested) and the partition's totals; the
 * core weighs and normalises them (gpufair_tres_term).
 */
static double _tres_term(const job_record_t *job, const part_record_t *part,
			 double *each)
{
	int n = &slurmctld_tres_cnt ? slurmctld_tres_cnt : 0;

	if (n <= 0 || !__atomic_load_n(&gfp.tres_weighted, __ATOMIC_RELAXED))
		return 0;
	{
		double count[n], total[n];

		for (int i = 0; i < n; i++) {
			uint64_t v = 0;

			if (job->tres_alloc_cnt &&
			    job->tres_alloc_cnt[i] != NO_CONSUME_VAL64)
				v = job->tres_alloc_cnt[i];
			else if (job->tres_req_cnt)
				v = job->tres_req_cnt[i];
			count[i] = _tres_count(v);
			total[i] = (part && part->tres_cnt) ?
				_tres_count(part->tres_cnt[i]) : 0;
		}
		return gpufair_tres_term(gfp.engine, count, total, (size_t)n,
					 each);
	}
}

/* The association's Priority from the cycle's map, or from the record
 * when the map does not know it yet and the caller may read it. */
static void _assoc_prio(gpufair_prio_input_t *in, const job_record_t *job,
			bool walk_tree)
{
	const slurmdb_assoc_rec_t *a = job->assoc_ptr;

	if (gfp.assoc_prio && job->assoc_id < gfp.team_of_assoc_len) {
		in->assoc_norm = gfp.assoc_prio[job->assoc_id].norm;
		in->assoc_raw = gfp.assoc_prio[job->assoc_id].raw;
	} else if (walk_tree && a && a->usage) {
		in->assoc_norm = a->usage->priority_norm;
		in->assoc_raw = (a->priority < NO_VAL) ? a->priority : 0;
	}
}

extern void gfp_prio_input(gpufair_prio_input_t *in, const job_record_t *job,
			   int32_t team, const part_record_t *part,
			   const slurmdb_qos_rec_t *qos, bool walk_tree,
			   double *tres_each)
{
	memset(in, 0, sizeof(*in));
	/* A preemptor's claim (preemptor_claim) is the job's, whatever its
	 * partition. */
	in->job_id = job->job_id;
	if (!part)
		part = job->part_ptr;
	if (!qos)
		qos = job->qos_ptr;
	in->team = team;
	/* Its place inside the team: its user association's. */
	in->assoc = gfp_job_assoc_locked(job, walk_tree);
	in->gpus = gf_job_gpus(&gfp.gpus, job);
	/* Age accrues from the accrue time, as in multifactor: set by
	 * acct_policy once the job may accrue (the submit time with
	 * ACCRUE_ALWAYS; 0 while held, dependent, before its begin time or
	 * over an accrue limit: no age then). */
	if (job->details)
		in->eligible_time = (int64_t)job->details->accrue_time;
	if (qos) {
		in->qos_raw = qos->priority;
		if (qos->usage)
			in->qos_norm = qos->usage->norm_priority;
	}
	if (part) {
		in->partition_norm = part->norm_priority;
		in->partition_raw = part->priority_job_factor;
	}
	_assoc_prio(in, job, walk_tree);
	/* details->nice and site_factor are stored with NICE_OFFSET added. */
	in->nice = job->details ?
		(int32_t)((int64_t)job->details->nice - (int64_t)NICE_OFFSET) :
		0;
	in->site = (int64_t)job->site_factor - (int64_t)NICE_OFFSET;
	/* Its in-team rank (scavenger_order=last sorts a job that would start
	 * as a scavenger after every other): its own QOS's or partition's. */
	in->rank = gf_job_rank(job, __atomic_load_n(&gfp.rank_by,
						    __ATOMIC_RELAXED));
	in->has_rank = 1;
	/* SMALL_RELATIVE_TO_TIME: the job's limit, else the partition's. */
	if (job->time_limit != NO_VAL)
		in->time_limit_min = job->time_limit;
	else if (part)
		in->time_limit_min = part->max_time;
	in->tres = _tres_term(job, part, tres_each);
}

typedef struct {
	job_record_t *job;
	part_record_t *part;
	gfp_slot_fn_t fn;
	void *arg;
	int slot;
} slot_ctx_t;

static int _each_qos(void *x, void *arg)
{
	slot_ctx_t *ctx = arg;

	ctx->fn(ctx->job, ctx->part, x, ctx->slot++, ctx->arg);
	return 0;
}

static int _each_part(void *x, void *arg)
{
	slot_ctx_t *ctx = arg;
	list_t *qos_list = gf_job_qos_list(ctx->job);

	ctx->part = x;
	if (qos_list)
		list_for_each(qos_list, _each_qos, ctx);
	else
		_each_qos(ctx->job->qos_ptr, ctx);
	return 0;
}

extern int gfp_for_each_slot(job_record_t *job, gfp_slot_fn_t fn, void *arg)
{
	slot_ctx_t ctx = { .job = job, .fn = fn, .arg = arg };

	if (job->part_ptr_list)
		list_for_each(job->part_ptr_list, _each_part, &ctx);
	else if (gf_job_qos_list(job))
		_each_part(job->part_ptr, &ctx);
	return ctx.slot;
}

extern uint32_t *gfp_prio_array_prepare(job_record_t *job, int *n)
{
	*n = gf_prio_array_len(job);
#if GF_PRIO_SORTS_PARTS
	if (job->part_ptr_list)
		list_sort(job->part_ptr_list, priority_sort_part_tier);
#endif
	return gf_prio_array_for(job, *n);
}
