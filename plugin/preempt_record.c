/*****************************************************************************\
 *  preempt_record.c - preempt/gpufair's one place where a real preemption
 *  is reported to the core (gpufair_record_preemption), once per event.
 *
 *  The predicates run many times per scheduling pass; the real event of a
 *  requeue or cancel is preempt_p_get_data(PREEMPT_DATA_GRACE_TIME). The
 *  preemptor is the last one preempt_p_preemptable() let through for the
 *  victim (libgpufair's gpufair_preemptor_note): Slurm does not pass it to
 *  those calls. A gang suspension is recorded by priority/gpufair's cycle
 *  (prio_suspended.c), with the preemptor pinned here at the mode query
 *  Slurm makes right before it suspends the victim.
 *
 *  Locks: the grace-time query holds the job WRITE lock; we take
 *  libgpufair's claim mutex (innermost, a few instructions) and assoc_mgr
 *  assoc READ, never both. The mode query comes with any locks (the
 *  scheduler, gang.c, and pack_job for squeue and scontrol under assoc_mgr
 *  READ locks): there we only pin, lock free, and take no lock. Notes are
 *  written from every predicate thread, lock free. When the core grants
 *  the preemptor a claim (preemptor_claim: by default a reclaim from a
 *  team that jumped or of a scavenger; in-team jumps too with all) the
 *  grace-time query (job WRITE lock) also raises its priority.
\*****************************************************************************/

#define _GNU_SOURCE
#include "slurm_compat.h"

#include <time.h>

#include "src/common/assoc_mgr.h"
#include "src/common/log.h"

#include "preempt_conf.h"
#include "preempt_record.h"

extern const char plugin_type[]; /* preempt_gpufair.c */

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
static void _record(job_record_t *victim, time_t key, const char *how)
{
	gpufair_engine_t *e = gpufair_global_get();
	uint32_t pid = gpufair_preemptor_noted(victim->job_id);
	job_record_t *preemptor;
	const gf_preempt_conf_t *c;
	gpufair_job_t or_j, ee_j;
	assoc_mgr_lock_t assoc_read = { .assoc = READ_LOCK };
	char reason[1024];
	int rc;

	if (!e || !gpufair_preemption_claim(victim->job_id, (int64_t)key))
		return;
	if (!pid || !(preemptor = find_job_record(pid))) {
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
	if (rc >= 0) {
		_claim(e, preemptor);
		gf_say_reclaim(plugin_type, victim, preemptor, reason);
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
		_record(victim, victim->start_time, "grace-time query");
}

/*
 * Gang-scheduled suspension (PreemptMode=SUSPEND,GANG) does not go through
 * slurm_job_preempt(): _preempt_jobs() (node_scheduler.c) asks the
 * victim's mode, sets its preempt_time and leaves the suspension to the
 * gang scheduler; nothing is asked after that which is not also asked
 * elsewhere (pack_job asks every started job's mode, for squeue). So the
 * mode query on a running job not yet preempted pins the victim's last
 * note: the last such query before its suspension is _preempt_jobs()'s,
 * in the pass that chose its preemptor. priority/gpufair's cycle records
 * the suspension (prio_suspended.c). Until 2026-12-07 the first mode query
 * on the suspended job recorded it, often from pack_job, taking assoc READ
 * under assoc_mgr's QOS READ (against assoc_mgr's order: a deadlock with a
 * thread holding assoc WRITE and waiting for QOS WRITE), writing the
 * record under a job READ lock, and naming whichever preemptor a later
 * pass had noted.
 */
extern void gf_preempt_mode_query(job_record_t *job)
{
	if (job && !job->preempt_time && IS_JOB_RUNNING(job))
		gpufair_preemptor_pin(job->job_id);
}
