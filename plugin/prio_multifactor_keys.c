/*****************************************************************************\
 *  prio_multifactor_keys.c - what priority/gpufair does with each of
 *  priority/multifactor's slurm.conf keys and PriorityFlags, in one table.
 *
 *  An admin who swaps PriorityType=priority/multifactor for gpufair keeps
 *  the rest of slurm.conf. Every key and flag multifactor reads is a row
 *  here, with what gpufair does with it:
 *    WORKS        as in multifactor (the composition is the core's,
 *                 include/gpufair/priority.h);
 *    DIFFERENT    accepted, but it means something else under gpufair (the
 *                 row says what): logged at start and on reconfigure;
 *    NOT_APPLIES  accepted and harmless, it concerns something gpufair does
 *                 not do: logged likewise;
 *    REFUSED      slurmctld refuses to start (a reconfigure keeps the
 *                 previous settings), with the key, its value, why and what
 *                 to use instead.
 *  README.md's table of keys and flags says the same for the admin.
 *
 *  Locks: none; reads slurm_conf, which the callers (init, reconfigure)
 *  see stable.
\*****************************************************************************/

#include <stdio.h>
#include <string.h>

#include "src/common/log.h"
#include "src/common/macros.h"

#include "priority_gpufair.h"

typedef enum {
	GF_MF_WORKS,
	GF_MF_DIFFERENT,
	GF_MF_NOT_APPLIES,
	GF_MF_REFUSED,
} gf_mf_verdict_t;

/* Whether a key is in use, and its value as slurm.conf gave it. */
typedef bool (*gf_mf_in_use_t)(char *val, size_t len);

typedef struct {
	const char *name;       /* slurm.conf key, or PriorityFlags=<FLAG> */
	uint16_t flag;          /* a PriorityFlags bit */
	const uint32_t *weight; /* a weight: in use when not 0 */
	char *const *text;      /* a string key: in use when not empty */
	gf_mf_in_use_t in_use;  /* any other key */
	gf_mf_verdict_t verdict;
	const char *what;       /* what gpufair does; for REFUSED why, and
				 * what to use instead */
} gf_mf_key_t;

static bool _favor_small(char *v, size_t n)
{
	snprintf(v, n, "%s", slurm_conf.priority_favor_small ? "YES" : "NO");
	return slurm_conf.priority_favor_small;
}
static bool _site_plugin(char *v, size_t n)
{
	const char *p = slurm_conf.site_factor_plugin;

	/* site_factor/none is Slurm's default: nothing to say then. */
	snprintf(v, n, "%s", p ? p : "");
	return p && p[0] && strcmp(p, "site_factor/none");
}
static bool _damping(char *v, size_t n)
{
	snprintf(v, n, "%u", slurm_conf.fs_dampening_factor);
	return slurm_conf.fs_dampening_factor > 1;
}

/*
 * One row per key and flag of priority/multifactor (22.05 and 24.11:
 * _internal_setup, set_priority_factors, _get_priority_internal and the
 * PRIORITY_FLAGS_* tests). PriorityDecayHalfLife, PriorityCalcPeriod,
 * PriorityMaxAge and PriorityUsageResetPeriod go to the core with the
 * weights (gfp_knobs_from_conf) and work as in multifactor on the teams'
 * usage; they need no row.
 */
static const gf_mf_key_t keys[] = {
	{ .name = "PriorityWeightAge", .weight = &slurm_conf.priority_weight_age,
	  .verdict = GF_MF_WORKS,
	  .what = "age since the job's accrue time, up to PriorityMaxAge" },
	{ .name = "PriorityWeightFairshare", .weight = &slurm_conf.priority_weight_fs,
	  .verdict = GF_MF_DIFFERENT,
	  .what = "teams are ranked by classic 2^(-U/S) over decayed GPU-hours (their account at team_level), times 2^(-bait penalty); inside a team its users and sub-accounts by Fair Tree (or NO_FAIR_TREE, DEPTH_OBLIVIOUS) from their own usage, within the team's band below its factor" },
	{ .name = "PriorityWeightJobSize", .weight = &slurm_conf.priority_weight_js,
	  .verdict = GF_MF_DIFFERENT,
	  .what = "job size in GPUs (GPUs asked for / GPUs in the cluster), not nodes and CPUs" },
	{ .name = "PriorityWeightPartition", .weight = &slurm_conf.priority_weight_part,
	  .verdict = GF_MF_WORKS,
	  .what = "partition PriorityJobFactor, normalised; one priority per partition for a job in several" },
	{ .name = "PriorityWeightQOS", .weight = &slurm_conf.priority_weight_qos,
	  .verdict = GF_MF_WORKS,
	  .what = "QOS Priority, normalised" },
	{ .name = "PriorityWeightAssoc", .weight = &slurm_conf.priority_weight_assoc,
	  .verdict = GF_MF_WORKS,
	  .what = "association Priority, normalised" },
	{ .name = "PriorityWeightTRES", .text = &slurm_conf.priority_weight_tres,
	  .verdict = GF_MF_WORKS,
	  .what = "each TRES over the partition's total, weighted; per partition" },
	{ .name = "PriorityFavorSmall", .in_use = _favor_small,
	  .verdict = GF_MF_WORKS,
	  .what = "inverts the job size factor (in GPUs)" },
	{ .name = "PrioritySiteFactorPlugin", .in_use = _site_plugin,
	  .verdict = GF_MF_WORKS,
	  .what = "called at submit and every cycle, as multifactor does; the site factor is added to the priority" },
	{ .name = "FairShareDampeningFactor", .in_use = _damping,
	  .verdict = GF_MF_REFUSED,
	  .what = "gpufair's team fair share has no dampening (the bait penalty acts on the same factor); remove it or set FairShareDampeningFactor=1" },
	{ .name = "PriorityFlags=ACCRUE_ALWAYS", .flag = PRIORITY_FLAGS_ACCRUE_ALWAYS,
	  .verdict = GF_MF_WORKS,
	  .what = "age accrues from submission, holds and dependencies ignored" },
	{ .name = "PriorityFlags=CALCULATE_RUNNING", .flag = PRIORITY_FLAGS_CALCULATE_RUNNING,
	  .verdict = GF_MF_WORKS,
	  .what = "running jobs are re-prioritised every cycle too, and sprio lists them" },
	{ .name = "PriorityFlags=SMALL_RELATIVE_TO_TIME", .flag = PRIORITY_FLAGS_SIZE_RELATIVE,
	  .verdict = GF_MF_WORKS,
	  .what = "job size per minute of time limit (in GPUs)" },
	{ .name = "PriorityFlags=INCR_ONLY", .flag = PRIORITY_FLAGS_INCR_ONLY,
	  .verdict = GF_MF_WORKS,
	  .what = "a cycle never lowers a pending job's priority" },
	{ .name = "PriorityFlags=NO_NORMAL_ASSOC", .flag = PRIORITY_FLAGS_NO_NORMAL_ASSOC,
	  .verdict = GF_MF_WORKS,
	  .what = "association Priority used raw" },
	{ .name = "PriorityFlags=NO_NORMAL_PART", .flag = PRIORITY_FLAGS_NO_NORMAL_PART,
	  .verdict = GF_MF_WORKS,
	  .what = "partition PriorityJobFactor used raw" },
	{ .name = "PriorityFlags=NO_NORMAL_QOS", .flag = PRIORITY_FLAGS_NO_NORMAL_QOS,
	  .verdict = GF_MF_WORKS,
	  .what = "QOS Priority used raw" },
	{ .name = "PriorityFlags=NO_NORMAL_TRES", .flag = PRIORITY_FLAGS_NO_NORMAL_TRES,
	  .verdict = GF_MF_WORKS,
	  .what = "TRES counts used raw, not over the partition's" },
	{ .name = "PriorityFlags=MAX_TRES", .flag = PRIORITY_FLAGS_MAX_TRES,
	  .verdict = GF_MF_DIFFERENT,
	  .what = "Slurm's billing TRES (limits on billing, sacct) follow it as always; gpufair's team usage counts each GPU once at its type's weight, which it does not change" },
	{ .name = "PriorityFlags=FAIR_TREE (Slurm's default)", .flag = PRIORITY_FLAGS_FAIR_TREE,
	  .verdict = GF_MF_DIFFERENT,
	  .what = "Fair Tree ranks the users and sub-accounts inside each team (the team's account as its root); the teams themselves are ranked by classic fair share" },
	{ .name = "PriorityFlags=NO_FAIR_TREE", .flag = 0,
	  .verdict = GF_MF_DIFFERENT,
	  .what = "classic fair share inside each team (the team's account as its root), as between the teams" },
	{ .name = "PriorityFlags=DEPTH_OBLIVIOUS", .flag = PRIORITY_FLAGS_DEPTH_OBLIVIOUS,
	  .verdict = GF_MF_DIFFERENT,
	  .what = "depth-oblivious fair share inside each team (the team's account as its root); classic between the teams" },
};

/* NO_FAIR_TREE is the absence of the FAIR_TREE bit without
 * DEPTH_OBLIVIOUS (read_config.c): a row of its own. */
static bool _row_in_use(const gf_mf_key_t *k, char *val, size_t len)
{
	uint16_t f = slurm_conf.priority_flags;

	val[0] = '\0';
	if (k->in_use)
		return k->in_use(val, len);
	if (k->weight) {
		snprintf(val, len, "%u", *k->weight);
		return *k->weight != 0;
	}
	if (k->text) {
		snprintf(val, len, "%s", *k->text ? *k->text : "");
		return *k->text && (*k->text)[0];
	}
	if (!k->flag)
		return !(f & (PRIORITY_FLAGS_FAIR_TREE |
			      PRIORITY_FLAGS_DEPTH_OBLIVIOUS));
	return (f & k->flag) != 0;
}

static void _append(char *err, size_t len, const char *text)
{
	size_t used;

	if (!len)
		return;
	used = strlen(err);
	if (used + 1 < len)
		snprintf(err + used, len - used, "%s%s", used ? "; " : "",
			 text);
}

extern bool gfp_multifactor_keys_ok(char *err, size_t len)
{
	uint16_t unknown = slurm_conf.priority_flags & ~GF_PRIORITY_FLAGS_KNOWN;
	char val[256], one[1024];
	int refused = 0;

	if (len)
		err[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		if (keys[i].verdict != GF_MF_REFUSED ||
		    !_row_in_use(&keys[i], val, sizeof(val)))
			continue;
		snprintf(one, sizeof(one), "%s=%s is not supported by priority/gpufair: %s",
			 keys[i].name, val, keys[i].what);
		_append(err, len, one);
		refused++;
	}
	if (unknown) {
		snprintf(one, sizeof(one), "PriorityFlags=0x%x: flag bits 0x%x are unknown to priority/gpufair (built for Slurm %s); remove them",
			 slurm_conf.priority_flags, unknown, SLURM_VERSION_STRING);
		_append(err, len, one);
		refused++;
	}
	return !refused;
}

extern void gfp_multifactor_keys_log(void)
{
	char val[256];

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		const gf_mf_key_t *k = &keys[i];

		if (!_row_in_use(k, val, sizeof(val)))
			continue;
		if (k->verdict == GF_MF_DIFFERENT ||
		    k->verdict == GF_MF_NOT_APPLIES)
			info("%s: %s%s%s %s: %s", plugin_type, k->name,
			     val[0] ? "=" : "", val,
			     k->verdict == GF_MF_DIFFERENT ?
				     "works differently under gpufair" :
				     "has no effect under gpufair",
			     k->what);
		else if (k->verdict == GF_MF_WORKS)
			log_flag(PRIO, "%s: %s%s%s as in multifactor: %s",
				 plugin_type, k->name, val[0] ? "=" : "", val,
				 k->what);
	}
}
