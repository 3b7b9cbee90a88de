/*
 * load_plugin: dlopen a gpufair plugin the way sshare/sprio do (outside
 * slurmctld, with libslurmfull loaded and no slurmctld symbols around) and
 * check that it loads, identifies itself, initialises without side effects
 * and that its pure entry points answer.
 *
 *   load_plugin PLUGIN.so priority|preempt STATE_DIR
 *
 * STATE_DIR must stay empty: outside slurmctld the plugin never writes state.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm_version.h>

/* libslurmfull: set by every Slurm command from argv[0]. */
extern char *slurm_prog_name;

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
	fprintf(stderr, "FAIL: " __VA_ARGS__); fputc('\n', stderr); } } while (0)

static int dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	void *h;
	const char *type;
	const uint32_t *version;
	int (*init)(void);

	if (argc != 4) {
		fprintf(stderr, "usage: %s PLUGIN.so priority|preempt STATE_DIR\n", argv[0]);
		return 2;
	}
	slurm_prog_name = "sshare";

	h = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "FAIL: dlopen %s: %s\n", argv[1], dlerror());
		return 1;
	}
	type = dlsym(h, "plugin_type");
	version = dlsym(h, "plugin_version");
	init = (int (*)(void))dlsym(h, "init");
	CHECK(type && !strncmp(type, argv[2], strlen(argv[2])) &&
	      !strcmp(strchr(type, '/'), "/gpufair"),
	      "plugin_type is %s", type ? type : "(missing)");
	CHECK(version && *version == SLURM_VERSION_NUMBER,
	      "plugin_version 0x%x != SLURM_VERSION_NUMBER 0x%x",
	      version ? *version : 0, SLURM_VERSION_NUMBER);
	CHECK(init && init() == 0, "init() outside slurmctld failed");

	if (!strcmp(argv[2], "priority")) {
		double (*fs)(long double, long double) =
			(double (*)(long double, long double))dlsym(h, "priority_p_calc_fs_factor");
		CHECK(fs, "no priority_p_calc_fs_factor");
		if (fs) {
			/* Slurm's classic formula, what sshare prints. */
			CHECK(fabs(fs(0.5L, 0.5L) - 0.5) < 1e-12, "fs(0.5,0.5)=%g", fs(0.5L, 0.5L));
			CHECK(fabs(fs(0.0L, 0.25L) - 1.0) < 1e-12, "fs(0,0.25)=%g", fs(0.0L, 0.25L));
			CHECK(fs(0.3L, 0.0L) == 0.0, "zero shares must give 0");
			CHECK(fs(0.3L, (long double)0xfffffffe) >= 0, "NO_VAL shares");
		}
	} else {
		int (*get)(void *, int, void *) =
			(int (*)(void *, int, void *))dlsym(h, "preempt_p_get_data");
		bool enabled = true;

		CHECK(get, "no preempt_p_get_data");
		/* PREEMPT_DATA_ENABLED (0) with job NULL, as slurmctld calls it. */
		if (get)
			CHECK(get(NULL, 0, &enabled) == 0 && !enabled,
			      "get_data(ENABLED) with PreemptMode unset should say disabled");
	}

	{
		int (*fini)(void) = (int (*)(void))dlsym(h, "fini");
		if (fini)
			fini();
	}
	CHECK(dir_entries(argv[3]) == 0, "plugin wrote into %s outside slurmctld", argv[3]);
	if (!failures)
		printf("OK: %s loads outside slurmctld as %s\n", argv[1], type);
	dlclose(h);
	return failures ? 1 : 0;
}
