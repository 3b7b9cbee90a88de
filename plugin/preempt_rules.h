/*****************************************************************************\
 *  preempt_rules.h - Slurm's own rule of who may preempt whom, one per
 *  PriorityParameters=preempt_by:
 *    qos        preempt/qos: QOS Preempt= lists (PreemptMode=WITHIN for one
 *               QOS), PreemptMode and GraceTime from the QOS;
 *    partition  preempt/partition_prio: a job in a partition of higher
 *               PriorityTier may preempt one in a lower tier; PreemptMode
 *               and GraceTime from the victim's partition.
 *  Each is the release's SchedMD plugin's rule (src/plugins/preempt/{qos,
 *  partition_prio}, identical in 22.05 and 24.11), written again here.
 *  gpufair's team rule, reclaim and bait blocking sit on top of either, in
 *  one place (preempt_gpufair.c): only what differs between the two rules
 *  is in this table.
 *
 *  Locks: none taken. Callers hold the job READ or WRITE lock (slurmctld's
 *  predicates and queries); the QOS and partition records read here live
 *  while it is held.
\*****************************************************************************/
#ifndef GPUFAIR_PREEMPT_RULES_H
#define GPUFAIR_PREEMPT_RULES_H

#include <stdbool.h>
#include <stdint.h>

#include "slurm_compat.h" /* job_record_t, job_queue_rec_t's header */
#include "src/common/bitstring.h"
#include "src/slurmctld/job_scheduler.h"

typedef struct {
	const char *name;  /* the preempt_by value */
	int rank_by;       /* GPUFAIR_PREEMPT_BY_*: a job's in-team rank */
	/* May preemptor preempt preemptee, by Slurm's rule alone? */
	bool (*preemptable)(job_record_t *preemptee, job_record_t *preemptor);
	/* The same for the queue sort: two pending queue records, each for
	 * one of its job's partitions. */
	bool (*queue_check)(job_queue_rec_t *preemptor,
			    job_queue_rec_t *preemptee);
	/* What orders jobs for this rule (QOS Priority, PriorityTier): the
	 * candidates' order (PREEMPT_DATA_PRIO). false when a job has none
	 * (no QOS, no partition). */
	bool (*order)(const job_record_t *job, uint32_t *out);
	uint16_t (*mode)(const job_record_t *job);        /* PreemptMode */
	uint32_t (*grace_time)(const job_record_t *job);  /* GraceTime */
} gf_preempt_rules_t;

extern const gf_preempt_rules_t gf_rules_qos;
extern const gf_preempt_rules_t gf_rules_partition;

/* The rule of a preempt_by (GPUFAIR_PREEMPT_BY_*, gf_rank_by()). */
extern const gf_preempt_rules_t *gf_preempt_rules(int rank_by);

/* PREEMPT_DATA_PRIO: the order in the high 16 bits, the node count in the
 * low 16, so smaller jobs go first among equals, as both of Slurm's
 * plugins sort their candidates. */
extern uint32_t gf_preempt_prio(const gf_preempt_rules_t *r,
				const job_record_t *job);

/* preempt/qos's test (gf_rules_qos.preemptable), inline for
 * preempt/gpufair's hot path: the preemptor's QOS lists the victim's in
 * Preempt=, or both have one QOS with PreemptMode WITHIN and the
 * preemptor's priority is higher. */
extern bool gf_qos_within_allows(const job_record_t *preemptee,
				 const job_record_t *preemptor);
static inline bool gf_qos_preemptable(const job_record_t *preemptee,
				      const job_record_t *preemptor)
{
	const slurmdb_qos_rec_t *qos_ee = preemptee->qos_ptr;
	const slurmdb_qos_rec_t *qos_or = preemptor->qos_ptr;

	if (!qos_ee || !qos_or)
		return false;
	if (qos_or->id == qos_ee->id)
		return gf_qos_within_allows(preemptee, preemptor);
	return qos_or->preempt_bitstr &&
	       bit_test(qos_or->preempt_bitstr, qos_ee->id);
}

#endif /* GPUFAIR_PREEMPT_RULES_H */
