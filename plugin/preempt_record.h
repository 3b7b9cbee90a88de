/*****************************************************************************\
 *  preempt_record.h - preempt/gpufair's record of real preemptions
 *  (preempt_record.c): the predicates remember whom they allowed, the
 *  grace-time query and gang suspension report the real event.
\*****************************************************************************/
#ifndef GPUFAIR_PREEMPT_RECORD_H
#define GPUFAIR_PREEMPT_RECORD_H

#include <time.h>

#include "gpufair_slurm.h"

/* The preemptor the predicates last allowed for victim (lock free). */
extern void gf_preempt_remember(const job_record_t *victim,
				const job_record_t *preemptor);
/* Report one real preemption of victim to the core, once per key (its
 * start time, or preempt_time for a gang suspension). Job WRITE lock. */
extern void gf_preempt_record(job_record_t *victim, time_t key,
			      const char *how);
/* A gang-suspended victim not reported yet is reported. Job WRITE lock. */
extern void gf_preempt_check_suspended(job_record_t *job);

#endif /* GPUFAIR_PREEMPT_RECORD_H */
