/*
 * Fair share inside a team at the plugin's level (label "plugin"), on
 * hand-built association records, outside slurmctld:
 *  1. prio_teams.c names every association to the core (a user's as "user",
 *     a partition's as "user|partition") with its own shares, fairshare=parent
 *     included, and maps Slurm's association ids to the core's;
 *  2. prio_sshare.c writes each association's own usage and fair share into
 *     the fields sshare prints, under Fair Tree and under NO_FAIR_TREE (where
 *     Slurm's 2^(-EffectvUsage/NormShares) must give the same fair share).
 * Linked with libslurmfull (lists, assoc_mgr's globals) and libgpufair.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/common/log.h"

#include "priority_gpufair.h"

/* What priority_gpufair.c, prio_conf.c and slurmctld define in the real
 * thing; prio_teams.c's GPU refresh is not used here. */
const char plugin_type[] = "priority/gpufair";
gfp_t gfp = GFP_INITIALIZER;
extern void gfp_set_billing_weights(char *weights) { xfree(weights); }
extern char *gfp_billing_weights_locked(void) { return NULL; }
/* prio_sshare.c's entry points (Slurm declares only the priority_g_ ones). */
extern void priority_p_set_assoc_usage(slurmdb_assoc_rec_t *assoc);
extern double priority_p_calc_fs_factor(long double usage_efctv,
					long double shares_norm);

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static slurmdb_assoc_usage_t u_root, u_teama, u_gfa1, u_gfa3, u_par, u_teamb, u_gfb1;
static slurmdb_assoc_rec_t root = { .id = 1, .acct = "root", .usage = &u_root };
static slurmdb_assoc_rec_t teama = { .id = 2, .acct = "teama", .shares_raw = 1,
				     .usage = &u_teama };
static slurmdb_assoc_rec_t gfa1 = { .id = 3, .acct = "teama", .user = "gfa1",
				    .shares_raw = 1, .usage = &u_gfa1 };
static slurmdb_assoc_rec_t gfa3 = { .id = 4, .acct = "teama", .user = "gfa3",
				    .shares_raw = 1, .usage = &u_gfa3 };
/* gfa1's association in partition gpu2, fairshare=parent. */
static slurmdb_assoc_rec_t par = { .id = 5, .acct = "teama", .user = "gfa1",
				   .partition = "gpu2",
				   .shares_raw = SLURMDB_FS_USE_PARENT,
				   .usage = &u_par };
static slurmdb_assoc_rec_t teamb = { .id = 6, .acct = "teamb", .shares_raw = 1,
				     .usage = &u_teamb };
static slurmdb_assoc_rec_t gfb1 = { .id = 7, .acct = "teamb", .user = "gfb1",
				    .shares_raw = 1, .usage = &u_gfb1 };

/* What prio_cycle.c's _collect_reports keeps for sshare. */
static void _collect(int64_t now)
{
	int32_t n = gpufair_team_count(gfp.engine);

	gfp.nassoc_reports = gpufair_assoc_count(gfp.engine);
	xfree(gfp.assoc_reports);
	gfp.assoc_reports = xcalloc(gfp.nassoc_reports,
				    sizeof(*gfp.assoc_reports));
	CHECK(gpufair_assoc_reports(gfp.engine, now, gfp.assoc_reports,
				    gfp.nassoc_reports) == gfp.nassoc_reports,
	      "assoc reports");
	gfp.usage_total = 0;
	for (int32_t t = 0; t < n; t++) {
		gpufair_team_report_t r;

		gpufair_team_report(gfp.engine, t, now, &r);
		gfp.usage_total += r.usage_gpu_s;
	}
}

int main(void)
{
	char err[1024];
	gpufair_knobs_t k = { .knobs_set = 1, .decay_half_life_s = 0,
			      .weight_fairshare = 10000 };
	slurmdb_assoc_rec_t *all[] = { &root, &teama, &gfa1, &gfa3, &par,
				       &teamb, &gfb1 };
	gpufair_job_t run = { .job_id = 1, .gpus = 8, .submit_time = 900,
			      .start_time = 900 };
	double fs1, fs3;

	u_teama.parent_assoc_ptr = &root;
	u_gfa1.parent_assoc_ptr = &teama;
	u_gfa3.parent_assoc_ptr = &teama;
	u_par.parent_assoc_ptr = &teama;
	u_teamb.parent_assoc_ptr = &root;
	u_gfb1.parent_assoc_ptr = &teamb;
	assoc_mgr_assoc_list = list_create(NULL);
	for (size_t i = 0; i < ARRAY_SIZE(all); i++) {
		list_append(assoc_mgr_assoc_list, all[i]);
		all[i]->usage->shares_norm = 0.5; /* assoc_mgr's, kept as is */
	}
	assoc_mgr_root_assoc = &root;

	gfp.engine = gpufair_engine_new(NULL, &k, err, sizeof(err));
	CHECK(gfp.engine, "engine: %s", err);
	if (!gfp.engine)
		return 1;

	/* 1. The associations, by path and user (user|partition). */
	gfp_refresh_teams_locked();
	CHECK(gfp.assoc_of && gfp.team_of_assoc_len == 8, "map of %u",
	      gfp.team_of_assoc_len);
	CHECK(gfp.assoc_of[1] == 0, "root is no association of a team");
	CHECK(gfp.assoc_of[3] == gpufair_assoc_id(gfp.engine, "teama", "gfa1"),
	      "gfa1: %d", gfp.assoc_of[3]);
	CHECK(gfp.assoc_of[5] ==
	      gpufair_assoc_id(gfp.engine, "teama", "gfa1|gpu2"),
	      "gfa1 in partition gpu2: %d", gfp.assoc_of[5]);
	CHECK(gfp.assoc_of[2] == gpufair_assoc_id(gfp.engine, "teama", NULL),
	      "teama's own: %d", gfp.assoc_of[2]);
	CHECK(gfp.assoc_of[3] != gfp.assoc_of[5] &&
	      gfp.assoc_of[3] != gfp.assoc_of[4], "distinct associations");

	/* gfa1 runs 8 GPUs for 100 s; team b nothing. */
	run.team = gfp.team_of_assoc[3];
	run.assoc = gfp.assoc_of[3];
	gpufair_cycle_begin(gfp.engine, 1000);
	gpufair_observe_running(gfp.engine, &run);
	gpufair_cycle_end(gfp.engine, 1000);
	_collect(1000);

	/* 2a. Fair Tree. Team a's users: the parent one (LF infinite), gfa3
	 * (no usage: infinite), gfa1 (S/U = (1/2)/1): 3/3, 3/3, 1/3. */
	gfp.flags = PRIORITY_FLAGS_FAIR_TREE;
	gfp_write_assoc_usage_locked();
	CHECK(u_gfa1.usage_raw == 800, "gfa1 RawUsage %Lf", u_gfa1.usage_raw);
	CHECK(u_gfa3.usage_raw == 0, "gfa3 RawUsage %Lf", u_gfa3.usage_raw);
	CHECK(u_teama.usage_raw == 800 && u_root.usage_raw == 800,
	      "teama %Lf, root %Lf", u_teama.usage_raw, u_root.usage_raw);
	CHECK(u_gfa1.usage_norm == 1.0L, "gfa1 NormUsage %Lf", u_gfa1.usage_norm);
	CHECK(u_gfa1.usage_efctv == 1.0L, "Fair Tree EffectvUsage = U/U_parent: %Lf",
	      u_gfa1.usage_efctv);
	CHECK(isinf((double)u_gfa3.level_fs) && isinf((double)u_par.level_fs),
	      "LevelFS gfa3 %Lf, parent %Lf", u_gfa3.level_fs, u_par.level_fs);
	CHECK(fabsl(u_gfa1.level_fs - 0.5L) < 1e-12, "gfa1 LevelFS %Lf",
	      u_gfa1.level_fs);
	CHECK(u_gfa3.fs_factor > u_gfa1.fs_factor && u_par.fs_factor == u_gfa3.fs_factor,
	      "FairShare gfa3 %f, gfa1 %f, parent %f", u_gfa3.fs_factor,
	      u_gfa1.fs_factor, u_par.fs_factor);
	CHECK(u_gfb1.fs_factor > u_gfa3.fs_factor,
	      "team b's user above all of team a's: %f vs %f", u_gfb1.fs_factor,
	      u_gfa3.fs_factor);
	CHECK(u_gfa1.shares_norm == 0.5, "NormShares left to assoc_mgr");
	fs1 = u_gfa1.fs_factor;
	fs3 = u_gfa3.fs_factor;

	/* 2b. NO_FAIR_TREE: sshare prints 2^(-EffectvUsage/NormShares) for
	 * every row, which must be the association's fair share. */
	gfp.flags = 0;
	gfp_write_assoc_usage_locked();
	for (size_t i = 1; i < ARRAY_SIZE(all); i++) {
		slurmdb_assoc_usage_t *u = all[i]->usage;
		double shown = priority_p_calc_fs_factor(u->usage_efctv,
							 u->shares_norm);

		CHECK(fabs(shown - u->fs_factor) < 1e-9,
		      "%s/%s: sshare would print %f, fair share %f",
		      all[i]->acct, all[i]->user ? all[i]->user : "", shown,
		      u->fs_factor);
	}
	/* priority_p_set_assoc_usage (sshare, QOS thresholds) fills the same. */
	u_gfa1.usage_efctv = (long double)NO_VAL;
	priority_p_set_assoc_usage(&gfa1);
	CHECK(fabs(priority_p_calc_fs_factor(u_gfa1.usage_efctv,
					     u_gfa1.shares_norm) - fs1) < 1e-9,
	      "set_assoc_usage: %Lf", u_gfa1.usage_efctv);
	CHECK(u_gfa3.fs_factor == fs3, "the engine's algorithm did not change");

	gfp_teams_free();
	gpufair_engine_free(gfp.engine);
	FREE_NULL_LIST(assoc_mgr_assoc_list);
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	else
		printf("OK: associations inside the teams, sshare's fields\n");
	return failures ? 1 : 0;
}
