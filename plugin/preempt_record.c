/*****************************************************************************\
 *  preempt_record.c - preempt/gpufair's record of real preemptions: which
 *  preemptor the predicates last allowed for each victim, and the one call
 *  per real preemption that reports it to the core (the bait detector and
 *  the reclaim counts learn of it only here).
 *
 *  Locks: gf_preempt_remember() from the predicates (any scheduling thread,
 *  job READ or WRITE lock; lock free); gf_preempt_record() and
 *  gf_preempt_check_suspended() from preempt_p_get_data() under the job
 *  WRITE lock, then recorded_lock (ours, innermost) and assoc READ.
\*****************************************************************************/

#define _GNU_SOURCE
#include <stdatomic.h>
#include <time.h>

#include "src/common/assoc_mgr.h"
#include "src/common/log.h"
#include "src/common/xstring.h"
#include "slurm_compat.h"
#include "src/slurmctld/slurmctld.h"

#include "preempt_conf.h"
#include "preempt_record.h"

/* What the event needs from the rest of the plugin. */
extern const char plugin_type[];

/*
 * The last preemptor evaluated for each victim, so that the real event can
 * name it (Slurm does not pass the preemptor to the call that marks it).
 * Direct-mapped by victim job id: O(1), no allocation, lock-free (one 64-bit
 * atomic word per slot: victim id << 32 | preemptor id). A collision only
 * loses the preemptor of a victim that was evaluated but not yet preempted
 * when another victim with the same slot was evaluated in the same pass.
 */
#define GF_SLOTS 65536
static _Atomic uint64_t last_preemptor[GF_SLOTS];

/* Victims already reported, per slot: (victim id, key) where key is the
 * victim's start time (requeue/cancel) or preempt_time (gang suspend). */
typedef struct {
	uint32_t victim;
	time_t key;
} recorded_t;
static recorded_t recorded[GF_SLOTS];
static pthread_mutex_t recorded_lock = PTHREAD_MUTEX_INITIALIZER;

extern void gf_preempt_remember(const job_record_t *victim,
				const job_record_t *preemptor)
{
	atomic_store_explicit(&last_preemptor[victim->job_id % GF_SLOTS],
			      ((uint64_t)victim->job_id << 32) |
				      preemptor->job_id,
			      memory_order_relaxed);
}

/*
 * Report one real preemption of victim to the core, once per key.
 * Called under the job WRITE lock.
 */
extern void gf_preempt_record(job_record_t *victim, time_t key,
			      const char *how)
{
	gpufair_engine_t *e = gpufair_global_get();
	uint32_t slot = victim->job_id % GF_SLOTS;
	uint64_t w = atomic_load_explicit(&last_preemptor[slot],
					  memory_order_relaxed);
	job_record_t *preemptor;
	const gf_preempt_conf_t *c;
	gpufair_job_t or_j, ee_j;
	assoc_mgr_lock_t assoc_read = { .assoc = READ_LOCK };
	char reason[1024];
	int rc;

	if (!e)
		return;
	slurm_mutex_lock(&recorded_lock);
	if (recorded[slot].victim == victim->job_id &&
	    recorded[slot].key == key) {
		slurm_mutex_unlock(&recorded_lock);
		return;
	}
	recorded[slot].victim = victim->job_id;
	recorded[slot].key = key;
	slurm_mutex_unlock(&recorded_lock);

	if ((uint32_t)(w >> 32) != victim->job_id ||
	    !(preemptor = find_job_record((uint32_t)w))) {
		error("%s: %pJ is being preempted (%s) but its preemptor is unknown; not reported to gpufair",
		      plugin_type, victim, how);
		return;
	}
	c = gf_preempt_conf(e);
	assoc_mgr_lock(&assoc_read);
	gf_preempt_core_job(e, c, preemptor, &or_j);
	gf_preempt_core_job(e, c, victim, &ee_j);
	assoc_mgr_unlock(&assoc_read);
	rc = gpufair_record_preemption(e, &or_j, &ee_j, (int64_t)time(NULL),
				       reason, sizeof(reason));
	if (rc < 0)
		error("%s: recording preemption of %pJ by %pJ failed: %s",
		      plugin_type, victim, preemptor, reason);
	else
		log_flag(PRIO, "%s: preemption recorded (%s): %pJ preempts %pJ: %s: %s",
			 plugin_type, how, preemptor, victim,
			 rc == 1 ? "BAIT" : "honest", reason);
	if (rc == 1)
		info("%s: bait detected: %pJ preempted %pJ: %s", plugin_type,
		     preemptor, victim, reason);
	/* Say why where users look (scontrol show job, sacct's
	 * SystemComment): a reclaimed job was not preempted by its own team. */
	if (rc >= 0 && !xstrncmp(reason, "reclaim", 7)) {
		info("%s: %pJ reclaimed GPUs from %pJ: %s", plugin_type,
		     preemptor, victim, reason);
		xstrfmtcat(victim->system_comment,
			   "%sgpufair: requeued by reclaim for JobId=%u (%s)",
			   victim->system_comment ? "; " : "", preemptor->job_id,
			   reason);
	}
}

/*
 * Gang-scheduled suspension (PreemptMode=SUSPEND,GANG) does not go through
 * slurm_job_preempt(): _preempt_jobs() (node_scheduler.c) only sets the
 * victim's preempt_time and the gang scheduler suspends it. The next time
 * slurmctld asks us about such a job (gang.c queries its mode on every
 * time slice) we see preempt_time set on a suspended job and report it,
 * keyed by that preempt_time so it counts once.
 */
extern void gf_preempt_check_suspended(job_record_t *job)
{
	uint32_t slot;
	bool seen;

	if (!job || !job->preempt_time || !IS_JOB_SUSPENDED(job))
		return;
	slot = job->job_id % GF_SLOTS;
	slurm_mutex_lock(&recorded_lock);
	seen = recorded[slot].victim == job->job_id &&
	       recorded[slot].key == job->preempt_time;
	slurm_mutex_unlock(&recorded_lock);
	if (!seen)
		gf_preempt_record(job, job->preempt_time, "suspend");
}
