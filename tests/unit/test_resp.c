/*
 * test_resp.c - the RESP2 edge cases the transport depends on, checked
 * against hiredis's redisReader (0.14 as packaged by Debian, which has the
 * strict integer and length checks backported).  The transport feeds the
 * reader whatever read(2) returned, so every well-formed reply is also
 * fed one byte at a time: a reply must never appear before its last byte
 * and never be lost across a split.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "harness.h"
#include "rlock_int.h"

#define S(lit) lit, sizeof(lit) - 1

/*
 * Parse exactly one reply from buf, fed whole (bytewise == 0) or one byte
 * at a time.  Returns the reply, or NULL on a parse error or when the
 * bytes do not make exactly one complete reply (checked as failures).
 */
static redisReply *parse(const char *buf, size_t len, int bytewise)
{
	redisReader *r = redisReaderCreate();
	void *reply = NULL, *extra = NULL;
	size_t i;

	if (r == NULL) {
		CHECK(r != NULL);
		return NULL;
	}
	if (bytewise) {
		/* One check for the whole walk, not one per byte. */
		int fed = 1;

		for (i = 0; i < len && fed; i++) {
			if (redisReaderFeed(r, buf + i, 1) != REDIS_OK ||
			    redisReaderGetReply(r, &reply) != REDIS_OK)
				fed = 0;
			if (reply != NULL && i + 1 < len) {
				/* Complete before its last byte. */
				freeReplyObject(reply);
				reply = NULL;
				fed = 0;
			}
		}
		CHECK(fed);
	} else {
		CHECK_INT(redisReaderFeed(r, buf, len), REDIS_OK);
		CHECK_INT(redisReaderGetReply(r, &reply), REDIS_OK);
	}
	CHECK(reply != NULL);
	/* Nothing may be left over. */
	CHECK_INT(redisReaderGetReply(r, &extra), REDIS_OK);
	CHECK(extra == NULL);
	if (extra != NULL)
		freeReplyObject(extra);
	redisReaderFree(r);
	return reply;
}

/* Feed buf whole; it must be a protocol error whose text contains want. */
static void proto_error(const char *buf, size_t len, const char *want)
{
	redisReader *r = redisReaderCreate();
	void *reply = NULL;

	unit_context("input '%.*s'", (int)len, buf);
	CHECK_INT(redisReaderFeed(r, buf, len), REDIS_OK);
	CHECK_INT(redisReaderGetReply(r, &reply), REDIS_ERR);
	CHECK(reply == NULL);
	CHECK_INT(r->err, REDIS_ERR_PROTOCOL);
	CHECK(strstr(r->errstr, want) != NULL);
	/* The reader is dead after an error: no more input, no reply. */
	CHECK_INT(redisReaderFeed(r, S("+OK\r\n")), REDIS_ERR);
	CHECK_INT(redisReaderGetReply(r, &reply), REDIS_ERR);
	CHECK(reply == NULL);
	redisReaderFree(r);
	unit_context(NULL);
}

static void scalars(void)
{
	redisReply *x;
	int bw;

	for (bw = 0; bw <= 1; bw++) {
		unit_context("bytewise %d", bw);
		if ((x = parse(S("+OK\r\n"), bw)) != NULL) {
			CHECK_INT(x->type, REDIS_REPLY_STATUS);
			CHECK_STR(x->str, "OK");
			CHECK_INT(x->len, 2);
			freeReplyObject(x);
		}
		if ((x = parse(S("+\r\n"), bw)) != NULL) {
			CHECK_INT(x->type, REDIS_REPLY_STATUS);
			CHECK_INT(x->len, 0);
			freeReplyObject(x);
		}
		/* A lone CR inside a line is content, not a terminator. */
		if ((x = parse(S("+a\rb\r\n"), bw)) != NULL) {
			CHECK_INT(x->type, REDIS_REPLY_STATUS);
			CHECK_MEM(x->str, x->len, "a\rb", 3);
			freeReplyObject(x);
		}
		if ((x = parse(S("-ERR unknown command 'FOO'\r\n"), bw)) !=
		    NULL) {
			CHECK_INT(x->type, REDIS_REPLY_ERROR);
			CHECK_STR(x->str, "ERR unknown command 'FOO'");
			freeReplyObject(x);
		}
		if ((x = parse(S("-WRONGTYPE Operation against a key holding "
				 "the wrong kind of value\r\n"),
			       bw)) != NULL) {
			CHECK_INT(x->type, REDIS_REPLY_ERROR);
			CHECK(strncmp(x->str, "WRONGTYPE ", 10) == 0);
			freeReplyObject(x);
		}
		if ((x = parse(S("-NOSCRIPT No matching script.\r\n"), bw)) !=
		    NULL) {
			CHECK_INT(x->type, REDIS_REPLY_ERROR);
			CHECK(strncmp(x->str, "NOSCRIPT", 8) == 0);
			freeReplyObject(x);
		}
		if ((x = parse(S("-\r\n"), bw)) != NULL) {
			CHECK_INT(x->type, REDIS_REPLY_ERROR);
			CHECK_INT(x->len, 0);
			freeReplyObject(x);
		}
		if ((x = parse(S(":0\r\n"), bw)) != NULL) {
			CHECK_INT(x->type, REDIS_REPLY_INTEGER);
			CHECK_INT(x->integer, 0);
			freeReplyObject(x);
		}
		if ((x = parse(S(":-1\r\n"), bw)) != NULL) {
			CHECK_INT(x->type, REDIS_REPLY_INTEGER);
			CHECK_INT(x->integer, -1);
			freeReplyObject(x);
		}
		/* Fences and PTTLs are 64-bit: both ends of the range. */
		if ((x = parse(S(":9223372036854775807\r\n"), bw)) != NULL) {
			CHECK_INT(x->type, REDIS_REPLY_INTEGER);
			CHECK(x->integer == INT64_MAX);
			freeReplyObject(x);
		}
		if ((x = parse(S(":-9223372036854775808\r\n"), bw)) != NULL) {
			CHECK_INT(x->type, REDIS_REPLY_INTEGER);
			CHECK(x->integer == INT64_MIN);
			freeReplyObject(x);
		}
		if ((x = parse(S(":1763000000000\r\n"), bw)) != NULL) {
			CHECK_INT(x->integer, 1763000000000LL);
			freeReplyObject(x);
		}
	}
	unit_context(NULL);
}

static void bulks(void)
{
	static const char bin[] = "a\0b\r\nc\xff";
	redisReply *x;
	int bw;

	for (bw = 0; bw <= 1; bw++) {
		unit_context("bytewise %d", bw);
		if ((x = parse(S("$5\r\nhello\r\n"), bw)) != NULL) {
			CHECK_INT(x->type, REDIS_REPLY_STRING);
			CHECK_MEM(x->str, x->len, "hello", 5);
			freeReplyObject(x);
		}
		/* Empty is a string of length 0, not nil. */
		if ((x = parse(S("$0\r\n\r\n"), bw)) != NULL) {
			CHECK_INT(x->type, REDIS_REPLY_STRING);
			CHECK_INT(x->len, 0);
			CHECK(x->str != NULL && x->str[0] == '\0');
			freeReplyObject(x);
		}
		if ((x = parse(S("$-1\r\n"), bw)) != NULL) {
			CHECK_INT(x->type, REDIS_REPLY_NIL);
			freeReplyObject(x);
		}
		/* Binary-safe: NUL, CRLF and 0xff inside the payload. */
		if ((x = parse(S("$7\r\na\0b\r\nc\xff\r\n"), bw)) != NULL) {
			CHECK_INT(x->type, REDIS_REPLY_STRING);
			CHECK_MEM(x->str, x->len, bin, sizeof(bin) - 1);
			/* hiredis terminates it for convenience. */
			CHECK(x->str[7] == '\0');
			freeReplyObject(x);
		}
		/* A payload that looks like another reply is just bytes. */
		if ((x = parse(S("$5\r\n+OK\r\n\r\n"), bw)) != NULL) {
			CHECK_INT(x->type, REDIS_REPLY_STRING);
			CHECK_MEM(x->str, x->len, "+OK\r\n", 5);
			freeReplyObject(x);
		}
	}
	unit_context(NULL);
}

static void arrays(void)
{
	redisReply *x;
	int bw;

	for (bw = 0; bw <= 1; bw++) {
		unit_context("bytewise %d", bw);
		if ((x = parse(S("*0\r\n"), bw)) != NULL) {
			CHECK_INT(x->type, REDIS_REPLY_ARRAY);
			CHECK_INT(x->elements, 0);
			freeReplyObject(x);
		}
		if ((x = parse(S("*-1\r\n"), bw)) != NULL) {
			CHECK_INT(x->type, REDIS_REPLY_NIL);
			freeReplyObject(x);
		}
		/* The shape of an acquire script's answer: {1, fence, ttl}. */
		if ((x = parse(S("*3\r\n:1\r\n:42\r\n:30000\r\n"), bw)) !=
		    NULL) {
			CHECK_INT(x->type, REDIS_REPLY_ARRAY);
			CHECK_INT(x->elements, 3);
			if (x->elements == 3) {
				CHECK_INT(x->element[1]->integer, 42);
				CHECK_INT(x->element[2]->integer, 30000);
			}
			freeReplyObject(x);
		}
		/* Mixed elements, nils and an error inside an array (as
		 * HMGET and EXEC return them). */
		if ((x = parse(S("*5\r\n$-1\r\n-ERR inner\r\n*-1\r\n$0\r\n"
				 "\r\n+st\r\n"),
			       bw)) != NULL) {
			CHECK_INT(x->type, REDIS_REPLY_ARRAY);
			CHECK_INT(x->elements, 5);
			if (x->elements == 5) {
				CHECK_INT(x->element[0]->type, REDIS_REPLY_NIL);
				CHECK_INT(x->element[1]->type,
					  REDIS_REPLY_ERROR);
				CHECK_STR(x->element[1]->str, "ERR inner");
				CHECK_INT(x->element[2]->type, REDIS_REPLY_NIL);
				CHECK_INT(x->element[3]->type,
					  REDIS_REPLY_STRING);
				CHECK_INT(x->element[3]->len, 0);
				CHECK_INT(x->element[4]->type,
					  REDIS_REPLY_STATUS);
			}
			freeReplyObject(x);
		}
		/* Nested: SCAN answers {cursor, {keys...}}. */
		if ((x = parse(S("*2\r\n$1\r\n0\r\n*2\r\n$5\r\nrlock\r\n*1\r\n"
				 "*0\r\n"),
			       bw)) != NULL) {
			CHECK_INT(x->type, REDIS_REPLY_ARRAY);
			CHECK_INT(x->elements, 2);
			if (x->elements == 2) {
				redisReply *in = x->element[1];

				CHECK_STR(x->element[0]->str, "0");
				CHECK_INT(in->type, REDIS_REPLY_ARRAY);
				CHECK_INT(in->elements, 2);
				if (in->elements == 2) {
					CHECK_STR(in->element[0]->str, "rlock");
					CHECK_INT(in->element[1]->type,
						  REDIS_REPLY_ARRAY);
					CHECK_INT(in->element[1]->elements, 1);
				}
			}
			freeReplyObject(x);
		}
	}
	unit_context(NULL);
}

/*
 * hiredis 0.14 keeps a fixed stack of 9 read tasks: eight levels of
 * arrays around a scalar parse, nine are a protocol error.  Nothing rlock
 * sends returns more than two levels; the test pins the limit so an
 * upgrade that changes it is noticed.
 */
static void depth(void)
{
	char buf[128];
	size_t n = 0;
	int i;
	redisReply *x, *y;

	for (i = 0; i < 8; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "*1\r\n");
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, ":7\r\n");
	if ((x = parse(buf, n, 1)) != NULL) {
		for (y = x, i = 0; i < 8 && y->type == REDIS_REPLY_ARRAY &&
				   y->elements == 1;
		     i++)
			y = y->element[0];
		CHECK_INT(i, 8);
		CHECK_INT(y->type, REDIS_REPLY_INTEGER);
		CHECK_INT(y->integer, 7);
		freeReplyObject(x);
	}
	n = 0;
	for (i = 0; i < 9; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "*1\r\n");
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, ":7\r\n");
	proto_error(buf, n, "nested multi bulk");
}

/*
 * Several replies in one read come out one at a time, in order, whether
 * they arrive whole, in 4-byte pieces that split every token, or byte by
 * byte.
 */
static void pipelined(void)
{
	static const char in[] =
		"+OK\r\n:1\r\n$1\r\nx\r\n*1\r\n$-1\r\n-ERR e\r\n";
	static const int types[] = { REDIS_REPLY_STATUS, REDIS_REPLY_INTEGER,
				     REDIS_REPLY_STRING, REDIS_REPLY_ARRAY,
				     REDIS_REPLY_ERROR };
	static const size_t steps[] = { sizeof(in) - 1, 4, 1 };
	const size_t len = sizeof(in) - 1;
	size_t s, i, got;

	for (s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		redisReader *r = redisReaderCreate();

		unit_context("pieces of %zu bytes", steps[s]);
		got = 0;
		for (i = 0; i < len; i += steps[s]) {
			size_t n = len - i < steps[s] ? len - i : steps[s];
			void *reply;

			CHECK_INT(redisReaderFeed(r, in + i, n), REDIS_OK);
			for (;;) {
				reply = NULL;
				CHECK_INT(redisReaderGetReply(r, &reply),
					  REDIS_OK);
				if (reply == NULL)
					break;
				if (got < 5)
					CHECK_INT(((redisReply *)reply)->type,
						  types[got]);
				got++;
				freeReplyObject(reply);
			}
		}
		CHECK_INT(got, 5);
		redisReaderFree(r);
	}
	unit_context(NULL);
}

/* A 1 MiB bulk (a big SCAN page or --label) across many reads. */
static void large(void)
{
	const size_t size = 1 << 20;
	char head[32];
	size_t hlen, total, i;
	char *buf;
	redisReader *r;
	void *reply = NULL;
	redisReply *x;
	int early = 0;

	hlen = (size_t)snprintf(head, sizeof(head), "$%zu\r\n", size);
	total = hlen + size + 2;
	buf = malloc(total);
	if (buf == NULL) {
		CHECK(buf != NULL);
		return;
	}
	memcpy(buf, head, hlen);
	for (i = 0; i < size; i++)
		buf[hlen + i] = (char)(i * 7 + i / 251);
	memcpy(buf + hlen + size, "\r\n", 2);

	r = redisReaderCreate();
	for (i = 0; i < total; i += 4093) {
		size_t n = total - i < 4093 ? total - i : 4093;

		CHECK_INT(redisReaderFeed(r, buf + i, n), REDIS_OK);
		CHECK_INT(redisReaderGetReply(r, &reply), REDIS_OK);
		if (reply != NULL && i + n < total)
			early = 1;
	}
	CHECK_INT(early, 0);
	x = reply;
	CHECK(x != NULL);
	if (x != NULL) {
		CHECK_INT(x->type, REDIS_REPLY_STRING);
		CHECK_MEM(x->str, x->len, buf + hlen, size);
		freeReplyObject(x);
	}
	redisReaderFree(r);

	/* A thousand-element array, byte by byte. */
	{
		size_t cap = 16 + 1000 * 8, off = 0;
		char *a = malloc(cap);

		if (a == NULL) {
			CHECK(a != NULL);
			free(buf);
			return;
		}
		off += (size_t)snprintf(a, cap, "*1000\r\n");
		for (i = 0; i < 1000; i++)
			off += (size_t)snprintf(a + off, cap - off, ":%zu\r\n",
						i);
		if ((x = parse(a, off, 1)) != NULL) {
			CHECK_INT(x->elements, 1000);
			if (x->elements == 1000)
				CHECK_INT(x->element[999]->integer, 999);
			freeReplyObject(x);
		}
		free(a);
	}
	free(buf);
}

/* Incomplete input is "no reply yet", never an error or a guess. */
static void partial(void)
{
	static const char *const pieces[] = {
		"+OK", "+OK\r", ":12", "$5\r\nhel", "$5\r\nhello",
		"$5\r\nhello\r",
		"*2\r\n:1\r\n", "*2\r\n", "$", "*", ":", "-ERR",
		"+OK\n",	/* a bare LF does not end a line */
	};
	redisReader *r;
	void *reply;
	size_t i;

	for (i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
		unit_context("input '%s'", pieces[i]);
		r = redisReaderCreate();
		reply = NULL;
		CHECK_INT(redisReaderFeed(r, pieces[i], strlen(pieces[i])),
			  REDIS_OK);
		CHECK_INT(redisReaderGetReply(r, &reply), REDIS_OK);
		CHECK(reply == NULL);
		CHECK_INT(r->err, 0);
		if (reply != NULL)
			freeReplyObject(reply);
		/* Freeing a reader holding half an array must not leak. */
		redisReaderFree(r);
	}
	unit_context(NULL);

	/* An empty feed and a read with nothing buffered are no-ops. */
	r = redisReaderCreate();
	reply = NULL;
	CHECK_INT(redisReaderFeed(r, NULL, 0), REDIS_OK);
	CHECK_INT(redisReaderFeed(r, "", 0), REDIS_OK);
	CHECK_INT(redisReaderGetReply(r, &reply), REDIS_OK);
	CHECK(reply == NULL);
	redisReaderFree(r);
}

static void errors(void)
{
	/* A byte that starts no RESP2 type. */
	proto_error(S("x\r\n"), "got \"x\" as reply type byte");
	proto_error(S("OK\r\n"), "got \"O\"");
	proto_error(S("\r\n"), "reply type byte");
	/* RESP3 types: rlock must never send HELLO 3 to this parser. */
	proto_error(S("_\r\n"), "got \"_\"");
	proto_error(S("%1\r\n+a\r\n+b\r\n"), "got \"%\"");
	proto_error(S(",1.5\r\n"), "got \",\"");
	proto_error(S("#t\r\n"), "got \"#\"");
	proto_error(S(">1\r\n+a\r\n"), "got \">\"");
	proto_error(S("(12345678901234567890\r\n"), "got \"(\"");
	/* A bad element in the middle of an array (and the half-built
	 * array is freed: valgrind checks). */
	proto_error(S("*3\r\n:1\r\n$1\r\na\r\nx\r\n"), "got \"x\"");

	/* Integers: strict decimal within int64_t. */
	proto_error(S(":9223372036854775808\r\n"), "Bad integer value");
	proto_error(S(":-9223372036854775809\r\n"), "Bad integer value");
	proto_error(S(":99999999999999999999\r\n"), "Bad integer value");
	proto_error(S(":12a\r\n"), "Bad integer value");
	proto_error(S(":\r\n"), "Bad integer value");
	proto_error(S(":+1\r\n"), "Bad integer value");
	proto_error(S(": 1\r\n"), "Bad integer value");
	proto_error(S(":1.5\r\n"), "Bad integer value");

	/* Lengths. */
	proto_error(S("$-2\r\n"), "Bulk string length out of range");
	proto_error(S("$abc\r\n"), "Bad bulk string length");
	proto_error(S("$\r\n"), "Bad bulk string length");
	proto_error(S("$99999999999999999999\r\n"), "Bad bulk string length");
	proto_error(S("*-2\r\n"), "Multi-bulk length out of range");
	proto_error(S("*0x1\r\n"), "Bad multi-bulk length");
	proto_error(S("*\r\n"), "Bad multi-bulk length");

	/* After a good reply, a bad one still fails cleanly. */
	{
		redisReader *r = redisReaderCreate();
		void *reply = NULL;

		CHECK_INT(redisReaderFeed(r, S("+OK\r\n?\r\n")), REDIS_OK);
		CHECK_INT(redisReaderGetReply(r, &reply), REDIS_OK);
		CHECK(reply != NULL);
		if (reply != NULL)
			freeReplyObject(reply);
		reply = NULL;
		CHECK_INT(redisReaderGetReply(r, &reply), REDIS_ERR);
		CHECK(reply == NULL);
		CHECK_INT(r->err, REDIS_ERR_PROTOCOL);
		redisReaderFree(r);
	}
}

/* One request written by rl_resp_write, against hiredis's formatter. */
static void write_one(int argc, const char *const *argv, const size_t *lens)
{
	char *want = NULL, *got;
	int n = redisFormatCommandArgv(&want, argc, (const char **)argv, lens);
	size_t size = rl_resp_size(argc, lens);

	if (n < 0 || (got = malloc(size + 1)) == NULL) {
		CHECK(n >= 0);
		redisFreeCommand(want);
		return;
	}
	got[size] = 'X';
	CHECK_INT(rl_resp_write(got, argc, argv, lens), size);
	CHECK_MEM(got, size, want, (size_t)n);
	CHECK(got[size] == 'X');	/* nothing past the size it said */
	free(got);
	redisFreeCommand(want);
}

/* Requests: what hiredis would send, byte for byte, with empty, binary,
 * long arguments and every digit count of a length; numbers in decimal. */
static void writer(void)
{
	static const char bin[] = { 'a', '\0', '\r', '\n', '$', '*', 'z' };
	static const unsigned long long u[] = {
		0, 1, 9, 10, 99, 100, 12345, 4294967295ULL,
		18446744073709551615ULL,
	};
	static const long long s[] = {
		0, -1, 7, -10, 1795692024484612LL, -9223372036854775807LL - 1,
		9223372036854775807LL,
	};
	const char *argv[70];
	size_t lens[70], sizes[] = { 0, 1, 9, 10, 99, 100, 999, 1000, 70000 };
	char *big = malloc(70000), num[32], want[32];

	if (big == NULL) {
		CHECK(big != NULL);
		return;
	}
	memset(big, 'q', 70000);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		argv[0] = "EVALSHA";
		lens[0] = 7;
		argv[1] = big;
		lens[1] = sizes[i];
		argv[2] = bin;
		lens[2] = sizeof(bin);
		write_one(3, argv, lens);
	}
	write_one(0, argv, lens);
	for (int i = 0; i < 70; i++) {
		argv[i] = i % 2 ? "" : "key";
		lens[i] = i % 2 ? 0 : 3;
	}
	write_one(70, argv, lens);	/* two digits of argc */
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
		snprintf(want, sizeof(want), "%llu", u[i]);
		CHECK_MEM(num, rlock_utoa(num, u[i]), want, strlen(want));
	}
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		snprintf(want, sizeof(want), "%lld", s[i]);
		CHECK_MEM(num, rlock_lltoa(num, s[i]), want, strlen(want));
	}
	free(big);
}

/* What the guard says of buf, fed whole or a byte at a time (the same
 * answer either way): NULL when it passes. */
static const char *guard(const char *buf, size_t len, int bytewise)
{
	struct resp_guard g;
	const char *why = NULL;

	memset(&g, 0, sizeof(g));
	if (!bytewise)
		return rl_resp_guard_feed(&g, buf, len);
	for (size_t i = 0; i < len && why == NULL; i++)
		why = rl_resp_guard_feed(&g, buf + i, 1);
	return why;
}

static void guard_both(const char *buf, size_t len, const char *want)
{
	unit_context("guard of '%.*s'", (int)(len > 60 ? 60 : len), buf);
	for (int bw = 0; bw < 2; bw++) {
		const char *why = guard(buf, len, bw);

		if (want == NULL)
			CHECK_STR(why, NULL);
		else
			CHECK(why != NULL && strstr(why, want) != NULL);
	}
	unit_context(NULL);
}

/* The reply guard: well-formed replies within the bounds pass, split
 * anywhere; declared sizes past them fail at their header, before their
 * data (so before hiredis would allocate or buffer it). */
static void guarded(void)
{
	struct resp_guard g;
	char *big;
	size_t n;

	guard_both(S("+OK\r\n:1\r\n$3\r\nabc\r\n$-1\r\n*-1\r\n*0\r\n"), NULL);
	guard_both(S("*2\r\n*2\r\n:1\r\n$2\r\nab\r\n*1\r\n+x\r\n"), NULL);
	guard_both(S("-ERR \x1b]0;x\x07\r\n"), NULL);
	/* A bulk's data may hold anything, CRLF and type bytes included. */
	guard_both(S("$6\r\n*9\r\n$9\r\n+OK\r\n"), NULL);
	guard_both(S("*2147483647\r\n"), "an array of more than");
	guard_both(S("*1048577\r\n"), "an array of more than");
	guard_both(S("*1048576\r\n"), NULL);
	guard_both(S("$1000000000000\r\n"), "a string longer than");
	guard_both(S("$4194305\r\n"), "a string longer than");
	guard_both(S("$99999999999999999999\r\n"), "not a number");
	guard_both(S("$-2\r\n"), "not a number");
	guard_both(S("*+1\r\n"), "not a number");
	guard_both(S("$ 1\r\n"), "not a number");
	guard_both(S("$\r\n"), "not a number");
	/* A RESP3 type byte, anywhere a reply or element starts: refused
	 * at that byte, by its name. */
	guard_both(S("%2\r\n*2147483647\r\n"), "a RESP3 map (type byte '%')");
	guard_both(S("~1\r\n:1\r\n"), "a RESP3 set (type byte '~')");
	guard_both(S("_\r\n"), "a RESP3 null (type byte '_')");
	guard_both(S(",1.5\r\n"), "a RESP3 double (type byte ',')");
	guard_both(S("#t\r\n"), "a RESP3 boolean (type byte '#')");
	guard_both(S("(1\r\n"), "a RESP3 big number (type byte '(')");
	guard_both(S("=7\r\ntxt:abc\r\n"),
		   "a RESP3 verbatim string (type byte '=')");
	guard_both(S("|1\r\n+a\r\n+b\r\n"), "a RESP3 attribute (type byte '|')");
	guard_both(S(">2\r\n+a\r\n+b\r\n"), "a RESP3 push (type byte '>')");
	guard_both(S("!3\r\nERR\r\n"), "a RESP3 blob error (type byte '!')");
	guard_both(S("*2\r\n:1\r\n#t\r\n"), "where rlock speaks RESP2");
	/* Inside a bulk string the same bytes are data. */
	guard_both(S("$5\r\n%~_#!\r\n"), NULL);
	/* Not RESP at all: hiredis refuses it at that byte, as a protocol
	 * error of its own. */
	guard_both(S("x2\r\n*2147483647\r\n"), NULL);
	guard_both(S("*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n"),
		   NULL);
	guard_both(S("*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n"),
		   "nested too deep");
	/* Many arrays of a million slots each: refused by their sum, long
	 * before hiredis would have allocated them. */
	memset(&g, 0, sizeof(g));
	CHECK_STR(rl_resp_guard_feed(&g, S("*1048576\r\n")), NULL);
	n = 0;
	for (int i = 0; i < 100 && n == 0; i++) {
		if (rl_resp_guard_feed(&g, S("*1048576\r\n")) != NULL)
			n = (size_t)i + 1;
	}
	CHECK(n > 0 && n < 70);
	/* Once refused, refused for good. */
	CHECK(rl_resp_guard_feed(&g, S("+OK\r\n")) != NULL);
	/* A stream of replies each within the bounds passes, however long:
	 * the budget is per reply (a subscriber's messages). */
	memset(&g, 0, sizeof(g));
	big = malloc(1 << 20);
	CHECK(big != NULL);
	if (big == NULL)
		return;
	memset(big, 'x', 1 << 20);
	for (int i = 0; i < 1000; i++) {
		CHECK_STR(rl_resp_guard_feed(&g, S("*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1048576\r\n")), NULL);
		CHECK_STR(rl_resp_guard_feed(&g, big, 1 << 20), NULL);
		CHECK_STR(rl_resp_guard_feed(&g, S("\r\n")), NULL);
	}
	CHECK_INT(g.depth, 0);
	free(big);
	/* A long status line is refused past the bulk bound. */
	memset(&g, 0, sizeof(g));
	big = malloc((4 << 20) + 2);
	CHECK(big != NULL);
	if (big == NULL)
		return;
	big[0] = '+';
	memset(big + 1, 'y', (4 << 20) + 1);
	CHECK(rl_resp_guard_feed(&g, big, (4 << 20) + 2) != NULL);
	free(big);
}

void test_resp(void)
{
	writer();
	guarded();
	scalars();
	bulks();
	arrays();
	depth();
	pipelined();
	large();
	partial();
	errors();
}
