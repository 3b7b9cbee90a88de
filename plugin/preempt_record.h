/*****************************************************************************\
 *  preempt_record.h - the one place where preempt/gpufair reports a real
 *  preemption to the core, once per event (preempt_record.c says how the
 *  event is recognised among the many predicate calls).
\*****************************************************************************/
#ifndef GPUFAIR_PREEMPT_RECORD_H
#define GPUFAIR_PREEMPT_RECORD_H

#include "slurm_compat.h"

/* preempt_p_preemptable() allowed preemptor to preempt victim: the real
 * event will name it. Any thread; lock free. */
extern void gf_preemptor_remember(const job_record_t *victim,
				  const job_record_t *preemptor);

/* preempt_p_get_data(GRACE_TIME): slurm_job_preempt() is about to preempt
 * victim (requeue, cancel). Caller holds the job WRITE lock. */
extern void gf_preempt_grace_query(job_record_t *victim);

/* preempt_p_get_data(MODE): a job the gang scheduler suspended for a
 * preemptor is reported the first time it is seen so. Caller holds the
 * job READ or WRITE lock. */
extern void gf_preempt_mode_query(job_record_t *job);

#endif /* GPUFAIR_PREEMPT_RECORD_H */
