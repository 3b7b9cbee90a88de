/*****************************************************************************\
 *  slurm_compat.h - every difference between the Slurm releases gpufair is
 *  built for, in one place. The rest of plugin/ is version-free.
 *
 *  For 22.05.8 (Debian 12) and 24.11.5 (Debian 13). What the other releases
 *  change is listed in plugin/README.md; a release is only claimed once it
 *  was built and run.
 *
 *  Include this first (after config.h, which the build forces in): it
 *  brings in the headers whose path moved, so a shim includes
 *  "slurm_compat.h" instead of them.
\*****************************************************************************/
#ifndef GPUFAIR_SLURM_COMPAT_H
#define GPUFAIR_SLURM_COMPAT_H

#include "slurm/slurm.h"
#include "slurm/slurmdb.h"
#include "slurm/slurm_version.h"

#define GF_SLURM_AT_LEAST(major, minor) \
	(SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(major, minor, 0))

/* 23.02 moved the plugin interfaces to src/interfaces/. */
#if __has_include("src/interfaces/priority.h")
#include "src/interfaces/priority.h"
#include "src/interfaces/preempt.h"
#else
#include "src/common/slurm_priority.h"
#include "src/slurmctld/preempt.h"
#endif

#include "src/common/list.h"
#include "src/common/xmalloc.h"
#include "src/slurmctld/slurmctld.h"

/*
 * The site factor plugin interface (PrioritySiteFactorPlugin), which the
 * priority plugin drives as multifactor does: 23.02 moved it to
 * src/interfaces/ and renamed init/fini; 24.05 dropped its reconfig (23.11
 * re-execs slurmctld on reconfigure).
 */
#if __has_include("src/interfaces/site_factor.h")
#include "src/interfaces/site_factor.h"
#define gf_site_factor_init() site_factor_g_init()
#define gf_site_factor_fini() site_factor_g_fini()
#else
#include "src/common/site_factor.h"
#define gf_site_factor_init() site_factor_plugin_init()
#define gf_site_factor_fini() site_factor_plugin_fini()
#endif
#if GF_SLURM_AT_LEAST(24, 5)
#define gf_site_factor_reconfig() ((void)0)
#else
#define gf_site_factor_reconfig() site_factor_g_reconfig()
#endif

/*
 * sprio's private data (PrivateData=jobs): multifactor lets a user see
 * another user's job when it is an operator, a coordinator of the job's
 * account, or (MCS PrivateData) shares the job's MCS label. 23.02 moved the
 * MCS interface to src/interfaces/ and gave the coordinator test an
 * "already locked" argument (we hold no assoc_mgr user lock: false; it
 * takes user READ itself, after the assoc and QOS READ locks we may hold,
 * which is assoc_mgr's lock order).
 */
#if __has_include("src/interfaces/mcs.h")
#include "src/interfaces/mcs.h"
#else
#include "src/common/slurm_mcs.h"
#endif
#if GF_SLURM_AT_LEAST(23, 2)
#define gf_is_acct_coord(uid, acct) \
	assoc_mgr_is_user_acct_coord(acct_db_conn, (uid), (acct), false)
#else
#define gf_is_acct_coord(uid, acct) \
	assoc_mgr_is_user_acct_coord(acct_db_conn, (uid), (acct))
#endif

/* 23.02 named the list types list_t / list_itr_t (24.11 dropped List),
 * and made a job's details an anonymous struct, job_details_t. */
#if !GF_SLURM_AT_LEAST(23, 2)
typedef struct xlist list_t;
typedef struct listIterator list_itr_t;
typedef struct job_details job_details_t;
#endif

/*
 * A job's cached priority breakdown (job_ptr->prio_factors) and one row of
 * sprio's answer. Up to 22.05 both are a priority_factors_object_t; from
 * 23.02 the job keeps a priority_factors_t and sprio's row is a wrapper
 * {account, partition, qos, job id, user, direct_prio, prio_factors *}.
 * The breakdown's fields (priority_age ... nice) are the same in both.
 */
#if GF_SLURM_AT_LEAST(23, 2)
typedef priority_factors_t gf_job_factors_t;

/* The breakdown inside a row, allocated on first use. */
static inline gf_job_factors_t *gf_row_factors(priority_factors_object_t *row)
{
	if (!row->prio_factors)
		row->prio_factors = xmalloc(sizeof(*row->prio_factors));
	return row->prio_factors;
}

/* Rows point at the job's account and QOS names and the partition's name,
 * which live while the caller holds the job and part READ locks (it sends
 * the answer before releasing them): they are not freed with the row. */
static inline void gf_row_names(priority_factors_object_t *row, char *account,
				char *qos)
{
	row->account = account;
	row->qos = qos;
}

/* The row owns its breakdown and the breakdown's TRES arrays (the names
 * are packed from assoc_mgr's). */
static inline void gf_row_free(void *x)
{
	priority_factors_object_t *row = x;

	if (row && row->prio_factors) {
		xfree(row->prio_factors->priority_tres);
		xfree(row->prio_factors->tres_weights);
		xfree(row->prio_factors);
	}
	xfree(row);
}
#else
typedef priority_factors_object_t gf_job_factors_t;

static inline gf_job_factors_t *gf_row_factors(priority_factors_object_t *row)
{
	return row;
}

static inline void gf_row_names(priority_factors_object_t *row, char *account,
				char *qos)
{
	(void)row;
	(void)account;
	(void)qos;
}

/* The row owns its TRES arrays; the names are borrowed. */
static inline void gf_row_free(void *x)
{
	priority_factors_object_t *row = x;

	if (row) {
		xfree(row->priority_tres);
		xfree(row->tres_weights);
	}
	xfree(row);
}
#endif

/*
 * priority_p_get_priority_factors_list(): up to 24.04 it gets sprio's
 * request (job, user and partition filters) and takes its own locks; from
 * 23.02 the caller holds { job, node, part READ } and assoc_mgr QOS READ,
 * and from 24.05 it gets only the uid and sprio filters the rows itself.
 */
#if GF_SLURM_AT_LEAST(24, 5)
typedef struct {   /* the old request's filters; never set */
	list_t *job_id_list;
	list_t *uid_list;
	char *partitions;
} gf_factors_request_t;
#define GF_FACTORS_LIST_PARAMS uid_t uid
#define GF_FACTORS_REQUEST NULL
#else
typedef priority_factors_request_msg_t gf_factors_request_t;
#define GF_FACTORS_LIST_PARAMS \
	priority_factors_request_msg_t *req_msg, uid_t uid
#define GF_FACTORS_REQUEST req_msg
#endif
#define GF_FACTORS_CALLER_LOCKS GF_SLURM_AT_LEAST(23, 2)

/*
 * 23.02 added the required priority_p_recover() (after slurmctld recovered
 * its jobs) and 23.11 priority_p_thread_start() (where the priority thread
 * starts, after init and read_slurm_conf).
 */
#define GF_HAS_PRIORITY_RECOVER GF_SLURM_AT_LEAST(23, 2)
#define GF_HAS_THREAD_START GF_SLURM_AT_LEAST(23, 11)

/*
 * PriorityFlags: the same bits (0-10) in 22.05 and 24.11 (slurm.h). Bits
 * beyond these are unknown to gpufair and refused (prio_multifactor_keys.c).
 */
#define GF_PRIORITY_FLAGS_KNOWN \
	(PRIORITY_FLAGS_ACCRUE_ALWAYS | PRIORITY_FLAGS_MAX_TRES | \
	 PRIORITY_FLAGS_SIZE_RELATIVE | PRIORITY_FLAGS_DEPTH_OBLIVIOUS | \
	 PRIORITY_FLAGS_CALCULATE_RUNNING | PRIORITY_FLAGS_FAIR_TREE | \
	 PRIORITY_FLAGS_INCR_ONLY | PRIORITY_FLAGS_NO_NORMAL_ASSOC | \
	 PRIORITY_FLAGS_NO_NORMAL_PART | PRIORITY_FLAGS_NO_NORMAL_QOS | \
	 PRIORITY_FLAGS_NO_NORMAL_TRES)

/*
 * A job submitted to several partitions (and from 24.11 with several QOS)
 * has one priority per (partition, QOS) pair, which the scheduler queues it
 * with: the priority array, in the order of job->part_ptr_list (outer) and
 * job->qos_list (inner), filled by the priority plugin.
 *   up to 23.11  job->priority_array (list count + 1 entries, as multifactor
 *                allocates it); the plugin sorts part_ptr_list by
 *                PriorityTier first, as the scheduler does before it tries
 *                the partitions (job_mgr.c, _select_nodes_parts)
 *   24.05        job->part_prio {last_update, priority_array,
 *                priority_array_parts}; rebuilt when the partitions changed
 *                (last_part_update); still sorted by the plugin
 *   24.11        job->part_prio is a priority_mult_t {..., priority_array_names};
 *                job->qos_list; the list comes sorted (partition_mgr.c)
 * Callers hold the job WRITE lock (gf_prio_array_for) or READ.
 */
#define GF_PRIO_SORTS_PARTS (!GF_SLURM_AT_LEAST(24, 11))

#if GF_SLURM_AT_LEAST(24, 11)
static inline list_t *gf_job_qos_list(const job_record_t *job)
{
	return job->qos_list;
}
#else
static inline list_t *gf_job_qos_list(const job_record_t *job)
{
	(void)job;
	return NULL;
}
#endif

/* How many entries the priority array of a job has (0: none, one priority):
 * one per partition, times one per QOS from 24.11. */
static inline int gf_prio_array_len(const job_record_t *job)
{
	list_t *qos_list = gf_job_qos_list(job);

	if (!job->part_ptr_list && !qos_list)
		return 0;
	return (job->part_ptr_list ? list_count(job->part_ptr_list) : 1) *
	       (qos_list ? list_count(qos_list) : 1);
}

#if GF_SLURM_AT_LEAST(24, 5)
#if GF_SLURM_AT_LEAST(24, 11)
#define GF_PRIO_ARRAY_NAMES priority_array_names
#else
#define GF_PRIO_ARRAY_NAMES priority_array_parts
#endif
static inline uint32_t *gf_prio_array(const job_record_t *job)
{
	return job->part_prio ? job->part_prio->priority_array : NULL;
}

#pragma weak part_list_to_xstr

/* The array with room for n, rebuilt when the partitions changed; n = 0
 * drops it (the job has one priority again). */
static inline uint32_t *gf_prio_array_for(job_record_t *job, int n)
{
	if (!n) {
		if (job->part_prio) {
			xfree(job->part_prio->priority_array);
			xfree(job->part_prio->GF_PRIO_ARRAY_NAMES);
			xfree(job->part_prio);
		}
		return NULL;
	}
	if (!job->part_prio)
		job->part_prio = xmalloc(sizeof(*job->part_prio));
	if (!job->part_prio->priority_array ||
	    job->part_prio->last_update < last_part_update) {
		xfree(job->part_prio->priority_array);
		job->part_prio->priority_array = xcalloc(n, sizeof(uint32_t));
		xfree(job->part_prio->GF_PRIO_ARRAY_NAMES);
		/* slurmctld's; weak, so that the plugin tests, which are not
		 * slurmctld, link (the names are then left out). */
		if (job->part_ptr_list && part_list_to_xstr)
			job->part_prio->GF_PRIO_ARRAY_NAMES =
				part_list_to_xstr(job->part_ptr_list);
		job->part_prio->last_update = time(NULL);
	}
	return job->part_prio->priority_array;
}
#else
static inline uint32_t *gf_prio_array(const job_record_t *job)
{
	return job->priority_array;
}

/* Slurm frees the array when the job's partitions change; n = 0 drops
 * it. */
static inline uint32_t *gf_prio_array_for(job_record_t *job, int n)
{
	if (!n)
		xfree(job->priority_array);
	else if (!job->priority_array)
		job->priority_array = xcalloc(n + 1, sizeof(uint32_t));
	return job->priority_array;
}
#endif

/*
 * 24.05 added TRES run seconds per account and per user to a QOS's used
 * limits (MaxTRESRunMinsPerAccount / PerUser): acct_policy_job_begin
 * reserves them like grp_used_tres_run_secs and multifactor gives them
 * back alike. gf_qos_used_run_secs() finds (or creates, as acct_policy
 * does) those two arrays for an account and a user in a QOS; NULLs before
 * 24.05. Caller holds the QOS WRITE lock.
 */
#if GF_SLURM_AT_LEAST(24, 5)
#include "src/slurmctld/acct_policy.h"

/* slurmctld's; weak, so that the plugin tests, which are not slurmctld,
 * link (there the QOS's per-account and per-user arrays are left out). */
#pragma weak acct_policy_get_acct_used_limits
#pragma weak acct_policy_get_user_used_limits

static inline void gf_qos_used_run_secs(slurmdb_qos_rec_t *qos, char *acct,
					uint32_t uid, uint64_t **acct_secs,
					uint64_t **user_secs)
{
	slurmdb_used_limits_t *a = NULL, *u = NULL;

	if (acct_policy_get_acct_used_limits && acct_policy_get_user_used_limits) {
		a = acct_policy_get_acct_used_limits(
			&qos->usage->acct_limit_list, acct);
		u = acct_policy_get_user_used_limits(
			&qos->usage->user_limit_list, uid);
	}

	*acct_secs = a ? a->tres_run_secs : NULL;
	*user_secs = u ? u->tres_run_secs : NULL;
}
#else
static inline void gf_qos_used_run_secs(slurmdb_qos_rec_t *qos, char *acct,
					uint32_t uid, uint64_t **acct_secs,
					uint64_t **user_secs)
{
	(void)qos;
	(void)acct;
	(void)uid;
	*acct_secs = *user_secs = NULL;
}
#endif

/*
 * Not yet built here (their sources cannot be had on this machine):
 *   25.05: preempt_p_get_data() is replaced by preempt_p_get_grace_time(),
 *          preempt_p_get_mode() and preempt_p_get_prio();
 *   25.11: priority_p_calc_fs_factor() is gone from the symbol list.
 * Each will be one block here and a few lines in the shim it touches.
 */
#if GF_SLURM_AT_LEAST(25, 5)
#error "gpufair has not been built for Slurm 25.05 or later yet (see plugin/README.md)"
#endif

#endif /* GPUFAIR_SLURM_COMPAT_H */
