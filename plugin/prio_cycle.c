/*****************************************************************************\
 *  prio_cycle.c - one cycle of priority/gpufair, every PriorityCalcPeriod
 *  (or calc_period) in the "gpufair" thread, as multifactor's "decay".
 *
 *  In order: refresh GPU TRES, billing weights and teams; decay the usage
 *  Slurm's limits read (prio_usage.c); let the site factor plugin update
 *  its factors; observe the records the job table names (running jobs
 *  charged, to gpufair's ledger and to the limits' usage; ended ones
 *  reported; pending ones gathered, with one entry per partition for a job
 *  in several); end the cycle in the core; collect the team reports;
 *  re-prioritise the pending jobs (and with CALCULATE_RUNNING the running
 *  ones) in one call; write usage into the associations for sshare. Then,
 *  outside every lock, save the state and the limits' decay clock.
 *
 *  Locks: { job WRITE, part READ, fed READ } (the site factor plugin's
 *  update runs under these alone, as in multifactor's decay thread) then
 *  { assoc WRITE, qos WRITE, tres READ } (slurmctld locks before assoc_mgr
 *  locks, as everywhere; QOS WRITE for the QOS usage, as multifactor's
 *  decay thread), held from the refresh to the last write; map_lock is
 *  taken for writing only to publish a rebuilt map or the reports.
\*****************************************************************************/

#include <string.h>

#include "src/common/log.h"
#include "src/slurmctld/locks.h"

#include "priority_gpufair.h"

/*
 * The cycle's per-job buffers, kept between cycles, sized by the job table
 * for every record it walks (only the cycle thread touches them):
 *   pend_job/pend_slot/pend_in/pend_old/pend_prio: the priorities to
 *              recompute: the job, which of its priorities (-1 = the job's
 *              own, k = entry k of its priority array), the inputs, old
 *              and new priority (parallel arrays, so the inputs go to the
 *              core in one call; they are needed after the cycle's end,
 *              which sets the team factors); a job in several partitions
 *              has more than one entry, so these grow past the table's
 *              size;
 * and one that is not per job:
 *   wait_jobs: the pending jobs that could run now, for the queue view and
 *              the bait detector, handed to the core GF_WAIT_CHUNK at a
 *              time during the walk (what the core keeps of them is its
 *              queue view, 24 bytes a job).
 */
static job_record_t **pend_job;
static int32_t *pend_slot;
static gpufair_prio_input_t *pend_in;
static uint32_t *pend_old, *pend_prio;
static size_t pend_len, pend_cap;
#define GF_WAIT_CHUNK 4096
static gpufair_job_t *wait_jobs;
static size_t wait_len;

static void _pend_resize(size_t n)
{
	GFP_RESIZE(pend_job, pend_cap, n);
	GFP_RESIZE(pend_slot, pend_cap, n);
	GFP_RESIZE(pend_in, pend_cap, n);
	GFP_RESIZE(pend_old, pend_cap, n);
	GFP_RESIZE(pend_prio, pend_cap, n);
	pend_cap = n;
}

/* Room for n entries (the job table's size): the arrays grow, or shrink
 * when more than twice too big (gfp_array_fits); never below what this
 * cycle has pushed. */
extern void gfp_cycle_reserve(size_t n)
{
	n = MAX(n, pend_len); /* may be called during the walk */
	if (!gfp_array_fits(pend_cap, n))
		_pend_resize(n ? gfp_array_room(n) : 0);
	if (!wait_jobs)
		wait_jobs = xcalloc(GF_WAIT_CHUNK, sizeof(*wait_jobs));
}

extern void gfp_cycle_free(void)
{
	_pend_resize(0);
	xfree(wait_jobs);
	pend_len = wait_len = pend_cap = 0;
}

/* The next entry of the pend_* arrays, for a priority of job (slot -1: its
 * own, else entry slot of its priority array) now old_prio. The caller
 * fills pend_in[] at the index returned (the arrays may have moved). */
static size_t _pend_push(job_record_t *job, int32_t slot, uint32_t old_prio)
{
	if (pend_len == pend_cap)
		_pend_resize(gfp_array_room(pend_cap));
	pend_job[pend_len] = job;
	pend_slot[pend_len] = slot;
	pend_old[pend_len] = old_prio;
	return pend_len++;
}

/* One entry of a job's priority array (multifactor recomputes them each
 * cycle with the job's own priority). */
static void _push_slot(job_record_t *job, part_record_t *part,
		       slurmdb_qos_rec_t *qos, int slot, void *arg)
{
	const int32_t *team = arg;
	size_t i = _pend_push(job, slot, gf_prio_array(job)[slot]);

	gfp_prio_input(&pend_in[i], job, *team, part, qos, true, NULL);
}

/* The waiting jobs gathered so far, to the core. */
static void _flush_waiting(gfp_cycle_t *ctx)
{
	int64_t seen;

	if (!wait_len)
		return;
	seen = gpufair_observe_pending_many(gfp.engine, wait_jobs, wait_len);
	if (seen > 0)
		ctx->pending += (int)seen;
	wait_len = 0;
}

/* What the record points to; by now the record itself is in cache. */
extern void gfp_prefetch_refs(const job_record_t *job)
{
	if (job->details) {
		__builtin_prefetch(&job->details->accrue_time);
		__builtin_prefetch(&job->details->begin_time);
		__builtin_prefetch(&job->details->nice);
		if (gfp.flags & PRIORITY_FLAGS_ACCRUE_ALWAYS)
			__builtin_prefetch(&job->details->submit_time);
	}
	if (job->tres_req_cnt && gfp.gpus.gpu_pos >= 0) {
		__builtin_prefetch(&job->tres_req_cnt[gfp.gpus.gpu_pos]);
		for (int i = 0; i < gfp.gpus.ntyped; i++)
			__builtin_prefetch(&job->tres_req_cnt[gfp.gpus.typed_pos[i]]);
	}
}

/* A run's record as the ledger charges it: charged to its user association
 * too (fair share inside the team), and a resumed job from its resume on.
 * Only for a run (running, or ended with its start and end those of the
 * run: also a job being requeued, pending again), so its start is real.
 * Caller holds assoc READ and map_lock READ (or is the cycle). */
extern void gfp_fill_charged(gpufair_job_t *j, job_record_t *job,
			     int32_t team, int rank_by)
{
	gf_job_fill(j, job, team, &gfp.gpus, rank_by);
	j->assoc = gfp_job_assoc_locked(job, true);
	j->start_time = (int64_t)job->start_time;
	if (job->suspend_time > job->start_time)
		j->start_time = (int64_t)job->suspend_time;
}

/* Pending, running or suspended: looked at again next cycle. */
extern bool gfp_observe_job(job_record_t *job, gfp_cycle_t *ctx)
{
	bool keep = !IS_JOB_FINISHED(job) && !IS_JOB_REVOKED(job);
	gpufair_job_t j;

	if (IS_JOB_REVOKED(job))
		return false;
	gfp_usage_job_locked(job, ctx->now);
	/* A job that stopped since the last cycle (finished, cancelled,
	 * preempted and requeued): charge it up to its end. Unknown ids are
	 * ignored by the core, so no bookkeeping is needed here. A finished
	 * one goes with its record: if it started and stopped between two
	 * cycles, no cycle saw it running, and the core charges its whole run
	 * (once, however often it is reported). A pending one (requeued) only
	 * by id: a pending job's start and end may be backfill's plan. */
	if (job->end_time && job->end_time >= ctx->since &&
	    !IS_JOB_RUNNING(job) && !IS_JOB_SUSPENDED(job) &&
	    job->start_time && job->end_time >= job->start_time) {
		time_t end = MIN(job->end_time, ctx->now);
		int32_t team = IS_JOB_PENDING(job) ? -1 :
			       gfp_job_team_locked(job, true);

		if (team >= 0) {
			gfp_fill_charged(&j, job, team, ctx->rank_by);
			gpufair_job_finished(gfp.engine, &j, (int64_t)end);
		} else {
			gpufair_job_ended(gfp.engine, job->job_id,
					  (int64_t)end);
		}
		ctx->ended++;
	}

	if (IS_JOB_RUNNING(job)) {
		int32_t team = gfp_job_team_locked(job, true);

		/* CALCULATE_RUNNING: running jobs are re-prioritised too, as
		 * multifactor's decay_apply_weighted_factors does. */
		if ((ctx->flags & PRIORITY_FLAGS_CALCULATE_RUNNING) &&
		    job->priority && !job->direct_set_prio) {
			size_t i = _pend_push(job, -1, job->priority);

			gfp_prio_input(&pend_in[i], job, team, NULL, NULL, true,
				       NULL);
		}
		if (team < 0)
			return keep; /* no account: nothing to charge */
		/* Its nodes still booting (power saving, cloud nodes): not
		 * charged yet, as multifactor's decay_apply_new_usage skips
		 * it. Slurm moves its start to the end of the boot
		 * (job_config_fini); the first cycle after charges from there. */
		if (IS_JOB_POWER_UP_NODE(job))
			return keep;
		gfp_fill_charged(&j, job, team, ctx->rank_by);
		if (gpufair_observe_running(gfp.engine, &j) == GPUFAIR_OK)
			ctx->running++;
	} else if (IS_JOB_SUSPENDED(job) && job->preempt_time) {
		int32_t team = gfp_job_team_locked(job, true);

		if (team >= 0)
			gfp_gang_suspension(job, team, ctx->rank_by);
	} else if (IS_JOB_PENDING(job) && job->priority) {
		/* 0 = held: neither waiting nor re-prioritised. Only the
		 * fields the policy needs are read (each line is a cache
		 * miss). */
		int32_t team = gfp_job_team_locked(job, true);
		gpufair_prio_input_t in;
		int n;

		gfp_prio_input(&in, job, team, NULL, NULL, true, NULL);
		/* direct_set_prio = set by an admin: leave it alone. */
		if (!job->direct_set_prio) {
			size_t i = _pend_push(job, -1, job->priority);

			pend_in[i] = in;
			if (gfp_prio_array_prepare(job, &n))
				gfp_for_each_slot(job, _push_slot, &team);
		}
		/* Only jobs that could run now are "waiting" for the bait
		 * judgement: not before their begin time. The core needs
		 * the team, rank and waiting-since time, which falls back to
		 * the submit time (gf_job_eligible). */
		if (in.team < 0 ||
		    (job->details && job->details->begin_time > ctx->now))
			return keep;
		memset(&wait_jobs[wait_len], 0, sizeof(wait_jobs[0]));
		wait_jobs[wait_len].team = in.team;
		wait_jobs[wait_len].rank = gf_job_rank(job, ctx->rank_by);
		wait_jobs[wait_len].gpus = in.gpus;
		wait_jobs[wait_len].eligible_time = gf_job_eligible(
			job, ctx->flags & PRIORITY_FLAGS_ACCRUE_ALWAYS);
		/* A queue jump's price counts only jobs that could run now:
		 * waiting for GPUs or for higher-priority jobs, or not yet
		 * tried. Dependencies, limits, reservations and holds are
		 * other reasons, and such jobs lose nothing to a jump. */
		wait_jobs[wait_len].priority = job->priority;
		wait_jobs[wait_len].held_back =
			!(job->state_reason == WAIT_NO_REASON ||
			  job->state_reason == WAIT_PRIORITY ||
			  job->state_reason == WAIT_RESOURCES);
		if (++wait_len == GF_WAIT_CHUNK)
			_flush_waiting(ctx);
	}
	return keep;
}

/* New priorities from the cycle's team factors, in one call to the core;
 * only changed ones are written (with INCR_ONLY only raised ones). */
static void _reprioritise_pending(gfp_cycle_t *ctx)
{
	if (gpufair_priorities(gfp.engine, pend_in, pend_len, (int64_t)ctx->now,
			       pend_prio) != GPUFAIR_OK) {
		error("%s: re-prioritising %zu pending jobs failed; they keep their priorities",
		      plugin_type, pend_len);
		pend_len = 0;
		return;
	}
	for (size_t i = 0; i < pend_len; i++) {
		uint32_t prio = pend_prio[i] ? pend_prio[i] : 1;

		/* The walk read the old priority, under the same job lock:
		 * a store without a load, which does not stall. */
		if (!gfp_prio_replaces(pend_old[i], prio, ctx->flags))
			continue;
		if (pend_slot[i] < 0) {
			pend_job[i]->priority = prio;
			ctx->reprioritised++;
		} else {
			gf_prio_array(pend_job[i])[pend_slot[i]] = prio;
		}
	}
	pend_len = 0;
}

/* The teams' and the associations' reports, for sshare and the log. */
static void _collect_reports(time_t now)
{
	int32_t n = gpufair_team_count(gfp.engine);
	int32_t na = gpufair_assoc_count(gfp.engine);
	gpufair_team_report_t *r = n > 0 ? xcalloc(n, sizeof(*r)) : NULL;
	gpufair_assoc_report_t *ar = na > 0 ? xcalloc(na, sizeof(*ar)) : NULL;
	double total = 0;

	for (int32_t t = 0; t < n; t++) {
		gpufair_team_report(gfp.engine, t, (int64_t)now, &r[t]);
		total += r[t].usage_gpu_s;
	}
	if (na > 0 &&
	    gpufair_assoc_reports(gfp.engine, (int64_t)now, ar, (size_t)na) < 0)
		memset(ar, 0, (size_t)na * sizeof(*ar));
	pthread_rwlock_wrlock(&gfp.map_lock);
	xfree(gfp.reports);
	xfree(gfp.assoc_reports);
	gfp.reports = r;
	gfp.nreports = n;
	gfp.assoc_reports = ar;
	gfp.nassoc_reports = na;
	gfp.usage_total = total;
	pthread_rwlock_unlock(&gfp.map_lock);
	for (int32_t t = 0; t < n; t++)
		log_flag(PRIO, "%s: team %s usage=%.1f GPU-h shares=%.3f fs=%.4f penalty=%.3f eff_fs=%.4f bait=%u in_team_preemptions=%u",
			 plugin_type, r[t].name, r[t].usage_gpu_s / 3600.0,
			 r[t].shares_norm, r[t].fairshare, r[t].penalty,
			 r[t].effective_fairshare, r[t].bait_detections,
			 r[t].in_team_preemptions);
}

extern void gfp_cycle(time_t now)
{
	/* fed READ: get_next_job_id() asserts it. */
	slurmctld_lock_t job_write_lock = {
		.job = WRITE_LOCK, .part = READ_LOCK, .fed = READ_LOCK };
	assoc_mgr_lock_t locks = {
		.assoc = WRITE_LOCK, .qos = WRITE_LOCK, .tres = READ_LOCK };
	gfp_cycle_t ctx = {
		.now = now,
		.since = gfp.prev_cycle,
		.flags = __atomic_load_n(&gfp.flags, __ATOMIC_RELAXED),
		.rank_by = __atomic_load_n(&gfp.rank_by, __ATOMIC_RELAXED),
	};
	struct timespec t0, t1, t2;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	gpufair_cycle_begin(gfp.engine, (int64_t)now);

	lock_slurmctld(job_write_lock);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* As multifactor's decay thread: under the job WRITE lock and no
	 * assoc_mgr lock (a site factor plugin may take those itself). */
	site_factor_g_update();
	assoc_mgr_lock(&locks);
	gfp_refresh_gpus_locked();
	gfp_refresh_teams_locked();
	if (ctx.rank_by == GPUFAIR_PREEMPT_BY_QOS)
		gf_qos_ranks_refresh(); /* else ranks are partition tiers */
	gfp_usage_begin_locked(now);
	pend_len = 0;
	wait_len = 0;
	gfp_table_walk(&ctx);
	gfp_usage_clock_end_locked(now);
	_flush_waiting(&ctx);
	gpufair_cycle_end(gfp.engine, (int64_t)now);
	_collect_reports(now);
	_reprioritise_pending(&ctx);
	gfp_write_assoc_usage_locked();
	assoc_mgr_unlock(&locks);
	if (ctx.reprioritised && &last_job_update)
		last_job_update = now;
	/* Under the job lock: sprio recomputes factors at this time. */
	gfp.prev_cycle = now;
	unlock_slurmctld(job_write_lock);

	clock_gettime(CLOCK_MONOTONIC, &t2);
	log_flag(PRIO, "%s: cycle (%s): %d running, %d pending, %d ended, %d re-prioritised, %d jobs tracked, %d teams; %.3f ms under locks (after %.3f ms waiting for them)",
		 plugin_type, ctx.full_walk ? "job_list" : "tracked jobs",
		 ctx.running, ctx.pending, ctx.ended, ctx.reprioritised,
		 ctx.tracked, gpufair_team_count(gfp.engine),
		 (t2.tv_sec - t1.tv_sec) * 1e3 + (t2.tv_nsec - t1.tv_nsec) / 1e6,
		 (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);

	/* Disk I/O outside every slurmctld lock. */
	gfp_save_state();
	gfp_usage_clock_save();
}
