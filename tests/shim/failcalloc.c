/*
 * failcalloc.c - an LD_PRELOAD shim for tests/exitcodes.bats: the Nth
 * calloc(3) of exactly FAIL_CALLOC_SIZE bytes (N = FAIL_CALLOC_NTH, from
 * 1) fails with ENOMEM, so that an out-of-memory in one chosen place can
 * be tested (tests/helpers/sizes prints the sizes of rlock's structures).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* dlsym may itself call calloc: serve that from here. */
static char early[4096];
static size_t early_used;

void *calloc(size_t n, size_t size)
{
	static void *(*real)(size_t, size_t);
	static int resolving;
	static long seen;
	const char *want, *nth;

	if (real == NULL) {
		if (resolving) {
			void *p = early + early_used;

			early_used += (n * size + 15) & ~(size_t)15;
			return early_used <= sizeof(early) ? p : NULL;
		}
		resolving = 1;
		real = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
		resolving = 0;
	}
	want = getenv("FAIL_CALLOC_SIZE");
	nth = getenv("FAIL_CALLOC_NTH");
	if (want != NULL && nth != NULL && n * size == strtoul(want, NULL, 10) &&
	    ++seen == strtol(nth, NULL, 10)) {
		errno = ENOMEM;
		return NULL;
	}
	return real(n, size);
}

void free(void *p)
{
	static void (*real)(void *);

	/* What the early arena served is never given back. */
	if ((char *)p >= early && (char *)p < early + sizeof(early))
		return;
	if (real == NULL)
		real = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	real(p);
}
