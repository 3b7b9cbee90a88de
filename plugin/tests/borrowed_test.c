/*
 * Preemptions priority/gpufair records: of jobs on borrowed reservation
 * time (prio_borrowed.c) and by gang suspension (prio_suspended.c), on
 * hand-built Slurm records, with preempt/gpufair's recording
 * (preempt_record.c) linked in, one engine shared by both as in slurmctld:
 *
 *  - a job with --signal=R (KILL_JOB_RESV) that ends with preempt_time set
 *    while a pending job of a MaxStartDelay reservation on its nodes waits
 *    is reported to the core once, as a reservation decision of both
 *    teams, with the highest-priority such job as preemptor;
 *  - nothing for a job without the flag, without preempt_time, or with no
 *    reservation job on its nodes (and then its claim stays free);
 *  - a victim that preempt/gpufair already reported at the grace-time
 *    query (it carried the flag but was preempted by the rules) is not
 *    reported again at its end;
 *  - a gang suspension (prio_suspended.c) is reported once by the cycle,
 *    with the preemptor pinned at the mode query before the suspension,
 *    and never by a mode query.
 *
 * The core's decisions are not readable through the C API; the test counts
 * them in the saved state, where each one keeps its reason.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/common/bitstring.h"
#include "src/common/list.h"

#include "preempt_conf.h"
#include "preempt_record.h"
#include "priority_gpufair.h"

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

/* What the plugins and slurmctld define. */
const char plugin_type[] = "priority/gpufair";
gfp_t gfp = GFP_INITIALIZER;
list_t *job_list;

job_record_t *find_job_record(uint32_t job_id)
{
	list_itr_t *it = list_iterator_create(job_list);
	job_record_t *j;

	while ((j = list_next(it)) && j->job_id != job_id)
		;
	list_iterator_destroy(it);
	return j;
}

/* Slurm's rule (reservation.c, the same in 22.05 and 24.11): the preemptor
 * uses a MaxStartDelay reservation whose nodes overlap those of a job that
 * is willing to run there. */
bool job_borrow_from_resv_check(job_record_t *job_ptr,
				job_record_t *preemptor_ptr)
{
	return preemptor_ptr->resv_ptr &&
	       preemptor_ptr->resv_ptr->max_start_delay &&
	       preemptor_ptr->resv_ptr->node_bitmap &&
	       (job_ptr->warn_flags & KILL_JOB_RESV) && job_ptr->node_bitmap &&
	       bit_overlap_any(job_ptr->node_bitmap,
			       preemptor_ptr->resv_ptr->node_bitmap);
}

static slurmdb_assoc_usage_t u_root, u_a, u_alice, u_b, u_bob;
static slurmdb_assoc_rec_t root = { .acct = "root", .usage = &u_root };
static slurmdb_assoc_rec_t teama = { .acct = "teama", .usage = &u_a };
static slurmdb_assoc_rec_t alice = { .acct = "teama", .user = "alice", .usage = &u_alice };
static slurmdb_assoc_rec_t teamb = { .acct = "teamb", .usage = &u_b };
static slurmdb_assoc_rec_t bob = { .acct = "teamb", .user = "bob", .usage = &u_bob };

static char state_path[] = "/tmp/gpufair-borrowed-test-XXXXXX";

/* Decisions about preemptions on borrowed time in the saved state (with
 * what, when not NULL, in their reasons). */
static int _resv_decisions_with(const char *what)
{
	char err[256], *buf;
	FILE *f;
	long n;
	int count = 0;

	CHECK(gpufair_state_save(gfp.engine, state_path, err, sizeof(err)) ==
		      GPUFAIR_OK, "save: %s", err);
	f = fopen(state_path, "rb");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, n + 1);
	if (fread(buf, 1, n, f) != (size_t)n)
		n = 0;
	fclose(f);
	if (!what)
		what = "borrowed time";
	for (char *p = buf; (p = memmem(p, buf + n - p, what, strlen(what)));
	     p += strlen(what))
		count++;
	free(buf);
	return count;
}

static int _resv_decisions(void)
{
	return _resv_decisions_with(NULL);
}

static uint32_t _in_team(const char *team)
{
	gpufair_team_report_t r;

	gpufair_team_report(gfp.engine, gpufair_team_id(gfp.engine, team), 0, &r);
	return r.in_team_preemptions;
}

static job_record_t *_job(uint32_t id, slurmdb_assoc_rec_t *assoc,
			  uint32_t state)
{
	job_record_t *j = xmalloc(sizeof(*j));

	j->job_id = id;
	j->assoc_ptr = assoc;
	j->account = assoc->acct;
	j->job_state = state;
	j->start_time = state == JOB_RUNNING ? 4000 : 0;
	list_append(job_list, j);
	return j;
}

int main(void)
{
	char err[256];
	int fd = mkstemp(state_path);
	slurmctld_resv_t resv = { .name = "r1", .max_start_delay = 300 };
	slurmctld_resv_t plain = { .name = "r0" }; /* no MaxStartDelay */
	job_record_t *victim, *p_hi, *p_lo, *other, *elsewhere, *mine, *urgent;
	job_record_t *gang, *later, *admin;
	uint32_t before;

	if (fd >= 0)
		close(fd);
	u_a.parent_assoc_ptr = &root;
	u_b.parent_assoc_ptr = &root;
	u_alice.parent_assoc_ptr = &teama;
	u_bob.parent_assoc_ptr = &teamb;
	gfp.engine = gpufair_engine_new("", NULL, err, sizeof(err));
	CHECK(gfp.engine, "engine: %s", err);
	gpufair_global_set(gfp.engine);
	job_list = list_create(NULL);

	/* Reservation r1 on nodes 0-1; bob's job borrowed node 1. */
	resv.node_bitmap = bit_alloc(4);
	bit_nset(resv.node_bitmap, 0, 1);
	plain.node_bitmap = bit_copy(resv.node_bitmap);
	victim = _job(10, &bob, JOB_RUNNING);
	victim->node_bitmap = bit_alloc(4);
	bit_set(victim->node_bitmap, 1);
	/* Two of alice's jobs wait in r1; one in a reservation without
	 * MaxStartDelay, one in none. */
	p_lo = _job(20, &alice, JOB_PENDING);
	p_lo->resv_ptr = &resv;
	p_lo->priority = 50;
	p_hi = _job(21, &alice, JOB_PENDING);
	p_hi->resv_ptr = &resv;
	p_hi->priority = 90;
	other = _job(22, &alice, JOB_PENDING);
	other->resv_ptr = &plain;
	other->priority = 1000;
	elsewhere = _job(23, &bob, JOB_PENDING);
	elsewhere->priority = 2000;

	/* Not preempted, or not on borrowed time: nothing. */
	gfp_borrowed_preemption(victim);
	victim->preempt_time = 5000;
	gfp_borrowed_preemption(victim);
	CHECK(_resv_decisions() == 0, "no KILL_JOB_RESV: nothing recorded");
	victim->warn_flags = KILL_JOB_RESV;
	victim->preempt_time = 0;
	gfp_borrowed_preemption(victim);
	CHECK(_resv_decisions() == 0, "no preempt_time: nothing recorded");

	/* Preempted on borrowed time: once, for both teams (cross-team). */
	victim->preempt_time = 5000;
	gfp_borrowed_preemption(victim);
	CHECK(_resv_decisions() == 2, "recorded for teamb and teama (%d)",
	      _resv_decisions());
	CHECK(_resv_decisions_with("job 21 of team teama took back") == 2 &&
	      _resv_decisions_with("from job 10 of team teamb") == 2,
	      "preemptor: r1's pending job of highest priority");
	CHECK(gpufair_preemption_claim(10, 4000) == 0,
	      "the victim's (id, start time) is claimed");
	gfp_borrowed_preemption(victim);
	CHECK(_resv_decisions() == 2, "a second job end records nothing more");
	CHECK(_in_team("teama") == 0 && _in_team("teamb") == 0,
	      "not an in-team jump, for nobody");

	/* No reservation job on its nodes: nothing, and the claim stays free
	 * for preempt/gpufair. */
	resv.node_bitmap = bit_alloc(4);
	bit_set(resv.node_bitmap, 3);
	victim->job_id = 11;
	gfp_borrowed_preemption(victim);
	CHECK(_resv_decisions() == 2, "no overlapping reservation: nothing");
	CHECK(gpufair_preemption_claim(11, 4000) == 1, "claim left free");
	bit_set(resv.node_bitmap, 1);

	/* preempt/gpufair reported it already (a flagged job preempted by the
	 * rules, by alice's urgent job): its end records nothing more. */
	mine = _job(30, &alice, JOB_RUNNING);
	mine->warn_flags = KILL_JOB_RESV;
	mine->node_bitmap = bit_copy(victim->node_bitmap);
	urgent = _job(31, &alice, JOB_PENDING);
	gpufair_preemptor_note(mine->job_id, urgent->job_id);
	gf_preempt_grace_query(mine);
	CHECK(_in_team("teama") == 1, "preempt/gpufair recorded it (%u)",
	      _in_team("teama"));
	mine->preempt_time = 5100;
	gfp_borrowed_preemption(mine);
	CHECK(_resv_decisions() == 2 && _in_team("teama") == 1,
	      "not again at its end (%d, %u)", _resv_decisions(),
	      _in_team("teama"));

	/* The preemptor is the one the scheduler takes first: p_hi. The
	 * in-team case records one decision. */
	victim->job_id = 12;
	victim->assoc_ptr = &alice;
	victim->account = alice.acct;
	victim->start_time = 4500;
	gfp_borrowed_preemption(victim);
	CHECK(_resv_decisions() == 3, "in-team: one decision (%d)",
	      _resv_decisions());
	CHECK(_resv_decisions_with("from job 12 of the same team") == 1,
	      "in-team reason");

	/* A gang suspension (prio_suspended.c): the preemptor is the one
	 * pinned at the mode query Slurm makes right before it suspends the
	 * victim, not whichever a later pass noted; recorded once, by the
	 * cycle, never by a mode query (squeue's, on the suspended job). */
	gang = _job(40, &alice, JOB_RUNNING);
	urgent = _job(41, &alice, JOB_PENDING);
	later = _job(42, &bob, JOB_PENDING);
	before = _in_team("teama");
	gpufair_preemptor_note(gang->job_id, urgent->job_id);
	gf_preempt_mode_query(gang); /* _preempt_jobs() asks its mode */
	gang->preempt_time = 5300;
	gang->job_state = JOB_SUSPENDED;
	gpufair_preemptor_note(gang->job_id, later->job_id); /* a later pass */
	gf_preempt_mode_query(gang);
	CHECK(_in_team("teama") == before, "a mode query records nothing");
	gfp_gang_suspension(gang, gfp_job_team_locked(gang, true),
			    GPUFAIR_PREEMPT_BY_QOS);
	CHECK(_in_team("teama") == before + 1,
	      "recorded as alice's in-team preemption (%u, was %u)",
	      _in_team("teama"), before);
	gfp_gang_suspension(gang, gfp_job_team_locked(gang, true),
			    GPUFAIR_PREEMPT_BY_QOS);
	CHECK(_in_team("teama") == before + 1, "once (%u)", _in_team("teama"));
	admin = _job(43, &alice, JOB_SUSPENDED); /* scontrol suspend */
	gfp_gang_suspension(admin, gfp_job_team_locked(admin, true),
			    GPUFAIR_PREEMPT_BY_QOS);
	CHECK(_in_team("teama") == before + 1,
	      "no preempt_time (an admin's suspension): nothing");

	gpufair_global_set(NULL);
	gpufair_engine_free(gfp.engine);
	gf_preempt_conf_free();
	unlink(state_path);
	if (!failures)
		printf("OK: preemptions on borrowed reservation time\n");
	return failures ? 1 : 0;
}
