/*****************************************************************************\
 *  preempt_conf.c - immutable configuration snapshots for preempt/gpufair
 *  (see preempt_conf.h for why).
 *
 *  Locks: build_lock (ours) serialises rebuilds; inside it assoc_mgr TRES
 *  READ. Callers hold slurmctld job locks or none, and no assoc_mgr lock.
\*****************************************************************************/

#include <stdatomic.h>
#include <string.h>

#include "src/common/assoc_mgr.h"
#include "src/common/log.h"
#include "src/common/xmalloc.h"

#include "preempt_conf.h"

static _Atomic(gf_preempt_conf_t *) current;
static pthread_mutex_t build_lock = PTHREAD_MUTEX_INITIALIZER;

static bool _fresh(const gf_preempt_conf_t *c, time_t seen,
		   gpufair_engine_t *e)
{
	return c && c->seen == seen && c->engine == e;
}

/* Both values from one describe text, so a snapshot is never half of one
 * configuration and half of the next. */
static void _build(gf_preempt_conf_t *c, gpufair_engine_t *e)
{
	char desc[8192], scope[16];
	assoc_mgr_lock_t tres_read = { .tres = READ_LOCK };

	if (!e || gpufair_config_describe(e, desc, sizeof(desc)) != GPUFAIR_OK)
		desc[0] = '\0';
	c->team_level = (int)gf_describe_long(desc, "team_level", 1);
	gf_describe_str(desc, "preempt_scope", scope, sizeof(scope));
	c->any_team = !strcmp(scope, "any");
	assoc_mgr_lock(&tres_read);
	gf_gpu_map_build(&c->gpus, desc[0] ? desc : NULL);
	assoc_mgr_unlock(&tres_read);
}

extern const gf_preempt_conf_t *gf_preempt_conf(gpufair_engine_t *e)
{
	time_t seen = __atomic_load_n(&slurm_conf.last_update,
				      __ATOMIC_RELAXED);
	gf_preempt_conf_t *c = atomic_load_explicit(&current,
						    memory_order_acquire);

	if (_fresh(c, seen, e))
		return c;
	slurm_mutex_lock(&build_lock);
	c = atomic_load_explicit(&current, memory_order_relaxed);
	if (!_fresh(c, seen, e)) {
		gf_preempt_conf_t *n = xmalloc(sizeof(*n));

		n->seen = seen;
		n->engine = e;
		_build(n, e);
		n->older = c;
		atomic_store_explicit(&current, n, memory_order_release);
		log_flag(PRIO, "preempt/gpufair: team_level=%d preempt_scope=%s engine=%s",
			 n->team_level, n->any_team ? "any" : "team",
			 e ? "shared" : "none");
		c = n;
	}
	slurm_mutex_unlock(&build_lock);
	return c;
}

extern void gf_preempt_conf_free(void)
{
	gf_preempt_conf_t *c;

	slurm_mutex_lock(&build_lock);
	c = atomic_exchange(&current, NULL);
	while (c) {
		gf_preempt_conf_t *older = c->older;

		xfree(c);
		c = older;
	}
	slurm_mutex_unlock(&build_lock);
}

/* Core view of a job; caller holds assoc READ. */
extern void gf_preempt_core_job(gpufair_engine_t *e, const gf_preempt_conf_t *c,
				const job_record_t *job, gpufair_job_t *out)
{
	char path[GF_PATH_MAX];
	int32_t team = -1;

	if (job->assoc_ptr && gf_account_path(job->assoc_ptr, path,
					      sizeof(path)))
		team = gpufair_team_id(e, path);
	gf_job_fill(out, job, team, &c->gpus);
}
