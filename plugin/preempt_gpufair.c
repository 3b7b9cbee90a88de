/*****************************************************************************\
 *  preempt_gpufair.c - preempt/gpufair: Slurm's preempt/qos or
 *  preempt/partition_prio semantics plus gpufair's team rule, reclaim and
 *  bait blocking.
 *****************************************************************************
 *  Semantics: Slurm's own rule, chosen by PriorityParameters=preempt_by
 *  (preempt_rules.c): preempt/qos (QOS Preempt= lists, PreemptMode incl.
 *  WITHIN, GraceTime from the QOS), or preempt/partition_prio (a higher
 *  partition PriorityTier preempts a lower one; PreemptMode and GraceTime
 *  from the partition). PreemptExemptTime is applied by slurmctld itself
 *  (acct_policy_is_job_preempt_exempt()). Then, the same for both:
 *    - by default a job may only preempt jobs of its own team
 *      (PriorityParameters=preempt_scope=any lifts this), and
 *    - gpufair_preempt_allowed() may refuse a preemption that would be bait,
 *    - and across teams, whatever Slurm's rule says, the core's reclaim
 *      rule may let a job of a team below its entitlement requeue a job of
 *      no higher in-team rank of a team over its own, or any team's job a
 *      scavenger (_reclaim_allowed).
 *  Without priority/gpufair (no shared engine) it is preempt/qos plus the
 *  same-team rule, with the team at the top level below root. Real
 *  preemptions are reported to the core in preempt_record.c.
 *
 *  Locks each entry point runs under (Slurm 22.05 and 24.11):
 *  init(), fini()  slurmctld start-up / shutdown (preempt.c), no lock held.
 *  preempt_p_job_preempt_check()  job READ (queue sort in job_scheduler.c,
 *              build_job_queue), called on every comparison.
 *  preempt_p_preemptable()        job WRITE (select plugin's will-run test
 *              via _add_preemptable_job, for EVERY job in job_list), or job
 *              READ from the queue sort. No assoc_mgr lock is held: we take
 *              assoc READ only after Slurm's cheap rule has passed.
 *  preempt_p_get_data()           job WRITE during scheduling (READ from
 *              gang.c); job_ptr may be NULL for PREEMPT_DATA_ENABLED. The
 *              mode query also comes from pack_job (squeue, scontrol show
 *              job) under the job READ lock with assoc_mgr QOS and user
 *              READ (and assoc READ for a list) held: the mode query
 *              takes no lock (preempt_record.c).
 *
 *  Hot path: preemptable() is called for every job in the system for every
 *  job being scheduled. Its order is: the configuration snapshot (one
 *  atomic load and two compares), Slurm's rule (a few loads, the test that
 *  rejects almost every pair), then team identity (a walk of at most a few
 *  parent pointers, no allocation), then the core (shared lock, only for
 *  pairs of one team that Slurm would preempt anyway).
\*****************************************************************************/

#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "slurm/slurm_errno.h"

#include "src/common/assoc_mgr.h"
#include "src/common/log.h"
#include "src/common/plugin.h"
#include "src/common/xstring.h"
#include "slurm_compat.h" /* src/interfaces/preempt.h from 23.02 */
#include "src/slurmctld/slurmctld.h"

#include "gpufair_slurm.h"
#include "preempt_conf.h"
#include "preempt_record.h"

GF_EXPORT const char plugin_name[] = "Preempt gpufair (QOS or partition tier + same-team rule + bait blocking)";
GF_EXPORT const char plugin_type[] = "preempt/gpufair";
GF_EXPORT const uint32_t plugin_version = SLURM_VERSION_NUMBER;

extern GF_EXPORT int init(void)
{
	info("%s loaded", plugin_type);
	return SLURM_SUCCESS;
}

/* slurmctld stops its scheduling threads before unloading plugins: no
 * predicate runs any more. */
extern GF_EXPORT void fini(void)
{
	gf_preempt_conf_free();
}

static bool _running(const job_record_t *job)
{
	return IS_JOB_RUNNING(job) || IS_JOB_SUSPENDED(job);
}

/* The core's reclaim rule for a cross-team pair; remembers the preemptor
 * for the real event like any allowed pair. Caller holds no assoc lock. */
static __attribute__((noinline)) bool _reclaim_allowed(
	gpufair_engine_t *e, const gf_preempt_conf_t *c, job_record_t *preemptee,
	job_record_t *preemptor)
{
	assoc_mgr_lock_t assoc_read = { .assoc = READ_LOCK };
	gpufair_job_t or_j, ee_j;
	int rc;

	if (c->any_team)
		return false; /* Slurm's rule decided already */
	assoc_mgr_lock(&assoc_read);
	gf_preempt_job(e, c, preemptor, &or_j);
	gf_preempt_job(e, c, preemptee, &ee_j);
	assoc_mgr_unlock(&assoc_read);
	if (or_j.team < 0 || ee_j.team < 0 || or_j.team == ee_j.team)
		return false;
	rc = gpufair_preempt_allowed(e, &or_j, &ee_j, (int64_t)time(NULL),
				     NULL, 0);
	if (rc != GPUFAIR_PREEMPT_RECLAIM)
		return false;
	gpufair_preemptor_note(preemptee->job_id, preemptor->job_id);
	return true;
}

/* Same team? Same association is the same team for free; no association
 * on either side: compare account names. */
static bool _same_team(const gf_preempt_conf_t *c, job_record_t *preemptee,
		       job_record_t *preemptor)
{
	assoc_mgr_lock_t assoc_read = { .assoc = READ_LOCK };
	bool same;

	if (c->any_team || preemptee->assoc_ptr == preemptor->assoc_ptr)
		return true;
	if (!preemptee->assoc_ptr || !preemptor->assoc_ptr)
		return preemptee->account && preemptor->account &&
		       !xstrcasecmp(preemptee->account, preemptor->account);
	assoc_mgr_lock(&assoc_read);
	same = gf_team_assoc(preemptee->assoc_ptr, c->team_level) ==
	       gf_team_assoc(preemptor->assoc_ptr, c->team_level);
	assoc_mgr_unlock(&assoc_read);
	return same;
}

/* The core's bait blocking for a same-team pair with a running victim. */
static bool _core_allows(gpufair_engine_t *e, const gf_preempt_conf_t *c,
			 job_record_t *preemptee, job_record_t *preemptor)
{
	/* The scheduler asks again every pass: log a refused pair once a
	 * minute, not every second (threads may race here: at worst a line
	 * more or less). */
	static _Atomic uint64_t last_pair;
	static _Atomic int64_t last_log;
	assoc_mgr_lock_t assoc_read = { .assoc = READ_LOCK };
	gpufair_job_t or_j, ee_j;
	char reason[512];
	uint64_t pair;
	int64_t now = time(NULL);
	int rc;

	assoc_mgr_lock(&assoc_read);
	gf_preempt_job(e, c, preemptor, &or_j);
	gf_preempt_job(e, c, preemptee, &ee_j);
	assoc_mgr_unlock(&assoc_read);
	rc = gpufair_preempt_allowed(e, &or_j, &ee_j, now, reason,
				     sizeof(reason));
	if (rc < 0) {
		/* An error in the core must not stop Slurm's own rule. */
		debug("%s: preempt check failed (%d): %s", plugin_type, rc,
		      reason);
		return true;
	}
	if (rc != 0)
		return true;
	pair = ((uint64_t)preemptor->job_id << 32) | preemptee->job_id;
	if (atomic_exchange_explicit(&last_pair, pair, memory_order_relaxed) !=
		    pair ||
	    now - atomic_load_explicit(&last_log, memory_order_relaxed) >= 60) {
		atomic_store_explicit(&last_log, now, memory_order_relaxed);
		log_flag(PRIO, "%s: %pJ may not preempt %pJ: %s", plugin_type,
			 preemptor, preemptee, reason);
	}
	return false;
}

/* Slurm's rule: preempt/qos's test inline (the default preempt_by, no
 * indirect call), the other through the table. */
static inline bool _slurm_allows(const gf_preempt_conf_t *c,
				 job_record_t *preemptee,
				 job_record_t *preemptor)
{
	if (c->rules == &gf_rules_qos)
		return gf_qos_preemptable(preemptee, preemptor);
	return c->rules->preemptable(preemptee, preemptor);
}

/*
 * Reclaim (design.md), for a pair Slurm's rule refuses: a job of a team
 * below its entitlement may requeue a running job of no higher in-team
 * rank of a team over its own, and any job a scavenger, whatever Slurm's
 * rule says. The ranks are the core's to compare (a scavenger's rank does
 * not count), so there is no rank test here. One relaxed atomic load says
 * whether any team qualifies this cycle; usually none does. Out of line,
 * as _same_team_and_core().
 */
static __attribute__((noinline)) bool _reclaim(gpufair_engine_t *e,
					       const gf_preempt_conf_t *c,
					       job_record_t *preemptee,
					       job_record_t *preemptor)
{
	if (!e || !gpufair_reclaim_possible(e) || !_running(preemptee))
		return false;
	return _reclaim_allowed(e, c, preemptee, preemptor);
}

/*
 * gpufair's rule for a pair Slurm's rule allows: the same-team rule, then
 * the core's bait blocking, only when there is a victim that is actually
 * running (pending pairs of the queue sort are ordered by Slurm's rule and
 * the team rule alone). Out of line, so that Slurm's test, which rejects
 * almost every pair, runs without this one's stack frame (the core's two
 * jobs, the reason text) and register saves (docs/performance.md).
 */
static __attribute__((noinline)) bool _same_team_and_core(
	gpufair_engine_t *e, const gf_preempt_conf_t *c,
	job_record_t *preemptee, job_record_t *preemptor)
{
	if (!_same_team(c, preemptee, preemptor))
		return false;
	if (!_running(preemptee))
		return true;
	if (e && !_core_allows(e, c, preemptee, preemptor))
		return false;
	gpufair_preemptor_note(preemptee->job_id, preemptor->job_id);
	return true;
}

/*
 * Queue sort (sort_job_queue2, twice in every comparison of two queued,
 * so pending, jobs): may preemptor preempt preemptee? Slurm's rule, then
 * the team rule; reclaim only ever concerns running victims, so a pending
 * victim Slurm's rule refuses is refused without asking the engine.
 */
extern GF_EXPORT bool preempt_p_job_preempt_check(job_queue_rec_t *preemptor,
						  job_queue_rec_t *preemptee)
{
	gpufair_engine_t *e = gpufair_global_get();
	const gf_preempt_conf_t *c = gf_preempt_conf(e);
	job_record_t *ee = preemptee->job_ptr, *or = preemptor->job_ptr;

	/* preempt/qos sorts the queue by its job rule. */
	if (c->rules == &gf_rules_qos ? gf_qos_preemptable(ee, or) :
					c->rules->queue_check(preemptor, preemptee))
		return _same_team_and_core(e, c, ee, or);
	if (!_running(ee))
		return false;
	return _reclaim(e, c, ee, or);
}

/*
 * The will-run test's question (the top of this file): may preemptor
 * requeue, cancel or suspend preemptee? Asked for every job in the system
 * each time slurmctld tries to start a job, so Slurm's rule first and the
 * rest out of line.
 *
 * Only a running or suspended job can be preempted, and slurmctld (22.05
 * and 24.11: the only caller, _add_preemptable_job() in preempt.c) drops
 * every other candidate in job_overlap_and_running() right after asking.
 * So a pending victim gets false here once Slurm's rule passed, without
 * the team rule (an assoc_mgr lock) and without Slurm's own exemption
 * checks, which then do not run. The queue sort's question about pending
 * pairs is preempt_p_job_preempt_check().
 */
extern GF_EXPORT bool preempt_p_preemptable(job_record_t *preemptee,
					    job_record_t *preemptor)
{
	gpufair_engine_t *e = gpufair_global_get();
	const gf_preempt_conf_t *c = gf_preempt_conf(e);

	if (!_slurm_allows(c, preemptee, preemptor))
		return _reclaim(e, c, preemptee, preemptor);
	if (!_running(preemptee))
		return false;
	return _same_team_and_core(e, c, preemptee, preemptor);
}

extern GF_EXPORT int preempt_p_get_data(job_record_t *job_ptr,
					slurm_preempt_data_type_t data_type,
					void *data)
{
	const gf_preempt_rules_t *r = gf_preempt_conf(gpufair_global_get())->rules;
	int rc = SLURM_SUCCESS;

	switch (data_type) {
	case PREEMPT_DATA_ENABLED:
		(*(bool *)data) = slurm_conf.preempt_mode != PREEMPT_MODE_OFF;
		break;
	case PREEMPT_DATA_MODE:
		(*(uint16_t *)data) = r->mode(job_ptr);
		gf_preempt_mode_query(job_ptr);
		break;
	case PREEMPT_DATA_PRIO:
		(*(uint32_t *)data) = gf_preempt_prio(r, job_ptr);
		break;
	case PREEMPT_DATA_GRACE_TIME:
		/* The real event of requeue and cancel (preempt_record.c). */
		(*(uint32_t *)data) = r->grace_time(job_ptr);
		gf_preempt_grace_query(job_ptr);
		break;
	default:
		error("%s: unknown enum %d", __func__, data_type);
		rc = SLURM_ERROR;
		break;
	}
	return rc;
}
