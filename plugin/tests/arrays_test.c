/*
 * priority/gpufair's per-job arrays (prio_arrays.c): resizing keeps the
 * elements it says it keeps, a fresh array is zero, only the pages written
 * are resident, and the capacity rule grows by an eighth and shrinks an
 * array more than twice too big. Label "plugin".
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "priority_gpufair.h"

/* What priority_gpufair.c defines in the plugin. */
const char plugin_type[] = "priority/gpufair";

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

/* Resident pages of [p, p + bytes). */
static size_t _resident(void *p, size_t bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (bytes + page - 1) / page;
	unsigned char vec[4096];
	size_t r = 0;

	if (n > sizeof(vec) || mincore(p, n * page, vec))
		return (size_t)-1;
	for (size_t i = 0; i < n; i++)
		r += vec[i] & 1;
	return r;
}

static void test_resize(void)
{
	uint32_t *a = NULL;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t big = 1000 * page / sizeof(*a); /* 1,000 pages */
	bool zero = true, kept = true;

	GFP_RESIZE(a, 0, 1000);
	CHECK(a != NULL, "a new array");
	for (size_t i = 0; i < 1000; i++) {
		zero = zero && !a[i];
		a[i] = (uint32_t)i * 7;
	}
	CHECK(zero, "a new array is zero");
	GFP_RESIZE(a, 1000, big);
	for (size_t i = 0; i < 1000; i++)
		kept = kept && a[i] == (uint32_t)i * 7;
	CHECK(kept, "growing keeps the elements");
	/* Only the first page was written: the rest is address space. */
	CHECK(_resident(a, big * sizeof(*a)) == 1, "resident pages %zu of 1000",
	      _resident(a, big * sizeof(*a)));
	a[big - 1] = 1;
	CHECK(_resident(a, big * sizeof(*a)) == 2, "a write makes a page resident");
	GFP_RESIZE(a, big, 10);
	kept = true;
	for (size_t i = 0; i < 10; i++)
		kept = kept && a[i] == (uint32_t)i * 7;
	CHECK(kept, "shrinking keeps the first elements");
	GFP_RESIZE(a, 10, 0);
	CHECK(a == NULL, "size 0 frees");
}

static void test_capacity(void)
{
	static const struct {
		size_t cap, n;
		bool fits;
	} cases[] = {
		{ 0, 0, true },        /* nothing, nothing needed */
		{ 0, 1, false },       /* must grow */
		{ 1024, 1024, true },
		{ 1024, 1025, false },
		{ 2048, 0, true },     /* twice room(0) = 2,048: kept */
		{ 2049, 0, false },    /* more: shrinks */
		{ 100000, 50000, true },
		{ 200000, 50000, false }, /* a backlog drained: shrinks */
	};

	CHECK(gfp_array_room(0) == 1024, "room(0) %zu", gfp_array_room(0));
	CHECK(gfp_array_room(80000) == 80000 + 10000 + 1024, "room(80000) %zu",
	      gfp_array_room(80000));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK(gfp_array_fits(cases[i].cap, cases[i].n) == cases[i].fits,
		      "fits(cap %zu, n %zu) should be %d", cases[i].cap,
		      cases[i].n, cases[i].fits);
}

int main(void)
{
	test_resize();
	test_capacity();
	if (!failures)
		printf("OK: per-job arrays\n");
	return failures ? 1 : 0;
}
