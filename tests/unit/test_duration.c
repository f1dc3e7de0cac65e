/*
 * test_duration.c - rlock_parse_duration: every form a user may type for
 * -t, -w, --min-hold and the timeouts, and the many ways to get it wrong.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rlock.h"

/* 100 years of 365.25 days, the documented ceiling. */
#define MAX_MS 3155760000000LL

static const struct {
	const char *in;
	int64_t ms;
} good[] = {
	/* Zero in every spelling: accepted, the caller decides. */
	{ "0", 0 },
	{ "00", 0 },
	{ "0.0", 0 },
	{ ".0", 0 },
	{ "0.000000", 0 },
	{ "0ms", 0 },
	{ "0s", 0 },
	{ "0m", 0 },
	{ "0h", 0 },
	{ "0.0h", 0 },

	/* Bare numbers are seconds, fractions allowed (flock -w 1.5). */
	{ "1", 1000 },
	{ "30", 30000 },
	{ "007", 7000 },
	{ "1.5", 1500 },
	{ ".5", 500 },
	{ "0.5", 500 },
	{ "0.001", 1 },
	{ "0.0015", 1 },	/* fractions of a ms are dropped */
	{ "0.0019999", 1 },
	{ "1.9999", 1999 },
	{ "0.1", 100 },
	/* Exact decimal arithmetic: 4.35 * 1000 in doubles is 4349.99.. */
	{ "4.35", 4350 },
	{ "0.29", 290 },
	{ "1.005", 1005 },
	{ "2.675", 2675 },
	{ "86400", 86400000 },

	/* Units. */
	{ "1ms", 1 },
	{ "10ms", 10 },
	{ "500ms", 500 },
	{ "1.5ms", 1 },
	{ "1.999ms", 1 },
	{ "2500ms", 2500 },
	{ "1s", 1000 },
	{ "30s", 30000 },
	{ "1.5s", 1500 },
	{ ".25s", 250 },
	{ "0.010s", 10 },
	{ "5m", 300000 },
	{ "1.5m", 90000 },
	{ "0.5m", 30000 },
	{ ".1m", 6000 },
	{ "0.0000167m", 1 },	/* 1.002 ms */
	{ "2h", 7200000 },
	{ "1d", 86400000 },
	{ "1.5d", 129600000 },
	{ "30d", 2592000000LL },
	{ "1.5h", 5400000 },
	{ "0.1h", 360000 },
	{ "0.0001h", 360 },
	{ "720h", 2592000000LL },	/* the 30-day TTL ceiling */
	{ "43200m", 2592000000LL },

	/* Exactly 100 years in each unit is still accepted. */
	{ "3155760000", MAX_MS },
	{ "3155760000s", MAX_MS },
	{ "3155760000000ms", MAX_MS },
	{ "52596000m", MAX_MS },
	{ "876600h", MAX_MS },
	{ "3155759999.999", MAX_MS - 1 },
	{ "3155760000000.9ms", MAX_MS },	/* the .9 ms is dropped */

	/* Compound: each unit once, largest first, a fraction only last. */
	{ "1h30m", 5400000 },
	{ "1m30s", 90000 },
	{ "2d12h", 216000000 },
	{ "1d1h1m1s1ms", 90061001 },
	{ "1h0m", 3600000 },
	{ "0h0m0s", 0 },
	{ "1m30ms", 60030 },
	{ "1m1.5s", 61500 },
	{ "1h.5m", 3630000 },
	{ "1s0.5ms", 1000 },	/* the .5 ms is dropped */
	{ "876599h60m", MAX_MS },
	{ "36524d24h", MAX_MS },
	{ "3155759999s1000ms", MAX_MS },
	{ "000000000000000000000000000000000001", 1000 },
};

static const char *const bad[] = {
	/* Empty and whitespace anywhere. */
	"", " ", "\t", " 1", "1 ", "1 s", "\t1", "1\n", "1\t", "5 ms",
	"5ms ", "1. 5", "\n",
	/* Signs, even on zero. */
	"+1", "-1", "-0", "+0", "-1s", "+5m", "--1", "-.5", "1-", "1+",
	/* What strtod would take. */
	"1e3", "1E3", "1e-3", "0x10", "0X10", "0x1p3", "inf", "INF",
	"infinity", "nan", "NaN", "1,5", "1_000", "1'000",
	/* Malformed numbers. */
	".", "5.", "5.s", ".s", "..5", "1..5", "1.2.3", "5.ms", "1/2", "abc",
	"s", "ms", "m", "h", "d", "one",
	/* Unknown or wrongly cased units, and anything after the unit. */
	"5w", "5y", "5us", "5ns", "5sec", "5secs", "5min", "5hr",
	"5S", "5MS", "5Ms", "5mS", "5M", "5H", "5D", "5dd", "5ss", "5mss", "5sm",
	"5m5", "ms5", "5s;", "5\xc2\xa0s",
	/* Compound forms out of order, repeated, with a fraction before
	 * the last part, a sign, a space or a bare number in them. */
	"30m1h", "1s1m", "1ms1s", "1h1h", "1m1m", "1s1s", "1h30m1h", "1d1d",
	"1.5h30m", "1.5m1s", "1h 30m", "1h+30m", "1h-30m", "1h30", "1h30m5",
	"1h30mm", "1h30m ", "h30m", "1hm", "1h.m", "1h30.m", "1h30ms1s",
	"1s1", "30m1", "0.5ms0.5ms",
	/* Compound past 100 years, or non-zero below one millisecond. */
	"876600h1ms", "36525d1ms", "3155760000s1ms", "0h0.0001s",
	/* Non-ASCII digits and a Unicode minus. */
	"\xd9\xa1", ("\xe2\x88\x92" "1"),
	/* Non-zero but below one millisecond. */
	"0.0001", "0.0009", "0.0009999999", "0.5ms", "0.9ms", "0.001ms",
	"0.00001m", "0.0000001h", "0.000000000000000000000000001",
	/* More than 100 years. */
	"3155760001", "3155760000.001", "3155760000001ms", "52596001m",
	"876601h", "876600.0001h", "3155760001s",
	"99999999999999999999999999999999", "9223372036854775807",
	"9223372036854775808ms", "18446744073709551616",
	"99999999999999999999999999999999h",
};

/* A long fraction must not overflow or lose exactness. */
static void long_fractions(void)
{
	char buf[1100];
	int64_t ms = -1;

	/* "1.000...0001": a tiny non-zero tail on a whole second. */
	buf[0] = '1';
	buf[1] = '.';
	memset(buf + 2, '0', 1000);
	buf[1002] = '1';
	buf[1003] = '\0';
	CHECK_INT(rlock_parse_duration(buf, &ms), 0);
	CHECK_INT(ms, 1000);

	/* "0.999...9" is one digit short of a second in every place. */
	buf[0] = '0';
	memset(buf + 2, '9', 1000);
	buf[1002] = 'h';
	buf[1003] = '\0';
	CHECK_INT(rlock_parse_duration(buf, &ms), 0);
	CHECK_INT(ms, 3599999);

	/* "0.000...0009" rounds to nothing: non-zero below 1 ms. */
	memset(buf + 2, '0', 1000);
	buf[1002] = '9';
	buf[1003] = '\0';
	ms = 42;
	CHECK_INT(rlock_parse_duration(buf, &ms), -1);
	CHECK_INT(ms, 42);

	/* A thousand leading zeros on the integer part are harmless. */
	memset(buf, '0', 1000);
	strcpy(buf + 1000, "30s");
	CHECK_INT(rlock_parse_duration(buf, &ms), 0);
	CHECK_INT(ms, 30000);

	/* A thousand nines are not. */
	memset(buf, '9', 1000);
	strcpy(buf + 1000, "ms");
	CHECK_INT(rlock_parse_duration(buf, &ms), -1);
}

void test_duration(void)
{
	size_t i;
	int64_t ms;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		unit_context("input '%s'", good[i].in);
		ms = -12345;
		CHECK_INT(rlock_parse_duration(good[i].in, &ms), 0);
		CHECK_INT(ms, good[i].ms);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unit_context("input '%s'", bad[i]);
		ms = -12345;
		CHECK_INT(rlock_parse_duration(bad[i], &ms), -1);
		/* A refused value leaves the output alone. */
		CHECK_INT(ms, -12345);
	}
	unit_context(NULL);

	/* An embedded NUL ends the string: what follows is not seen. */
	CHECK_INT(rlock_parse_duration("5s\0junk", &ms), 0);
	CHECK_INT(ms, 5000);

	CHECK_INT(rlock_parse_duration(NULL, &ms), -1);
	CHECK_INT(rlock_parse_duration("5s", NULL), -1);

	long_fractions();
}
