/*
 * Races in the shims, run with threads the way slurmctld runs them (label
 * "race"; the TSan stage of scripts/test runs it instrumented, where any
 * data race fails the test with halt_on_error=1; without TSan the checks
 * below still catch a torn configuration).
 *
 *  1. preempt/gpufair's configuration (preempt_conf.c): predicates on four
 *     threads while another reconfigures the engine and bumps
 *     slurm_conf.last_update, as scontrol reconfigure does. Every snapshot a
 *     predicate sees must be one configuration, never half of two
 *     (team_level=1 goes with preempt_scope=team, 2 with any). Before the
 *     snapshots, static team_level/any_team/gpus were rewritten in place.
 *  2. priority/gpufair's reconfigure against the cycle's TRESBillingWeights
 *     change (prio_conf.c): in 22.05 priority_p_reconfig runs with no lock
 *     while the cycle may free and replace the billing weights, and both
 *     reconfigure the core. Afterwards the core must have the weights the
 *     cycle set last.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "src/common/log.h"

#include "preempt_conf.h"
#include "priority_gpufair.h"

/* What priority_gpufair.c defines in the plugin. */
const char plugin_type[] = "priority/gpufair";
gfp_t gfp = GFP_INITIALIZER;

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

#define CONF_A "team_level=1,preempt_scope=team"
#define CONF_B "team_level=2,preempt_scope=any"

static gpufair_engine_t *engine;
static atomic_bool stop;
static atomic_long torn, seen_a, seen_b;

static void *_predicate_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		const gf_preempt_conf_t *c = gf_preempt_conf(engine);

		if (c->team_level == 1 && !c->any_team)
			atomic_fetch_add(&seen_a, 1);
		else if (c->team_level == 2 && c->any_team)
			atomic_fetch_add(&seen_b, 1);
		else
			atomic_fetch_add(&torn, 1);
	}
	return NULL;
}

static void test_preempt_conf(void)
{
	pthread_t readers[4];
	gpufair_knobs_t k;
	char err[1024];

	memset(&k, 0, sizeof(k));
	for (int i = 0; i < 4; i++)
		pthread_create(&readers[i], NULL, _predicate_thread, NULL);
	for (int i = 0; i < 400; i++) {
		const char *conf = (i % 2) ? CONF_B : CONF_A;

		CHECK(gpufair_engine_reconfigure(engine, conf, &k, err,
						 sizeof(err)) == GPUFAIR_OK,
		      "reconfigure %s: %s", conf, err);
		__atomic_add_fetch(&slurm_conf.last_update, 1,
				   __ATOMIC_RELAXED);
		/* Let the predicates see this one. */
		for (long n = atomic_load(&seen_a) + atomic_load(&seen_b);
		     atomic_load(&seen_a) + atomic_load(&seen_b) < n + 8;)
			;
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 4; i++)
		pthread_join(readers[i], NULL);
	CHECK(atomic_load(&torn) == 0,
	      "%ld predicate calls saw half of one configuration and half of the next",
	      atomic_load(&torn));
	CHECK(atomic_load(&seen_a) > 0 && atomic_load(&seen_b) > 0,
	      "both configurations seen (%ld, %ld)", atomic_load(&seen_a),
	      atomic_load(&seen_b));
	gf_preempt_conf_free();
}

static void *_reconfigure_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < 300; i++)
		gfp_reconfigure();
	return NULL;
}

static void test_reconfigure_vs_billing(void)
{
	pthread_t t;
	char desc[8192];

	gfp.engine = engine;
	slurm_conf.priority_params = "team_level=1";
	pthread_create(&t, NULL, _reconfigure_thread, NULL);
	for (int i = 0; i < 300; i++)
		gfp_set_billing_weights(xstrdup(
			(i % 2) ? "CPU=1.0,GRES/gpu=2.0" : "CPU=1.0,GRES/gpu=3.0"));
	pthread_join(t, NULL);
	/* The last weights set were i = 299: GRES/gpu=2.0. */
	gfp_reconfigure();
	CHECK(gpufair_config_describe(engine, desc, sizeof(desc)) == GPUFAIR_OK,
	      "describe");
	CHECK(gf_describe_double(desc, "gpu_weight", 0) == 2.0,
	      "gpu_weight %.2f after the race, expected 2.00 (the last TRESBillingWeights)",
	      gf_describe_double(desc, "gpu_weight", 0));
	gfp_conf_free();
	gfp.engine = NULL;
}

int main(void)
{
	log_options_t lo = LOG_OPTS_STDERR_ONLY;
	gpufair_knobs_t k;
	char err[1024];

	lo.stderr_level = LOG_LEVEL_ERROR;
	log_init("gpufair_race_test", lo, 0, NULL);
	memset(&k, 0, sizeof(k));
	engine = gpufair_engine_new(CONF_A, &k, err, sizeof(err));
	if (!engine) {
		fprintf(stderr, "engine: %s\n", err);
		return 1;
	}
	test_preempt_conf();
	test_reconfigure_vs_billing();
	gpufair_engine_free(engine);
	if (failures) {
		fprintf(stderr, "%d failure(s)\n", failures);
		return 1;
	}
	printf("race tests passed\n");
	return 0;
}
