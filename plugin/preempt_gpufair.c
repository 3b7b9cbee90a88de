/*****************************************************************************\
 *  preempt_gpufair.c - preempt/gpufair: preempt/qos semantics plus gpufair's
 *  team rule, bait blocking and reclaim (the real preemptions are reported
 *  to the core by preempt_record.c).
 *****************************************************************************
 *  Semantics: exactly preempt/qos (QOS Preempt= lists, PreemptMode incl.
 *  WITHIN, GraceTime from the QOS; PreemptExemptTime is applied by slurmctld
 *  itself in acct_policy_is_job_preempt_exempt()), then
 *    - by default a job may only preempt jobs of its own team
 *      (PriorityParameters=preempt_scope=any lifts this), and
 *    - gpufair_preempt_allowed() may refuse a preemption that would be bait,
 *    - and across teams, whatever the QOS lists say, the core's reclaim
 *      rule may let a job of a team below its entitlement requeue a job of
 *      no higher QOS priority of a team over its own (_reclaim_allowed).
 *  Without priority/gpufair (no shared engine) only the same-team rule is
 *  added, with the team at the top level below root.
 *
 *  Locks each entry point runs under (Slurm 22.05 and 24.11):
 *  init(), fini()  slurmctld start-up / shutdown (preempt.c), no lock held.
 *  preempt_p_job_preempt_check()  job READ (queue sort in job_scheduler.c,
 *              build_job_queue), called on every comparison.
 *  preempt_p_preemptable()        job WRITE (select plugin's will-run test
 *              via _add_preemptable_job, for EVERY job in job_list). No
 *              assoc_mgr lock is held by either: we take assoc READ only
 *              after the cheap QOS test has passed.
 *  preempt_p_get_data()           job WRITE during scheduling; job_ptr may
 *              be NULL for PREEMPT_DATA_ENABLED.
 *
 *  Hot path: preemptable() is called for every job in the system for every
 *  job being scheduled, job_preempt_check() in every comparison of the
 *  queue sort. Both run preempt/qos's test inline (QOS pointers and bitmap:
 *  a few loads, and it rejects almost every pair) and nothing else: the
 *  rest is out of line (_team_and_core, _reclaim), so the common case
 *  costs about what preempt/qos's does (docs/performance.md, the preempt
 *  bench). Then team identity (a walk of at most a few parent pointers, no
 *  allocation), then the core (shared lock, only for pairs of one team
 *  that Slurm would preempt anyway).
\*****************************************************************************/

#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "slurm/slurm_errno.h"

#include "src/common/assoc_mgr.h"
#include "src/common/bitstring.h"
#include "src/common/log.h"
#include "src/common/plugin.h"
#include "src/common/xstring.h"
#include "slurm_compat.h" /* src/interfaces/preempt.h from 23.02 */
#include "src/slurmctld/slurmctld.h"

#include "gpufair_slurm.h"
#include "preempt_conf.h"
#include "preempt_record.h"

GF_EXPORT const char plugin_name[] = "Preempt gpufair (QOS + same-team rule + bait blocking)";
GF_EXPORT const char plugin_type[] = "preempt/gpufair";
GF_EXPORT const uint32_t plugin_version = SLURM_VERSION_NUMBER;


static bool _within(const slurmdb_qos_rec_t *qos)
{
	return (qos->preempt_mode & PREEMPT_MODE_WITHIN) ||
	       (slurm_conf.preempt_mode & PREEMPT_MODE_WITHIN);
}

static uint16_t _job_preempt_mode(job_record_t *job_ptr)
{
	uint16_t mode;

	if (job_ptr->qos_ptr && job_ptr->qos_ptr->preempt_mode)
		mode = job_ptr->qos_ptr->preempt_mode;
	else
		mode = slurm_conf.preempt_mode;
	mode &= ~PREEMPT_MODE_GANG;
	mode &= ~PREEMPT_MODE_WITHIN;
	return mode;
}

/* Preemption order among candidates: QOS priority in the high 16 bits,
 * node count in the low 16 (smaller jobs first), as preempt/qos. */
static uint32_t _gen_job_prio(job_record_t *job_ptr)
{
	uint32_t prio = 0;

	if (job_ptr->qos_ptr)
		prio = (job_ptr->qos_ptr->priority >= 0xffff) ?
			0xffffu << 16 : job_ptr->qos_ptr->priority << 16;
	prio += (job_ptr->node_cnt >= 0xffff) ? 0xffff : job_ptr->node_cnt;
	return prio;
}

static uint32_t _get_grace_time(job_record_t *job_ptr)
{
	return job_ptr->qos_ptr ? job_ptr->qos_ptr->grace_time : 0;
}

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

/* The core's reclaim rule for a cross-team pair; remembers the preemptor
 * for the real event like any allowed pair. Caller holds no assoc lock. */
static __attribute__((noinline)) bool _reclaim_allowed(
	gpufair_engine_t *e, job_record_t *preemptee, job_record_t *preemptor)
{
	assoc_mgr_lock_t assoc_read = { .assoc = READ_LOCK };
	const gf_preempt_conf_t *c = gf_preempt_conf(e);
	gpufair_job_t or_j, ee_j;
	int rc;

	if (c->any_team)
		return false; /* preempt/qos decided already */
	assoc_mgr_lock(&assoc_read);
	gf_preempt_core_job(e, c, preemptor, &or_j);
	gf_preempt_core_job(e, c, preemptee, &ee_j);
	assoc_mgr_unlock(&assoc_read);
	if (or_j.team < 0 || ee_j.team < 0 || or_j.team == ee_j.team)
		return false;
	rc = gpufair_preempt_allowed(e, &or_j, &ee_j, (int64_t)time(NULL),
				     NULL, 0);
	if (rc != GPUFAIR_PREEMPT_RECLAIM)
		return false;
	gf_preempt_remember(preemptee, preemptor);
	return true;
}

/*
 * Steps 2 and 3 of preempt_p_preemptable(), for a pair the QOS rule allows:
 * the same-team rule, then the core. Out of line, so that the QOS test,
 * which rejects almost every pair, runs without this one's stack frame
 * (the core's two jobs, the reason text) and register saves.
 */
static __attribute__((noinline)) bool _team_and_core(job_record_t *preemptee,
						     job_record_t *preemptor)
{
	gpufair_engine_t *e = gpufair_global_get();
	const gf_preempt_conf_t *c = gf_preempt_conf(e);
	assoc_mgr_lock_t assoc_read = { .assoc = READ_LOCK };
	bool same_team, ok = true;

	/* 2. Same team? Same association is the same team for free. */
	if (!c->any_team && preemptee->assoc_ptr != preemptor->assoc_ptr) {
		assoc_mgr_lock(&assoc_read);
		same_team = gf_team_assoc(preemptee->assoc_ptr,
					  c->team_level) ==
			    gf_team_assoc(preemptor->assoc_ptr, c->team_level);
		/* No association on either side: compare account names. */
		if (!preemptee->assoc_ptr || !preemptor->assoc_ptr)
			same_team = preemptee->account && preemptor->account &&
				    !xstrcasecmp(preemptee->account,
						 preemptor->account);
		assoc_mgr_unlock(&assoc_read);
		if (!same_team)
			return false;
	}

	/* 3. The core: bait blocking (and its own scope rule). Only when
	 * there is a victim that is actually running: pending/pending pairs
	 * of the queue sort are ordered by the QOS rule alone. */
	if (e && (IS_JOB_RUNNING(preemptee) || IS_JOB_SUSPENDED(preemptee))) {
		gpufair_job_t or_j, ee_j;
		char reason[512];
		int rc;

		assoc_mgr_lock(&assoc_read);
		gf_preempt_core_job(e, c, preemptor, &or_j);
		gf_preempt_core_job(e, c, preemptee, &ee_j);
		assoc_mgr_unlock(&assoc_read);
		rc = gpufair_preempt_allowed(e, &or_j, &ee_j,
					     (int64_t)time(NULL), reason,
					     sizeof(reason));
		if (rc == 0) {
			/* The scheduler asks again every pass: log a refused
			 * pair once a minute, not every second (threads may
			 * race here: at worst a line more or less). */
			static _Atomic uint64_t last_pair;
			static _Atomic int64_t last_log;
			uint64_t pair = ((uint64_t)preemptor->job_id << 32) |
					preemptee->job_id;
			int64_t now = time(NULL);

			ok = false;
			if (atomic_exchange_explicit(&last_pair, pair,
						     memory_order_relaxed) !=
				    pair ||
			    now - atomic_load_explicit(&last_log,
						       memory_order_relaxed) >=
				    60) {
				atomic_store_explicit(&last_log, now,
						      memory_order_relaxed);
				log_flag(PRIO, "%s: %pJ may not preempt %pJ: %s",
					 plugin_type, preemptor, preemptee,
					 reason);
			}
		} else if (rc < 0) {
			/* An error in the core must not stop Slurm's own rule. */
			debug("%s: preempt check failed (%d): %s", plugin_type,
			      rc, reason);
		}
	}

	if (ok && (IS_JOB_RUNNING(preemptee) || IS_JOB_SUSPENDED(preemptee)))
		gf_preempt_remember(preemptee, preemptor);
	return ok;
}

/*
 * 1b. Reclaim (design.md), for a pair the QOS rule refuses: a job of a team
 * below its entitlement may requeue a running job of no higher QOS priority
 * of a team over its own, whatever the Preempt= lists say. One call into
 * the core (a relaxed atomic load) says whether any team qualifies this
 * cycle; usually none does. The QOS priorities next (the QOS records are
 * hot), the victim's state (another line of its record) last.
 * Out of line for the same reason as _team_and_core().
 */
static __attribute__((noinline)) bool _reclaim(job_record_t *preemptee,
					       job_record_t *preemptor)
{
	gpufair_engine_t *e;

	if (!gpufair_global_reclaim_possible() ||
	    preemptee->qos_ptr->priority > preemptor->qos_ptr->priority ||
	    !(IS_JOB_RUNNING(preemptee) || IS_JOB_SUSPENDED(preemptee)) ||
	    !(e = gpufair_global_get()))
		return false;
	return _reclaim_allowed(e, preemptee, preemptor);
}

/*
 * preempt/qos's test. The jobs' priorities are read only for two jobs of
 * one QOS with PreemptMode WITHIN: they may lie on another line of the
 * records than qos_ptr, so reading them early (GCC hoists such loads) can
 * cost a cache miss per job that preempt/qos does not pay.
 */
static __attribute__((noinline)) bool _within_allows(
	const job_record_t *preemptee, const job_record_t *preemptor)
{
	return _within(preemptor->qos_ptr) &&
	       preemptor->priority > preemptee->priority;
}

static inline bool _qos_allows(const job_record_t *preemptee,
			       const job_record_t *preemptor)
{
	const slurmdb_qos_rec_t *qos_ee = preemptee->qos_ptr;
	const slurmdb_qos_rec_t *qos_or = preemptor->qos_ptr;

	if (qos_or->id == qos_ee->id)
		return _within_allows(preemptee, preemptor);
	return qos_or->preempt_bitstr &&
	       bit_test(qos_or->preempt_bitstr, qos_ee->id);
}

/*
 * The will-run test's question (see the top of this file): may preemptor
 * requeue, cancel or suspend preemptee? slurmctld asks it for every job in
 * the system each time it tries to start a job, so this is the hot path:
 * preempt/qos's test inline, everything else out of line.
 *
 * Only a running or suspended job can be preempted, and slurmctld (22.05
 * and 24.11: the only caller, _add_preemptable_job() in preempt.c) drops
 * every other candidate in job_overlap_and_running() right after asking.
 * So a pending victim gets false here once the QOS test passed, without
 * the team rule (an association lock and another line of its record) and
 * without Slurm's own exemption checks, which then do not run. The queue
 * sort's question about pending pairs is preempt_p_job_preempt_check().
 */
extern GF_EXPORT bool preempt_p_preemptable(job_record_t *preemptee,
					    job_record_t *preemptor)
{
	if (!preemptee->qos_ptr || !preemptor->qos_ptr)
		return false;
	if (!_qos_allows(preemptee, preemptor))
		return _reclaim(preemptee, preemptor);
	if (!IS_JOB_RUNNING(preemptee) && !IS_JOB_SUSPENDED(preemptee))
		return false;
	return _team_and_core(preemptee, preemptor);
}

/*
 * Queue sort (sort_job_queue2, twice in every comparison of two queued,
 * so pending, jobs): may preemptor preempt preemptee? preempt/qos's answer
 * plus the team rule, as in preempt_p_preemptable(). Reclaim and the core
 * only ever concern running victims, so a pending victim the QOS rule
 * refuses is refused without asking the engine (its state is on a line of
 * the record the sort reads anyway).
 */
extern GF_EXPORT bool preempt_p_job_preempt_check(job_queue_rec_t *preemptor,
					job_queue_rec_t *preemptee)
{
	job_record_t *ee = preemptee->job_ptr, *or = preemptor->job_ptr;

	if (!ee->qos_ptr || !or->qos_ptr)
		return false;
	if (_qos_allows(ee, or))
		return _team_and_core(ee, or);
	if (!IS_JOB_RUNNING(ee) && !IS_JOB_SUSPENDED(ee))
		return false;
	return _reclaim(ee, or);
}

extern GF_EXPORT int preempt_p_get_data(job_record_t *job_ptr,
			      slurm_preempt_data_type_t data_type, void *data)
{
	int rc = SLURM_SUCCESS;

	switch (data_type) {
	case PREEMPT_DATA_ENABLED:
		(*(bool *)data) = slurm_conf.preempt_mode != PREEMPT_MODE_OFF;
		break;
	case PREEMPT_DATA_MODE:
		(*(uint16_t *)data) = _job_preempt_mode(job_ptr);
		gf_preempt_check_suspended(job_ptr);
		break;
	case PREEMPT_DATA_PRIO:
		(*(uint32_t *)data) = _gen_job_prio(job_ptr);
		break;
	case PREEMPT_DATA_GRACE_TIME:
		/*
		 * THE REAL EVENT (requeue and cancel modes). Slurm asks for
		 * the grace time in exactly one place: _job_check_grace_
		 * internal() in src/slurmctld/preempt.c, the first step of
		 * slurm_job_preempt(), and only while the victim's
		 * preempt_time is still 0; right after this call it sets
		 * preempt_time and then signals, requeues or kills the job
		 * (immediately, or when GraceTime has run out, via
		 * job_time_limit() -> slurm_job_preempt() with preempt_time
		 * already set, which does not ask again). The will-run tests,
		 * the queue sort and the candidate sort never ask for it. So
		 * this call happens once per actual preemption, and the
		 * preemptor is the last one evaluated for this victim in the
		 * same scheduling pass (the job write lock is held from
		 * slurm_find_preemptable_jobs() to _preempt_jobs()). The
		 * (victim, start time) key makes it once even if Slurm ever
		 * asked twice. priority_p_job_end() with preempt_time set
		 * comes later and only when AccountingStorageEnforce has
		 * "limits", and without the preemptor: it is not used.
		 */
		(*(uint32_t *)data) = _get_grace_time(job_ptr);
		if (job_ptr && !job_ptr->preempt_time)
			gf_preempt_record(job_ptr, job_ptr->start_time,
					  "grace-time query");
		break;
	default:
		error("%s: unknown enum %d", __func__, data_type);
		rc = SLURM_ERROR;
		break;
	}
	return rc;
}
