/*****************************************************************************\
 *  priority_gpufair.c - priority/gpufair: fair share on decayed GPU-hours
 *  per team, with queue-jump prices, reclaim and the bait penalty, computed
 *  by the gpufair core.
 *****************************************************************************
 *  The shims only translate: Slurm's records and slurm.conf go in, the core
 *  (libgpufair.so, include/gpufair/c_api.h) decides, and priorities, sprio
 *  factors and sshare usage come back out. No policy is written here. This
 *  file holds the entry points and the thread; priority_gpufair.h lists the
 *  other files, slurm_compat.h the differences between Slurm releases.
 *
 *  Locks each entry point runs under (checked in Slurm 22.05 and 24.11):
 *
 *  init()      slurmctld main thread at start-up (controller.c), or lazily
 *              inside read_slurm_conf() at a restart, when Slurm may
 *              already hold the job/part WRITE locks (24.11: the config
 *              WRITE lock): so init() takes no slurmctld or assoc_mgr lock
 *              at all (taking one deadlocked, EDEADLK); it loads the state.
 *              Also loaded by sshare/sprio (outside slurmctld): then we do
 *              nothing at all.
 *  priority_p_thread_start()  (23.11+) after init and read_slurm_conf; no
 *              lock. Starts our thread (before 23.11 init does), whose
 *              first cycle reads partitions, billing weights and GPU TRES.
 *  fini()      shutdown; no lock held. Stops our thread, saves the state.
 *  init, priority_p_set, priority_p_reconfig, fini and the cycle drive the
 *  site factor plugin (PrioritySiteFactorPlugin) where multifactor does.
 *  priority_p_set()           job WRITE lock held (job submit / requeue
 *              paths of job_mgr.c). We take assoc+qos READ, like multifactor,
 *              then map_lock READ, and noticed_mutex (prio_job_table.c).
 *  priority_p_reconfig()      22.05: sometimes the config WRITE lock (all
 *              of conf/job/node/part), sometimes none; 24.11: the config
 *              WRITE lock. We take reconf_mutex (prio_conf.c), and assoc
 *              WRITE when the fair-share algorithm changed (prio_teams.c).
 *  priority_p_recover()       (23.02+) job WRITE lock, after slurmctld
 *              recovered its jobs: we only wake the thread.
 *  priority_p_job_end()       job WRITE lock held (acct_policy_job_fini,
 *              also for a job being resized, which keeps running);
 *              we take assoc READ and map_lock READ for a preemption on
 *              borrowed reservation time (prio_borrowed.c) and for the
 *              team of the run that ended (_report_end), each released,
 *              then { assoc, qos WRITE, tres READ } (prio_usage.c).
 *  priority_p_set_assoc_usage(), priority_p_calc_fs_factor(),
 *  priority_p_get_priority_factors_list(): prio_report.c.
 *  Our thread "gpufair": prio_cycle.c.
\*****************************************************************************/

#define _GNU_SOURCE
#include <pthread.h>
#include <time.h>

#include "slurm/slurm_errno.h"

#include "src/common/log.h"
#include "src/common/run_in_daemon.h"

#include "priority_gpufair.h"

GF_EXPORT const char plugin_name[] = "Priority gpufair plugin (GPU fair share, bait penalty)";
GF_EXPORT const char plugin_type[] = "priority/gpufair";
GF_EXPORT const uint32_t plugin_version = SLURM_VERSION_NUMBER;

gfp_t gfp = GFP_INITIALIZER;

/* ---------------------------------------------------------------------- */
/* The thread                                                               */

static void *_cycle_thread(void *arg)
{
	(void)arg;
	/* Named like multifactor's "decay" so it shows in ps -L and top -H. */
	pthread_setname_np(pthread_self(), "gpufair");

	slurm_mutex_lock(&gfp.cycle_mutex);
	while (!gfp.shutdown) {
		struct timespec until;
		int64_t period;

		slurm_mutex_unlock(&gfp.cycle_mutex);
		gfp_cycle(time(NULL));
		slurm_mutex_lock(&gfp.cycle_mutex);

		period = gpufair_calc_period(gfp.engine);
		if (period < 1)
			period = 1;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += period;
		if (!gfp.shutdown)
			pthread_cond_timedwait(&gfp.cycle_cond,
					       &gfp.cycle_mutex, &until);
	}
	slurm_mutex_unlock(&gfp.cycle_mutex);
	return NULL;
}

static void _start_thread(void)
{
	slurm_mutex_lock(&gfp.cycle_mutex);
	if (gfp.engine && !gfp.thread_running) {
		gfp.shutdown = false;
		slurm_thread_create(&gfp.thread, _cycle_thread, NULL);
		gfp.thread_running = true;
	}
	slurm_mutex_unlock(&gfp.cycle_mutex);
}

/* Run a cycle now rather than at the end of the period. */
static void _wake_thread(void)
{
	slurm_mutex_lock(&gfp.cycle_mutex);
	pthread_cond_broadcast(&gfp.cycle_cond);
	slurm_mutex_unlock(&gfp.cycle_mutex);
}

/* ---------------------------------------------------------------------- */
/* Plugin entry points (dispatch-table order of Slurm's priority.c)        */

/*
 * init takes no slurmctld or assoc_mgr lock. slurmctld may load this plugin
 * lazily from inside read_slurm_conf(), which holds every slurmctld lock for
 * writing (at restart, _sync_nodes_to_comp_job() -> deallocate_nodes() ->
 * acct_policy_job_fini() -> priority_g_job_end() -> priority_g_init()); a
 * lock_slurmctld() here then fails with EDEADLK and slurmctld dies. So the
 * partition billing weights and the GPU TRES positions are read by the cycle
 * thread, whose first cycle runs at once (gfp_refresh_gpus_locked).
 */
extern GF_EXPORT int init(void)
{
	char err[4096];

	/* sshare / sprio load us too: nothing to set up there, and above all
	 * no state file to touch. */
	if (!running_in_slurmctld()) {
		debug("%s loaded outside slurmctld", plugin_type);
		return SLURM_SUCCESS;
	}

	/* Refused multifactor keys and bad values stop us here. */
	gfp.engine = gfp_engine_from_conf(err, sizeof(err));
	if (!gfp.engine) {
		error("%s: invalid configuration (PriorityParameters=%s): %s",
		      plugin_type,
		      slurm_conf.priority_params ? slurm_conf.priority_params
						 : "",
		      err);
		fatal("%s: refusing to start with an invalid configuration",
		      plugin_type);
	}
	gfp_after_config("init");
	/* PrioritySiteFactorPlugin, driven as multifactor drives it. */
	if (gf_site_factor_init() != SLURM_SUCCESS)
		fatal("%s: refusing to start: PrioritySiteFactorPlugin=%s cannot be loaded",
		      plugin_type, slurm_conf.site_factor_plugin);

	gfp_load_state();
	/* Before anything can end a job (priority_p_job_end may come from
	 * read_slurm_conf at a restart). */
	gfp_usage_clock_load();
	gpufair_global_set(gfp.engine);
#if !GF_HAS_THREAD_START
	_start_thread();
#endif
	debug("%s loaded", plugin_name);
	return SLURM_SUCCESS;
}

extern GF_EXPORT int fini(void)
{
	bool join;

	if (!gfp.engine)
		return SLURM_SUCCESS;

	slurm_mutex_lock(&gfp.cycle_mutex);
	gfp.shutdown = true;
	pthread_cond_broadcast(&gfp.cycle_cond);
	join = gfp.thread_running;
	slurm_mutex_unlock(&gfp.cycle_mutex);
	if (join) {
		pthread_join(gfp.thread, NULL);
		gfp.thread_running = false;
	}

	gfp_save_state();
	/* preempt/gpufair is stopped by now (slurmctld ends its scheduler
	 * threads before unloading plugins); it sees NULL from here on. */
	gpufair_global_set(NULL);
	gpufair_engine_free(gfp.engine);
	gfp.engine = NULL;

	gf_site_factor_fini();
	gfp_teams_free();
	gfp_conf_free();
	gfp_table_free();
	gfp_cycle_free();
	return SLURM_SUCCESS;
}

/* Hot path at submit: reads the team factors cached by the last cycle. */
extern GF_EXPORT uint32_t priority_p_set(uint32_t last_prio,
					 job_record_t *job_ptr)
{
	assoc_mgr_lock_t locks = { .assoc = READ_LOCK, .qos = READ_LOCK };
	uint32_t prio;

	if (gfp.engine)
		gfp_table_notice(job_ptr);
	if (job_ptr->direct_set_prio && (job_ptr->priority > 1))
		return job_ptr->priority;
	if (!gfp.engine)
		return (last_prio >= 2) ? last_prio - 1 : 1;
	/* First, as multifactor: the site factor plugin may set the job's
	 * site_factor, which the priority includes. */
	site_factor_g_set(job_ptr);

	assoc_mgr_lock(&locks);
	pthread_rwlock_rdlock(&gfp.map_lock);
	prio = gfp_set_job_priority_locked(job_ptr, time(NULL));
	pthread_rwlock_unlock(&gfp.map_lock);
	assoc_mgr_unlock(&locks);

	debug2("%s: initial priority for %pJ is %u", plugin_type, job_ptr, prio);
	return prio;
}

extern GF_EXPORT void priority_p_reconfig(bool assoc_clear)
{
	uint16_t before = __atomic_load_n(&gfp.flags, __ATOMIC_RELAXED);

	if (!gfp.engine)
		return;
	gfp_reconfigure();
	gfp_usage_reconfig(assoc_clear);
	gfp_shares_after_reconfig(before);
	/* FirstJobId/MaxJobId may have changed: the next cycle walks
	 * job_list. */
	gfp_table_walk_all_next();
	_wake_thread();
}

#if GF_HAS_PRIORITY_RECOVER
/* Our priorities are absolute (no base counting down, as priority/basic
 * has): no boost. The next cycle re-prioritises the recovered jobs. */
extern GF_EXPORT uint32_t priority_p_recover(uint32_t prio_boost)
{
	(void)prio_boost;
	if (gfp.engine)
		_wake_thread();
	return 0;
}
#endif

#if GF_HAS_THREAD_START
extern GF_EXPORT void priority_p_thread_start(void)
{
	_start_thread();
}
#endif

/*
 * The end of a run, with its record. Slurm calls priority_p_job_end from
 * deallocate_nodes (acct_policy_job_fini) for a job that finished and for one
 * being requeued, before backfill may give a pending job a planned start and
 * end: start_time and end_time are the run's. With the record, a run that
 * started after the last cycle and stops before the next is charged from its
 * start (the cycle's walk sees a requeued job only pending again, and
 * reports it by id). A job the core saw running is charged up to its end
 * either way; a second report of the same end charges nothing. Never past
 * now: an end_time ahead is a plan, not an end. Caller holds job WRITE and
 * no assoc_mgr lock: we take assoc READ, then map_lock READ, for the team.
 */
static void _report_end(job_record_t *job_ptr, time_t now)
{
	assoc_mgr_lock_t assoc_read = { .assoc = READ_LOCK };
	time_t end = (job_ptr->end_time && job_ptr->end_time <= now) ?
		     job_ptr->end_time : now;
	int rank_by = __atomic_load_n(&gfp.rank_by, __ATOMIC_RELAXED);
	int32_t team = -1;
	gpufair_job_t j;

	if (job_ptr->start_time && job_ptr->start_time <= end &&
	    !IS_JOB_RUNNING(job_ptr) && !IS_JOB_SUSPENDED(job_ptr)) {
		assoc_mgr_lock(&assoc_read);
		slurm_rwlock_rdlock(&gfp.map_lock);
		team = gfp_job_team_locked(job_ptr, true);
		if (team >= 0)
			gfp_fill_charged(&j, job_ptr, team, rank_by);
		slurm_rwlock_unlock(&gfp.map_lock);
		assoc_mgr_unlock(&assoc_read);
	}
	if (team >= 0) {
		log_flag(PRIO, "%s: %pJ run %ld-%ld, %.2f GPUs, reported with its record",
			 plugin_type, job_ptr, (long)j.start_time, (long)end,
			 j.gpus);
		gpufair_job_finished(gfp.engine, &j, (int64_t)end);
	} else
		gpufair_job_ended(gfp.engine, job_ptr->job_id, (int64_t)end);
}

/*
 * A job ended (acct_policy_job_fini; only with AccountingStorageEnforce
 * including "limits"). Charge it up to its end now rather than at the next
 * cycle, in gpufair's ledger and in the usage Slurm's limits read, and give
 * back the rest of what acct_policy_job_begin reserved (prio_usage.c), as
 * multifactor does.
 *
 * Preemptions are recorded by preempt/gpufair at the grace-time query (see
 * preempt_record.c), which knows the preemptor; all but those of jobs on
 * borrowed reservation time, for which Slurm never asks: those are
 * recorded here (prio_borrowed.c), once.
 */
extern GF_EXPORT void priority_p_job_end(job_record_t *job_ptr)
{
	time_t now = time(NULL);

	if (!gfp.engine || !job_ptr)
		return;
	/*
	 * A job being resized (scontrol update NumNodes; a --no-kill job that
	 * lost a node) comes here too (job_pre_resize_acctg), still running,
	 * its end_time still its planned end; job_post_resize_acctg begins it
	 * again. gpufair charges it on as it runs, at the size each cycle
	 * sees: no end to report (one charged it up to its time limit, then
	 * its run again from its start at the next cycle). The usage Slurm's
	 * limits read is charged up to now and its reservation given back, as
	 * multifactor does; acct_policy_job_begin reserves the new size.
	 */
	if (IS_JOB_RESIZING(job_ptr)) {
		log_flag(PRIO, "%s: %pJ resized: charged on as it runs",
			 plugin_type, job_ptr);
		gfp_usage_job_end(job_ptr);
		return;
	}
	log_flag(PRIO, "%s: %pJ ended at %ld%s", plugin_type, job_ptr,
		 (long)job_ptr->end_time,
		 job_ptr->preempt_time ? " (preempted)" : "");
	gfp_borrowed_preemption(job_ptr);
	_report_end(job_ptr, now);
	gfp_usage_job_end(job_ptr);
}
