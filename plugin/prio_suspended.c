/*****************************************************************************\
 *  prio_suspended.c - preemptions by gang suspension (PreemptMode=
 *  SUSPEND,GANG), recorded by the cycle.
 *
 *  _preempt_jobs() (node_scheduler.c, 22.05 and 24.11) asks the victim's
 *  preemption mode, sets its preempt_time and leaves the suspension to the
 *  gang scheduler: no preempt call marks the event. preempt/gpufair pins
 *  the victim's preemptor at that mode query (preempt_record.c:
 *  gpufair_preemptor_pin); here the cycle, which sees every suspended job
 *  with the job WRITE lock and assoc_mgr locks held in their order, reports
 *  the suspension to the core once (libgpufair's claim on (victim,
 *  preempt_time)), at its preempt_time. A job suspended by an admin
 *  (scontrol suspend) or by gang time slicing has no preempt_time.
 *
 *  Locks: the cycle's (job WRITE, then assoc WRITE among the assoc_mgr
 *  locks); the cycle thread reads the team map without map_lock.
\*****************************************************************************/

#include "src/common/log.h"

#include "priority_gpufair.h"

extern void gfp_gang_suspension(job_record_t *victim, int32_t team,
				int rank_by)
{
	uint32_t pid;
	job_record_t *preemptor;
	gpufair_job_t or_j, ee_j;
	char reason[1024];
	int rc;

	if (!victim->preempt_time || !IS_JOB_SUSPENDED(victim) ||
	    !gpufair_preemption_claim(victim->job_id,
				      (int64_t)victim->preempt_time))
		return;
	pid = gpufair_preemptor_pinned(victim->job_id);
	if (!pid || !(preemptor = find_job_record(pid))) {
		error("%s: %pJ was suspended for a preemptor (gang) but its preemptor is unknown; not reported to gpufair",
		      plugin_type, victim);
		return;
	}
	gf_job_fill(&or_j, preemptor, gfp_job_team_locked(preemptor, true),
		    &gfp.gpus, rank_by);
	gf_job_fill(&ee_j, victim, team, &gfp.gpus, rank_by);
	if (or_j.team < 0) {
		error("%s: %pJ was suspended for %pJ, which has no team; not reported to gpufair",
		      plugin_type, victim, preemptor);
		return;
	}
	rc = gpufair_record_preemption(gfp.engine, &or_j, &ee_j,
				       (int64_t)victim->preempt_time, reason,
				       sizeof(reason));
	if (rc < 0) {
		error("%s: recording the suspension of %pJ by %pJ failed: %s",
		      plugin_type, victim, preemptor, reason);
		return;
	}
	log_flag(PRIO, "%s: preemption recorded (gang suspension): %pJ preempts %pJ: %s: %s",
		 plugin_type, preemptor, victim, rc == 1 ? "BAIT" : "honest",
		 reason);
	if (rc == 1)
		info("%s: bait detected: %pJ preempted %pJ: %s", plugin_type,
		     preemptor, victim, reason);
	gf_say_reclaim(plugin_type, victim, preemptor, reason);
}
