/*****************************************************************************\
 *  prio_usage.c - the usage Slurm's limits are enforced from, charged per
 *  job as priority/multifactor's "decay" thread charges it.
 *
 *  acct_policy.c enforces GrpTRESMins (association and QOS), GrpWall,
 *  GrpTRESRunMins, the QOS's MaxTRESRunMinsPerAccount/PerUser and
 *  AccountingStorageEnforce=safe from counters the priority plugin keeps.
 *  Every cycle, each job not pending (nor finished or completing) is
 *  charged to its QOS, its partition's QOS when another, and its
 *  association and every parent up to root; with r = the seconds it ran
 *  since the last cycle, d the decay per second and f its QOS UsageFactor
 *  (prio_usage_clock.c, which also decays and resets all of it):
 *
 *    usage_tres_raw[i] += r d^r f tres[i]      (only with enforce=limits)
 *    grp_used_wall     += r d^r f              (NoDecay QOS: r f)
 *    a QOS's usage_raw += r d^r f billing
 *    grp_used_tres_run_secs[i], and from 24.05 a QOS's per account and per
 *      user ones, -= the part of acct_policy_job_begin's reservation (time
 *      limit x tres[i] x f) those seconds used up (only with limits).
 *
 *  At a job's end (priority_p_job_end, from acct_policy_job_fini) the rest
 *  of the period is charged, the rest of the reservation given back, and
 *  end_time_exp set to NO_VAL, acct_policy's mark that this was done.
 *  After a restart, and after a 22.05 `scontrol reconfigure` (which
 *  rebuilds the counters), acct_policy has reserved each running job's
 *  whole time limit again: the part it ran before the clock is taken back.
 *
 *  Not charged here: an association's usage_raw, which is gpufair's own
 *  (prio_sshare.c: its own decayed GPU-seconds, sshare's RawUsage). No
 *  limit reads it: acct_policy reads usage_tres_raw (sshare's GrpTRESRaw),
 *  grp_used_tres_run_secs (TRESRunMins) and grp_used_wall.
 *
 *  Locks (the assoc_mgr locks multifactor takes for the same work):
 *  gfp_usage_begin_locked(), gfp_usage_job_locked(): the cycle, holding
 *      { job WRITE, part READ, fed READ } and { assoc WRITE, qos WRITE,
 *      tres READ }.
 *  gfp_usage_job_end(): priority_p_job_end(), whose caller holds the job
 *      WRITE lock; we take { assoc WRITE, qos WRITE, tres READ }.
 *  gfp_usage_reconfig(): priority_p_reconfig(); with assoc_clear (22.05
 *      only, no lock held) we take { job READ } and those assoc_mgr locks.
\*****************************************************************************/

#include <math.h>
#include <stdio.h>

#include "src/common/log.h"
#include "src/slurmctld/locks.h"

#include "priority_gpufair.h"

static bool _enforce_limits(void)
{
	return &accounting_enforce &&
	       (accounting_enforce & ACCOUNTING_ENFORCE_LIMITS);
}

/* ---------------------------------------------------------------------- */
/* One job's charge                                                        */

/* What one job adds to each record it is charged to; usage arrays are NULL
 * when only reservations are taken back (after a restart). */
typedef struct {
	job_record_t *job;
	double wall, wall_flat;        /* grp_used_wall: decayed, NoDecay */
	double billing, billing_flat;  /* a QOS's usage_raw */
	long double *tres, *tres_flat; /* usage_tres_raw[] */
	uint64_t *run;                 /* grp_used_tres_run_secs[] to take */
} charge_t;

/* Take what ran out of a reservation; an underflow is logged, as
 * multifactor does, and clamps at 0. */
static void _take(uint64_t *secs, const uint64_t *run, const charge_t *c,
		  const char *what, const char *name)
{
	for (int i = 0; secs && i < slurmctld_tres_cnt; i++) {
		if (i == TRES_ARRAY_ENERGY)
			continue;
		if (run[i] > secs[i]) {
			error("%s: %pJ: %s %s TRES %s run seconds underflow: %"PRIu64" to take, %"PRIu64" left",
			      plugin_type, c->job, what, name,
			      assoc_mgr_tres_name_array[i], run[i], secs[i]);
			secs[i] = 0;
		} else {
			secs[i] -= run[i];
		}
	}
}

static void _add_tres(long double *usage, const long double *add)
{
	for (int i = 0; usage && add && i < slurmctld_tres_cnt; i++)
		if (i != TRES_ARRAY_ENERGY)
			usage[i] += add[i];
}

static void _charge_qos(slurmdb_qos_rec_t *q, const charge_t *c)
{
	bool flat = q->flags & QOS_FLAG_NO_DECAY;
	uint64_t *acct = NULL, *user = NULL;

	if (!q->usage)
		return;
	q->usage->grp_used_wall += flat ? c->wall_flat : c->wall;
	q->usage->usage_raw += flat ? c->billing_flat : c->billing;
	if (!_enforce_limits())
		return;
	_add_tres(q->usage->usage_tres_raw, flat ? c->tres_flat : c->tres);
	_take(q->usage->grp_used_tres_run_secs, c->run, c, "QOS", q->name);
	if (c->job->assoc_ptr)
		gf_qos_used_run_secs(q, c->job->assoc_ptr->acct,
				     c->job->user_id, &acct, &user);
	_take(acct, c->run, c, "QOS per account", q->name);
	_take(user, c->run, c, "QOS per user", q->name);
}

/* The job's QOS, its partition's QOS when another, its association and
 * every parent up to root. */
static void _charge(const charge_t *c)
{
	job_record_t *job = c->job;
	bool limits = _enforce_limits();

	if (job->qos_ptr)
		_charge_qos(job->qos_ptr, c);
	if (job->part_ptr && job->part_ptr->qos_ptr &&
	    job->part_ptr->qos_ptr != job->qos_ptr)
		_charge_qos(job->part_ptr->qos_ptr, c);
	for (slurmdb_assoc_rec_t *a = job->assoc_ptr; a && a->usage;
	     a = a->usage->parent_assoc_ptr) {
		a->usage->grp_used_wall += c->wall;
		if (!limits)
			continue;
		_add_tres(a->usage->usage_tres_raw, c->tres);
		_take(a->usage->grp_used_tres_run_secs, c->run, c, "account",
		      a->acct);
	}
}

/* The QOS UsageFactor, as multifactor reads it (a negative one is unset). */
static double _usage_factor(const job_record_t *job)
{
	if (job->qos_ptr && job->qos_ptr->usage_factor >= 0)
		return job->qos_ptr->usage_factor;
	return 1.0;
}

/* Charge `job` for [from, to] (multifactor's _apply_new_usage): from is
 * the clock, moved to the job's start; at its end, to stops at its end
 * time and the reservation's rest is given back. */
static void _apply(job_record_t *job, time_t from, time_t to, bool at_end)
{
	int n = slurmctld_tres_cnt;
	uint64_t run[MAX(n, 1)];
	long double tres[MAX(n, 1)], flat[MAX(n, 1)];
	uint64_t limit_end, reserved = 0;
	double secs, decayed, f = _usage_factor(job), billing;
	charge_t c = { .job = job, .tres = tres, .tres_flat = flat, .run = run };

	if (n <= 0 || job->end_time_exp == (time_t)NO_VAL)
		return; /* (NO_VAL: its end was charged already) */
	if (job->start_time > from)
		from = job->start_time;
	if (at_end && job->end_time && to > job->end_time)
		to = job->end_time;
	secs = MAX(0.0, difftime(to, from));

	/* The part of the reservation (time limit from the start) these
	 * seconds used up; at the end, all that is left of it. */
	limit_end = (uint64_t)job->start_time + (uint64_t)job->time_limit * 60;
	if ((uint64_t)from >= limit_end)
		reserved = 0;
	else if (IS_JOB_FINISHED(job) || IS_JOB_COMPLETING(job) ||
		 IS_JOB_RESIZING(job))
		reserved = limit_end - (uint64_t)from;
	else if (to > job->end_time_exp)
		reserved = (uint64_t)MAX(0.0, difftime(job->end_time_exp, from));
	else
		reserved = (uint64_t)secs;
	if (at_end)
		job->end_time_exp = (time_t)NO_VAL;

	/* Multifactor's arithmetic: the period's seconds decayed as if all at
	 * its start, times billing or TRES counts, times the UsageFactor. */
	decayed = secs * pow(gfp_uclock.decay, secs);
	billing = calc_job_billable_tres(job, from, true);
	reserved = (uint64_t)(reserved * f);
	c.wall = decayed * f;
	c.wall_flat = secs * f;
	c.billing = c.wall * billing;
	c.billing_flat = c.wall_flat * billing;
	for (int i = 0; i < n; i++) {
		uint64_t cnt = job->tres_alloc_cnt ? job->tres_alloc_cnt[i] : 0;

		if (cnt == NO_CONSUME_VAL64)
			cnt = 0;
		run[i] = reserved * cnt;
		tres[i] = (long double)c.wall * cnt;
		flat[i] = (long double)c.wall_flat * cnt;
	}
	log_flag(PRIO, "%s: %pJ limits' usage: %.0f s (%.1f decayed) x UsageFactor %.2f, billing %.1f, %"PRIu64" reserved s taken",
		 plugin_type, job, secs, decayed, f, billing, reserved);
	_charge(&c);
}

/* After a restart or a 22.05 reconfigure, acct_policy reserved the whole
 * time limit of every running job again: take back what it ran up to the
 * clock, which the cycles since charged already. */
static int _restore_job(void *x, void *arg)
{
	job_record_t *job = x;
	int n = slurmctld_tres_cnt;
	uint64_t run[MAX(n, 1)];
	charge_t c = { .job = job, .run = run };
	double secs;

	(void)arg;
	if (n <= 0 || job->end_time_exp == (time_t)NO_VAL ||
	    !IS_JOB_RUNNING(job) ||
	    job->start_time > gfp_uclock.last_ran || !job->tres_alloc_cnt)
		return 0;
	secs = _usage_factor(job) * difftime(gfp_uclock.last_ran, job->start_time);
	for (int i = 0; i < n; i++)
		run[i] = (job->tres_alloc_cnt[i] == NO_CONSUME_VAL64) ?
			0 : (uint64_t)(job->tres_alloc_cnt[i] * secs);
	_charge(&c);
	return 0;
}

static void _restore_locked(void)
{
	if (gfp_uclock.last_ran && job_list && _enforce_limits()) {
		log_flag(PRIO, "%s: limits: taking back the run seconds reserved again before %ld",
			 plugin_type, (long)gfp_uclock.last_ran);
		list_for_each(job_list, _restore_job, NULL);
	}
}

/* ---------------------------------------------------------------------- */
/* The cycle's duties, priority_p_job_end(), priority_p_reconfig()         */

extern void gfp_usage_begin_locked(time_t now)
{
	if (gfp_uclock.restore) {
		_restore_locked();
		gfp_uclock.restore = false;
	}
	gfp_usage_clock_begin_locked(now);
}

extern void gfp_usage_job_locked(job_record_t *job, time_t now)
{
	/* The cheap test first: most records are pending jobs. */
	if (!gfp_uclock.charge ||
	    (IS_JOB_PENDING(job) &&
	     !(gfp.flags & PRIORITY_FLAGS_CALCULATE_RUNNING)))
		return;
	if (IS_JOB_FINISHED(job) || IS_JOB_COMPLETING(job) ||
	    IS_JOB_POWER_UP_NODE(job) || !job->start_time || !job->assoc_ptr)
		return;
	_apply(job, gfp_uclock.last_ran, now, false);
}

extern void gfp_usage_job_end(job_record_t *job)
{
	assoc_mgr_lock_t locks = {
		.assoc = WRITE_LOCK, .qos = WRITE_LOCK, .tres = READ_LOCK };

	assoc_mgr_lock(&locks);
	_apply(job, gfp_uclock.last_ran, time(NULL), true);
	assoc_mgr_unlock(&locks);
}

extern void gfp_usage_reconfig(bool assoc_clear)
{
	slurmctld_lock_t job_read_lock = { .job = READ_LOCK };
	assoc_mgr_lock_t locks = {
		.assoc = WRITE_LOCK, .qos = WRITE_LOCK, .tres = READ_LOCK };

	gfp_usage_clock_reconfigure();
	if (!assoc_clear)
		return;
	lock_slurmctld(job_read_lock);
	assoc_mgr_lock(&locks);
	_restore_locked();
	assoc_mgr_unlock(&locks);
	unlock_slurmctld(job_read_lock);
}
