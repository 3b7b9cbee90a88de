/*****************************************************************************\
 *  gpufair_slurm.h - translation between Slurm's records and the gpufair
 *  core's plain structs (include/gpufair/c_api.h). No policy lives here:
 *  only "which account path", "how many GPUs", "which rank".
 *
 *  Compiled into both priority_gpufair.so and preempt_gpufair.so (each gets
 *  its own copy; nothing in here holds state).
\*****************************************************************************/
#ifndef GPUFAIR_SLURM_H
#define GPUFAIR_SLURM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slurm/slurm.h"
#include "slurm/slurmdb.h"

#include "src/slurmctld/slurmctld.h"

#include "gpufair/c_api.h"

/* The plugins are compiled with -fvisibility=hidden; what Slurm's loader
 * looks up is marked with this (and listed in plugin.map). */
#define GF_EXPORT __attribute__((visibility("default")))

#define GF_MAX_DEPTH 32  /* deepest account tree we walk */
#define GF_MAX_TYPED 16  /* typed GPU TRES (gres/gpu:<type>) we weight */
#define GF_PATH_MAX 1024 /* account path buffer */

/* Where the GPUs sit in a job's TRES arrays, and how each type is weighted. */
typedef struct {
	int gpu_pos;                      /* gres/gpu, -1 = no GPU TRES */
	int ntyped;
	int typed_pos[GF_MAX_TYPED];      /* gres/gpu:<type> positions */
	double typed_weight[GF_MAX_TYPED];
	double untyped_weight;            /* gpu_weight, default 1.0 */
	int tres_cnt;                     /* length of the TRES arrays */
} gf_gpu_map_t;

/*
 * Account path below root of an association, '/'-separated and lower case
 * ("teama/nlp/interns"). A user association contributes its account's path.
 * Returns the depth (number of accounts), 0 when there is none (root or a
 * NULL assoc); buf is always terminated. Caller holds the assoc read lock.
 */
extern int gf_account_path(const slurmdb_assoc_rec_t *assoc, char *buf,
			   size_t len);

/*
 * The account association that is the team of assoc at team_level (1 = top
 * level below root); a path shorter than the level is its own team. Team
 * identity is pointer identity of this record: O(depth), no allocation.
 * NULL when the association has no account below root. Caller holds the
 * assoc read lock.
 */
extern const slurmdb_assoc_rec_t *gf_team_assoc(
	const slurmdb_assoc_rec_t *assoc, int team_level);

/*
 * Build the GPU map from assoc_mgr_tres_array (caller holds the TRES read
 * lock) and the weights of the core's effective configuration (the text of
 * gpufair_config_describe(): gpu_weight=W and gpu_weight:<type>=W, which
 * the core derived from TRESBillingWeights and PriorityParameters). NULL
 * text weights every GPU 1.
 */
extern void gf_gpu_map_build(gf_gpu_map_t *map, const char *describe);

/*
 * Weighted GPUs of a job: allocated when it has an allocation, else
 * requested. Jobs without GPUs give 0. Reads only the job record.
 */
extern double gf_job_gpus(const gf_gpu_map_t *map, const job_record_t *job);

/* In-team rank of a job under rank_by (GPUFAIR_PREEMPT_BY_*, from
 * preempt_by): its QOS's rank from gf_qos_ranks_refresh (a QOS that may
 * preempt another ranks above it; Priority orders the rest), or its
 * partition's PriorityTier (gpufair_job_rank decides). */
extern int32_t gf_job_rank(const job_record_t *job, int rank_by);
/* GPUFAIR_PREEMPT_BY_* of the core's effective configuration (the text of
 * gpufair_config_describe(); NULL or no preempt_by: qos). */
extern int gf_rank_by(const char *describe);
/* Recompute and publish every QOS's rank. Caller holds assoc_mgr QOS READ. */
extern void gf_qos_ranks_refresh(void);

/* Eligible time: when age starts to accrue (begin time, else submit). */
extern int64_t gf_job_eligible(const job_record_t *job, bool accrue_always);

/* The cluster's GPUs, weighted like a job's (entitlements compare the two).
 * Caller holds assoc_mgr TRES READ. */
extern double gf_cluster_gpus(const gf_gpu_map_t *map);
/* Fill a gpufair_job_t from a job record; team is the core's team id,
 * rank_by as for gf_job_rank. */
extern void gf_job_fill(gpufair_job_t *out, const job_record_t *job,
			int32_t team, const gf_gpu_map_t *map, int rank_by);
/* After the core recorded a preemption with this reason: a reclaim is
 * said where users look (the victim's SystemComment: scontrol show job,
 * sacct), since its own team did not preempt it, and in the log. Caller
 * holds the job WRITE lock. */
extern void gf_say_reclaim(const char *plugin, job_record_t *victim,
			   const job_record_t *preemptor, const char *reason);

/*
 * Integer value of "key=value" in the "key=value\n" text of
 * gpufair_config_describe(); dflt when absent. Strings: gf_describe_str
 * copies into buf (empty when absent).
 */
extern long gf_describe_long(const char *text, const char *key, long dflt);
extern double gf_describe_double(const char *text, const char *key,
				 double dflt);
extern void gf_describe_str(const char *text, const char *key, char *buf,
			    size_t len);

#endif /* GPUFAIR_SLURM_H */
