/*****************************************************************************\
 *  prio_usage_clock.c - the decay clock of the usage Slurm's limits read
 *  (prio_usage.c charges the jobs): when that usage was last brought up to
 *  date, its decay since, and PriorityUsageResetPeriod, as multifactor's
 *  "decay" thread does them.
 *
 *  Every cycle, every association (root too) and every QOS without NoDecay
 *  has usage_tres_raw[] and grp_used_wall (a QOS its usage_raw too)
 *  multiplied by d^dt, with d = 1 - 0.693/hl multifactor's decay per second
 *  (hl = PriorityDecayHalfLife; d = 1 without one) and dt the seconds since
 *  the last cycle; all of them (NoDecay QOS too) are zeroed at each reset
 *  boundary, in local time as multifactor computes them. An association's
 *  usage_raw is left alone: it is gpufair's (prio_sshare.c).
 *
 *  The clock is kept in <StateSaveLocation>/priority_last_decay_ran, the
 *  file and format multifactor uses (last decay, last reset: two big-endian
 *  int64), so a switch of PriorityType either way keeps one timeline.
 *
 *  Locks: gfp_usage_clock_load() from init(), no lock (file I/O only);
 *  gfp_usage_clock_begin_locked() and _end_locked() in the cycle, which
 *  holds { job WRITE, part READ, fed READ } and { assoc WRITE, qos WRITE,
 *  tres READ } (multifactor decays under the same assoc_mgr locks);
 *  gfp_usage_clock_save() in the cycle thread after the locks;
 *  gfp_usage_clock_reconfigure() anywhere (an atomic flag). gfp_uclock is
 *  written under the job WRITE lock and read under the job lock.
\*****************************************************************************/

#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "src/common/log.h"
#include "src/common/xstring.h"

#include "priority_gpufair.h"

#define GF_CLOCK_FILE "priority_last_decay_ran"

gfp_usage_clock_t gfp_uclock = { .decay = 1 };

static time_t last_reset;       /* 0 = not yet: the first cycle's time */
static time_t next_reset;       /* 0 = to be worked out */
static uint16_t reset_period;   /* in force (NOW turns into NONE once done) */
static bool reconfigure = true; /* re-read the keys (atomic) */

/* ---------------------------------------------------------------------- */
/* The file                                                                */

static void _clock_path(char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", slurm_conf.state_save_location,
		 GF_CLOCK_FILE);
}

extern void gfp_usage_clock_load(void)
{
	char path[PATH_MAX];
	uint64_t be[2];
	ssize_t n;
	int fd;

	_clock_path(path, sizeof(path));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		if (errno == ENOENT)
			info("%s: no %s: limits' usage decays from the first cycle on",
			     plugin_type, path);
		else
			error("%s: cannot read %s: %m; limits' usage decays from the first cycle on",
			      plugin_type, path);
		return;
	}
	n = read(fd, be, sizeof(be));
	close(fd);
	if (n != (ssize_t)sizeof(be)) {
		error("%s: %s is %zd bytes, not 16: ignored; limits' usage decays from the first cycle on",
		      plugin_type, path, n);
		return;
	}
	gfp_uclock.last_ran = (time_t)(int64_t)be64toh(be[0]);
	last_reset = (time_t)(int64_t)be64toh(be[1]);
	gfp_uclock.restore = gfp_uclock.last_ran != 0;
	log_flag(PRIO, "%s: limits' usage last decayed at %ld, reset at %ld",
		 plugin_type, (long)gfp_uclock.last_ran, (long)last_reset);
}

extern void gfp_usage_clock_save(void)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	uint64_t be[2];
	int fd;

	if (!xstrcmp(slurm_conf.state_save_location, "/dev/null"))
		return;
	_clock_path(path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	be[0] = htobe64((uint64_t)(int64_t)gfp_uclock.last_ran);
	be[1] = htobe64((uint64_t)(int64_t)last_reset);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		       0600)) < 0) {
		error("%s: cannot write %s: %m", plugin_type, tmp);
		return;
	}
	if (write(fd, be, sizeof(be)) != (ssize_t)sizeof(be) || fsync(fd)) {
		error("%s: writing %s failed: %m", plugin_type, tmp);
		close(fd);
		unlink(tmp);
		return;
	}
	close(fd);
	if (rename(tmp, path))
		error("%s: rename %s to %s failed: %m", plugin_type, tmp, path);
}

/* ---------------------------------------------------------------------- */
/* Reset boundaries: multifactor's calendar, in local time                 */

/* The boundary after `last` (daily and weekly: the latest one not more
 * than a period before now); 0 for no periodic reset. */
static time_t _next_reset(uint16_t period, time_t last, time_t now)
{
	struct tm tm;
	time_t t, step = 0;

	if (!localtime_r(&last, &tm))
		return 0;
	tm.tm_sec = tm.tm_min = tm.tm_hour = 0;
	tm.tm_isdst = -1;
	switch (period) {
	case PRIORITY_RESET_DAILY:
		tm.tm_mday += 1;
		step = 86400;
		break;
	case PRIORITY_RESET_WEEKLY: /* the next Sunday */
		tm.tm_mday += 7 - tm.tm_wday;
		step = 7 * 86400;
		break;
	case PRIORITY_RESET_MONTHLY:
		tm.tm_mday = 1;
		tm.tm_mon += 1;
		break;
	case PRIORITY_RESET_QUARTERLY:
		tm.tm_mday = 1;
		tm.tm_mon = (tm.tm_mon / 3 + 1) * 3;
		break;
	case PRIORITY_RESET_YEARLY:
		tm.tm_mday = 1;
		tm.tm_mon = 0;
		tm.tm_year += 1;
		break;
	default:
		return 0;
	}
	t = mktime(&tm);
	while (step && t + step < now)
		t += step;
	return t;
}

/* ---------------------------------------------------------------------- */
/* Decay and reset of every association and QOS                            */

static void _scale_usage(slurmdb_assoc_usage_t *u, long double f, int ntres)
{
	for (int i = 0; u->usage_tres_raw && i < ntres; i++)
		u->usage_tres_raw[i] *= f;
	u->grp_used_wall *= (double)f;
}

/* f = 0: reset. An association's usage_raw is gpufair's (see the top). */
static int _scale_assoc(void *x, void *arg)
{
	slurmdb_assoc_rec_t *a = x;
	long double f = *(long double *)arg;

	if (!a->usage)
		return 0;
	_scale_usage(a->usage, f, slurmctld_tres_cnt);
	if (a->leaf_usage && a->leaf_usage != a->usage) {
		if (f == 0) {
			slurmdb_destroy_assoc_usage(a->leaf_usage);
			a->leaf_usage = NULL;
		} else {
			a->leaf_usage->usage_raw *= f;
			_scale_usage(a->leaf_usage, f, slurmctld_tres_cnt);
		}
	}
	return 0;
}

static int _scale_qos(void *x, void *arg)
{
	slurmdb_qos_rec_t *q = x;
	long double f = *(long double *)arg;

	if (!q->usage || (f != 0 && (q->flags & QOS_FLAG_NO_DECAY)))
		return 0;
	q->usage->usage_raw *= f;
	for (int i = 0; q->usage->usage_tres_raw && i < slurmctld_tres_cnt; i++)
		q->usage->usage_tres_raw[i] *= f;
	q->usage->grp_used_wall *= (double)f;
	return 0;
}

static void _scale_all(long double f)
{
	if (assoc_mgr_assoc_list)
		list_for_each(assoc_mgr_assoc_list, _scale_assoc, &f);
	if (assoc_mgr_qos_list)
		list_for_each(assoc_mgr_qos_list, _scale_qos, &f);
}

/* ---------------------------------------------------------------------- */
/* The cycle                                                               */

extern void gfp_usage_clock_begin_locked(time_t now)
{
	if (__atomic_exchange_n(&reconfigure, false, __ATOMIC_SEQ_CST)) {
		/* Multifactor's decay per second: 1 - ln2/hl to first order,
		 * with its 0.693 (kept: the same usage stops jobs at the same
		 * point under either plugin). */
		double hl = (double)slurm_conf.priority_decay_hl;

		gfp_uclock.decay = (hl > 0) ? 1 - (0.693 / hl) : 1;
		reset_period = slurm_conf.priority_reset_period;
		next_reset = 0;
	}
	if (!last_reset)
		last_reset = now;
	if (reset_period == PRIORITY_RESET_NOW) {
		_scale_all(0);
		reset_period = PRIORITY_RESET_NONE;
		last_reset = now;
		info("%s: limits' usage reset (PriorityUsageResetPeriod=NOW)",
		     plugin_type);
	} else if (reset_period != PRIORITY_RESET_NONE) {
		if (!next_reset)
			next_reset = _next_reset(reset_period,
						    last_reset, now);
		if (next_reset && now >= next_reset) {
			_scale_all(0);
			last_reset = next_reset;
			next_reset = _next_reset(reset_period,
						    last_reset, now);
			info("%s: limits' usage reset (PriorityUsageResetPeriod)",
			     plugin_type);
		}
	}
	/* The first cycle (no clock) and a clock that did not move charge
	 * nothing, as in multifactor. */
	gfp_uclock.charge = gfp_uclock.last_ran && now > gfp_uclock.last_ran;
	if (gfp_uclock.charge) {
		double f = pow(gfp_uclock.decay, difftime(now, gfp_uclock.last_ran));

		if (f != 1)
			_scale_all(MAX(f, DBL_MIN));
	}
}

extern void gfp_usage_clock_end_locked(time_t now)
{
	gfp_uclock.last_ran = now;
}

extern void gfp_usage_clock_reconfigure(void)
{
	__atomic_store_n(&reconfigure, true, __ATOMIC_SEQ_CST);
}
