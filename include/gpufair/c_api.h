/*
 * gpufair C API: the only door between Slurm's C world and the C++ core.
 *
 * Opaque handles, plain structs, integer error codes. No C++ type and no
 * exception crosses this boundary: every entry point catches everything and
 * turns it into GPUFAIR_ERR_* plus a message in the caller's buffer.
 *
 * Threading: an engine may be used from several threads at once (slurmctld's
 * RPC threads, its scheduler and our own cycle thread); it locks internally.
 */
#ifndef GPUFAIR_C_API_H
#define GPUFAIR_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUFAIR_OK 0
#define GPUFAIR_ERR_CONFIG 1   /* a configuration value was rejected */
#define GPUFAIR_ERR_STATE 2    /* a state file is corrupt, truncated, too new */
#define GPUFAIR_ERR_IO 3       /* reading or writing a file failed */
#define GPUFAIR_ERR_ARG 4      /* a NULL or out-of-range argument */
#define GPUFAIR_ERR_INTERNAL 5 /* anything else (bug, out of memory) */

typedef struct gpufair_engine gpufair_engine_t;

/* Standard slurm.conf knobs, handed over by the priority plugin. Zero-filled
 * means "Slurm's default"; fields use Slurm's own units (seconds, raw weights). */
typedef struct {
	int64_t decay_half_life_s;   /* PriorityDecayHalfLife (0 = no decay) */
	int64_t calc_period_s;       /* PriorityCalcPeriod */
	int64_t max_age_s;           /* PriorityMaxAge */
	int32_t usage_reset_period;  /* PriorityUsageResetPeriod: GPUFAIR_RESET_* */
	uint32_t weight_age;         /* PriorityWeightAge */
	uint32_t weight_fairshare;   /* PriorityWeightFairshare */
	uint32_t weight_job_size;    /* PriorityWeightJobSize */
	uint32_t weight_partition;   /* PriorityWeightPartition */
	uint32_t weight_qos;         /* PriorityWeightQOS */
	int32_t favor_small;         /* PriorityFavorSmall */
	const char *tres_billing_weights; /* TRESBillingWeights of the partition, may be NULL:
	                                     "CPU=1.0,GRES/gpu=1.0,GRES/gpu:a100=2.0" */
	int32_t knobs_set;           /* 1 when the fields above are filled in */
	uint32_t weight_assoc;       /* PriorityWeightAssoc */
	/* PriorityWeightTRES by the host's TRES position (tres_cnt entries,
	 * copied; NULL or 0 = none), as Slurm's own parser returns it. */
	const double *tres_weights;
	int32_t tres_cnt;
	uint32_t flags;              /* GPUFAIR_PRIO_* below (from PriorityFlags) */
	const char *preempt_type;    /* PreemptType, may be NULL: preempt_by must
	                                agree with preempt/qos and
	                                preempt/partition_prio */
} gpufair_knobs_t;

/* PriorityFlags that change how a priority is composed (priority.h). */
#define GPUFAIR_PRIO_NO_NORMAL_ASSOC 0x1u /* association priority, raw */
#define GPUFAIR_PRIO_NO_NORMAL_PART 0x2u  /* partition PriorityJobFactor, raw */
#define GPUFAIR_PRIO_NO_NORMAL_QOS 0x4u   /* QOS priority, raw */
#define GPUFAIR_PRIO_NO_NORMAL_TRES 0x8u  /* TRES counts, not over the partition's */
#define GPUFAIR_PRIO_SIZE_RELATIVE 0x10u  /* SMALL_RELATIVE_TO_TIME */
/* Fair share inside a team: Fair Tree unless one of these (NO_FAIR_TREE:
 * classic; DEPTH_OBLIVIOUS wins over it, as in slurm.conf). */
#define GPUFAIR_PRIO_NO_FAIR_TREE 0x20u
#define GPUFAIR_PRIO_DEPTH_OBLIVIOUS 0x40u

#define GPUFAIR_RESET_NONE 0
#define GPUFAIR_RESET_NOW 1
#define GPUFAIR_RESET_DAILY 2
#define GPUFAIR_RESET_WEEKLY 3
#define GPUFAIR_RESET_MONTHLY 4
#define GPUFAIR_RESET_QUARTERLY 5
#define GPUFAIR_RESET_YEARLY 6

/* One job as the host sees it. Strings are borrowed for the call only. */
typedef struct {
	uint64_t job_id;
	int32_t team;          /* from gpufair_team_id() */
	uint32_t user_id;
	int32_t rank;          /* in-team rank (higher outranks): gpufair_job_rank() */
	double gpus;           /* GPUs allocated (running) or requested (pending),
	                          already weighted by GPU type */
	int64_t submit_time;
	int64_t eligible_time; /* 0 = submit_time */
	int64_t start_time;    /* 0 = not started */
	/* Pending jobs only (a queue jump's price is measured against them): */
	uint32_t priority;     /* the job's current priority */
	uint8_t held_back;     /* 1 = could not run now even with free GPUs (held,
	                          a dependency, a limit, a reservation, a begin
	                          time); 0 = runnable, the zero-initialised default */
	int32_t assoc;         /* its association, from gpufair_assoc_id(); 0 =
	                          none. A running job is charged to it and to its
	                          accounts up to its team's. */
	/* Running jobs only: the QOS UsageFactor, what one GPU-second of the job
	 * costs its team's usage (0 = free, 2 = double; a finite number >= 0).
	 * Read only when has_usage_factor is 1: zero-initialised means 1. */
	uint8_t has_usage_factor;
	double usage_factor;
} gpufair_job_t;

/* What a pending job's priority in one partition (and QOS) is computed
 * from; a job in several partitions has one per partition. */
typedef struct {
	int32_t team;
	double gpus;             /* requested, weighted */
	int64_t eligible_time;   /* begin of age accrual (Slurm: accrue_time) */
	double qos_norm;         /* QOS priority / max QOS priority, in [0,1] */
	double partition_norm;   /* partition PriorityJobFactor normalised, in [0,1] */
	int32_t nice;            /* job nice, already minus NICE_OFFSET */
	double qos_raw;          /* QOS priority (PriorityFlags=NO_NORMAL_QOS) */
	double partition_raw;    /* PriorityJobFactor (NO_NORMAL_PART) */
	double assoc_norm;       /* association priority / max, in [0,1] */
	double assoc_raw;        /* association priority (NO_NORMAL_ASSOC) */
	double tres;             /* gpufair_tres_term() of the job in the partition */
	double time_limit_min;   /* time limit, minutes (SMALL_RELATIVE_TO_TIME) */
	int64_t site;            /* site factor, already minus NICE_OFFSET */
	int32_t assoc;           /* its association (gpufair_assoc_id()); 0 = none:
	                            the team's factor */
	int32_t rank;            /* in-team rank (as gpufair_job_t's), if has_rank */
	int32_t has_rank;        /* 0: rank unknown, never sorted last
	                            (scavenger_order) */
	uint64_t job_id;         /* 0 = unknown: holds no claim
	                            (preemptor_claim) */
} gpufair_prio_input_t;

/* Per-factor breakdown for sprio: factors ([0,1] unless NO_NORMAL_*) and
 * weighted values. */
typedef struct {
	double age, fairshare, job_size, partition, qos;        /* factors */
	double w_age, w_fairshare, w_job_size, w_partition, w_qos; /* weighted */
	double penalty;          /* the team's bait penalty */
	int32_t nice;
	uint32_t priority;
	double assoc, w_assoc;   /* association factor, weighted */
	double w_tres;           /* the TRES term (input's tres) */
	int64_t site;            /* the site factor */
	/* fairshare is the job's: its team's effective factor combined with its
	 * association's factor inside the team (docs/design.md). */
	double team_fairshare, in_team;
	int32_t scavenger_last;  /* scavenger_order=last sorted it last: every
	                            weighted term 0, priority 1 */
	int32_t claimed;         /* preemptor_claim: it preempted and has not
	                            started; priority and site term the top */
} gpufair_factors_t;

typedef struct {
	char name[128];
	double usage_gpu_s;      /* decayed, weighted GPU-seconds */
	double raw_usage_gpu_s;  /* undecayed total since last reset */
	double shares;           /* raw shares */
	double shares_norm;      /* S / Stot */
	double usage_norm;       /* U / Utot */
	double fairshare;        /* classic factor, before penalty */
	double effective_fairshare; /* after penalty */
	double penalty;
	uint32_t bait_detections;
	uint32_t in_team_preemptions;
	double price_total_gpu_s; /* queue-jump prices paid since the last reset */
	uint32_t priced_jumps;    /* in-team jumps that paid a price > 0 */
	uint32_t reclaims_made;   /* preemptions this team made by reclaim */
	uint32_t reclaimed_from;  /* ...that took GPUs from this team */
	double held_gpus;         /* weighted GPUs running now */
	double entitled_gpus;     /* its share of the cluster among active teams */
} gpufair_team_report_t;

/* An association inside a team (a user's or a sub-account's, or the team's
 * own account), as of the last cycle. */
typedef struct {
	int32_t team;            /* its team id */
	int32_t is_team;         /* 1: the team's own account: the figures are the team's */
	int32_t live;            /* 0: not named at the host's last refresh (not ranked) */
	double usage_gpu_s;      /* its jobs' decayed, weighted GPU-seconds (a team: the
	                            team's, jump prices included) */
	double raw_usage_gpu_s;  /* undecayed since the last reset */
	double shares_norm;      /* inside the team by the algorithm (a team: S/Stot) */
	double usage_efctv;      /* Fair Tree: usage / its parent's; classic: Slurm's
	                            effective usage (a team: U/Utot) */
	double level_fs;         /* Fair Tree's S/U (inf: no usage; a team: among the
	                            teams, -1/log2 of its effective factor); 0 under
	                            the other algorithms */
	double in_team;          /* its factor inside the team, [0,1] (a team: 1) */
	double fairshare;        /* its jobs' fair-share factor */
} gpufair_assoc_report_t;

/* In-team rank of n QOS (qos_rank.h): a QOS that may preempt another ranks
 * above it; Priority orders the rest. preempts: n_pairs pairs (i, j), flat
 * [i0, j0, i1, j1, ...], meaning QOS i may preempt QOS j (indices < n).
 * Writes n ranks >= 0 to rank_out. GPUFAIR_ERR_ARG on NULL arrays. */
int gpufair_qos_ranks(size_t n, const uint32_t *priority, const uint32_t *preempts,
                      size_t n_pairs, int32_t *rank_out);

/* The process's QOS rank table, shared by both plugins like the engine:
 * publish replaces it (ids[i] gets ranks[i]; ids >= GPUFAIR_QOS_RANK_IDS are
 * left out), lookup is lock free and returns fallback for an id not
 * published. */
#define GPUFAIR_QOS_RANK_IDS 4096
void gpufair_qos_ranks_publish(const uint32_t *ids, const int32_t *ranks, size_t n);
int32_t gpufair_qos_rank_lookup(uint32_t id, int32_t fallback);

/* preempt_by (config.h): whose rule says who may preempt whom. */
#define GPUFAIR_PREEMPT_BY_QOS 0
#define GPUFAIR_PREEMPT_BY_PARTITION 1
/* A job's in-team rank (qos_rank.h, in_team_rank) under preempt_by: its
 * QOS's published rank (gpufair_qos_rank_lookup; qos_priority while none is
 * published), or its partition's PriorityTier. Lock free. */
int32_t gpufair_job_rank(int preempt_by, uint32_t qos_id, int32_t qos_priority,
                         uint32_t partition_tier);

/* Version of the core library, e.g. "0.1.0". */
const char *gpufair_version(void);

/* Parse and validate a configuration without building an engine: returns
 * GPUFAIR_OK or GPUFAIR_ERR_CONFIG with every problem in err (key, value,
 * what is accepted). params is the PriorityParameters string (may be NULL). */
int gpufair_config_check(const char *params, const gpufair_knobs_t *knobs,
                         char *err, size_t errlen);

/* Write the effective configuration, one "key=value" per line, to buf.
 * GPUFAIR_ERR_ARG on NULL arguments, or when len is too small (the text is
 * then truncated, still NUL-terminated); 8 KiB is plenty. */
int gpufair_config_describe(const gpufair_engine_t *e, char *buf, size_t len);

gpufair_engine_t *gpufair_engine_new(const char *params,
                                     const gpufair_knobs_t *knobs,
                                     char *err, size_t errlen);
/* On error the previous configuration stays in force. */
int gpufair_engine_reconfigure(gpufair_engine_t *e, const char *params,
                               const gpufair_knobs_t *knobs,
                               char *err, size_t errlen);
void gpufair_engine_free(gpufair_engine_t *e);

/* Calc period in seconds of the effective configuration. */
int64_t gpufair_calc_period(const gpufair_engine_t *e);
/* 1 when preemption may cross teams (preempt_scope=any), else 0. */
int gpufair_preempt_any_team(const gpufair_engine_t *e);
/* 1 when, as of the last cycle, a reclaim across teams could be allowed
 * (a team below its entitlement waits, a team over its own is reclaimable);
 * lock free, for the preempt plugin's hot path. 0 otherwise or on NULL. */
int gpufair_reclaim_possible(const gpufair_engine_t *e);

/* Team of an account path below root ("teama/nlp"), rolled up to team_level.
 * Returns a dense id >= 0, or -1 on error (NULL/empty account). */
int32_t gpufair_team_id(gpufair_engine_t *e, const char *account_path);
int gpufair_set_shares(gpufair_engine_t *e, int32_t team, double shares);
/* Association of a user (user non-NULL, non-empty) or of an account (user
 * NULL or ""), by its account path below root; made, with its accounts up
 * to its team's, when new. Returns an id >= 1, or 0 on error (NULL/empty
 * path, deeper than 64 accounts). */
int32_t gpufair_assoc_id(gpufair_engine_t *e, const char *account_path,
			 const char *user);
/* Its raw shares (sacctmgr fairshare=N); negative = fairshare=parent.
 * Never set: 1, Slurm's default. */
int gpufair_set_assoc_shares(gpufair_engine_t *e, int32_t assoc, double shares);
/* Every association the host has was named (gpufair_assoc_id or
 * gpufair_set_assoc_shares) since the last call: the others are gone and
 * no longer ranked (they keep their usage). */
int gpufair_assocs_refreshed(gpufair_engine_t *e);
/* Associations known; their ids are 1..count. */
int32_t gpufair_assoc_count(const gpufair_engine_t *e);
int gpufair_set_cluster_gpus(gpufair_engine_t *e, double gpus);
int32_t gpufair_team_count(const gpufair_engine_t *e);

/* The periodic cycle: begin (decay, resets), observe every running and
 * pending job, end (charge vanished jobs, recompute team factors). */
int gpufair_cycle_begin(gpufair_engine_t *e, int64_t now);
/* Charges the job up to the time of the latest cycle_begin; GPUFAIR_ERR_ARG
 * before the first cycle_begin. */
int gpufair_observe_running(gpufair_engine_t *e, const gpufair_job_t *job);
int gpufair_observe_pending(gpufair_engine_t *e, const gpufair_job_t *job);
/* n pending jobs under one lock; jobs of an unknown team are skipped.
 * Returns how many were taken (>= 0), or GPUFAIR_ERR_ARG. */
int64_t gpufair_observe_pending_many(gpufair_engine_t *e,
                                     const gpufair_job_t *jobs, size_t n);
int gpufair_cycle_end(gpufair_engine_t *e, int64_t now);
/* A job stopped running (completed, cancelled, preempted): charge it up to
 * end_time and forget it. Unknown ids are ignored. */
int gpufair_job_ended(gpufair_engine_t *e, uint64_t job_id, int64_t end_time);
/* The same with the job's record (team, GPUs, start_time, usage factor): a
 * job that started after the last cycle and stopped before the next, which
 * no cycle saw running, is charged for its whole run, once however often it
 * is reported. For finished jobs only: a pending job's start and end may be
 * the ones backfill planned. */
int gpufair_job_finished(gpufair_engine_t *e, const gpufair_job_t *job,
                         int64_t end_time);

/* preemptor_claim: the priority a job whose preemption claimed what it
 * frees (by default a reclaim from a team that jumped or of a scavenger;
 * in-team jumps too with all) and that has not been seen running yet
 * holds (at most 10 minutes), or 0 when it holds none. The preempt
 * plugin gives it to the preemptor at once. */
uint32_t gpufair_claim_priority(const gpufair_engine_t *e, uint64_t job_id,
                                int64_t now);

/* Hot path: priority of a pending job from the cached team factors. Never
 * returns 0 (0 means held in Slurm). out may be NULL. */
uint32_t gpufair_priority(const gpufair_engine_t *e,
                          const gpufair_prio_input_t *in, int64_t now,
                          gpufair_factors_t *out);

/* The PriorityWeightTRES term of a job in one partition, with the engine's
 * weights and NO_NORMAL_TRES: count[i] = the job's TRES i (allocated, else
 * requested), total[i] = the partition's; n entries each. each (may be NULL)
 * receives the n weighted values (for sprio). 0 when no weight is set or on
 * NULL arguments. Takes the engine's shared lock. */
double gpufair_tres_term(const gpufair_engine_t *e, const double *count,
                         const double *total, size_t n, double *each);

/* Many pending jobs at once under one lock (the plugin's recalculation
 * pass): out[i] is gpufair_priority(e, &in[i], now, NULL). Returns
 * GPUFAIR_OK, or GPUFAIR_ERR_ARG for a NULL engine or array with n > 0. */
int gpufair_priorities(const gpufair_engine_t *e,
                       const gpufair_prio_input_t *in, size_t n, int64_t now,
                       uint32_t *out);

/* Before a preemption: 1 = allowed, 2 = allowed across teams by the reclaim
 * rule, 0 = refused (reason says why), <0 error. Pure: records nothing. */
#define GPUFAIR_PREEMPT_RECLAIM 2
int gpufair_preempt_allowed(const gpufair_engine_t *e,
                            const gpufair_job_t *preemptor,
                            const gpufair_job_t *victim, int64_t now,
                            char *reason, size_t reasonlen);
/* A preemption really happened: an in-team jump pays its price and is
 * judged (the penalty if it was bait); a cross-team one under
 * preempt_scope=team is recorded as a reclaim. Returns 1 = bait, 0 = not,
 * <0 error; reason says why (and the price). */
int gpufair_record_preemption(gpufair_engine_t *e,
                              const gpufair_job_t *preemptor,
                              const gpufair_job_t *victim, int64_t when,
                              char *reason, size_t reasonlen);

/* A job of a MaxStartDelay reservation took back its nodes from victim,
 * which ran there on borrowed time (Slurm preempts such a job whatever the
 * preemption rules): listed with the decisions, never priced or judged.
 * Returns 0, or <0 on error; reason says what was recorded. */
int gpufair_record_resv_preemption(gpufair_engine_t *e,
                                   const gpufair_job_t *preemptor,
                                   const gpufair_job_t *victim, int64_t when,
                                   char *reason, size_t reasonlen);

/* The process's record of preemptions already reported, shared by both
 * plugins (a preemption may be seen by each): 1 the first time (victim,
 * key) is claimed, 0 after. Direct-mapped by victim id over
 * GPUFAIR_CLAIM_SLOTS slots: a claim is forgotten once another victim of
 * the same slot is claimed. Any thread. */
#define GPUFAIR_CLAIM_SLOTS 65536
int gpufair_preemption_claim(uint64_t victim, int64_t key);

/* Who preempts whom, for the plugins' record of a real preemption: Slurm
 * names the victim at the event but not the preemptor. preempt/gpufair
 * notes each (victim, preemptor) pair its predicate lets through; at a
 * requeue or cancel (the grace-time query, in the same scheduling pass)
 * the preemptor is the victim's last note. A gang suspension is recorded
 * later, by the priority plugin's cycle, when later passes may have noted
 * other pairs: Slurm asks a victim's preemption mode right before it
 * suspends it, so preempt/gpufair pins the last note at every mode query
 * on a running job not yet preempted, and the cycle reads the pin. Lock
 * free, direct-mapped by victim id over GPUFAIR_CLAIM_SLOTS slots (a
 * collision loses the older victim's). 0: unknown. Any thread. */
void gpufair_preemptor_note(uint32_t victim, uint32_t preemptor);
uint32_t gpufair_preemptor_noted(uint32_t victim);
void gpufair_preemptor_pin(uint32_t victim);
uint32_t gpufair_preemptor_pinned(uint32_t victim);

int gpufair_team_report(const gpufair_engine_t *e, int32_t team, int64_t now,
                        gpufair_team_report_t *out);
int gpufair_assoc_report(const gpufair_engine_t *e, int32_t assoc, int64_t now,
                         gpufair_assoc_report_t *out);
/* Every association's report at once (one lock; the plugin's cycle):
 * out[i] for id i + 1, at most n of them. Returns how many associations
 * there are (>= 0; more than n: the rest left out), or <0 on error. */
int64_t gpufair_assoc_reports(const gpufair_engine_t *e, int64_t now,
                              gpufair_assoc_report_t *out, size_t n);

/* State: atomic save (temp file, fsync, rename) and load. On a load error the
 * engine keeps its current state. */
int gpufair_state_save(const gpufair_engine_t *e, const char *path,
                       char *err, size_t errlen);
int gpufair_state_load(gpufair_engine_t *e, const char *path,
                       char *err, size_t errlen);

/* One engine per process, shared by priority/gpufair and preempt/gpufair
 * (both link libgpufair.so, which the loader maps once). set(NULL) clears. */
void gpufair_global_set(gpufair_engine_t *e);
gpufair_engine_t *gpufair_global_get(void);
/* gpufair_reclaim_possible() of the registered engine, 0 without one: what
 * preempt/gpufair asks about nearly every pair slurmctld shows it, in one
 * call (lock free). */
int gpufair_global_reclaim_possible(void);

#ifdef __cplusplus
}
#endif

#endif /* GPUFAIR_C_API_H */
