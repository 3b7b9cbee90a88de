/*****************************************************************************\
 *  preempt_conf.h - the configuration preempt/gpufair decides with.
 *
 *  slurmctld calls the preemption predicates from many threads at once (the
 *  main scheduler, backfill, RPC handlers doing will-run tests) under a job
 *  READ or WRITE lock, so what they read must never change under them.
 *  Each configuration is an immutable snapshot, published by one atomic
 *  pointer store and never freed before fini: a reader holding an old one
 *  still sees a consistent (if one reconfigure old) configuration.
\*****************************************************************************/
#ifndef GPUFAIR_PREEMPT_CONF_H
#define GPUFAIR_PREEMPT_CONF_H

#include <stdbool.h>
#include <time.h>

#include "gpufair_slurm.h"

typedef struct gf_preempt_conf {
	time_t seen;                  /* slurm_conf.last_update it is for */
	gpufair_engine_t *engine;     /* the shared engine it is for */
	int team_level;
	bool any_team;                /* preempt_scope=any */
	gf_gpu_map_t gpus;            /* GPU weights, as priority/gpufair's */
	struct gf_preempt_conf *older;/* retired snapshots, freed at fini */
} gf_preempt_conf_t;

/*
 * The snapshot for engine e (NULL: no priority/gpufair), rebuilt when
 * slurm.conf changed (slurm_conf.last_update) or the engine did; one
 * comparison when nothing did. Any thread; never NULL. Caller holds no
 * assoc_mgr lock (a rebuild takes TRES READ).
 */
extern const gf_preempt_conf_t *gf_preempt_conf(gpufair_engine_t *e);

/* Frees every snapshot; only when no predicate can run (fini). */
extern void gf_preempt_conf_free(void);

/* The core's view of a job under configuration c (its team from the
 * account path). Caller holds assoc READ. */
extern void gf_preempt_core_job(gpufair_engine_t *e, const gf_preempt_conf_t *c,
				const job_record_t *job, gpufair_job_t *out);

#endif /* GPUFAIR_PREEMPT_CONF_H */
