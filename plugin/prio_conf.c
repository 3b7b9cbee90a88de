/*****************************************************************************\
 *  prio_conf.c - priority/gpufair's configuration and state file.
 *
 *  The core parses and validates PriorityParameters and the standard
 *  Priority* keys; here they are gathered from slurm_conf and the partitions
 *  (TRESBillingWeights), handed over, and the effective configuration is
 *  logged. What gpufair does with each of multifactor's keys and flags, and
 *  which it refuses, is decided in prio_multifactor_keys.c, checked here
 *  before anything is applied. PriorityWeightTRES is parsed by Slurm's own
 *  parser, as multifactor does. The state file is loaded at init and saved
 *  after each cycle and at fini.
 *
 *  Locks: gfp_reconfigure() runs from priority_p_reconfig() (Slurm 22.05: no
 *  lock held; 24.11: the config WRITE lock), gfp_set_billing_weights() from
 *  the cycle (job WRITE, part READ, assoc_mgr locks). Both take
 *  reconf_mutex, so the core is never reconfigured twice at once and the
 *  billing weights are never freed under a reader; then conf_mutex inside
 *  gfp_after_config(). The state file functions take conf_mutex only.
\*****************************************************************************/

#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "src/common/log.h"
#include "src/common/slurm_protocol_api.h"
#include "src/common/xstring.h"

#include "priority_gpufair.h"

#define GF_STATE_FILE "gpufair.state"

static pthread_mutex_t reconf_mutex = PTHREAD_MUTEX_INITIALIZER;
static char *billing_weights; /* in effect in the core; reconf_mutex */
/* PriorityWeightTRES by TRES position, in effect in the core; reconf_mutex
 * (init runs before any other thread). */
static double *tres_weights;
static int tres_weights_cnt;

static int _reset_period(uint16_t p)
{
	switch (p) {
	case PRIORITY_RESET_NOW: return GPUFAIR_RESET_NOW;
	case PRIORITY_RESET_DAILY: return GPUFAIR_RESET_DAILY;
	case PRIORITY_RESET_WEEKLY: return GPUFAIR_RESET_WEEKLY;
	case PRIORITY_RESET_MONTHLY: return GPUFAIR_RESET_MONTHLY;
	case PRIORITY_RESET_QUARTERLY: return GPUFAIR_RESET_QUARTERLY;
	case PRIORITY_RESET_YEARLY: return GPUFAIR_RESET_YEARLY;
	default: return GPUFAIR_RESET_NONE;
	}
}

/* The PriorityFlags that change how a priority is composed, in the core's
 * terms: NO_NORMAL_*, SMALL_RELATIVE_TO_TIME, and the algorithm of fair
 * share inside a team (Fair Tree unless NO_FAIR_TREE or DEPTH_OBLIVIOUS;
 * read_config.c clears FAIR_TREE for both). */
static uint32_t _composition_flags(uint16_t f)
{
	return ((f & PRIORITY_FLAGS_NO_NORMAL_ASSOC) ?
			GPUFAIR_PRIO_NO_NORMAL_ASSOC : 0) |
	       ((f & PRIORITY_FLAGS_NO_NORMAL_PART) ?
			GPUFAIR_PRIO_NO_NORMAL_PART : 0) |
	       ((f & PRIORITY_FLAGS_NO_NORMAL_QOS) ?
			GPUFAIR_PRIO_NO_NORMAL_QOS : 0) |
	       ((f & PRIORITY_FLAGS_NO_NORMAL_TRES) ?
			GPUFAIR_PRIO_NO_NORMAL_TRES : 0) |
	       ((f & PRIORITY_FLAGS_SIZE_RELATIVE) ?
			GPUFAIR_PRIO_SIZE_RELATIVE : 0) |
	       ((f & PRIORITY_FLAGS_DEPTH_OBLIVIOUS) ?
			GPUFAIR_PRIO_DEPTH_OBLIVIOUS : 0) |
	       (!(f & (PRIORITY_FLAGS_FAIR_TREE |
		       PRIORITY_FLAGS_DEPTH_OBLIVIOUS)) ?
			GPUFAIR_PRIO_NO_FAIR_TREE : 0);
}

/*
 * PriorityWeightTRES as multifactor reads it (slurm_get_tres_weight_array,
 * by TRES position, with unit suffixes). An error names the key and value;
 * Slurm's parser has logged which entry it could not take.
 */
static bool _read_tres_weights(double **out, int *cnt, char *err,
			       size_t len)
{
	char *text = slurm_conf.priority_weight_tres;
	int n = &slurmctld_tres_cnt ? slurmctld_tres_cnt : 0;

	*out = NULL;
	*cnt = 0;
	if (!text || !text[0])
		return true;
	if (n > 0)
		*out = slurm_get_tres_weight_array(text, n, false);
	if (!*out) {
		snprintf(err, len, "PriorityWeightTRES='%s': not a list of TRES=weight over configured TRES (AccountingStorageTRES); accepted e.g. CPU=1000,Mem=2000G,GRES/gpu=3000",
			 text);
		return false;
	}
	*cnt = n;
	return true;
}

extern void gfp_knobs_from_conf(gpufair_knobs_t *k, const char *billing)
{
	memset(k, 0, sizeof(*k));
	k->decay_half_life_s = slurm_conf.priority_decay_hl;
	k->calc_period_s = slurm_conf.priority_calc_period;
	k->max_age_s = slurm_conf.priority_max_age;
	k->usage_reset_period = _reset_period(slurm_conf.priority_reset_period);
	k->weight_age = slurm_conf.priority_weight_age;
	k->weight_fairshare = slurm_conf.priority_weight_fs;
	k->weight_job_size = slurm_conf.priority_weight_js;
	k->weight_partition = slurm_conf.priority_weight_part;
	k->weight_qos = slurm_conf.priority_weight_qos;
	k->favor_small = slurm_conf.priority_favor_small ? 1 : 0;
	k->tres_billing_weights = billing;
	k->knobs_set = 1;
	k->weight_assoc = slurm_conf.priority_weight_assoc;
	k->tres_weights = tres_weights;
	k->tres_cnt = tres_weights_cnt;
	k->flags = _composition_flags(slurm_conf.priority_flags);
	k->preempt_type = slurm_conf.preempt_type;
}

extern gpufair_engine_t *gfp_engine_from_conf(char *err, size_t len)
{
	gpufair_knobs_t k;

	if (!gfp_multifactor_keys_ok(err, len) ||
	    !_read_tres_weights(&tres_weights, &tres_weights_cnt, err, len))
		return NULL;
	/* The first cycle reads the partitions' TRESBillingWeights. */
	gfp_knobs_from_conf(&k, NULL);
	return gpufair_engine_new(slurm_conf.priority_params, &k, err, len);
}

/* Caller holds reconf_mutex. what: for the error ("reconfigure rejected"),
 * done: for the log line of the new configuration. */
static bool _reconfigure_locked(const char *billing, const char *what,
				const char *done)
{
	gpufair_knobs_t k;
	char err[4096];

	gfp_knobs_from_conf(&k, billing);
	if (gpufair_engine_reconfigure(gfp.engine, slurm_conf.priority_params,
				       &k, err, sizeof(err)) != GPUFAIR_OK) {
		error("%s: %s rejected (PriorityParameters=%s, TRESBillingWeights=%s): %s; keeping the previous settings",
		      plugin_type, what,
		      slurm_conf.priority_params ? slurm_conf.priority_params
						 : "",
		      billing ? billing : "", err);
		return false;
	}
	gfp_after_config(done);
	return true;
}

/* slurm.conf was re-read: multifactor's keys are checked and
 * PriorityWeightTRES parsed before the core sees anything, so a refused key
 * or a bad value leaves every previous setting in force. */
extern void gfp_reconfigure(void)
{
	double *old_w, *new_w = NULL;
	int old_n, new_n = 0;
	char err[4096];

	slurm_mutex_lock(&reconf_mutex);
	if (!gfp_multifactor_keys_ok(err, sizeof(err)) ||
	    !_read_tres_weights(&new_w, &new_n, err, sizeof(err))) {
		error("%s: reconfigure rejected: %s; keeping the previous settings",
		      plugin_type, err);
		slurm_mutex_unlock(&reconf_mutex);
		return;
	}
	old_w = tres_weights;
	old_n = tres_weights_cnt;
	tres_weights = new_w;
	tres_weights_cnt = new_n;
	if (_reconfigure_locked(billing_weights, "reconfigure",
				"reconfigured")) {
		xfree(old_w);
	} else {
		xfree(tres_weights);
		tres_weights = old_w;
		tres_weights_cnt = old_n;
	}
	slurm_mutex_unlock(&reconf_mutex);
	gf_site_factor_reconfig();
}

extern void gfp_set_billing_weights(char *weights)
{
	slurm_mutex_lock(&reconf_mutex);
	if (!xstrcmp(weights, billing_weights) ||
	    !_reconfigure_locked(weights, "TRESBillingWeights",
				 "TRESBillingWeights changed")) {
		xfree(weights);
	} else {
		xfree(billing_weights);
		billing_weights = weights;
	}
	slurm_mutex_unlock(&reconf_mutex);
}

static int _first_billing(void *x, void *arg)
{
	part_record_t *part = x;
	char **out = arg;

	if (!*out && part->billing_weights_str && part->billing_weights_str[0])
		*out = xstrdup(part->billing_weights_str);
	return 0;
}

extern char *gfp_billing_weights_locked(void)
{
	char *w = NULL;

	if (default_part_loc && default_part_loc->billing_weights_str &&
	    default_part_loc->billing_weights_str[0])
		return xstrdup(default_part_loc->billing_weights_str);
	if (part_list)
		list_for_each(part_list, _first_billing, &w);
	return w;
}

extern void gfp_after_config(const char *why)
{
	char desc[sizeof(gfp.describe)], file[PATH_MAX];
	uint16_t flags;

	if (gpufair_config_describe(gfp.engine, desc, sizeof(desc)) !=
	    GPUFAIR_OK)
		desc[0] = '\0';
	slurm_mutex_lock(&gfp.conf_mutex);
	memcpy(gfp.describe, desc, sizeof(desc));
	gfp.team_level = (int)gf_describe_long(desc, "team_level", 1);
	gf_describe_str(desc, "state_file", file, sizeof(file));
	if (file[0])
		snprintf(gfp.state_path, sizeof(gfp.state_path), "%s", file);
	else
		snprintf(gfp.state_path, sizeof(gfp.state_path), "%s/%s",
			 slurm_conf.state_save_location ?
			 slurm_conf.state_save_location : ".",
			 GF_STATE_FILE);
	flags = slurm_conf.priority_flags;
	__atomic_store_n(&gfp.flags, flags, __ATOMIC_RELAXED);
	__atomic_store_n(&gfp.rank_by, gf_rank_by(desc), __ATOMIC_RELAXED);
	__atomic_store_n(&gfp.tres_weighted, tres_weights_cnt > 0,
			 __ATOMIC_RELAXED);
	slurm_mutex_unlock(&gfp.conf_mutex);

	for (char *p = desc; *p; p++)
		if (*p == '\n')
			*p = ' ';
	info("%s: %s: core %s, state %s, config: %s", plugin_type, why,
	     gpufair_version(), gfp.state_path, desc);
	gfp_multifactor_keys_log();
}

/* A corrupt file is kept aside and we start fresh. */
extern void gfp_load_state(void)
{
	char err[1024];
	struct stat st;
	int rc;

	if (stat(gfp.state_path, &st) < 0) {
		if (errno == ENOENT)
			info("%s: no state file %s, starting fresh",
			     plugin_type, gfp.state_path);
		else
			error("%s: cannot stat state file %s: %m; starting fresh",
			      plugin_type, gfp.state_path);
		return;
	}
	rc = gpufair_state_load(gfp.engine, gfp.state_path, err, sizeof(err));
	if (rc == GPUFAIR_OK) {
		info("%s: loaded state from %s (%d teams)", plugin_type,
		     gfp.state_path, gpufair_team_count(gfp.engine));
	} else if (rc == GPUFAIR_ERR_STATE) {
		char aside[PATH_MAX + 64];

		snprintf(aside, sizeof(aside), "%s.corrupt-%ld",
			 gfp.state_path, (long)time(NULL));
		if (rename(gfp.state_path, aside) < 0)
			error("%s: CORRUPT state file %s (%s) could not be renamed to %s: %m",
			      plugin_type, gfp.state_path, err, aside);
		else
			error("%s: CORRUPT state file %s: %s. Kept as %s for inspection; STARTING WITH EMPTY USAGE AND PENALTIES",
			      plugin_type, gfp.state_path, err, aside);
	} else {
		error("%s: cannot read state file %s: %s; starting fresh",
		      plugin_type, gfp.state_path, err);
	}
}

extern void gfp_save_state(void)
{
	char err[1024], path[PATH_MAX];

	if (!gfp.engine)
		return;
	slurm_mutex_lock(&gfp.conf_mutex);
	memcpy(path, gfp.state_path, sizeof(path));
	slurm_mutex_unlock(&gfp.conf_mutex);
	if (gpufair_state_save(gfp.engine, path, err, sizeof(err)) !=
	    GPUFAIR_OK)
		error("%s: saving state to %s failed: %s", plugin_type, path,
		      err);
}

extern double *gfp_tres_weights_dup(int *n)
{
	double *w = NULL;

	slurm_mutex_lock(&reconf_mutex);
	*n = tres_weights_cnt;
	if (tres_weights_cnt > 0) {
		w = xcalloc(tres_weights_cnt, sizeof(double));
		memcpy(w, tres_weights, tres_weights_cnt * sizeof(double));
	}
	slurm_mutex_unlock(&reconf_mutex);
	return w;
}

extern void gfp_conf_free(void)
{
	slurm_mutex_lock(&reconf_mutex);
	xfree(billing_weights);
	xfree(tres_weights);
	tres_weights_cnt = 0;
	slurm_mutex_unlock(&reconf_mutex);
}
