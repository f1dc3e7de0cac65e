/*
 * test_util.c - rl_set_error never overflows its buffer, the two clocks the
 * library measures leases and waits with behave, the string helpers keep
 * strlcpy's contract and rlock_join writes all or nothing, an IPv4
 * literal reads as inet_pton reads it, and rl_passwd_name finds the name
 * getpwuid would (files first, as here); and the three ways out for text
 * rlock did not write: rlock_vis to a terminal, cli_json_str into JSON,
 * cli_prom_str into a Prometheus label value (cli/text.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pwd.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "harness.h"
#include "rlock_int.h"
#include "../../cli/cli.h"

static void seterr(void)
{
	static const wchar_t euro[] = { 0x20ac, 0 };
	char buf[16];
	char small[8 + 4];

	rl_set_error(buf, sizeof(buf), "%s: %d", "port", 6379);
	CHECK_STR(buf, "port: 6379");

	/* Truncated, terminated, and the bytes after it untouched. */
	memset(small, 'Z', sizeof(small));
	rl_set_error(small, 8, "cannot connect to %s", "127.0.0.1:6379");
	CHECK_STR(small, "cannot ");
	CHECK(memcmp(small + 8, "ZZZZ", 4) == 0);

	/* Zero length and NULL buffers are left alone. */
	memset(small, 'Z', sizeof(small));
	rl_set_error(small, 0, "x");
	CHECK(small[0] == 'Z');
	rl_set_error(NULL, 10, "x");
	rl_set_error(small, 1, "anything");
	CHECK_STR(small, "");

	/* errno survives, so a caller can still return it. */
	errno = ECONNREFUSED;
	rl_set_error(buf, sizeof(buf), "%s", strerror(errno));
	CHECK_INT(errno, ECONNREFUSED);

	/*
	 * Even when formatting itself fails: in the C locale a wide
	 * character above 0x7f cannot be converted, vsnprintf returns -1
	 * with EILSEQ, and the buffer is left empty, not half-written.
	 */
	memset(buf, 'Z', sizeof(buf));
	errno = ETIMEDOUT;
	rl_set_error(buf, sizeof(buf), "euro %ls", euro);
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

/* Every address rl_conn_ipv4_literal takes, inet_pton reads the same way;
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
		CHECK(rl_conn_ipv4_literal(yes[i], got));
		CHECK_INT(inet_pton(AF_INET, yes[i], want), 1);
		CHECK_MEM(got, 4, want, 4);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		unit_context("%s", no[i]);
		CHECK(!rl_conn_ipv4_literal(no[i], got));
	}
	unit_context(NULL);
}

/* rl_passwd_name on a file holding text: the name, or "" for -1. */
static const char *pw_in(const char *text, unsigned long uid, size_t len)
{
	static char name[64];
	char path[] = "/tmp/rlock-unit-passwd.XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		CHECK(!"cannot write a temporary passwd file");
		return "?";
	}
	close(fd);
	if (rl_passwd_name(path, uid, name, len) != 0)
		name[0] = '\0';
	unlink(path);
	return name;
}

static void passwd(void)
{
	static const char base[] =
		"root:x:0:0:root:/root:/bin/bash\n"
		"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
		"u100:x:100:100::/home/u100:/bin/sh\n"
		"#old:x:1000:1000::/home/old:/bin/sh\n"
		"  # spaced:x:1000:1000::/:/bin/sh\n"
		"\n"
		"bad:x:abc:1::/:/bin/sh\n"
		"empty:x::1::/:/bin/sh\n"
		"short:x:7\n"
		"big:x:99999999999999999999999:1::/:/bin/sh\n"
		"user:x:1000:1000:A User:/home/user:/bin/bash\n"
		"again:x:1000:1000::/:/bin/sh\n"
		"last:x:4242:4242::/:/bin/sh";
	char *text, name[64];
	struct passwd *pw;
	size_t n;

	unit_context("rl_passwd_name");
	CHECK_STR(pw_in(base, 0, 64), "root");
	CHECK_STR(pw_in(base, 1, 64), "daemon");
	CHECK_STR(pw_in(base, 100, 64), "u100");
	CHECK_STR(pw_in(base, 10, 64), "");	/* a prefix of 100 */
	CHECK_STR(pw_in(base, 1000, 64), "user");	/* not a comment's */
	CHECK_STR(pw_in(base, 7, 64), "");
	CHECK_STR(pw_in(base, 4242, 64), "last");	/* no newline at the end */
	CHECK_STR(pw_in(base, 4243, 64), "");
	CHECK_STR(pw_in(base, 1000, 5), "user");	/* "user" and its NUL */
	CHECK_STR(pw_in(base, 1000, 4), "");
	CHECK_STR(pw_in("", 0, 64), "");
	CHECK_STR(pw_in("a:x:5:5::/:/bin/sh\n+::::::\nb:x:6:6::/:/bin/sh\n", 5, 64), "a");
	CHECK_STR(pw_in("a:x:5:5::/:/bin/sh\n+::::::\nb:x:6:6::/:/bin/sh\n", 6, 64), "");
	CHECK_STR(pw_in("-c::::::\nb:x:6:6::/:/bin/sh\n", 6, 64), "");
	CHECK_INT(rl_passwd_name("/nonexistent/passwd", 0, name, sizeof(name)), -1);
	/* Lines across the 4 KiB reads, and a line longer than one read. */
	n = 20000;
	if ((text = malloc(n)) == NULL)
		return;
	text[0] = '\0';
	for (int i = 0; i < 300; i++) {
		char line[64];

		snprintf(line, sizeof(line), "user%d:x:%d:1::/home:/bin/sh\n",
			 i, 2000 + i);
		rlock_strlcat(text, line, n);
	}
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "user%d", i);
		unit_context("rl_passwd_name, uid %d", 2000 + i);
		CHECK_STR(pw_in(text, 2000 + i, 64), name);
	}
	unit_context("rl_passwd_name, a long line");
	memset(text, 'g', 5000);
	memcpy(text, "long:x:3:3:", 11);
	rlock_strlcpy(text + 5000, ":/:/bin/sh\nafter:x:4:4::/:/bin/sh\n", n - 5000);
	CHECK_STR(pw_in(text, 4, 64), "");
	rlock_strlcpy(text, "first:x:4:4::/:/bin/sh\n", n);
	memset(text + 23, 'g', 5000);
	rlock_strlcpy(text + 5023, "\n", n - 5023);
	CHECK_STR(pw_in(text, 4, 64), "first");
	free(text);
	/* This machine's passwd file, whose first source is files: every
	 * uid's name is getpwuid's. */
	uid_t uids[512];
	size_t nu = 0;

	setpwent();
	while ((pw = getpwent()) != NULL && nu < 512)
		uids[nu++] = pw->pw_uid;
	endpwent();
	CHECK(nu > 0);
	for (size_t i = 0; i < nu; i++) {
		unit_context("rl_passwd_name, /etc/passwd, uid %lu",
			     (unsigned long)uids[i]);
		CHECK_INT(rl_passwd_name("/etc/passwd", uids[i], name,
					 sizeof(name)), 0);
		if ((pw = getpwuid(uids[i])) != NULL)
			CHECK_STR(name, pw->pw_name);
	}
	unit_context(NULL);
}

/* The one integer parser for outside data: in full, in range, or not. */
static void parse_ll(void)
{
	static const struct {
		const char *s;
		long long min, max;
		int ok;
		long long want;
	} t[] = {
		{ "0", 0, 10, 1, 0 },
		{ "10", 0, 10, 1, 10 },
		{ "11", 0, 10, 0, 0 },
		{ "-1", -1, 10, 1, -1 },
		{ "-1", 0, 10, 0, 0 },
		{ "007", 0, 10, 1, 7 },
		{ "9223372036854775807", 0, LLONG_MAX, 1, LLONG_MAX },
		{ "9223372036854775808", 0, LLONG_MAX, 0, 0 },
		{ "-9223372036854775808", LLONG_MIN, 0, 1, LLONG_MIN },
		{ "-9223372036854775809", LLONG_MIN, 0, 0, 0 },
		{ "99999999999999999999999", LLONG_MIN, LLONG_MAX, 0, 0 },
		{ "", LLONG_MIN, LLONG_MAX, 0, 0 },
		{ "-", LLONG_MIN, LLONG_MAX, 0, 0 },
		{ "+1", LLONG_MIN, LLONG_MAX, 0, 0 },
		{ " 12", LLONG_MIN, LLONG_MAX, 0, 0 },
		{ "12 ", LLONG_MIN, LLONG_MAX, 0, 0 },
		{ "1e3", LLONG_MIN, LLONG_MAX, 0, 0 },
		{ "0x10", LLONG_MIN, LLONG_MAX, 0, 0 },
		{ "1.0", LLONG_MIN, LLONG_MAX, 0, 0 },
		{ "--1", LLONG_MIN, LLONG_MAX, 0, 0 },
	};
	long long v;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		unit_context("rlock_parse_ll '%s'", t[i].s);
		v = 42;
		CHECK_INT(rlock_parse_ll(t[i].s, strlen(t[i].s), t[i].min,
					 t[i].max, &v), t[i].ok ? 0 : -1);
		CHECK_INT(v, t[i].ok ? t[i].want : 42);
	}
	/* The length bounds it, not a terminator. */
	unit_context("rlock_parse_ll, a prefix");
	CHECK_INT(rlock_parse_ll("12abc", 2, 0, 100, &v), 0);
	CHECK_INT(v, 12);
	unit_context(NULL);
}

/* Outside text for a terminal: printable ASCII and shown UTF-8 as they
 * are, the backslash as \\, every other byte as \xNN, cut whole at the
 * buffer's end. */
static void vis(void)
{
	static const struct {
		const char *in, *want;
	} t[] = {
		{ "", "" },
		{ "abc", "abc" },
		/* C0, DEL: an OSC retitling, a clear screen. */
		{ "\x1b]0;x\x07", "\\x1b]0;x\\x07" },
		{ "\x1b[2J\x7f", "\\x1b[2J\\x7f" },
		{ "a\nb\tc\r", "a\\x0ab\\x09c\\x0d" },
		/* The backslash doubled, so that \x1b above is no text. */
		{ "a\\b", "a\\\\b" },
		{ "\\x1b", "\\\\x1b" },
		/* C1 (CSI, NEL, U+0080) per byte. */
		{ "\xc2\x9b" "31m", "\\xc2\\x9b" "31m" },
		{ "\xc2\x85\xc2\x80", "\\xc2\\x85\\xc2\\x80" },
		/* Valid UTF-8 as it is, from two to four bytes. */
		{ "Jos\xc3\xa9", "Jos\xc3\xa9" },
		{ "\xc2\xa0\xc3\xbf", "\xc2\xa0\xc3\xbf" },
		{ "\xe6\x97\xa5\xe6\x9c\xac", "\xe6\x97\xa5\xe6\x9c\xac" },
		{ "\xf0\x9f\x94\x92", "\xf0\x9f\x94\x92" },
		{ "\xf4\x8f\xbf\xbd", "\xf4\x8f\xbf\xbd" },	/* U+10FFFD */
		/* Invalid UTF-8, each byte: stray continuations, 0xff. */
		{ "\x80\xbf", "\\x80\\xbf" },
		{ "a\xff" "b", "a\\xffb" },
		{ "\xc0\xaf", "\\xc0\\xaf" },		/* overlong '/' */
		{ "\xe0\x80\xaf", "\\xe0\\x80\\xaf" },	/* overlong */
		{ "\xf0\x80\x80\xaf", "\\xf0\\x80\\x80\\xaf" },
		{ "\xed\xa0\x80", "\\xed\\xa0\\x80" },	/* U+D800 */
		{ "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80" }, /* > U+10FFFF */
		{ "\xf5\x80", "\\xf5\\x80" },
		/* Cut short: at the end, and before another character. */
		{ "\xe6\x97", "\\xe6\\x97" },
		{ "\xe6\x97" "a", "\\xe6\\x97" "a" },
		{ "\xf0\x9f\x94", "\\xf0\\x9f\\x94" },
		/* Hidden: bidi override, isolate, zero width, BOM, line
		 * separator, a tag, a noncharacter; each byte. */
		{ "\xe2\x80\xae", "\\xe2\\x80\\xae" },
		{ "\xe2\x81\xa6", "\\xe2\\x81\\xa6" },
		{ "\xe2\x80\x8b\xef\xbb\xbf", "\\xe2\\x80\\x8b\\xef\\xbb\\xbf" },
		{ "\xe2\x80\xa8", "\\xe2\\x80\\xa8" },
		{ "\xf3\xa0\x81\x81", "\\xf3\\xa0\\x81\\x81" },
		{ "\xef\xbf\xbf", "\\xef\\xbf\\xbf" },
	};
	char buf[128];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		unit_context("rlock_vis case %zu", i);
		CHECK_STR(rlock_vis(buf, sizeof(buf), t[i].in, strlen(t[i].in)),
			  t[i].want);
	}
	unit_context(NULL);
	/* The length bounds it, NULs and all. */
	CHECK_STR(rlock_vis(buf, sizeof(buf), "a\0b", 3), "a\\x00b");
	/* Cut whole: never half an escape, a character or a \\. */
	CHECK_STR(rlock_vis(buf, 6, "ab\ncd", 5), "ab");
	CHECK_STR(rlock_vis(buf, 7, "ab\ncd", 5), "ab\\x0a");
	CHECK_STR(rlock_vis(buf, 4, "abcdef", 6), "abc");
	CHECK_STR(rlock_vis(buf, 1, "abc", 3), "");
	CHECK_STR(rlock_vis(buf, 3, "a\\", 2), "a");
	CHECK_STR(rlock_vis(buf, 5, "ab\xe6\x97\xa5", 5), "ab");
	CHECK_STR(rlock_vis(buf, 6, "ab\xe6\x97\xa5", 5), "ab\xe6\x97\xa5");
	/* A hidden character's escapes go whole: 12 bytes or none. */
	CHECK_STR(rlock_vis(buf, 13, "a\xe2\x80\xae", 4), "a");
	CHECK_STR(rlock_vis(buf, 14, "a\xe2\x80\xae", 4), "a\\xe2\\x80\\xae");
	/* No room at all: dst untouched. */
	buf[0] = 'Z';
	rlock_vis(buf, 0, "abc", 3);
	CHECK_INT(buf[0], 'Z');
}

/* The decoder by itself: lengths and code points at the edges. */
static void utf8(void)
{
	static const struct {
		const char *s;
		size_t len;
		uint32_t cp;
	} t[] = {
		{ "A", 1, 0x41 },
		{ "\xc2\x80", 2, 0x80 },
		{ "\xdf\xbf", 2, 0x7ff },
		{ "\xe0\xa0\x80", 3, 0x800 },
		{ "\xed\x9f\xbf", 3, 0xd7ff },
		{ "\xee\x80\x80", 3, 0xe000 },
		{ "\xef\xbf\xbd", 3, 0xfffd },
		{ "\xf0\x90\x80\x80", 4, 0x10000 },
		{ "\xf4\x8f\xbf\xbf", 4, 0x10ffff },
		{ "\xc1\xbf", 0, 0 },
		{ "\xe0\x9f\xbf", 0, 0 },
		{ "\xed\xbf\xbf", 0, 0 },
		{ "\xf0\x8f\xbf\xbf", 0, 0 },
		{ "\xf4\x90\x80\x80", 0, 0 },
		{ "\xc3(", 0, 0 },
		{ "\xbf", 0, 0 },
	};
	uint32_t cp;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		unit_context("rlock_utf8_char case %zu", i);
		cp = 0;
		CHECK_INT(rlock_utf8_char(t[i].s, strlen(t[i].s), &cp),
			  t[i].len);
		CHECK_INT(cp, t[i].cp);
	}
	unit_context(NULL);
	/* n bounds it: a whole character beyond n is cut short. */
	CHECK_INT(rlock_utf8_char("\xe6\x97\xa5", 2, &cp), 0);
	CHECK_INT(rlock_utf8_char("", 0, &cp), 0);
	CHECK_INT(rlock_utf8_shown(0xe9), 1);
	CHECK_INT(rlock_utf8_shown(0x9b), 0);
	CHECK_INT(rlock_utf8_shown(0x202e), 0);
	CHECK_INT(rlock_utf8_shown(0x1fffe), 0);
	CHECK_INT(rlock_utf8_shown(0x1f512), 1);
}

/* What a writer of cli/text.c writes for s, into buf. */
static const char *written(void (*w)(FILE *, const char *), const char *s,
			   char *buf, size_t len)
{
	FILE *f = fmemopen(buf, len, "w");

	if (f == NULL)
		return "(fmemopen failed)";
	w(f, s);
	fputc('\0', f);
	fclose(f);
	return buf;
}

/* JSON: valid UTF-8 whatever the input, escapes as RFC 8259 has them. */
static void json(void)
{
	static const struct {
		const char *in, *want;
	} t[] = {
		{ "", "\"\"" },
		{ "web3", "\"web3\"" },
		{ "a\"b\\c", "\"a\\\"b\\\\c\"" },
		{ "l1\nl2\tx", "\"l1\\nl2\\tx\"" },
		{ "\x1b]0;owned\x07", "\"\\u001b]0;owned\\u0007\"" },
		{ "\r\x7f", "\"\\u000d\\u007f\"" },
		{ "\xc2\x9b" "2J", "\"\\u009b2J\"" },
		{ "Jos\xc3\xa9 \xe6\x97\xa5", "\"Jos\xc3\xa9 \xe6\x97\xa5\"" },
		{ "\xf0\x9f\x94\x92", "\"\xf0\x9f\x94\x92\"" },
		{ "a\xff" "b", "\"a\\ufffdb\"" },
		{ "\xe6\x97", "\"\\ufffd\\ufffd\"" },
		{ "\xc0\xaf", "\"\\ufffd\\ufffd\"" },
		{ "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"" },
		{ "\xe2\x80\xae", "\"\\u202e\"" },
		{ "\xf3\xa0\x81\x81", "\"\\udb40\\udc41\"" },
	};
	char buf[128];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		unit_context("cli_json_str case %zu", i);
		CHECK_STR(written(cli_json_str, t[i].in, buf, sizeof(buf)),
			  t[i].want);
	}
	unit_context(NULL);
	CHECK_STR(written(cli_json_str, "x", buf, sizeof(buf)), "\"x\"");
	{
		FILE *f = fmemopen(buf, sizeof(buf), "w");

		CHECK(f != NULL);
		if (f != NULL) {
			cli_json_opt(f, "note", "");
			cli_json_opt(f, "host", "h\xff");
			fputc('\0', f);
			fclose(f);
			CHECK_STR(buf, ",\"note\":null,\"host\":\"h\\ufffd\"");
		}
	}
}

/* Prometheus label values: \\, \" and \n, the rest valid UTF-8. */
static void prom(void)
{
	static const struct {
		const char *in, *want;
	} t[] = {
		{ "", "\"\"" },
		{ "nightly", "\"nightly\"" },
		{ "a\"b\\c\nd", "\"a\\\"b\\\\c\\nd\"" },
		{ "Jos\xc3\xa9", "\"Jos\xc3\xa9\"" },
		{ "\x1b[2J", "\"\xef\xbf\xbd[2J\"" },
		{ "\t\x7f", "\"\xef\xbf\xbd\xef\xbf\xbd\"" },
		{ "\xc2\x9b", "\"\xef\xbf\xbd\"" },
		{ "a\xff", "\"a\xef\xbf\xbd\"" },
		{ "\xe6\x97", "\"\xef\xbf\xbd\xef\xbf\xbd\"" },
	};
	char buf[128];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		unit_context("cli_prom_str case %zu", i);
		CHECK_STR(written(cli_prom_str, t[i].in, buf, sizeof(buf)),
			  t[i].want);
	}
	unit_context(NULL);
}

/* A server's text: whole up to the bound, else cut before a word (or a
 * UTF-8 character) with "...". */
static void servertext(void)
{
	char buf[SERVER_TEXT_MAX + 1], small[16], in[700];
	const char *valkey = "ERR ACL failure in script: User nolog has no "
			     "permissions to run the 'xadd' command";
	size_t n;

	CHECK_STR(rl_server_text(buf, sizeof(buf), valkey, strlen(valkey)),
		  valkey);
	CHECK_STR(rl_server_text(buf, sizeof(buf), "", 0), "");
	/* Words past the bound: cut before the one that does not fit. */
	n = 0;
	while (n + 6 < sizeof(in) - 1) {
		memcpy(in + n, "word, ", 6);
		n += 6;
	}
	in[n] = '\0';
	rl_server_text(buf, sizeof(buf), in, n);
	CHECK(strlen(buf) <= SERVER_TEXT_MAX);
	CHECK(strlen(buf) > SERVER_TEXT_MAX - 10);
	CHECK_INT(strncmp(buf, in, strlen(buf) - 3), 0);
	CHECK_STR(buf + strlen(buf) - 5, "d,...");
	/* A small buffer: the same, in its room. */
	CHECK_STR(rl_server_text(small, sizeof(small), valkey, strlen(valkey)),
		  "ERR ACL...");
	CHECK_STR(rl_server_text(small, 4, valkey, strlen(valkey)), "");
	/* One long word of two-byte characters: cut between two. */
	for (n = 0; n + 2 < sizeof(in); n += 2)
		memcpy(in + n, "\xc3\xa9", 2);
	rl_server_text(buf, sizeof(buf), in, n);
	CHECK_INT((int)strlen(buf) % 2, 1);
	CHECK_STR(buf + strlen(buf) - 5, "\xc3\xa9...");
}

void test_util(void)
{
	servertext();
	parse_ll();
	vis();
	utf8();
	json();
	prom();
	seterr();
	clocks();
	strings();
	join();
	ipv4();
	passwd();
}
