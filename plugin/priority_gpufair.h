/*****************************************************************************\
 *  priority_gpufair.h - what the files of priority/gpufair share (not an
 *  interface for anything else):
 *
 *    priority_gpufair.c  entry points and the "gpufair" thread
 *    prio_conf.c         configuration, billing weights, the state file
 *    prio_teams.c        associations -> teams and shares, GPU TRES
 *    prio_cycle.c        the cycle: observe, charge, re-prioritise
 *    prio_job_table.c    which job records a cycle looks at
 *    prio_report.c       a job's priority and its breakdown; sprio, sshare
 *    prio_usage.c        the usage Slurm's limits read, charged per job
 *    prio_usage_clock.c  ...its decay, resets and clock file
 *
 *  Every function says which locks its caller holds; the lock order is
 *  slurmctld locks, then assoc_mgr locks, then map_lock, then conf_mutex
 *  or noticed_mutex (innermost, held for a few instructions).
\*****************************************************************************/
#ifndef GPUFAIR_PRIORITY_GPUFAIR_H
#define GPUFAIR_PRIORITY_GPUFAIR_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "slurm_compat.h"

#include "src/common/assoc_mgr.h"
#include "src/slurmctld/slurmctld.h"

#include "gpufair_slurm.h"

/*
 * slurmctld-only data. sshare and sprio dlopen this plugin too, where these
 * symbols do not exist: weak references resolve to NULL there instead of
 * failing the load. (Functions are bound lazily and never called outside
 * slurmctld.)
 */
#pragma weak job_list
#pragma weak last_job_update
#pragma weak slurmctld_tres_cnt
#pragma weak part_list
#pragma weak default_part_loc
#pragma weak accounting_enforce

extern const char plugin_type[];

/* Everything the plugin keeps; one instance per process. */
typedef struct {
	gpufair_engine_t *engine;     /* NULL outside slurmctld */

	/* Derived from the effective configuration by gfp_after_config(),
	 * which reconfigure may run while the cycle reads them: conf_mutex,
	 * only ever taken innermost. The cycle reads team_level, flags and
	 * describe under it; hot paths read `flags` without it (a word, and
	 * a stale value for one call is harmless). */
	pthread_mutex_t conf_mutex;
	int team_level;
	uint16_t flags;               /* PriorityFlags */
	char state_path[PATH_MAX];
	char describe[8192];          /* effective config (config_describe) */

	/* Only the cycle thread touches these. */
	bool warned_no_gpu_tres;      /* said once that gres/gpu is not tracked */
	time_t prev_cycle;            /* `now` of the previous cycle (written
				       * under the job WRITE lock) */

	/* Read on hot paths, rebuilt by the cycle thread: map_lock (the
	 * cycle thread, the only writer, reads them without it). */
	pthread_rwlock_t map_lock;
	gf_gpu_map_t gpus;
	int32_t *team_of_assoc;       /* assoc id -> team id (-1 unknown) */
	uint32_t team_of_assoc_len;
	gpufair_team_report_t *reports; /* by team id, for sshare */
	int32_t nreports;

	/* The cycle thread. */
	pthread_t thread;
	bool thread_running;
	pthread_mutex_t cycle_mutex;
	pthread_cond_t cycle_cond;
	bool shutdown;
} gfp_t;

extern gfp_t gfp;

/* One cycle's bookkeeping. */
typedef struct {
	time_t now;
	time_t since;     /* jobs that ended at or after this are reported */
	bool full_walk;   /* this cycle follows job_list (prio_job_table.c) */
	int running, pending, ended, reprioritised, tracked;
} gfp_cycle_t;

/* --- prio_conf.c ------------------------------------------------------- */
/* The standard Priority* keys, as Slurm parsed them from slurm.conf. */
extern void gfp_knobs_from_conf(gpufair_knobs_t *k, const char *billing);
/*
 * Reconfigure the core from slurm.conf (scontrol reconfigure), or with new
 * TRESBillingWeights (the cycle saw them change; takes ownership of the
 * xstrdup'ed string). On an error the previous settings stay, logged.
 * Both run under reconf_mutex (prio_conf.c), which also guards the billing
 * weights in effect: taken after any slurmctld/assoc_mgr lock the caller
 * holds, before conf_mutex.
 */
extern void gfp_reconfigure(void);
extern void gfp_set_billing_weights(char *weights);
/* TRESBillingWeights of the default partition, else of the first that has
 * one (an xstrdup, or NULL). Caller holds part READ. */
extern char *gfp_billing_weights_locked(void);
/* Settings derived from the core's effective configuration; logs it. */
extern void gfp_after_config(const char *why);
extern void gfp_load_state(void);
extern void gfp_save_state(void);
extern void gfp_conf_free(void);

/* --- prio_teams.c ------------------------------------------------------ */
/* Team of a job: the cycle's cache by association id; on a miss (an
 * association newer than the last cycle) the account tree when walk_tree
 * (caller holds assoc READ), else -1. Caller holds map_lock for reading
 * or is the cycle thread. */
extern int32_t gfp_job_team_locked(const job_record_t *job, bool walk_tree);
/* Associations -> teams and shares. Caller holds assoc READ. */
extern void gfp_refresh_teams_locked(void);
/* GPU TRES positions and billing weights. Caller holds part and tres READ. */
extern void gfp_refresh_gpus_locked(void);
extern void gfp_teams_free(void);

/* --- prio_report.c ----------------------------------------------------- */
/* What the core needs for a job's priority. Caller as gfp_job_team_locked. */
extern void gfp_prio_input(gpufair_prio_input_t *in, const job_record_t *job,
			   int32_t team);
/* Priority of a pending job, with its breakdown in job->prio_factors.
 * Caller holds job WRITE, assoc and qos READ, map_lock READ. */
extern uint32_t gfp_set_job_priority_locked(job_record_t *job, time_t now);
/* Team usage and fair share into the association records (sshare).
 * Caller holds assoc WRITE and is the cycle thread. */
extern void gfp_write_assoc_usage_locked(void);

/* --- prio_cycle.c ------------------------------------------------------ */
extern void gfp_cycle(time_t now);
extern void gfp_cycle_free(void);
/* Room for n records in the cycle's per-job buffers. */
extern void gfp_cycle_reserve(size_t n);
/* The lines a job's observation reads beyond the record (prefetch only). */
extern void gfp_prefetch_refs(const job_record_t *job);
/* Observe one record; true when the job table should keep it. Caller
 * holds the cycle's locks. */
extern bool gfp_observe_job(job_record_t *job, gfp_cycle_t *ctx);

/* --- prio_usage.c: the usage Slurm's limits read (GrpTRESMins, ...) ----- */
/* Start of a cycle: after a restart, take back the reservations made again;
 * then the clock's duties (gfp_usage_clock_begin_locked). Caller holds the
 * cycle's locks, { assoc WRITE, qos WRITE, tres READ } among them. */
extern void gfp_usage_begin_locked(time_t now);
/* One record of the cycle's walk: charged if it ran. Same locks. */
extern void gfp_usage_job_locked(job_record_t *job, time_t now);
/* priority_p_job_end(): caller holds job WRITE; takes the assoc_mgr locks. */
extern void gfp_usage_job_end(job_record_t *job);
/* priority_p_reconfig(): re-read the keys; with assoc_clear (no lock held)
 * take back the reservations acct_policy made again. */
extern void gfp_usage_reconfig(bool assoc_clear);

/* --- prio_usage_clock.c ------------------------------------------------ */
/* When the limits' usage was last brought up to date, and how it decays.
 * Written by the cycle thread under the job WRITE lock, read under the job
 * lock (and by the cycle thread's save, after the locks). */
typedef struct {
	time_t last_ran;  /* usage is up to date to here; 0 = never */
	double decay;     /* per second: multifactor's 1 - 0.693/hl */
	bool charge;      /* this cycle charges jobs (0 < last_ran < now) */
	bool restore;     /* a restart: reservations to take back to last_ran */
} gfp_usage_clock_t;
extern gfp_usage_clock_t gfp_uclock;
/* init(): the clock from <StateSaveLocation>/priority_last_decay_ran. */
extern void gfp_usage_clock_load(void);
/* The cycle, its locks held: re-read keys, reset, decay every record. */
extern void gfp_usage_clock_begin_locked(time_t now);
extern void gfp_usage_clock_end_locked(time_t now);
/* After the cycle, no lock: the clock to its file. */
extern void gfp_usage_clock_save(void);
/* Re-read PriorityDecayHalfLife and PriorityUsageResetPeriod next cycle. */
extern void gfp_usage_clock_reconfigure(void);

/* --- prio_job_table.c -------------------------------------------------- */
/* From priority_p_set(): a job the table's id scan may not see. */
extern void gfp_table_notice(job_record_t *job);
/* Walk the records that matter, gfp_observe_job() on each. Caller holds
 * job WRITE and fed READ. */
extern void gfp_table_walk(gfp_cycle_t *ctx);
/* The next cycle follows job_list (after a reconfigure). Any thread. */
extern void gfp_table_walk_all_next(void);
extern void gfp_table_free(void);

#endif /* GPUFAIR_PRIORITY_GPUFAIR_H */
