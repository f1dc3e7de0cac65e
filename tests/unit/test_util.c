/*
 * test_util.c - set_error never overflows its buffer, the two clocks the
 * library measures leases and waits with behave, the string helpers keep
 * strlcpy's contract and rlock_join writes all or nothing, and an IPv4
 * literal reads as inet_pton reads it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

#include "harness.h"
#include "rlock_int.h"

static void seterr(void)
{
	static const wchar_t euro[] = { 0x20ac, 0 };
	char buf[16];
	char small[8 + 4];

	set_error(buf, sizeof(buf), "%s: %d", "port", 6379);
	CHECK_STR(buf, "port: 6379");

	/* Truncated, terminated, and the bytes after it untouched. */
	memset(small, 'Z', sizeof(small));
	set_error(small, 8, "cannot connect to %s", "127.0.0.1:6379");
	CHECK_STR(small, "cannot ");
	CHECK(memcmp(small + 8, "ZZZZ", 4) == 0);

	/* Zero length and NULL buffers are left alone. */
	memset(small, 'Z', sizeof(small));
	set_error(small, 0, "x");
	CHECK(small[0] == 'Z');
	set_error(NULL, 10, "x");
	set_error(small, 1, "anything");
	CHECK_STR(small, "");

	/* errno survives, so a caller can still return it. */
	errno = ECONNREFUSED;
	set_error(buf, sizeof(buf), "%s", strerror(errno));
	CHECK_INT(errno, ECONNREFUSED);

	/*
	 * Even when formatting itself fails: in the C locale a wide
	 * character above 0x7f cannot be converted, vsnprintf returns -1
	 * with EILSEQ, and the buffer is left empty, not half-written.
	 */
	memset(buf, 'Z', sizeof(buf));
	errno = ETIMEDOUT;
	set_error(buf, sizeof(buf), "euro %ls", euro);
	CHECK_INT(errno, ETIMEDOUT);
	CHECK_STR(buf, "");
}

/* What the clock is, pinned by reading it directly on either side. */
static void same_clock(clockid_t id, int64_t (*fn)(void))
{
	struct timespec a, b;
	int64_t lo, hi, t;

	clock_gettime(id, &a);
	t = fn();
	clock_gettime(id, &b);
	lo = (int64_t)a.tv_sec * 1000 + a.tv_nsec / 1000000;
	hi = (int64_t)b.tv_sec * 1000 + b.tv_nsec / 1000000;
	CHECK(lo <= t && t <= hi);
}

static void clocks(void)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	int64_t m0, b0, m1, b1, prev;
	int i, backwards = 0;

	same_clock(CLOCK_BOOTTIME, rlock_boot_ms);
	same_clock(CLOCK_MONOTONIC, rlock_mono_ms);

	m0 = rlock_mono_ms();
	b0 = rlock_boot_ms();
	CHECK(m0 >= 0);
	/* BOOTTIME is MONOTONIC plus time suspended: never behind it. */
	CHECK(b0 >= m0);

	prev = m0;
	for (i = 0; i < 10000; i++) {
		int64_t t = rlock_mono_ms();

		if (t < prev)
			backwards++;
		prev = t;
	}
	CHECK_INT(backwards, 0);

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	m1 = rlock_mono_ms();
	b1 = rlock_boot_ms();
	CHECK(m1 - m0 >= 20);
	CHECK(b1 - b0 >= 20);
	/* Not a measurement, a sanity bound: nothing here takes a minute. */
	CHECK(m1 - m0 < 60000);
}

/* rlock_strlcpy and rlock_strlcat against what snprintf does with "%s"
 * and "%s%s" (strlcat: what dst held, then src): the same bytes, the same
 * return, nothing written past len. */
static void strings(void)
{
	static const char *const src[] = { "", "a", "abcdefg", "abcdefgh",
					   "abcdefghijklmnop" };
	char got[8 + 4], want[8 + 4], held[8 + 4];

	for (size_t i = 0; i < sizeof(src) / sizeof(src[0]); i++) {
		for (size_t len = 1; len <= 8; len++) {
			unit_context("\"%s\", len %zu", src[i], len);
			memset(got, 'Z', sizeof(got));
			memset(want, 'Z', sizeof(want));
			CHECK_INT(rlock_strlcpy(got, src[i], len),
				  snprintf(want, len, "%s", src[i]));
			CHECK_MEM(got, sizeof(got), want, sizeof(want));
			memcpy(held, got, sizeof(held));
			CHECK_INT(rlock_strlcat(got, src[i], len),
				  snprintf(want, len, "%s%s", held, src[i]));
			CHECK_MEM(got, sizeof(got), want, sizeof(want));
		}
	}
	unit_context(NULL);

	/* Zero length writes nothing; a full buffer stays as it is. */
	memset(got, 'Z', sizeof(got));
	CHECK_INT(rlock_strlcpy(got, "abc", 0), 3);
	CHECK(got[0] == 'Z');
	memset(got, 'Z', sizeof(got));
	CHECK_INT(rlock_strlcat(got, "abc", 4), 7);
	CHECK(got[0] == 'Z' && got[4] == 'Z');
}

/* rlock_join: everything or nothing. */
static void join(void)
{
	const char *const parts[] = { "ab", "", "{", "cde", "}", NULL };
	const char *const none[] = { NULL };
	char buf[8 + 4];

	memset(buf, 'Z', sizeof(buf));
	CHECK_INT(rlock_join(buf, 8, parts), 7);	/* 7 and the NUL: fits */
	CHECK_STR(buf, "ab{cde}");
	CHECK(buf[8] == 'Z');
	memset(buf, 'Z', sizeof(buf));
	CHECK_INT(rlock_join(buf, 7, parts), -1);	/* one short */
	CHECK_STR(buf, "");
	CHECK(buf[1] == 'Z');
	memset(buf, 'Z', sizeof(buf));
	CHECK_INT(rlock_join(buf, 0, parts), -1);	/* no room at all */
	CHECK(buf[0] == 'Z');
	CHECK_INT(rlock_join(buf, 1, none), 0);
	CHECK_STR(buf, "");
}

/* Every address conn_ipv4_literal takes, inet_pton reads the same way;
 * the forms where parsers differ (leading zeros, fewer parts) are left
 * to getaddrinfo. */
static void ipv4(void)
{
	static const char *const yes[] = { "127.0.0.1", "0.0.0.0",
		"255.255.255.255", "10.20.30.40", "192.168.1.100",
		"1.0.0.9" };
	static const char *const no[] = { "", "1", "1.2.3", "1.2.3.4.5",
		"256.1.1.1", "1.2.3.256", "01.2.3.4", "1.2.3.04", "1.2.3.00",
		"1..2.3", ".1.2.3", "1.2.3.", "1234.1.1.1", "1.2.3.4 ",
		" 1.2.3.4", "1.2.3.-4", "+1.2.3.4", "a.b.c.d", "::1",
		"localhost", "0x7f.0.0.1", "1.2.3.4:6379" };
	unsigned char got[4], want[4];

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		unit_context("%s", yes[i]);
		CHECK(conn_ipv4_literal(yes[i], got));
		CHECK_INT(inet_pton(AF_INET, yes[i], want), 1);
		CHECK_MEM(got, 4, want, 4);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		unit_context("%s", no[i]);
		CHECK(!conn_ipv4_literal(no[i], got));
	}
	unit_context(NULL);
}

void test_util(void)
{
	seterr();
	clocks();
	strings();
	join();
	ipv4();
}
