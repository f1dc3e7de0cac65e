/*
 * test_token.c - rlock_make_token: format, uniqueness, and how it copes
 * with getrandom(2) being interrupted, short or failing.
 *
 * The unit binary defines its own getrandom() that passes straight to the
 * system call unless a test asks for a fault.  librlock.a is linked
 * statically into this executable, so token.c's call binds to this
 * definition and not to libc's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "harness.h"
#include "rlock.h"

enum fault {
	FAULT_NONE,
	FAULT_PATTERN,		/* bytes 0x00, 0x11, ... in one read */
	FAULT_SHORT_EINTR,	/* 3 bytes at a time, EINTR in between */
	FAULT_EINTR_ONLY,	/* EINTR a few times, then the real thing */
	FAULT_ENOSYS,		/* no getrandom (kernel < 3.17, seccomp) */
	FAULT_ZERO,		/* returns 0: must not loop forever */
};

static enum fault fault;
static int calls, eintr_left;
static unsigned char next_byte;

ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
	unsigned char *p = buf;
	size_t i, n;

	calls++;
	switch (fault) {
	case FAULT_NONE:
		break;
	case FAULT_PATTERN:
		for (i = 0; i < len; i++)
			p[i] = (unsigned char)(next_byte++ * 0x11);
		return (ssize_t)len;
	case FAULT_SHORT_EINTR:
		if (calls % 2 == 0) {
			errno = EINTR;
			return -1;
		}
		n = len < 3 ? len : 3;
		for (i = 0; i < n; i++)
			p[i] = next_byte++;
		return (ssize_t)n;
	case FAULT_EINTR_ONLY:
		if (eintr_left > 0) {
			eintr_left--;
			errno = EINTR;
			return -1;
		}
		break;
	case FAULT_ENOSYS:
		errno = ENOSYS;
		return -1;
	case FAULT_ZERO:
		return 0;
	}
	return syscall(SYS_getrandom, buf, len, flags);
}

static int is_token(const char *t)
{
	size_t i;

	for (i = 0; i < RLOCK_TOKEN_LEN; i++)
		if (!((t[i] >= '0' && t[i] <= '9') ||
		      (t[i] >= 'a' && t[i] <= 'f')))
			return 0;
	return t[RLOCK_TOKEN_LEN] == '\0';
}

static int cmp_token(const void *a, const void *b)
{
	return memcmp(a, b, RLOCK_TOKEN_LEN + 1);
}

static void format(void)
{
	char a[RLOCK_TOKEN_LEN + 8], b[RLOCK_TOKEN_LEN + 8];

	/* 32 lower-case hex digits, a NUL, and not one byte more. */
	memset(a, 'Z', sizeof(a));
	CHECK_INT(rlock_make_token(a), 0);
	CHECK_INT(strlen(a), RLOCK_TOKEN_LEN);
	CHECK(is_token(a));
	CHECK(memcmp(a + RLOCK_TOKEN_LEN + 1, "ZZZZZZZ", 7) == 0);

	CHECK_INT(rlock_make_token(b), 0);
	CHECK(is_token(b));
	CHECK(strcmp(a, b) != 0);

	errno = 0;
	CHECK_INT(rlock_make_token(NULL), -1);
	CHECK_INT(errno, EINVAL);
}

/*
 * Many tokens: no two alike, and every hex digit turns up in every
 * position.  With 4096 tokens a position misses a given digit with
 * probability (15/16)^4096, about 1e-115, so a failure means the bits
 * are not random (e.g. stuck or only even digits).
 */
static void distinct(void)
{
	enum { N = 4096 };
	char (*t)[RLOCK_TOKEN_LEN + 1] = calloc(N, sizeof(*t));
	unsigned short seen[RLOCK_TOKEN_LEN];
	int i, j, dups = 0, bad = 0, missing = 0;

	if (t == NULL) {
		CHECK(t != NULL);
		return;
	}
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < N; i++) {
		if (rlock_make_token(t[i]) != 0 || !is_token(t[i])) {
			bad++;
			continue;
		}
		for (j = 0; j < RLOCK_TOKEN_LEN; j++) {
			char c = t[i][j];
			int d = c <= '9' ? c - '0' : c - 'a' + 10;

			seen[j] |= (unsigned short)(1u << d);
		}
	}
	CHECK_INT(bad, 0);
	qsort(t, N, sizeof(*t), cmp_token);
	for (i = 1; i < N; i++)
		if (cmp_token(t[i - 1], t[i]) == 0)
			dups++;
	CHECK_INT(dups, 0);
	for (j = 0; j < RLOCK_TOKEN_LEN; j++)
		if (seen[j] != 0xffff)
			missing++;
	CHECK_INT(missing, 0);
	free(t);
}

static void faults(void)
{
	char t[RLOCK_TOKEN_LEN + 1];

	/* Exact hex of known bytes, including 0x00 and 0xff. */
	fault = FAULT_PATTERN;
	next_byte = 0;
	calls = 0;
	CHECK_INT(rlock_make_token(t), 0);
	CHECK_STR(t, "00112233445566778899aabbccddeeff");
	CHECK_INT(calls, 1);

	/* Short reads interleaved with EINTR still fill all 16 bytes,
	 * in order: 6 reads of at most 3 bytes and 5 interruptions. */
	fault = FAULT_SHORT_EINTR;
	next_byte = 0;
	calls = 0;
	CHECK_INT(rlock_make_token(t), 0);
	CHECK_STR(t, "000102030405060708090a0b0c0d0e0f");
	CHECK_INT(calls, 11);

	fault = FAULT_EINTR_ONLY;
	eintr_left = 5;
	calls = 0;
	CHECK_INT(rlock_make_token(t), 0);
	CHECK(is_token(t));
	CHECK_INT(calls, 6);

	/* A real failure is reported with errno, not papered over. */
	fault = FAULT_ENOSYS;
	errno = 0;
	CHECK_INT(rlock_make_token(t), -1);
	CHECK_INT(errno, ENOSYS);

	fault = FAULT_ZERO;
	calls = 0;
	errno = 0;
	CHECK_INT(rlock_make_token(t), -1);
	CHECK_INT(errno, EIO);
	CHECK_INT(calls, 1);

	fault = FAULT_NONE;
}

void test_token(void)
{
	format();
	distinct();
	faults();
}
