/*****************************************************************************\
 *  priority_gpufair.h - what the files of priority/gpufair share (not an
 *  interface for anything else):
 *
 *    priority_gpufair.c  entry points and the "gpufair" thread
 *    prio_conf.c         configuration, billing weights, the state file
 *    prio_teams.c        associations -> teams and shares, GPU TRES
 *    prio_cycle.c        the cycle: observe, charge, re-prioritise
 *    prio_job_table.c    which job records a cycle looks at
 *    prio_multifactor_keys.c  multifactor's keys and flags: what gpufair
 *                        does with each, which it refuses
 *    prio_input.c        what a job's priority is computed from, per
 *                        partition and QOS; the priority array
 *    prio_arrays.c       the memory of the cycle's per-job arrays
 *    prio_report.c       a job's priority and its breakdown; sprio
 *    prio_sshare.c       what sshare shows: each association's usage and
 *                        fair share
 *    prio_borrowed.c     preemptions on borrowed reservation time, which
 *                        preempt/gpufair never sees, recorded at job end
 *    prio_suspended.c    preemptions by gang suspension, recorded by the
 *                        cycle
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
#pragma weak last_part_update
#pragma weak acct_db_conn
#pragma weak accounting_enforce

extern const char plugin_type[];

/* An association's Priority (PriorityWeightAssoc): normalised by Slurm
 * (assoc_mgr's priority_norm) and raw (NO_NORMAL_ASSOC). */
typedef struct {
	double norm;
	double raw;
} gf_assoc_prio_t;

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
	int rank_by;                  /* preempt_by: GPUFAIR_PREEMPT_BY_* */
	bool tres_weighted;           /* PriorityWeightTRES is set */
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
	int32_t *assoc_of;            /* assoc id -> the core's association
				       * (gpufair_assoc_id; 0 unknown) */
	gf_assoc_prio_t *assoc_prio;  /* assoc id -> its Priority */
	uint32_t team_of_assoc_len;   /* length of the three */
	gpufair_team_report_t *reports; /* by team id */
	int32_t nreports;
	gpufair_assoc_report_t *assoc_reports; /* by core association id - 1,
						* for sshare */
	int32_t nassoc_reports;
	double usage_total;           /* the teams' usage (sshare's NormUsage) */

	/* The cycle thread. */
	pthread_t thread;
	bool thread_running;
	pthread_mutex_t cycle_mutex;
	pthread_cond_t cycle_cond;
	bool shutdown;
} gfp_t;

extern gfp_t gfp;
/* Its initial value (priority_gpufair.c, and the plugin tests). */
#define GFP_INITIALIZER {                                \
	.team_level = 1,                                 \
	.map_lock = PTHREAD_RWLOCK_INITIALIZER,          \
	.conf_mutex = PTHREAD_MUTEX_INITIALIZER,         \
	.cycle_mutex = PTHREAD_MUTEX_INITIALIZER,        \
	.cycle_cond = PTHREAD_COND_INITIALIZER,          \
}

/* One cycle's bookkeeping. */
typedef struct {
	time_t now;
	time_t since;     /* jobs that ended at or after this are reported */
	bool full_walk;   /* this cycle follows job_list (prio_job_table.c) */
	uint16_t flags;   /* PriorityFlags of this cycle */
	int rank_by;      /* in-team ranks of this cycle (preempt_by) */
	int running, pending, ended, reprioritised, tracked;
} gfp_cycle_t;

/* --- prio_conf.c ------------------------------------------------------- */
/* The standard Priority* keys, as Slurm parsed them from slurm.conf. */
extern void gfp_knobs_from_conf(gpufair_knobs_t *k, const char *billing);
/* At init: the engine from slurm.conf, or NULL with the reason in err (a
 * refused multifactor key, a bad value). */
extern gpufair_engine_t *gfp_engine_from_conf(char *err, size_t len);
/* A copy of the PriorityWeightTRES weights in effect (NULL when none; n
 * gets their count). Takes reconf_mutex, after any slurmctld or assoc_mgr
 * lock the caller holds, never under map_lock. */
extern double *gfp_tres_weights_dup(int *n);
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

/* --- prio_multifactor_keys.c ------------------------------------------ */
/* false, with every refused key and flag in err (name, value, why, what
 * instead), when slurm.conf uses one gpufair refuses. */
extern bool gfp_multifactor_keys_ok(char *err, size_t len);
/* Logs the keys and flags in use that work differently or not at all. */
extern void gfp_multifactor_keys_log(void);

/* --- prio_teams.c ------------------------------------------------------ */
/* Team of a job: the cycle's cache by association id; on a miss (an
 * association newer than the last cycle) the account tree when walk_tree
 * (caller holds assoc READ), else -1. Caller holds map_lock for reading
 * or is the cycle thread. */
extern int32_t gfp_job_team_locked(const job_record_t *job, bool walk_tree);
/* The core's association of a job (its user association; 0 = none), the
 * same way. */
extern int32_t gfp_job_assoc_locked(const job_record_t *job, bool walk_tree);
/* Associations -> teams and shares. Caller holds assoc READ. */
extern void gfp_refresh_teams_locked(void);
/* After a reconfigure that switched Fair Tree on or off (flags before it):
 * assoc_mgr's NormShares again, as multifactor's priority_p_reconfig does.
 * Takes assoc WRITE; the caller holds no assoc_mgr lock. */
extern void gfp_shares_after_reconfig(uint16_t flags_before);
/* GPU TRES positions and billing weights. Caller holds part and tres READ. */
extern void gfp_refresh_gpus_locked(void);
extern void gfp_teams_free(void);

/* --- prio_input.c ------------------------------------------------------ */
/*
 * What the core needs for a job's priority in partition part with QOS qos
 * (NULL: the job's own). tres_each (NULL, or slurmctld_tres_cnt entries)
 * receives the weighted TRES values, for sprio. walk_tree: the association
 * may be read directly when the cycle's map does not know it (caller holds
 * assoc READ). Caller holds map_lock READ or is the cycle thread, and the
 * job and part locks.
 */
extern void gfp_prio_input(gpufair_prio_input_t *in, const job_record_t *job,
			   int32_t team, const part_record_t *part,
			   const slurmdb_qos_rec_t *qos, bool walk_tree,
			   double *tres_each);
/* A job with a priority array (several partitions or QOS): calls fn on
 * each (partition, QOS) pair in the array's order and returns how many
 * there are; 0 for a job with one priority. */
typedef void (*gfp_slot_fn_t)(job_record_t *job, part_record_t *part,
			      slurmdb_qos_rec_t *qos, int slot, void *arg);
extern int gfp_for_each_slot(job_record_t *job, gfp_slot_fn_t fn, void *arg);
/* Makes a job's priority array fit its pairs (sorting its partitions by
 * PriorityTier first where the release needs it; dropping the array of a
 * job that has one priority again) and returns it, or NULL. Caller holds
 * job WRITE. */
extern uint32_t *gfp_prio_array_prepare(job_record_t *job, int *n);
/* PriorityFlags=INCR_ONLY: whether a cycle's new priority replaces the
 * old one. */
static inline bool gfp_prio_replaces(uint32_t old_prio, uint32_t new_prio,
				     uint16_t flags)
{
	return (flags & PRIORITY_FLAGS_INCR_ONLY) ? new_prio > old_prio
						  : new_prio != old_prio;
}

/* --- prio_report.c ----------------------------------------------------- */
/* Priority of a pending job, with its breakdown in job->prio_factors, and
 * its priority array. Caller holds job WRITE, assoc and qos READ, map_lock
 * READ. */
extern uint32_t gfp_set_job_priority_locked(job_record_t *job, time_t now);

/* --- prio_sshare.c ----------------------------------------------------- */
/* Each association's own usage and fair share into its record (sshare).
 * Caller holds assoc WRITE and is the cycle thread. */
extern void gfp_write_assoc_usage_locked(void);

/* --- prio_cycle.c ------------------------------------------------------ */
extern void gfp_cycle(time_t now);
extern void gfp_cycle_free(void);
/* Room for exactly n records in the cycle's per-job buffers (the job table
 * chooses n). */
extern void gfp_cycle_reserve(size_t n);
/* --- prio_arrays.c ---------------------------------------------------- */
/*
 * A per-job array of the cycle or the job table, resized from old_n to n
 * elements of elem bytes (n == 0 frees it); keeps the first min(old_n, n)
 * elements, the others are unspecified. Out of memory aborts, as xmalloc
 * does. Each array is its own anonymous mapping (why: prio_arrays.c).
 */
extern void *gfp_array_resize(void *p, size_t old_n, size_t n, size_t elem);
/* The capacity for n elements; whether capacity cap is right for n (at
 * least n, at most twice gfp_array_room(n): a larger one shrinks). */
extern size_t gfp_array_room(size_t n);
extern bool gfp_array_fits(size_t cap, size_t n);
#define GFP_RESIZE(p, old_n, n) \
	((p) = gfp_array_resize((p), (old_n), (n), sizeof(*(p))))
/* The lines a job's observation reads beyond the record (prefetch only). */
extern void gfp_prefetch_refs(const job_record_t *job);
/* A run's record as the ledger charges it (its user association, a resumed
 * job's run from its resume): for a running job, or one whose start and end
 * are the run's (it ended, or is being requeued). Caller holds assoc READ
 * and map_lock READ, or is the cycle. */
extern void gfp_fill_charged(gpufair_job_t *j, job_record_t *job,
			     int32_t team, int rank_by);
/* Observe one record; true when the job table should keep it. Caller
 * holds the cycle's locks. */
extern bool gfp_observe_job(job_record_t *job, gfp_cycle_t *ctx);

/* --- prio_borrowed.c --------------------------------------------------- */
/* From priority_p_job_end(): when victim was preempted because it ran on a
 * MaxStartDelay reservation's nodes on borrowed time, report it to the core
 * (once). Caller holds job WRITE and no assoc_mgr lock. */
extern void gfp_borrowed_preemption(job_record_t *victim);

/* --- prio_suspended.c -------------------------------------------------- */
/* From the cycle walk, for a suspended job of team `team`: when the gang
 * scheduler suspended it for a preemptor, report it to the core (once).
 * Caller holds the cycle's locks. */
extern void gfp_gang_suspension(job_record_t *victim, int32_t team,
				int rank_by);
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
