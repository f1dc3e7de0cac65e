/*
 * status.c - the status script (status.lua): its arguments, and the strict
 * decoder of its answer (the holder, then the lock's state).  A value
 * another client wrote is noted as junk in the holder, never read as 0.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "reply.h"
#include "request.h"

/* KEYS: the twelve. */
void rl_req_status(struct request *q, const struct lock_names *n)
{
	rl_req_begin_all(q, RLOCK_SCRIPT_STATUS, n);
}

/* Element i of r, a string, as n bytes at *v.  Returns 0, or -1. */
static int elem_bytes(const redisReply *r, size_t i, const char **v,
		      size_t *n)
{
	const redisReply *e = r->element[i];

	if (e->type != REDIS_REPLY_STRING)
		return -1;
	*v = e->str;
	*n = e->len;
	return 0;
}

/* A number of r's element i (a string or an integer, as the scripts pass
 * what they read): as rl_num_field. */
static long long elem_field(const redisReply *r, size_t i, long long min,
			    long long max, long long unk, const char *what,
			    char *junk, size_t jlen)
{
	const redisReply *e = r->element[i];
	char buf[24];

	if (e->type == REDIS_REPLY_INTEGER) {
		snprintf(buf, sizeof(buf), "%lld", e->integer);
		return rl_num_field(buf, strlen(buf), min, max, unk, what, junk,
				    jlen);
	}
	return rl_num_field(e->str, e->len, min, max, unk, what, junk, jlen);
}

/*
 * The period done: {until, host, user, pid, since, done, fence, per}, or
 * {} (a record of an older rlock has no per: 0).  Returns 0, or -1 for a
 * reply of the wrong shape; values another client wrote are unknown and
 * noted in junk.
 */
static int parse_once(const redisReply *r, struct rlock_once *o, char *junk,
		      size_t jlen)
{
	const char *v = "";
	size_t n = 0;

	memset(o, 0, sizeof(*o));
	if (r->type != REDIS_REPLY_ARRAY)
		return -1;
	if (r->elements == 0)
		return 0;
	if (r->elements < 7 || r->elements > 8)
		return -1;
	for (size_t i = 0; i < r->elements; i++)
		if (r->element[i]->type != REDIS_REPLY_STRING)
			return -1;
	o->present = 1;
	o->until_ms = elem_field(r, 0, 1, FENCE_LIMIT, 0, "period's end",
				 junk, jlen);
	elem_bytes(r, 1, &v, &n);
	snprintf(o->host, sizeof(o->host), "%.*s", (int)n, v);
	elem_bytes(r, 2, &v, &n);
	snprintf(o->user, sizeof(o->user), "%.*s", (int)n, v);
	o->pid = elem_field(r, 3, 1, INT_MAX, 0, "pid", junk, jlen);
	o->since_ms = elem_field(r, 4, 1, FENCE_LIMIT, 0, "since", junk, jlen);
	o->done_ms = elem_field(r, 5, 1, FENCE_LIMIT, 0, "done", junk, jlen);
	o->fence = elem_field(r, 6, 1, FENCE_LIMIT, -1, "fence", junk, jlen);
	if (r->elements == 8)
		o->period_ms = elem_field(r, 7, 1, FENCE_LIMIT, 0, "period",
					  junk, jlen);
	return 0;
}

/* A semaphore holder's slot, the n bytes at v: digits below the limit;
 * anything else is unknown (-1) and noted in junk, never slot 0. */
static int parse_slot(const char *v, size_t n, int limit, char *junk,
		      size_t jlen)
{
	long long s;

	if ((n > 1 && v[0] == '0') ||
	    rlock_parse_ll(v, n, 0, (limit > 1 ? limit : RLOCK_LIMIT_MAX) - 1,
			   &s) != 0) {
		rl_note_junk(junk, jlen, "slot", v, n);
		return -1;
	}
	return (int)s;
}

/* A pool holder's members, the n bytes at v: names (rlock_check_member)
 * one a line, into out (cut to its room); anything else is unknown ("")
 * and noted in junk. */
static void parse_members(const char *v, size_t n, char *out, size_t len,
			  char *junk, size_t jlen)
{
	char name[RLOCK_MEMBER_MAX + 1];
	const char *p = v, *end = v + n, *why;

	out[0] = '\0';
	while (p <= end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);

		if (l > RLOCK_MEMBER_MAX || memchr(p, '\0', l) != NULL)
			goto bad;
		memcpy(name, p, l);
		name[l] = '\0';
		if (rlock_check_member(name, &why) != RLOCK_OK)
			goto bad;
		if (nl == NULL)
			break;
		p = nl + 1;
	}
	snprintf(out, len, "%.*s", (int)n, v);
	return;
bad:
	rl_note_junk(junk, jlen, "members", v, n);
}

/* The holders of a shared lock or a semaphore: up to 100 of {token
 * prefix, ttl, metadata[, slot]}, into *list (no slot: a shared holder, or
 * an older rlock's grant); a slot that is not rlock's is noted in h->junk.  Returns 0, or -1 for a reply of the wrong shape. */
static int parse_holders(const redisReply *l, struct rlock_holder *h,
			 long long now, struct rlock_holder **list,
			 size_t *nlist)
{
	if (l->type != REDIS_REPLY_ARRAY || l->elements > 100)
		return -1;
	for (size_t i = 0; i < l->elements; i++) {
		const redisReply *e = l->element[i];

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
		    e->elements > 4 ||
		    e->element[0]->type != REDIS_REPLY_STRING ||
		    e->element[2]->type != REDIS_REPLY_STRING ||
		    (e->elements == 4 &&
		     e->element[3]->type != REDIS_REPLY_STRING) ||
		    (e->element[1]->type != REDIS_REPLY_STRING &&
		     e->element[1]->type != REDIS_REPLY_INTEGER))
			return -1;
	}
	if (list == NULL || l->elements == 0)
		return 0;
	*list = calloc(l->elements, sizeof(**list));
	if (*list == NULL)
		return 0;
	for (size_t i = 0; i < l->elements; i++) {
		const redisReply *e = l->element[i];
		struct rlock_holder *x = &(*list)[(*nlist)++];
		char *meta;

		x->held = 1;
		x->shared = h->shared;
		x->limit = h->limit;
		x->place = -1;
		snprintf(x->token_prefix, sizeof(x->token_prefix), "%.*s",
			 (int)(e->element[0]->len < 8 ? e->element[0]->len :
			       8), e->element[0]->str);
		x->ttl_ms = elem_field(e, 1, -2, LLONG_MAX, -1, "ttl",
				       x->junk, sizeof(x->junk));
		meta = strndup(e->element[2]->str, e->element[2]->len);
		if (meta != NULL)
			rl_parse_meta(meta, now, x);
		free(meta);
		x->slot = -1;
		x->pool = h->pool;
		if (e->elements == 4 && h->pool)
			parse_members(e->element[3]->str, e->element[3]->len,
				      x->members, sizeof(x->members), h->junk,
				      sizeof(h->junk));
		else if (e->elements == 4)
			x->slot = parse_slot(e->element[3]->str,
					     e->element[3]->len, h->limit,
					     h->junk, sizeof(h->junk));
	}
	return 0;
}

/*
 * The rest of a status answer after the holder: the server's time, kind,
 * holders, waiting, the next in line, the list of holders, the note, the
 * last run and its grant, the period done.  Returns 0, or -1 for a reply
 * of the wrong shape (types, counts); values other clients wrote are
 * unknown, and noted in h->junk.
 */
static int parse_status(const redisReply *r, struct rlock_holder *h,
			struct rlock_holder **list, size_t *nlist)
{
	char k[24], *next;
	const char *v = "";
	size_t n = 0;
	long long now;

	if (r->elements != 19 || elem_bytes(r, 10, &v, &n) != 0 ||
	    r->element[11]->type != REDIS_REPLY_INTEGER ||
	    r->element[12]->type != REDIS_REPLY_INTEGER ||
	    r->element[13]->type != REDIS_REPLY_STRING ||
	    r->element[15]->type != REDIS_REPLY_STRING ||
	    r->element[16]->type != REDIS_REPLY_ARRAY ||
	    r->element[17]->type != REDIS_REPLY_ARRAY)
		return -1;
	now = elem_field(r, 9, 0, LLONG_MAX, 0, "time", h->junk,
			 sizeof(h->junk));
	snprintf(k, sizeof(k), "%.*s", (int)(n < sizeof(k) ? n : 0), v);
	if (n >= sizeof(k) || rl_parse_kind(k, &h->shared, &h->limit) != 0)
		rl_note_junk(h->junk, sizeof(h->junk), "limit", v, n);
	h->pool = strcmp(k, "p") == 0;
	if (r->element[11]->integer < 0 || r->element[12]->integer < 0)
		return -1;
	h->nholders = r->element[11]->integer;
	h->waiters = r->element[12]->integer;
	elem_bytes(r, 15, &v, &n);
	snprintf(h->note, sizeof(h->note), "%.*s", (int)n, v);
	elem_bytes(r, 13, &v, &n);
	if (n > 0) {
		next = strndup(v, n);
		if (next != NULL)
			rl_parse_waiter(next, now, &h->next, h->junk,
					sizeof(h->junk));
		free(next);
	}
	if (parse_once(r->element[18], &h->once, h->junk,
		       sizeof(h->junk)) != 0)
		return -1;
	return parse_holders(r->element[14], h, now, list, nlist);
}

int rl_decode_status(const redisReply *r, struct rlock_holder *h,
		     struct rlock_holder **list, size_t *nlist)
{
	if (rl_parse_holder(r, h) != 0 || parse_status(r, h, list, nlist) != 0)
		return -1;
	return 0;
}
