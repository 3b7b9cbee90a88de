/*****************************************************************************\
 *  prio_sshare.c - what sshare shows: each association's own usage and
 *  fair share, in the fields of its usage record that multifactor fills.
 *
 *  gpufair writes these fields and no other (plugin/README.md; the usage
 *  Slurm's limits read is kept elsewhere):
 *    usage_raw    RawUsage: the association's own decayed, weighted
 *                 GPU-seconds (a team's account: the team's, jump prices
 *                 included; root: all the teams').
 *    usage_norm   NormUsage: usage_raw over root's.
 *    usage_efctv  EffectvUsage. Fair Tree: usage over its parent's, as
 *                 multifactor keeps it (a team: over all teams'). Classic
 *                 and depth-oblivious: the value for which Slurm's
 *                 2^(-EffectvUsage/NormShares), which sshare prints as
 *                 FairShare (priority_p_calc_fs_factor), is fs_factor.
 *    fs_factor    FairShare (Fair Tree prints it for users only): what the
 *                 association's jobs get, its team's fair share combined
 *                 with its place inside the team (docs/design.md).
 *    level_fs     LevelFS (Fair Tree): S/U inside the team; a team's
 *                 account: among the teams, -1/log2 of its effective
 *                 factor, which orders the teams as they are ranked.
 *  NormShares (shares_norm) stays assoc_mgr's.
 *
 *  Entry points and their locks:
 *  priority_p_set_assoc_usage()  assoc lock held by the caller
 *              (assoc_mgr_get_shares for sshare, job_mgr's QOS usage
 *              threshold); we take map_lock READ.
 *  priority_p_calc_fs_factor()   pure; sshare calls it too, outside
 *              slurmctld.
 *  gfp_write_assoc_usage_locked() the cycle, under assoc WRITE.
\*****************************************************************************/

#include <math.h>

#include "src/common/log.h"

#include "priority_gpufair.h"

/* EffectvUsage for which Slurm's 2^(-EffectvUsage/NormShares) is fs. */
static long double _usage_efctv_for(double fs, long double shares_norm,
				    long double usage_norm)
{
	long double eff;

	if (fs > 0 && shares_norm > 0)
		eff = -log2l((long double)fs) * shares_norm;
	else if (shares_norm > 0)
		eff = 64.0L * shares_norm; /* 2^-64: as good as 0 */
	else
		eff = usage_norm; /* sshare prints 0 for NormShares 0 anyway */
	return (eff > 0) ? eff : 0; /* never -0 */
}

/* The core's report of an association, or NULL. Caller holds map_lock
 * READ or is the cycle thread. */
static const gpufair_assoc_report_t *_report_of(const slurmdb_assoc_rec_t *a)
{
	int32_t id = 0;

	if (gfp.assoc_of && a->id < gfp.team_of_assoc_len)
		id = gfp.assoc_of[a->id];
	return (id > 0 && id <= gfp.nassoc_reports) ?
		&gfp.assoc_reports[id - 1] : NULL;
}

/* One association's record from its report. */
static void _fill(slurmdb_assoc_rec_t *a, const gpufair_assoc_report_t *r)
{
	slurmdb_assoc_usage_t *u = a->usage;
	uint16_t flags = __atomic_load_n(&gfp.flags, __ATOMIC_RELAXED);

	u->usage_raw = (long double)r->usage_gpu_s;
	u->usage_norm = gfp.usage_total > 0 ?
		fminl(1.0L, (long double)(r->usage_gpu_s / gfp.usage_total)) :
		0;
	if (flags & PRIORITY_FLAGS_FAIR_TREE)
		u->usage_efctv = (long double)r->usage_efctv;
	else
		u->usage_efctv = _usage_efctv_for(r->fairshare, u->shares_norm,
						  u->usage_norm);
	u->fs_factor = r->fairshare;
	u->level_fs = (long double)r->level_fs;
}

static int _write_usage(void *x, void *arg)
{
	slurmdb_assoc_rec_t *a = x;
	const gpufair_assoc_report_t *r;

	(void)arg;
	if (a->usage && a != assoc_mgr_root_assoc && (r = _report_of(a)))
		_fill(a, r);
	return 0;
}

extern void gfp_write_assoc_usage_locked(void)
{
	if (!assoc_mgr_assoc_list)
		return;
	if (assoc_mgr_root_assoc && assoc_mgr_root_assoc->usage) {
		assoc_mgr_root_assoc->usage->usage_raw =
			(long double)gfp.usage_total;
		assoc_mgr_root_assoc->usage->usage_norm = 1.0L;
		assoc_mgr_root_assoc->usage->usage_efctv = 1.0L;
	}
	list_for_each(assoc_mgr_assoc_list, _write_usage, NULL);
}

extern GF_EXPORT void priority_p_set_assoc_usage(slurmdb_assoc_rec_t *assoc)
{
	const gpufair_assoc_report_t *r;

	if (!assoc || !assoc->usage)
		return;
	pthread_rwlock_rdlock(&gfp.map_lock);
	if ((r = _report_of(assoc))) {
		_fill(assoc, r);
	} else {
		/* New since the last cycle: nothing used yet. */
		assoc->usage->usage_norm = 0;
		assoc->usage->usage_efctv = 0;
	}
	pthread_rwlock_unlock(&gfp.map_lock);
}

/* Slurm's classic formula; with the EffectvUsage we publish it gives the
 * association's fair share (classic and depth-oblivious). */
extern GF_EXPORT double priority_p_calc_fs_factor(long double usage_efctv,
						  long double shares_norm)
{
	if (usage_efctv != usage_efctv || usage_efctv < 0 ||
	    fabsl(usage_efctv - (long double)NO_VAL) < 1e-6L)
		return 0.0;
	if (shares_norm <= 0 || shares_norm != shares_norm ||
	    fabsl(shares_norm - (long double)NO_VAL) < 1e-6L)
		return 0.0;
	return (double)powl(2.0L, -(usage_efctv / shares_norm));
}
