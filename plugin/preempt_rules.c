/*****************************************************************************\
 *  preempt_rules.c - Slurm's two rules of who may preempt whom (see
 *  preempt_rules.h): preempt/qos's and preempt/partition_prio's.
 *
 *  Locks: none taken; callers hold the job READ or WRITE lock.
\*****************************************************************************/

#include "src/common/bitstring.h"

#include "gpufair/c_api.h"
#include "preempt_rules.h"

/* PreemptMode: the rule's own (the QOS's, the partition's) when it has
 * one, else the cluster's; less the bits the rule ignores. */
static uint16_t _mode(bool has_own, uint16_t own, uint16_t ignored)
{
	return (has_own ? own : slurm_conf.preempt_mode) & ~ignored;
}

/* --- preempt/qos ------------------------------------------------------ */

/* Out of line: the jobs' priorities may lie on another line of the
 * records than qos_ptr, and inlined, GCC hoists their loads above the QOS
 * test, a cache miss per job that preempt/qos does not pay. */
extern __attribute__((noinline)) bool gf_qos_within_allows(
	const job_record_t *preemptee, const job_record_t *preemptor)
{
	return ((preemptor->qos_ptr->preempt_mode & PREEMPT_MODE_WITHIN) ||
		(slurm_conf.preempt_mode & PREEMPT_MODE_WITHIN)) &&
	       preemptor->priority > preemptee->priority;
}

static bool _qos_preemptable(job_record_t *preemptee, job_record_t *preemptor)
{
	return gf_qos_preemptable(preemptee, preemptor);
}

/* preempt/qos sorts the queue by its job rule. */
static bool _qos_queue_check(job_queue_rec_t *preemptor,
			     job_queue_rec_t *preemptee)
{
	return _qos_preemptable(preemptee->job_ptr, preemptor->job_ptr);
}

static bool _qos_order(const job_record_t *job, uint32_t *out)
{
	*out = job->qos_ptr ? job->qos_ptr->priority : 0;
	return job->qos_ptr != NULL;
}

static uint16_t _qos_mode(const job_record_t *job)
{
	const slurmdb_qos_rec_t *q = job ? job->qos_ptr : NULL;

	return _mode(q && q->preempt_mode, q ? q->preempt_mode : 0,
		     PREEMPT_MODE_GANG | PREEMPT_MODE_WITHIN);
}

static uint32_t _qos_grace_time(const job_record_t *job)
{
	return (job && job->qos_ptr) ? job->qos_ptr->grace_time : 0;
}

const gf_preempt_rules_t gf_rules_qos = {
	.name = "qos",
	.rank_by = GPUFAIR_PREEMPT_BY_QOS,
	.preemptable = _qos_preemptable,
	.queue_check = _qos_queue_check,
	.order = _qos_order,
	.mode = _qos_mode,
	.grace_time = _qos_grace_time,
};

/* --- preempt/partition_prio ------------------------------------------- */

/* The victim's partition is in a lower tier than the preemptor's, and its
 * PreemptMode is not OFF (NO_VAL16: not set, the cluster's applies). */
static bool _part_preemptable(job_record_t *preemptee, job_record_t *preemptor)
{
	const part_record_t *ee = preemptee->part_ptr, *or = preemptor->part_ptr;

	return ee && or && ee->priority_tier < or->priority_tier &&
	       ee->preempt_mode != PREEMPT_MODE_OFF;
}

/* The queue sort compares the partitions of two queue records: a higher
 * tier that shares nodes with the other goes first. */
static bool _part_queue_check(job_queue_rec_t *preemptor,
			      job_queue_rec_t *preemptee)
{
	const part_record_t *or = preemptor->part_ptr, *ee = preemptee->part_ptr;

	return or && ee && or->node_bitmap && ee->node_bitmap &&
	       bit_overlap_any(or->node_bitmap, ee->node_bitmap) &&
	       or->priority_tier > ee->priority_tier;
}

static bool _part_order(const job_record_t *job, uint32_t *out)
{
	*out = job->part_ptr ? job->part_ptr->priority_tier : 0;
	return job->part_ptr != NULL;
}

/* NO_VAL16: the partition has no PreemptMode of its own. */
static uint16_t _part_mode(const job_record_t *job)
{
	const part_record_t *p = job ? job->part_ptr : NULL;

	return _mode(p && p->preempt_mode != NO_VAL16,
		     p ? p->preempt_mode : 0, PREEMPT_MODE_GANG);
}

static uint32_t _part_grace_time(const job_record_t *job)
{
	return (job && job->part_ptr) ? job->part_ptr->grace_time : 0;
}

const gf_preempt_rules_t gf_rules_partition = {
	.name = "partition",
	.rank_by = GPUFAIR_PREEMPT_BY_PARTITION,
	.preemptable = _part_preemptable,
	.queue_check = _part_queue_check,
	.order = _part_order,
	.mode = _part_mode,
	.grace_time = _part_grace_time,
};

/* --- shared ------------------------------------------------------------ */

extern const gf_preempt_rules_t *gf_preempt_rules(int rank_by)
{
	return rank_by == GPUFAIR_PREEMPT_BY_PARTITION ? &gf_rules_partition
						       : &gf_rules_qos;
}

extern uint32_t gf_preempt_prio(const gf_preempt_rules_t *r,
				const job_record_t *job)
{
	uint32_t order = 0;

	if (!job)
		return 0;
	(void)r->order(job, &order);
	return ((order >= 0xffff) ? 0xffffu : order) << 16 |
	       ((job->node_cnt >= 0xffff) ? 0xffffu : job->node_cnt);
}
