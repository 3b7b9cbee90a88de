/*****************************************************************************\
 *  prio_teams.c - which team a job or association belongs to, the teams'
 *  shares, the associations inside the teams, and where the GPUs sit in
 *  the TRES arrays.
 *
 *  A team is the account at depth team_level below root (gf_account_path);
 *  its shares are that account association's. Every association (account
 *  or user, with its own shares) is also the core's association inside
 *  its team, for fair share inside the team (docs/design.md): a user's is
 *  named by its account path and "user" ("user|partition" for a
 *  partition's). The cycle rebuilds assoc id -> team and -> core
 *  association maps each time, so the hot paths (priority_p_set, sprio,
 *  the cycle itself) find a job's with one array read, and beside them
 *  each association's Priority (PriorityWeightAssoc), which sprio may not
 *  read from the record (it runs without the assoc lock from 23.02).
 *
 *  Locks: gfp_shares_after_reconfig takes assoc WRITE (priority_p_reconfig).
 *  The refresh functions run in the cycle thread under { job WRITE,
 *  part READ } and { assoc WRITE, qos READ, tres READ }, and take map_lock
 *  for writing to publish (then conf_mutex, innermost). gfp_job_team_locked
 *  runs wherever a job's priority is computed; its callers hold map_lock
 *  READ (or are the cycle thread) and, to walk the account tree on a miss,
 *  assoc READ.
\*****************************************************************************/

#include <ctype.h>
#include <stdio.h>

#include "src/common/log.h"
#include "src/common/xstring.h"

#include "priority_gpufair.h"

/* Team of an association, through its path below root. Caller holds the
 * assoc READ lock. */
static int32_t _team_of_assoc_locked(const slurmdb_assoc_rec_t *assoc)
{
	char path[GF_PATH_MAX];

	if (!assoc || !gf_account_path(assoc, path, sizeof(path)))
		return -1;
	return gpufair_team_id(gfp.engine, path);
}

/* The core's association of a Slurm association. Caller holds assoc READ. */
static int32_t _core_assoc_locked(const slurmdb_assoc_rec_t *a)
{
	char path[GF_PATH_MAX], user[256];

	if (!a || !gf_account_path(a, path, sizeof(path)))
		return 0;
	if (!a->user)
		return gpufair_assoc_id(gfp.engine, path, NULL);
	if (a->partition && a->partition[0])
		snprintf(user, sizeof(user), "%s|%s", a->user, a->partition);
	else
		snprintf(user, sizeof(user), "%s", a->user);
	return gpufair_assoc_id(gfp.engine, path, user);
}

extern int32_t gfp_job_assoc_locked(const job_record_t *job, bool walk_tree)
{
	if (gfp.assoc_of && job->assoc_id < gfp.team_of_assoc_len &&
	    gfp.assoc_of[job->assoc_id])
		return gfp.assoc_of[job->assoc_id];
	return (walk_tree && job->assoc_ptr) ?
		_core_assoc_locked(job->assoc_ptr) : 0;
}

extern int32_t gfp_job_team_locked(const job_record_t *job, bool walk_tree)
{
	int32_t team = -1;

	if (job->assoc_id < gfp.team_of_assoc_len)
		team = gfp.team_of_assoc[job->assoc_id];
	if (team >= 0)
		return team;
	if (job->assoc_ptr)
		return walk_tree ? _team_of_assoc_locked(job->assoc_ptr) : -1;
	if (job->account && job->account[0]) {
		/* No association (AccountingStorageEnforce without
		 * associations): the account name is the path. */
		char acct[GF_PATH_MAX];
		size_t i;

		for (i = 0; job->account[i] && i + 1 < sizeof(acct); i++)
			acct[i] = (char)tolower((unsigned char)job->account[i]);
		acct[i] = '\0';
		return gpufair_team_id(gfp.engine, acct);
	}
	return -1;
}

typedef struct {
	int32_t *map;
	int32_t *core;
	gf_assoc_prio_t *prio;
	uint32_t len;
	int team_level;
} teams_ctx_t;

static int _max_assoc_id(void *x, void *arg)
{
	slurmdb_assoc_rec_t *a = x;
	uint32_t *max_id = arg;

	if (a->id > *max_id)
		*max_id = a->id;
	return 0;
}

static int _map_assoc(void *x, void *arg)
{
	slurmdb_assoc_rec_t *a = x;
	teams_ctx_t *ctx = arg;
	char path[GF_PATH_MAX];
	int depth = gf_account_path(a, path, sizeof(path));
	int32_t team;

	if (a->id >= ctx->len)
		return 0;
	/* PriorityWeightAssoc: assoc_mgr keeps priority_norm up to date. */
	if (a->usage)
		ctx->prio[a->id].norm = a->usage->priority_norm;
	ctx->prio[a->id].raw = (a->priority < NO_VAL) ? a->priority : 0;
	if (!depth)
		return 0;
	team = gpufair_team_id(gfp.engine, path);
	ctx->map[a->id] = team;
	/* Its own shares inside the team: fairshare=parent as the core's
	 * negative, unset as Slurm's default (1). */
	ctx->core[a->id] = _core_assoc_locked(a);
	if (a->shares_raw == SLURMDB_FS_USE_PARENT)
		gpufair_set_assoc_shares(gfp.engine, ctx->core[a->id], -1);
	else if (a->shares_raw != NO_VAL && a->shares_raw != INFINITE)
		gpufair_set_assoc_shares(gfp.engine, ctx->core[a->id],
					 (double)a->shares_raw);
	/* Team shares come from the account association that is the team
	 * (its depth is the team level, or less for a short path).
	 * SLURMDB_FS_USE_PARENT and unset keep the default. */
	if (!a->user && team >= 0 && depth <= ctx->team_level &&
	    a->shares_raw != SLURMDB_FS_USE_PARENT &&
	    a->shares_raw != NO_VAL && a->shares_raw != INFINITE)
		gpufair_set_shares(gfp.engine, team, (double)a->shares_raw);
	return 0;
}

extern void gfp_refresh_teams_locked(void)
{
	uint32_t max_id = 0;
	teams_ctx_t ctx;

	if (!assoc_mgr_assoc_list)
		return;
	list_for_each(assoc_mgr_assoc_list, _max_assoc_id, &max_id);
	ctx.len = max_id + 1;
	ctx.map = xcalloc(ctx.len, sizeof(int32_t));
	ctx.core = xcalloc(ctx.len, sizeof(int32_t));
	ctx.prio = xcalloc(ctx.len, sizeof(*ctx.prio));
	for (uint32_t i = 0; i < ctx.len; i++)
		ctx.map[i] = -1;
	slurm_mutex_lock(&gfp.conf_mutex);
	ctx.team_level = gfp.team_level;
	slurm_mutex_unlock(&gfp.conf_mutex);
	list_for_each(assoc_mgr_assoc_list, _map_assoc, &ctx);
	/* Associations removed from Slurm are no longer ranked. */
	gpufair_assocs_refreshed(gfp.engine);

	pthread_rwlock_wrlock(&gfp.map_lock);
	xfree(gfp.team_of_assoc);
	xfree(gfp.assoc_of);
	xfree(gfp.assoc_prio);
	gfp.team_of_assoc = ctx.map;
	gfp.assoc_of = ctx.core;
	gfp.assoc_prio = ctx.prio;
	gfp.team_of_assoc_len = ctx.len;
	pthread_rwlock_unlock(&gfp.map_lock);
}

/* assoc_mgr normalises shares one way for Fair Tree (shares / level
 * shares) and another for the other algorithms (their product down the
 * tree), by PriorityFlags; sshare's NormShares shows it. */
static void _normalise_shares(list_t *children)
{
	list_itr_t *it;
	slurmdb_assoc_rec_t *a;

	if (!children)
		return;
	it = list_iterator_create(children);
	while ((a = list_next(it))) {
		assoc_mgr_normalize_assoc_shares(a);
		if (!a->user && a->usage)
			_normalise_shares(a->usage->children_list);
	}
	list_iterator_destroy(it);
}

extern void gfp_shares_after_reconfig(uint16_t flags_before)
{
	assoc_mgr_lock_t locks = { .assoc = WRITE_LOCK };
	uint16_t now = __atomic_load_n(&gfp.flags, __ATOMIC_RELAXED);

	if (!((flags_before ^ now) & PRIORITY_FLAGS_FAIR_TREE))
		return;
	assoc_mgr_lock(&locks);
	if (assoc_mgr_root_assoc && assoc_mgr_root_assoc->usage)
		_normalise_shares(assoc_mgr_root_assoc->usage->children_list);
	assoc_mgr_unlock(&locks);
	info("%s: %s: shares normalised again for the new fair-share algorithm",
	     plugin_type, (now & PRIORITY_FLAGS_FAIR_TREE) ? "Fair Tree" :
	     "classic");
}

extern void gfp_refresh_gpus_locked(void)
{
	gfp_set_billing_weights(gfp_billing_weights_locked());

	pthread_rwlock_wrlock(&gfp.map_lock);
	slurm_mutex_lock(&gfp.conf_mutex);
	gf_gpu_map_build(&gfp.gpus, gfp.describe);
	slurm_mutex_unlock(&gfp.conf_mutex);
	pthread_rwlock_unlock(&gfp.map_lock);
	if ((gfp.gpus.gpu_pos < 0) != gfp.warned_no_gpu_tres) {
		gfp.warned_no_gpu_tres = (gfp.gpus.gpu_pos < 0);
		if (gfp.warned_no_gpu_tres)
			info("%s: no gres/gpu TRES (add it to AccountingStorageTRES); every job costs 0 GPU-hours",
			     plugin_type);
	}
	/* Weighted like the jobs' GPUs: an entitlement is a share of it. */
	if (gfp.gpus.gpu_pos >= 0)
		gpufair_set_cluster_gpus(gfp.engine,
					 gf_cluster_gpus(&gfp.gpus));
}

extern void gfp_teams_free(void)
{
	pthread_rwlock_wrlock(&gfp.map_lock);
	xfree(gfp.team_of_assoc);
	xfree(gfp.assoc_of);
	xfree(gfp.assoc_prio);
	gfp.team_of_assoc_len = 0;
	xfree(gfp.reports);
	gfp.nreports = 0;
	xfree(gfp.assoc_reports);
	gfp.nassoc_reports = 0;
	pthread_rwlock_unlock(&gfp.map_lock);
}
