/*****************************************************************************\
 *  prio_arrays.c - the memory of priority/gpufair's per-job arrays (the
 *  cycle's and the job table's): each in its own anonymous mapping, sized
 *  an eighth above what a cycle needs, shrunk when twice too big.
 *
 *  Why not xmalloc: at a 50,000-job backlog these arrays are most of what
 *  the plugin adds to slurmctld's memory. In the thread's malloc arena,
 *  each growth left the old block behind as a free hole (2.5-3 MiB there),
 *  and the zeroing of xrecalloc made all of the capacity resident. In a
 *  mapping of its own, slurmctld holds only the pages a cycle wrote, and
 *  resizing one frees exactly its old pages (docs/performance.md).
 *
 *  Locks: none of its own; callers serialise the use of each array.
\*****************************************************************************/

#define _GNU_SOURCE /* mremap */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "src/common/log.h"

#include "priority_gpufair.h"

extern size_t gfp_array_room(size_t n)
{
	return n + n / 8 + 1024;
}

extern bool gfp_array_fits(size_t cap, size_t n)
{
	return n <= cap && cap <= 2 * gfp_array_room(n);
}

static size_t _mapped_bytes(size_t n, size_t elem)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (n * elem + page - 1) / page * page;
}

extern void *gfp_array_resize(void *p, size_t old_n, size_t n, size_t elem)
{
	size_t old_b = p ? _mapped_bytes(old_n, elem) : 0;
	size_t new_b = _mapped_bytes(n, elem);
	void *q;

	if (old_b == new_b)
		return p;
	if (!new_b) {
		munmap(p, old_b);
		return NULL;
	}
	q = old_b ? mremap(p, old_b, new_b, MREMAP_MAYMOVE) :
		    mmap(NULL, new_b, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q == MAP_FAILED) {
		error("%s: cannot map %zu bytes for the cycle's job arrays: %m",
		      plugin_type, new_b);
		abort();
	}
	return q;
}
