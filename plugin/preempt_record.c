/*****************************************************************************\
 *  preempt_record.c - preempt/gpufair's one place where a real preemption
 *  is reported to the core (gpufair_record_preemption), once per event.
 *
 *  The predicates run many times per scheduling pass; the real event is
 *  preempt_p_get_data(PREEMPT_DATA_GRACE_TIME), or for gang suspension the
 *  first query about a job suspended for a preemptor (below). The
 *  preemptor is the last one preempt_p_preemptable() allowed for the
 *  victim: Slurm does not pass it to those calls.
 *
 *  Locks: the callers hold the job WRITE lock (grace-time query), or READ
 *  or WRITE (mode query, from gang.c and the select plugin); we take
 *  libgpufair's claim mutex (innermost, a few instructions) and assoc_mgr
 *  assoc READ, never both. gf_preemptor_remember() runs from every
 *  predicate thread, lock free. When the core grants the preemptor a
 *  claim (preemptor_claim: by default a reclaim from a team that jumped
 *  or of a scavenger; in-team jumps too with all) the grace-time query
 *  (job WRITE lock) also raises its priority.
\*****************************************************************************/

#define _GNU_SOURCE
#include "slurm_compat.h"

#include <stdatomic.h>
#include <time.h>

#include "src/common/assoc_mgr.h"
#include "src/common/log.h"
#include "src/common/xstring.h"

#include "preempt_conf.h"
#include "preempt_record.h"

extern const char plugin_type[]; /* preempt_gpufair.c */

/*
 * The last preemptor evaluated for each victim, so that the real event can
 * name it. Direct-mapped by victim job id: O(1), no allocation, lock-free
 * (one 64-bit atomic word per slot: victim id << 32 | preemptor id). A
 * collision only loses the preemptor of a victim that was evaluated but not
 * yet preempted when another victim with the same slot was evaluated in the
 * same pass.
 */
#define GF_SLOTS 65536
static _Atomic uint64_t last_preemptor[GF_SLOTS];


extern void gf_preemptor_remember(const job_record_t *victim,
				  const job_record_t *preemptor)
{
	atomic_store_explicit(&last_preemptor[victim->job_id % GF_SLOTS],
			      ((uint64_t)victim->job_id << 32) |
				      preemptor->job_id,
			      memory_order_relaxed);
}

/* A claim (preemptor_claim; the core says whether this preemption has
 * one): the preemptor sorts first now, so that the next
 * scheduling pass gives it what its victims free (Slurm hands freed nodes
 * to the first job in priority order that fits). The core keeps its
 * priority there at every recalculation until it starts, at most 10
 * minutes. A held job (priority 0) or one an admin set the priority of is
 * left alone. Job WRITE lock held. */
static void _claim(gpufair_engine_t *e, job_record_t *preemptor)
{
	uint32_t prio = gpufair_claim_priority(e, preemptor->job_id,
					       (int64_t)time(NULL));
	uint32_t *array;
	int n;

	if (!prio || !IS_JOB_PENDING(preemptor) || !preemptor->priority ||
	    preemptor->direct_set_prio)
		return;
	preemptor->priority = prio;
	if ((array = gf_prio_array(preemptor)))
		for (n = gf_prio_array_len(preemptor); n-- > 0;)
			array[n] = prio;
	log_flag(PRIO, "%s: %pJ claims what its victims free (preemptor_claim): priority %u until it starts",
		 plugin_type, preemptor, prio);
}

/* Report one real preemption of victim to the core, once per key: the
 * victim's start time (requeue, cancel) or preempt_time (gang suspend).
 * "Once" is the process's claim table in libgpufair, which
 * priority/gpufair's record of preemptions on borrowed reservation time
 * (prio_borrowed.c) shares. */
static void _record(job_record_t *victim, time_t key, const char *how,
		    bool job_write_locked)
{
	gpufair_engine_t *e = gpufair_global_get();
	uint64_t w = atomic_load_explicit(
		&last_preemptor[victim->job_id % GF_SLOTS],
		memory_order_relaxed);
	job_record_t *preemptor;
	const gf_preempt_conf_t *c;
	gpufair_job_t or_j, ee_j;
	assoc_mgr_lock_t assoc_read = { .assoc = READ_LOCK };
	char reason[1024];
	int rc;

	if (!e || !gpufair_preemption_claim(victim->job_id, (int64_t)key))
		return;
	if ((uint32_t)(w >> 32) != victim->job_id ||
	    !(preemptor = find_job_record((uint32_t)w))) {
		error("%s: %pJ is being preempted (%s) but its preemptor is unknown; not reported to gpufair",
		      plugin_type, victim, how);
		return;
	}
	c = gf_preempt_conf(e);
	assoc_mgr_lock(&assoc_read);
	gf_preempt_job(e, c, preemptor, &or_j);
	gf_preempt_job(e, c, victim, &ee_j);
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
	if (rc >= 0 && job_write_locked)
		_claim(e, preemptor);
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
 * THE REAL EVENT (requeue and cancel modes). Slurm asks for the grace time
 * in exactly one place: _job_check_grace_internal() (src/slurmctld/
 * preempt.c, 24.11 src/interfaces/preempt.c), the first step of
 * slurm_job_preempt(), and only while the victim's preempt_time is still 0;
 * right after this call it sets preempt_time and then signals, requeues or
 * kills the job (immediately, or when GraceTime has run out, via
 * job_time_limit() -> slurm_job_preempt() with preempt_time already set,
 * which does not ask again). The will-run tests, the queue sort and the
 * candidate sort never ask for it. So this call happens once per actual
 * preemption, and the preemptor is the last one evaluated for this victim
 * in the same scheduling pass (the job write lock is held from
 * slurm_find_preemptable_jobs() to _preempt_jobs()). The (victim, start
 * time) key makes it once even if Slurm ever asked twice. Slurm skips
 * this query (and our predicate) for a victim on borrowed reservation time:
 * priority/gpufair records those at the victim's end (prio_borrowed.c),
 * claiming the same key.
 */
extern void gf_preempt_grace_query(job_record_t *victim)
{
	if (victim && !victim->preempt_time)
		_record(victim, victim->start_time, "grace-time query", true);
}

/*
 * Gang-scheduled suspension (PreemptMode=SUSPEND,GANG) does not go through
 * slurm_job_preempt(): _preempt_jobs() (node_scheduler.c) only sets the
 * victim's preempt_time and the gang scheduler suspends it. The next time
 * slurmctld asks us about such a job (gang.c queries its mode on every
 * time slice) we see preempt_time set on a suspended job and report it,
 * keyed by that preempt_time so it counts once.
 */
extern void gf_preempt_mode_query(job_record_t *job)
{
	if (job && job->preempt_time && IS_JOB_SUSPENDED(job))
		_record(job, job->preempt_time, "suspend", false);
}
