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

static inline void gf_row_free(void *x)
{
	priority_factors_object_t *row = x;

	if (row)
		xfree(row->prio_factors);
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

/* We never fill the TRES arrays, and the names are borrowed. */
static inline void gf_row_free(void *x)
{
	xfree(x);
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
 * 24.05 added TRES run seconds per account and per user to a QOS's used
 * limits (MaxTRESRunMinsPerAccount / PerUser): acct_policy_job_begin
 * reserves them like grp_used_tres_run_secs and multifactor gives them
 * back alike. gf_qos_used_run_secs() finds (or creates, as acct_policy
 * does) those two arrays for an account and a user in a QOS; NULLs before
 * 24.05. Caller holds the QOS WRITE lock.
 */
#if GF_SLURM_AT_LEAST(24, 5)
#include "src/slurmctld/acct_policy.h"

static inline void gf_qos_used_run_secs(slurmdb_qos_rec_t *qos, char *acct,
					uint32_t uid, uint64_t **acct_secs,
					uint64_t **user_secs)
{
	slurmdb_used_limits_t *a = acct_policy_get_acct_used_limits(
		&qos->usage->acct_limit_list, acct);
	slurmdb_used_limits_t *u = acct_policy_get_user_used_limits(
		&qos->usage->user_limit_list, uid);

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
