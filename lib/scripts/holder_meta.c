/*
 * holder_meta.c - the strict decoder of a holder's fields as
 * holder_meta.lua answers them, inside the answers of acquire (busy),
 * force and status.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "reply.h"

/* Element i of r, a string or an integer, as n bytes at *v (an integer
 * written into buf).  Returns 0, or -1 for another type. */
static int elem_text(const redisReply *r, size_t i, char *buf, size_t len,
		     const char **v, size_t *n)
{
	const redisReply *e = r->element[i];

	if (e->type == REDIS_REPLY_STRING) {
		*v = e->str;
		*n = e->len;
		return 0;
	}
	if (e->type == REDIS_REPLY_INTEGER) {
		*n = (size_t)snprintf(buf, len, "%lld", e->integer);
		*v = buf;
		return 0;
	}
	return -1;
}

/* A holder's fields at off in r: host, pid, user, command, since, fence,
 * token prefix and the server's time; the flag and pttl first in r.
 * Returns -1 for a reply of the wrong shape (an element of another type);
 * a value rlock did not write (another client's, in the holder's record)
 * is unknown, and noted in h->junk. */
int rl_parse_holder_at(const redisReply *r, size_t off,
			   struct rlock_holder *h)
{
	const char *v[8];
	size_t n[8];
	char buf[8][24];
	long long held, now;

	if (r->type != REDIS_REPLY_ARRAY || r->elements < off + 8 ||
	    rl_elem_num(r, 0, LLONG_MIN, LLONG_MAX, &held) != 0 ||
	    rl_elem_num(r, 1, LLONG_MIN, LLONG_MAX, &h->ttl_ms) != 0)
		return -1;
	for (size_t i = 0; i < 8; i++)
		if (elem_text(r, off + i, buf[i], sizeof(buf[i]), &v[i],
			      &n[i]) != 0)
			return -1;
	h->held = held != 0;
	snprintf(h->host, sizeof(h->host), "%.*s", (int)n[0], v[0]);
	h->pid = rl_num_field(v[1], n[1], 1, INT_MAX, 0, "pid", h->junk,
			      sizeof(h->junk));
	snprintf(h->user, sizeof(h->user), "%.*s", (int)n[2], v[2]);
	snprintf(h->command, sizeof(h->command), "%.*s", (int)n[3], v[3]);
	h->since_ms = rl_num_field(v[4], n[4], 1, FENCE_LIMIT, 0, "since",
				   h->junk, sizeof(h->junk));
	h->fence = rl_num_field(v[5], n[5], 0, FENCE_LIMIT, -1, "fence", h->junk,
				sizeof(h->junk));
	snprintf(h->token_prefix, sizeof(h->token_prefix), "%.*s",
		 (int)(n[6] < 8 ? n[6] : 8), v[6]);
	now = rl_num_field(v[7], n[7], 0, LLONG_MAX, 0, "time", h->junk,
			   sizeof(h->junk));
	h->age_ms = h->since_ms > 0 && now >= h->since_ms ?
		    now - h->since_ms : 0;
	return 0;
}

/* Holder layout shared by the force and status scripts:
 * {flag, pttl, host, pid, user, command, since, fence, token8, now}. */
int rl_parse_holder(const redisReply *r, struct rlock_holder *h)
{
	memset(h, 0, sizeof(*h));
	h->limit = 1;
	h->place = -1;
	return rl_parse_holder_at(r, 2, h);
}
