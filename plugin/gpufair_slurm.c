/*****************************************************************************\
 *  gpufair_slurm.c - translation between Slurm's records and the gpufair
 *  core's plain structs. See gpufair_slurm.h.
\*****************************************************************************/

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "src/common/assoc_mgr.h"
#include "src/common/bitstring.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/xstring.h"

#include "gpufair_slurm.h"

/* Collect the chain of account associations from assoc up to (excluding)
 * root: chain[0] is the deepest account. Returns its length. */
static int _account_chain(const slurmdb_assoc_rec_t *assoc,
			  const slurmdb_assoc_rec_t **chain)
{
	int n = 0;

	/* A user association's account is its parent's. */
	if (assoc && assoc->user && assoc->usage)
		assoc = assoc->usage->parent_assoc_ptr;

	while (assoc && n < GF_MAX_DEPTH) {
		const slurmdb_assoc_rec_t *parent =
			assoc->usage ? assoc->usage->parent_assoc_ptr : NULL;

		/* root has no parent: it is not part of any path. */
		if (!parent)
			break;
		if (!assoc->user && assoc->acct && assoc->acct[0])
			chain[n++] = assoc;
		assoc = parent;
	}
	return n;
}

extern int gf_account_path(const slurmdb_assoc_rec_t *assoc, char *buf,
			   size_t len)
{
	const slurmdb_assoc_rec_t *chain[GF_MAX_DEPTH];
	int n = _account_chain(assoc, chain);
	size_t used = 0;

	if (!len)
		return n;
	buf[0] = '\0';
	for (int i = n - 1; i >= 0; i--) {
		const char *a = chain[i]->acct;

		if (used && used + 1 < len)
			buf[used++] = '/';
		for (; *a && used + 1 < len; a++)
			buf[used++] = (char)tolower((unsigned char)*a);
	}
	buf[used] = '\0';
	return n;
}

extern const slurmdb_assoc_rec_t *gf_team_assoc(
	const slurmdb_assoc_rec_t *assoc, int team_level)
{
	const slurmdb_assoc_rec_t *chain[GF_MAX_DEPTH];
	int n = _account_chain(assoc, chain);

	if (!n)
		return NULL;
	if (team_level < 1)
		team_level = 1;
	if (n < team_level)
		return chain[0];
	return chain[n - team_level];
}

extern void gf_gpu_map_build(gf_gpu_map_t *map, const char *describe)
{
	memset(map, 0, sizeof(*map));
	map->gpu_pos = -1;
	map->untyped_weight = gf_describe_double(describe, "gpu_weight", 1.0);
	map->tres_cnt = (int)g_tres_count;

	if (!assoc_mgr_tres_array)
		return;
	for (uint32_t i = 0; i < g_tres_count; i++) {
		slurmdb_tres_rec_t *t = assoc_mgr_tres_array[i];

		if (!t || !t->type || !t->name || xstrcasecmp(t->type, "gres"))
			continue;
		if (!xstrcasecmp(t->name, "gpu")) {
			map->gpu_pos = (int)i;
		} else if (!xstrncasecmp(t->name, "gpu:", 4) &&
			   map->ntyped < GF_MAX_TYPED) {
			char key[160];

			snprintf(key, sizeof(key), "gpu_weight:%s", t->name + 4);
			map->typed_pos[map->ntyped] = (int)i;
			map->typed_weight[map->ntyped] = gf_describe_double(
				describe, key, map->untyped_weight);
			map->ntyped++;
		}
	}
}

static double _tres_val(const uint64_t *cnt, int pos)
{
	if (!cnt || pos < 0)
		return 0;
	if (cnt[pos] == NO_CONSUME_VAL64 || cnt[pos] == INFINITE64 ||
	    cnt[pos] == NO_VAL64)
		return 0;
	return (double)cnt[pos];
}

/* Weighted GPUs of a TRES count array (a job's, or the cluster's). */
static double _weighted_gpus(const gf_gpu_map_t *map, const uint64_t *cnt)
{
	double total, typed = 0, weighted = 0;

	total = _tres_val(cnt, map->gpu_pos);
	if (total <= 0)
		return 0;
	for (int i = 0; i < map->ntyped; i++) {
		double c = _tres_val(cnt, map->typed_pos[i]);

		typed += c;
		weighted += c * map->typed_weight[i];
	}
	if (typed > total)
		typed = total;
	return weighted + (total - typed) * map->untyped_weight;
}

extern double gf_job_gpus(const gf_gpu_map_t *map, const job_record_t *job)
{
	const uint64_t *cnt;

	if (!map || map->gpu_pos < 0 || !job)
		return 0;
	/* Requested while pending (a requeued job still carries its old
	 * tres_alloc_cnt); allocated once it runs. */
	if (IS_JOB_PENDING(job) || !job->tres_alloc_cnt)
		cnt = job->tres_req_cnt;
	else
		cnt = job->tres_alloc_cnt;
	return _weighted_gpus(map, cnt);
}

extern double gf_cluster_gpus(const gf_gpu_map_t *map)
{
	uint64_t *cnt;
	double out;

	if (!map || map->gpu_pos < 0 || !assoc_mgr_tres_array || !g_tres_count)
		return 0;
	cnt = xcalloc(g_tres_count, sizeof(*cnt));
	for (int i = 0; i < g_tres_count; i++)
		cnt[i] = assoc_mgr_tres_array[i] ? assoc_mgr_tres_array[i]->count : 0;
	out = _weighted_gpus(map, cnt);
	xfree(cnt);
	return out;
}

extern int32_t gf_job_rank(const job_record_t *job, int rank_by)
{
	const slurmdb_qos_rec_t *qos = job ? job->qos_ptr : NULL;
	int32_t prio = 0;

	if (!job)
		return 0;
	if (qos)
		prio = qos->priority > INT32_MAX ? INT32_MAX
						 : (int32_t)qos->priority;
	/* The rank gf_qos_ranks_refresh published (Preempt= relation first),
	 * or the QOS Priority before the first cycle; or the tier. */
	return gpufair_job_rank(rank_by, qos ? qos->id : UINT32_MAX, prio,
				job->part_ptr ? job->part_ptr->priority_tier
					      : 0);
}

extern int gf_rank_by(const char *describe)
{
	char by[16];

	gf_describe_str(describe, "preempt_by", by, sizeof(by));
	return strcmp(by, "partition") ? GPUFAIR_PREEMPT_BY_QOS
				       : GPUFAIR_PREEMPT_BY_PARTITION;
}

typedef struct {
	size_t n, cap;
	uint32_t *ids, *prio;
	size_t n_pairs, pair_cap;
	uint32_t *pairs; /* [i0, j0, i1, j1, ...], by index into ids */
	bool any_prio;
} qos_scan_t;

static int _qos_collect(void *x, void *arg)
{
	slurmdb_qos_rec_t *q = x;
	qos_scan_t *s = arg;

	if (s->n < s->cap) {
		s->ids[s->n] = q->id;
		s->prio[s->n] = q->priority;
		s->any_prio |= q->priority != 0;
		s->n++;
	}
	return 0;
}

/* QOS i may preempt QOS j when j's id is set in i's preempt_bitstr. */
static int _qos_pairs(void *x, void *arg)
{
	slurmdb_qos_rec_t *q = x;
	qos_scan_t *s = arg;
	size_t i;

	for (i = 0; i < s->n && s->ids[i] != q->id; i++)
		;
	if (i == s->n || !q->preempt_bitstr)
		return 0;
	for (size_t j = 0; j < s->n; j++) {
		if (s->ids[j] >= (uint32_t)bit_size(q->preempt_bitstr) ||
		    !bit_test(q->preempt_bitstr, s->ids[j]))
			continue;
		if (s->n_pairs == s->pair_cap) {
			s->pair_cap *= 2;
			xrecalloc(s->pairs, 2 * s->pair_cap, sizeof(*s->pairs));
		}
		s->pairs[2 * s->n_pairs] = (uint32_t)i;
		s->pairs[2 * s->n_pairs + 1] = (uint32_t)j;
		s->n_pairs++;
	}
	return 0;
}

extern void gf_qos_ranks_refresh(void)
{
	static bool warned_flat;
	qos_scan_t s = { 0 };
	int32_t *ranks;

	if (!assoc_mgr_qos_list || !(s.cap = list_count(assoc_mgr_qos_list)))
		return;
	s.ids = xcalloc(s.cap, sizeof(*s.ids));
	s.prio = xcalloc(s.cap, sizeof(*s.prio));
	s.pair_cap = s.cap * 4;
	s.pairs = xcalloc(2 * s.pair_cap, sizeof(*s.pairs));
	ranks = xcalloc(s.cap, sizeof(*ranks));
	list_for_each(assoc_mgr_qos_list, _qos_collect, &s);
	list_for_each(assoc_mgr_qos_list, _qos_pairs, &s);
	if (gpufair_qos_ranks(s.n, s.prio, s.pairs, s.n_pairs, ranks) ==
	    GPUFAIR_OK)
		gpufair_qos_ranks_publish(s.ids, ranks, s.n);
	/* A flat rank is worth saying once: jumps still pay their price, but
	 * the bait detector never sees a rank gap. */
	if (!s.any_prio && !s.n_pairs && !warned_flat) {
		warned_flat = true;
		info("gpufair: every QOS has Priority=0 and no QOS may preempt another: in-team ranks are all equal, so the bait detector never fires (jump prices still apply)");
	}
	xfree(s.ids);
	xfree(s.prio);
	xfree(s.pairs);
	xfree(ranks);
}

extern int64_t gf_job_eligible(const job_record_t *job, bool accrue_always)
{
	if (!job || !job->details)
		return 0;
	if (!accrue_always && job->details->begin_time)
		return (int64_t)job->details->begin_time;
	return (int64_t)job->details->submit_time;
}

extern void gf_job_fill(gpufair_job_t *out, const job_record_t *job,
			int32_t team, const gf_gpu_map_t *map, int rank_by)
{
	memset(out, 0, sizeof(*out));
	out->job_id = job->job_id;
	out->team = team;
	out->user_id = job->user_id;
	out->rank = gf_job_rank(job, rank_by);
	out->gpus = gf_job_gpus(map, job);
	out->submit_time = job->details ? (int64_t)job->details->submit_time
					: 0;
	out->eligible_time = gf_job_eligible(job, false);
	if (!IS_JOB_PENDING(job))
		out->start_time = (int64_t)job->start_time;
	else
		out->priority = job->priority; /* a jump's price: who was ahead */
	/* What its GPU-seconds cost its team: the QOS UsageFactor, read as
	 * multifactor reads it (a negative one is unset). */
	if (job->qos_ptr && job->qos_ptr->usage_factor >= 0) {
		out->has_usage_factor = 1;
		out->usage_factor = job->qos_ptr->usage_factor;
	}
}

/* Find "key=" at the start of a line of describe text. */
static const char *_describe_find(const char *text, const char *key)
{
	size_t klen = strlen(key);

	for (const char *p = text; p && *p;) {
		if (!strncmp(p, key, klen) && p[klen] == '=')
			return p + klen + 1;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

extern long gf_describe_long(const char *text, const char *key, long dflt)
{
	const char *v = text ? _describe_find(text, key) : NULL;
	char *end = NULL;
	long r;

	if (!v)
		return dflt;
	r = strtol(v, &end, 10);
	return (end == v) ? dflt : r;
}

extern double gf_describe_double(const char *text, const char *key,
				 double dflt)
{
	const char *v = text ? _describe_find(text, key) : NULL;
	char *end = NULL;
	double r;

	if (!v)
		return dflt;
	r = strtod(v, &end);
	return (end == v || r != r || r < 0) ? dflt : r;
}

extern void gf_describe_str(const char *text, const char *key, char *buf,
			    size_t len)
{
	const char *v = text ? _describe_find(text, key) : NULL;
	size_t n = 0;

	if (!len)
		return;
	if (v)
		while (v[n] && v[n] != '\n' && n + 1 < len)
			n++;
	if (v)
		memcpy(buf, v, n);
	buf[n] = '\0';
}

extern void gf_say_reclaim(const char *plugin, job_record_t *victim,
			   const job_record_t *preemptor, const char *reason)
{
	if (xstrncmp(reason, "reclaim", 7))
		return;
	info("%s: %pJ reclaimed GPUs from %pJ: %s", plugin, preemptor,
	     victim, reason);
	xstrfmtcat(victim->system_comment,
		   "%sgpufair: %s by reclaim for JobId=%u (%s)",
		   victim->system_comment ? "; " : "",
		   IS_JOB_SUSPENDED(victim) ? "suspended" : "preempted",
		   preemptor->job_id, reason);
}
