/*****************************************************************************\
 *  prio_borrowed.c - preemptions of jobs on borrowed reservation time,
 *  which preempt/gpufair never sees, reported to the core at job end.
 *
 *  A job submitted with --signal=R:... (warn flag KILL_JOB_RESV) may run on
 *  the idle nodes of a reservation with MaxStartDelay. When a job of that
 *  reservation wants them, Slurm preempts it whatever the preemption rules
 *  (22.05 src/slurmctld/preempt.c, 24.11 src/interfaces/preempt.c):
 *  _is_job_preempt_exempt_internal() takes it as a candidate without
 *  asking preempt_p_preemptable() (job_borrow_from_resv_check(), in
 *  reservation.c), and _job_check_grace_internal() gives it the job's own
 *  warn time instead of asking preempt_p_get_data(GRACE_TIME), the call
 *  preempt/gpufair records real preemptions at. So neither the pair nor
 *  the event reaches preempt/gpufair.
 *
 *  What does reach us: the victim's end. It is requeued or killed at once
 *  (warn time 0) or when its warn time runs out (job_time_limit() ->
 *  slurm_job_preempt()), or it exits on the signal first; each time
 *  deallocate_nodes() -> acct_policy_job_fini() -> priority_p_job_end()
 *  with preempt_time set and the nodes still allocated. The preemptor is
 *  not named there; it is a pending job of a MaxStartDelay reservation
 *  whose nodes overlap the victim's, which job_borrow_from_resv_check()
 *  says, and when several are, the one the scheduler takes first (highest
 *  priority, then lowest id). A victim preempt/gpufair already reported
 *  (it was preempted by its rules, and only happens to carry the flag) is
 *  skipped: both plugins claim (victim, start time) in libgpufair's table.
 *
 *  Only with AccountingStorageEnforce=limits: acct_policy_job_fini() calls
 *  the priority plugin only then.
 *
 *  Locks: called from priority_p_job_end() with the job WRITE lock held and
 *  no assoc_mgr lock; we take assoc READ, then map_lock READ, and release
 *  both before priority_p_job_end() takes assoc WRITE.
\*****************************************************************************/

#include <time.h>

#include "src/common/log.h"
#include "src/slurmctld/reservation.h"

#include "priority_gpufair.h"

typedef struct {
	job_record_t *victim;
	job_record_t *best;
} gf_borrow_scan_t;

/* The pending jobs whose reservation took the victim's nodes back: the
 * one the scheduler takes first. */
static int _borrow_preemptor(void *x, void *arg)
{
	job_record_t *job = x;
	gf_borrow_scan_t *s = arg;

	if (!IS_JOB_PENDING(job) || job == s->victim ||
	    !job_borrow_from_resv_check(s->victim, job))
		return 0;
	if (!s->best || job->priority > s->best->priority ||
	    (job->priority == s->best->priority &&
	     job->job_id < s->best->job_id))
		s->best = job;
	return 0;
}

extern void gfp_borrowed_preemption(job_record_t *victim)
{
	assoc_mgr_lock_t assoc_read = { .assoc = READ_LOCK };
	gf_borrow_scan_t s = { .victim = victim };
	gpufair_job_t or_j, ee_j;
	int rank_by = __atomic_load_n(&gfp.rank_by, __ATOMIC_RELAXED);
	char reason[512];

	if (!victim->preempt_time || !(victim->warn_flags & KILL_JOB_RESV) ||
	    !job_list)
		return;
	list_for_each(job_list, _borrow_preemptor, &s);
	if (!s.best)
		return; /* not preempted for a reservation */
	if (!gpufair_preemption_claim(victim->job_id,
				      (int64_t)victim->start_time))
		return; /* preempt/gpufair reported it at the grace-time query */
	assoc_mgr_lock(&assoc_read);
	slurm_rwlock_rdlock(&gfp.map_lock);
	gf_job_fill(&or_j, s.best, gfp_job_team_locked(s.best, true),
		    &gfp.gpus, rank_by);
	gf_job_fill(&ee_j, victim, gfp_job_team_locked(victim, true),
		    &gfp.gpus, rank_by);
	slurm_rwlock_unlock(&gfp.map_lock);
	assoc_mgr_unlock(&assoc_read);
	if (or_j.team < 0) {
		error("%s: %pJ on borrowed reservation time was preempted by %pJ, which has no team; not reported to gpufair",
		      plugin_type, victim, s.best);
		return;
	}
	if (gpufair_record_resv_preemption(gfp.engine, &or_j, &ee_j,
					   (int64_t)victim->preempt_time,
					   reason, sizeof(reason)) < 0)
		error("%s: recording preemption of %pJ by %pJ failed: %s",
		      plugin_type, victim, s.best, reason);
	else
		log_flag(PRIO, "%s: preemption recorded (reservation): %pJ preempts %pJ: %s",
			 plugin_type, s.best, victim, reason);
}
