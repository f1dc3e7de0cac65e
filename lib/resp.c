/*
 * resp.c - requests written as RESP2, straight into the connection's
 * buffer: "*argc\r\n" and "$len\r\narg\r\n" per argument, with the
 * numbers written by hand.  hiredis's redisFormatCommandArgv does the same
 * through sprintf and a fresh allocation, and was three quarters of the
 * client's instructions per lock cycle.
 */
#include <string.h>

#include "rlock_int.h"

size_t rlock_utoa(char *dst, unsigned long long v)
{
	char tmp[20];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (size_t i = 0; i < n; i++)
		dst[i] = tmp[n - 1 - i];
	return n;
}

size_t rlock_lltoa(char *dst, long long v)
{
	if (v >= 0)
		return rlock_utoa(dst, (unsigned long long)v);
	dst[0] = '-';
	/* -(v + 1) + 1: LLONG_MIN has no positive counterpart. */
	return 1 + rlock_utoa(dst + 1, (unsigned long long)-(v + 1) + 1);
}

/* The digits of v. */
static size_t digits(size_t v)
{
	size_t n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

size_t rl_resp_size(int argc, const size_t *lens)
{
	size_t n = 3 + digits((size_t)argc);

	for (int i = 0; i < argc; i++)
		n += 5 + digits(lens[i]) + lens[i];
	return n;
}

size_t rl_resp_write(char *dst, int argc, const char *const *argv,
		     const size_t *lens)
{
	char *p = dst;

	*p++ = '*';
	p += rlock_utoa(p, (unsigned long long)argc);
	*p++ = '\r';
	*p++ = '\n';
	for (int i = 0; i < argc; i++) {
		*p++ = '$';
		p += rlock_utoa(p, lens[i]);
		*p++ = '\r';
		*p++ = '\n';
		memcpy(p, argv[i], lens[i]);
		p += lens[i];
		*p++ = '\r';
		*p++ = '\n';
	}
	return (size_t)(p - dst);
}

/* ---- the reply guard ------------------------------------------------- */

/*
 * hiredis 0.14 trusts the sizes a reply declares: "*2147483647" makes it
 * allocate the whole element array before one element came, and freeing
 * the unfinished reply walks it; "$1000000000000" makes it buffer what
 * streams in until the connection's timeout.  The guard reads the same
 * bytes first, only as far as the headers and lengths go, and refuses a
 * reply past the bounds before hiredis sees a byte of it.  It keeps no
 * bytes, only where it is in the stream.
 */

/* What one element costs the budget beyond its bytes: hiredis's reply
 * struct and its allocation, rounded up. */
#define ELEMENT_COST 64

static void guard_reset_reply(struct resp_guard *g)
{
	g->depth = 0;
	g->cost = 0;
}

/* An element ended: count it off the arrays it is in.  When the outermost
 * one ends too, the next reply starts with a budget of its own. */
static void guard_element_done(struct resp_guard *g)
{
	while (g->depth > 0) {
		if (--g->left[g->depth - 1] > 0)
			return;
		g->depth--;
	}
	guard_reset_reply(g);
}

/* A length line's number: "-1" or digits, nothing else. */
static int guard_number(const char *s, size_t n, long long *v)
{
	long long x = 0;

	if (n == 2 && s[0] == '-' && s[1] == '1') {
		*v = -1;
		return 0;
	}
	if (n == 0 || n > 18)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		x = x * 10 + (s[i] - '0');
	}
	*v = x;
	return 0;
}

/* The header line of the current element ended (its text in g->line,
 * the CR dropped). */
static const char *guard_line_done(struct resp_guard *g)
{
	long long v;

	if (g->type != '$' && g->type != '*') {
		guard_element_done(g);
		return NULL;
	}
	if (g->line_over || guard_number(g->line, g->linelen, &v) != 0)
		return "a length that is not a number";
	if (g->type == '$') {
		if (v > RLOCK_REPLY_MAX_BULK)
			return "a string longer than " STR_BOUND(RLOCK_REPLY_MAX_BULK);
		if (v < 0) {
			guard_element_done(g);
			return NULL;
		}
		g->bulk_left = v + 2;
		g->cost += (uint64_t)v;
		g->state = GUARD_BULK;
		return g->cost > RLOCK_REPLY_MAX_BYTES ?
		       "a reply larger than " STR_BOUND(RLOCK_REPLY_MAX_BYTES) :
		       NULL;
	}
	if (v > RLOCK_REPLY_MAX_ELEMENTS)
		return "an array of more than " STR_BOUND(RLOCK_REPLY_MAX_ELEMENTS)
		       " elements";
	if (v <= 0) {
		guard_element_done(g);
		return NULL;
	}
	if (g->depth == RESP_GUARD_DEPTH)
		return "arrays nested too deep";
	g->cost += (uint64_t)v * sizeof(void *);
	g->left[g->depth++] = v;
	return g->cost > RLOCK_REPLY_MAX_BYTES ?
	       "a reply larger than " STR_BOUND(RLOCK_REPLY_MAX_BYTES) : NULL;
}

/* Why a RESP3 type byte c is refused, NULL when c is none: rlock never
 * sends HELLO 3, and hiredis 0.14 would call it only "got c as reply type
 * byte". */
static const char *resp3_type(char c)
{
	static const struct {
		char c;
		const char *why;
	} t[] = {
		{ '%', "a RESP3 map (type byte '%'), where rlock speaks RESP2" },
		{ '~', "a RESP3 set (type byte '~'), where rlock speaks RESP2" },
		{ '_', "a RESP3 null (type byte '_'), where rlock speaks RESP2" },
		{ ',', "a RESP3 double (type byte ','), where rlock speaks "
		  "RESP2" },
		{ '#', "a RESP3 boolean (type byte '#'), where rlock speaks "
		  "RESP2" },
		{ '(', "a RESP3 big number (type byte '('), where rlock speaks "
		  "RESP2" },
		{ '=', "a RESP3 verbatim string (type byte '='), where rlock "
		  "speaks RESP2" },
		{ '|', "a RESP3 attribute (type byte '|'), where rlock speaks "
		  "RESP2" },
		{ '>', "a RESP3 push (type byte '>'), where rlock speaks RESP2" },
		{ '!', "a RESP3 blob error (type byte '!'), where rlock speaks "
		  "RESP2" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].c == c)
			return t[i].why;
	return NULL;
}

const char *rl_resp_guard_feed(struct resp_guard *g, const char *buf, size_t n)
{
	size_t i = 0;
	const char *why;

	if (g->failed != NULL || g->blind)
		return g->failed;
	while (i < n) {
		char c = buf[i];

		switch (g->state) {
		case GUARD_TYPE:
			if ((why = resp3_type(c)) != NULL) {
				g->failed = why;
				return why;
			}
			if (c != '+' && c != '-' && c != ':' && c != '$' &&
			    c != '*') {
				/* hiredis refuses it at this very byte, as the
				 * protocol error it is: nothing more to
				 * guard. */
				g->blind = 1;
				return NULL;
			}
			g->type = c;
			g->linelen = 0;
			g->line_over = 0;
			g->state = GUARD_LINE;
			g->cost += ELEMENT_COST;
			i++;
			break;
		case GUARD_LINE:
			i++;
			g->cost++;
			if (c == '\n' && g->linelen > 0 &&
			    g->line[g->linelen - 1] == '\r') {
				g->linelen--;
				g->state = GUARD_TYPE;
				why = guard_line_done(g);
				if (why != NULL) {
					g->failed = why;
					return why;
				}
				break;
			}
			/* Only the last byte and a length's digits matter:
			 * keep the start and the byte before the end. */
			if (g->linelen < sizeof(g->line))
				g->line[g->linelen++] = c;
			else {
				g->line_over = 1;
				g->line[sizeof(g->line) - 1] = c;
			}
			if (++g->line_total > RLOCK_REPLY_MAX_BULK) {
				g->failed = "a line longer than "
					    STR_BOUND(RLOCK_REPLY_MAX_BULK);
				return g->failed;
			}
			break;
		case GUARD_BULK: {
			size_t take = n - i;

			if ((long long)take > g->bulk_left)
				take = (size_t)g->bulk_left;
			i += take;
			g->bulk_left -= (long long)take;
			if (g->bulk_left == 0) {
				g->state = GUARD_TYPE;
				guard_element_done(g);
			}
			break;
		}
		}
		if (g->state == GUARD_TYPE)
			g->line_total = 0;
		if (g->cost > RLOCK_REPLY_MAX_BYTES) {
			g->failed = "a reply larger than "
				    STR_BOUND(RLOCK_REPLY_MAX_BYTES);
			return g->failed;
		}
	}
	return NULL;
}
