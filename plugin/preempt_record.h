/*****************************************************************************\
 *  preempt_record.h - the one place where preempt/gpufair reports a real
 *  preemption to the core, once per event (preempt_record.c says how the
 *  event is recognised among the many predicate calls).
\*****************************************************************************/
#ifndef GPUFAIR_PREEMPT_RECORD_H
#define GPUFAIR_PREEMPT_RECORD_H

#include "slurm_compat.h"

/* preempt_p_get_data(GRACE_TIME): slurm_job_preempt() is about to preempt
 * victim (requeue, cancel). Caller holds the job WRITE lock. */
extern void gf_preempt_grace_query(job_record_t *victim);

/* preempt_p_get_data(MODE): on a running job not yet preempted, pin its
 * preemptor for a gang suspension (priority/gpufair's cycle records it).
 * Any locks held; takes none. */
extern void gf_preempt_mode_query(job_record_t *job);

#endif /* GPUFAIR_PREEMPT_RECORD_H */
