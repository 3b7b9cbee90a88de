/*****************************************************************************\
 *  preempt_gpufair.c - preempt/gpufair: preempt/qos semantics plus gpufair's
 *  team rule and bait blocking, and the one place where a real preemption
 *  is reported to the core.
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
 *              via _add_preemptable_job, for EVERY job in job_list), or job
 *              READ from the queue sort. No assoc_mgr lock is held: we take
 *              assoc READ only after the cheap QOS test has passed.
 *  preempt_p_get_data()           job WRITE during scheduling; job_ptr may
 *              be NULL for PREEMPT_DATA_ENABLED.
 *
 *  Hot path: preemptable() is called for every job in the system for every
 *  job being scheduled. Its order is: QOS pointers/bitmap (a few loads, the
 *  test that rejects almost every pair), then team identity (a walk of at
 *  most a few parent pointers, no allocation), then the core (shared lock,
 *  only for pairs of one team that Slurm would preempt anyway).
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

GF_EXPORT const char plugin_name[] = "Preempt gpufair (QOS + same-team rule + bait blocking)";
GF_EXPORT const char plugin_type[] = "preempt/gpufair";
GF_EXPORT const uint32_t plugin_version = SLURM_VERSION_NUMBER;

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

/* Core view of a job; caller holds assoc READ. */
static void _core_job(gpufair_engine_t *e, const gf_preempt_conf_t *c,
		      job_record_t *job, gpufair_job_t *out)
{
	char path[GF_PATH_MAX];
	int32_t team = -1;

	if (job->assoc_ptr && gf_account_path(job->assoc_ptr, path,
					      sizeof(path)))
		team = gpufair_team_id(e, path);
	gf_job_fill(out, job, team, &c->gpus);
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

extern GF_EXPORT bool preempt_p_preemptable(job_record_t *preemptee,
				  job_record_t *preemptor);

/* The core's reclaim rule for a cross-team pair; remembers the preemptor
 * for _record like any allowed pair. Caller holds no assoc lock. */
static bool _reclaim_allowed(gpufair_engine_t *e, job_record_t *preemptee,
			     job_record_t *preemptor)
{
	assoc_mgr_lock_t assoc_read = { .assoc = READ_LOCK };
	const gf_preempt_conf_t *c = gf_preempt_conf(e);
	gpufair_job_t or_j, ee_j;
	int rc;

	if (c->any_team)
		return false; /* preempt/qos decided already */
	assoc_mgr_lock(&assoc_read);
	_core_job(e, c, preemptor, &or_j);
	_core_job(e, c, preemptee, &ee_j);
	assoc_mgr_unlock(&assoc_read);
	if (or_j.team < 0 || ee_j.team < 0 || or_j.team == ee_j.team)
		return false;
	rc = gpufair_preempt_allowed(e, &or_j, &ee_j, (int64_t)time(NULL),
				     NULL, 0);
	if (rc != GPUFAIR_PREEMPT_RECLAIM)
		return false;
	atomic_store_explicit(&last_preemptor[preemptee->job_id % GF_SLOTS],
			      ((uint64_t)preemptee->job_id << 32) |
				      preemptor->job_id,
			      memory_order_relaxed);
	return true;
}

/* Queue sort: may preemptor preempt preemptee (both pending)? */
extern GF_EXPORT bool preempt_p_job_preempt_check(job_queue_rec_t *preemptor,
					job_queue_rec_t *preemptee)
{
	return preempt_p_preemptable(preemptee->job_ptr, preemptor->job_ptr);
}

extern GF_EXPORT bool preempt_p_preemptable(job_record_t *preemptee,
				  job_record_t *preemptor)
{
	slurmdb_qos_rec_t *qos_ee = preemptee->qos_ptr;
	slurmdb_qos_rec_t *qos_or = preemptor->qos_ptr;
	gpufair_engine_t *e;
	const gf_preempt_conf_t *c;
	assoc_mgr_lock_t assoc_read = { .assoc = READ_LOCK };
	bool same_team, ok = true, qos_ok;

	/* 1. preempt/qos, unchanged: the cheapest test rejects most pairs. */
	if (!qos_ee || !qos_or)
		return false;
	if (qos_or->id == qos_ee->id) {
		qos_ok = _within(qos_or) &&
			 preemptor->priority > preemptee->priority;
	} else {
		qos_ok = qos_or->preempt_bitstr &&
			 bit_test(qos_or->preempt_bitstr, qos_ee->id);
	}

	e = gpufair_global_get();
	if (!qos_ok) {
		/* 1b. Reclaim (design.md): a job of a team below its
		 * entitlement may requeue a running job of no higher QOS
		 * priority of a team over its own, whatever the Preempt=
		 * lists say. One relaxed atomic load says whether any team
		 * qualifies this cycle; usually none does. */
		if (!e || !gpufair_reclaim_possible(e) ||
		    !(IS_JOB_RUNNING(preemptee) ||
		      IS_JOB_SUSPENDED(preemptee)) ||
		    qos_ee->priority > qos_or->priority)
			return false;
		return _reclaim_allowed(e, preemptee, preemptor);
	}
	c = gf_preempt_conf(e);

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
		_core_job(e, c, preemptor, &or_j);
		_core_job(e, c, preemptee, &ee_j);
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
		atomic_store_explicit(
			&last_preemptor[preemptee->job_id % GF_SLOTS],
			((uint64_t)preemptee->job_id << 32) |
				preemptor->job_id,
			memory_order_relaxed);
	return ok;
}

/*
 * Report one real preemption of victim to the core, once per key.
 * Called under the job WRITE lock.
 */
static void _record(job_record_t *victim, time_t key, const char *how)
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
	_core_job(e, c, preemptor, &or_j);
	_core_job(e, c, victim, &ee_j);
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
static void _check_suspended(job_record_t *job)
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
		_record(job, job->preempt_time, "suspend");
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
		_check_suspended(job_ptr);
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
			_record(job_ptr, job_ptr->start_time, "grace-time query");
		break;
	default:
		error("%s: unknown enum %d", __func__, data_type);
		rc = SLURM_ERROR;
		break;
	}
	return rc;
}
