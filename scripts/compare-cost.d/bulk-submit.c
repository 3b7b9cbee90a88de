/*
 * bulk-submit: separate batch jobs through libslurm's slurm_submit_batch_job,
 * one RPC per job (the same per-job work in slurmctld as sbatch, without a
 * process start per job). Used by scripts/compare-cost.
 *
 *   bulk-submit submit --jobs N [--teams T] [--team-prefix team] [--partition P]
 *                      [--qos-cycle normal,low] [--gpus-cycle 1,1,2,1,4,1,2,8]
 *                      [--nice-cycle 0,-1000] [--sleep S] [--time MIN]
 *                      [--threads K] [--ids-out FILE]
 *   bulk-submit churn  --seconds T --rate R [same job options]
 *                      [--cancel-ids FILE]   cancel one job of FILE per job submitted
 *
 * Job i goes to account <team-prefix><1 + i % T, two digits>; QOS, nice and
 * GPU count cycle through their lists (a negative nice needs root). Prints key=value lines: submitted, failed, seconds,
 * jobs_per_s (and cancelled for churn). Exit status 1 if more than 1 % failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#define MAXCYCLE 64

static struct {
	const char *mode;
	long jobs, teams, threads, sleep_s, time_min;
	double seconds, rate;
	const char *team_prefix, *partition, *ids_out, *cancel_ids;
	char *qos[MAXCYCLE];
	int nqos;
	int gpus[MAXCYCLE];
	int ngpus;
	long nice[MAXCYCLE];
	int nnice;
} opt = {
	.jobs = 0, .teams = 50, .threads = 2, .sleep_s = 5, .time_min = 60,
	.team_prefix = "team", .partition = "gpu",
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long next_index, submitted, failed, cancelled;
static uint32_t *ids;          /* submitted ids (submit mode) */
static uint32_t *victims;      /* ids to cancel (churn mode) */
static long nvictims, next_victim;
static char first_error[256];

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *msg)
{
	fprintf(stderr, "bulk-submit: %s\n", msg);
	exit(2);
}

static int split(const char *list, char **out)
{
	int n = 0;
	char *copy = strdup(list), *save = NULL, *tok;
	for (tok = strtok_r(copy, ",", &save); tok && n < MAXCYCLE;
	     tok = strtok_r(NULL, ",", &save))
		out[n++] = tok;
	return n;
}

static int submit_one(long i, uint32_t *job_id)
{
	job_desc_msg_t d;
	submit_response_msg_t *resp = NULL;
	char account[64], gres[32], name[64], script[128];
	char *env[] = { "PATH=/usr/bin:/bin", "GPUFAIR_COMPARE_COST=1", NULL };
	int gpus = opt.gpus[i % opt.ngpus], rc, attempt;

	slurm_init_job_desc_msg(&d);
	snprintf(account, sizeof account, "%s%02ld", opt.team_prefix, 1 + i % opt.teams);
	snprintf(gres, sizeof gres, "gres:gpu:%d", gpus);
	snprintf(name, sizeof name, "cc-%ld", i);
	snprintf(script, sizeof script, "#!/bin/sh\nsleep %ld\n", opt.sleep_s);
	d.account = account;
	d.name = name;
	d.partition = (char *) opt.partition;
	d.qos = opt.qos[i % opt.nqos];
	if (opt.nnice)
		d.nice = (uint32_t) ((int64_t) NICE_OFFSET + opt.nice[i % opt.nnice]);
	d.tres_per_node = gres;
	d.min_nodes = 1;
	d.max_nodes = 1;
	d.min_cpus = gpus;
	d.time_limit = opt.time_min;
	d.script = script;
	d.environment = env;
	d.env_size = 2;
	d.work_dir = "/tmp";
	d.std_out = "/dev/null";
	d.std_err = "/dev/null";
	d.user_id = getuid();
	d.group_id = getgid();

	for (attempt = 0; attempt < 20; attempt++) {
		rc = slurm_submit_batch_job(&d, &resp);
		if (rc == SLURM_SUCCESS)
			break;
		if (errno != EAGAIN && errno != ESLURM_ERROR_ON_DESC_TO_RECORD_COPY &&
		    errno != SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR &&
		    errno != SLURMCTLD_COMMUNICATIONS_SEND_ERROR &&
		    errno != SLURMCTLD_COMMUNICATIONS_RECEIVE_ERROR &&
		    errno != SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT &&
		    errno != ESLURM_NOT_SUPPORTED)
			break;
		usleep(100000 * (attempt + 1));
	}
	if (rc != SLURM_SUCCESS) {
		int e = errno;
		pthread_mutex_lock(&mu);
		if (!first_error[0])
			snprintf(first_error, sizeof first_error, "job %ld (account %s): %s",
				 i, account, slurm_strerror(e));
		pthread_mutex_unlock(&mu);
		return -1;
	}
	*job_id = resp->job_id;
	slurm_free_submit_response_response_msg(resp);
	return 0;
}

static void *submit_worker(void *arg)
{
	(void) arg;
	for (;;) {
		long i;
		uint32_t id = 0;
		pthread_mutex_lock(&mu);
		i = next_index < opt.jobs ? next_index++ : -1;
		pthread_mutex_unlock(&mu);
		if (i < 0)
			return NULL;
		int rc = submit_one(i, &id);
		pthread_mutex_lock(&mu);
		if (rc == 0) {
			submitted++;
			ids[i] = id;
		} else {
			failed++;
		}
		pthread_mutex_unlock(&mu);
	}
}

static void load_victims(void)
{
	FILE *f = fopen(opt.cancel_ids, "r");
	unsigned long v;
	long cap = 1024;
	if (!f)
		die("cannot open --cancel-ids file");
	victims = malloc(cap * sizeof *victims);
	while (fscanf(f, "%lu", &v) == 1) {
		if (nvictims == cap)
			victims = realloc(victims, (cap *= 2) * sizeof *victims);
		victims[nvictims++] = (uint32_t) v;
	}
	fclose(f);
}

static int run_churn(void)
{
	double t0 = now_s(), next = t0;
	long i = 0;
	if (opt.cancel_ids)
		load_victims();
	while (now_s() - t0 < opt.seconds) {
		uint32_t id;
		if (submit_one(i++, &id) == 0)
			submitted++;
		else
			failed++;
		if (next_victim < nvictims) {
			if (slurm_kill_job(victims[next_victim++], 9, 0) == SLURM_SUCCESS)
				cancelled++;
		}
		next += 1.0 / opt.rate;
		double wait = next - now_s();
		if (wait > 0)
			usleep((useconds_t) (wait * 1e6));
	}
	double dt = now_s() - t0;
	printf("submitted=%ld\nfailed=%ld\ncancelled=%ld\nseconds=%.3f\njobs_per_s=%.2f\n",
	       submitted, failed, cancelled, dt, submitted / dt);
	if (first_error[0])
		fprintf(stderr, "bulk-submit: first error: %s\n", first_error);
	return failed * 100 > submitted + failed ? 1 : 0;
}

static int run_submit(void)
{
	pthread_t th[64];
	long k;
	double t0, dt;
	ids = calloc(opt.jobs ? opt.jobs : 1, sizeof *ids);
	t0 = now_s();
	for (k = 0; k < opt.threads; k++)
		pthread_create(&th[k], NULL, submit_worker, NULL);
	for (k = 0; k < opt.threads; k++)
		pthread_join(th[k], NULL);
	dt = now_s() - t0;
	if (opt.ids_out) {
		FILE *f = fopen(opt.ids_out, "w");
		if (!f)
			die("cannot write --ids-out file");
		for (k = 0; k < opt.jobs; k++)
			if (ids[k])
				fprintf(f, "%u\n", ids[k]);
		fclose(f);
	}
	printf("submitted=%ld\nfailed=%ld\nseconds=%.3f\njobs_per_s=%.2f\n", submitted,
	       failed, dt, submitted / dt);
	if (first_error[0])
		fprintf(stderr, "bulk-submit: first error: %s\n", first_error);
	return failed * 100 > submitted + failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	int i;
	if (argc < 2)
		die("usage: bulk-submit submit|churn [options] (see the source header)");
	opt.mode = argv[1];
	opt.nqos = split("normal", opt.qos);
	{
		char *g[MAXCYCLE];
		int n = split("1,1,2,1,4,1,2,8", g);
		for (opt.ngpus = 0; opt.ngpus < n; opt.ngpus++)
			opt.gpus[opt.ngpus] = atoi(g[opt.ngpus]);
	}
	for (i = 2; i < argc; i++) {
		const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			die("option without a value");
		i++;
		if (!strcmp(k, "--jobs")) opt.jobs = atol(v);
		else if (!strcmp(k, "--teams")) opt.teams = atol(v);
		else if (!strcmp(k, "--team-prefix")) opt.team_prefix = v;
		else if (!strcmp(k, "--partition")) opt.partition = v;
		else if (!strcmp(k, "--qos-cycle")) opt.nqos = split(v, opt.qos);
		else if (!strcmp(k, "--gpus-cycle")) {
			char *g[MAXCYCLE];
			int n = split(v, g);
			for (opt.ngpus = 0; opt.ngpus < n; opt.ngpus++)
				opt.gpus[opt.ngpus] = atoi(g[opt.ngpus]);
		}
		else if (!strcmp(k, "--nice-cycle")) {
			char *g[MAXCYCLE];
			int n = split(v, g);
			for (opt.nnice = 0; opt.nnice < n; opt.nnice++)
				opt.nice[opt.nnice] = atol(g[opt.nnice]);
		}
		else if (!strcmp(k, "--sleep")) opt.sleep_s = atol(v);
		else if (!strcmp(k, "--time")) opt.time_min = atol(v);
		else if (!strcmp(k, "--threads")) opt.threads = atol(v);
		else if (!strcmp(k, "--ids-out")) opt.ids_out = v;
		else if (!strcmp(k, "--seconds")) opt.seconds = atof(v);
		else if (!strcmp(k, "--rate")) opt.rate = atof(v);
		else if (!strcmp(k, "--cancel-ids")) opt.cancel_ids = v;
		else die("unknown option");
	}
	if (opt.teams < 1 || opt.nqos < 1 || opt.ngpus < 1 || opt.threads < 1 || opt.threads > 64)
		die("bad --teams/--qos-cycle/--gpus-cycle/--threads");
	slurm_init(NULL);
	if (!strcmp(opt.mode, "submit")) {
		if (opt.jobs < 0)
			die("--jobs must be >= 0");
		return run_submit();
	}
	if (!strcmp(opt.mode, "churn")) {
		if (opt.seconds <= 0 || opt.rate <= 0)
			die("churn needs --seconds and --rate > 0");
		return run_churn();
	}
	die("mode must be submit or churn");
	return 2;
}
