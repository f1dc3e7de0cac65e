/*
 * with.c - the script of several locks held together (with.lua, --with):
 * its arguments for each of its operations, and the strict decoders of
 * its answers and of the set's record, P{N}:with.
 */
#include <string.h>

#include "reply.h"
#include "request.h"
#include "protocol.h"

/* Append v to both layouts' arguments. */
static void req_with_arg(struct request *q, const char *v)
{
	q->argv[q->argc++] = v;
	q->wargv[q->wargc++] = v;
}

/* The history's length and ttl, in number slots slot and slot + 1. */
static void req_with_history(struct request *q, int slot,
			     const struct history *h)
{
	rl_req_history(q, slot, h);
	q->wargv[q->wargc++] = q->argv[q->argc - 2];
	q->wargv[q->wargc++] = q->argv[q->argc - 1];
}

/* KEYS: the lock key of each name, and in the whole layout (a cluster:
 * every key declared) each one's thirteen keys, the lock key first.  ARGV
 * (req_with_arg, into both): the operation, the token. */
static void req_with_begin(struct request *q, const struct with_set *w,
			   const char *op, const char *token)
{
	q->script = RLOCK_SCRIPT_WITH;
	q->slot = w->slot;
	q->nkeys = (int)w->n;
	q->wnkeys = 13 * (int)w->n;
	q->argc = q->wargc = 0;
	for (size_t i = 0; i < w->n; i++) {
		q->argv[q->argc++] = w->key[i];
		q->wargv[q->wargc++] = w->key[i];
		for (size_t j = 0; j < 12; j++)
			q->wargv[q->wargc++] = w->more[i][j];
	}
	req_with_arg(q, op);
	req_with_arg(q, token);
}

/* ARGV after the token: ttl, the holder's fields (as acquire.lua's short
 * layout packs them), the waiter id, join, the history's length and ttl,
 * the names one a line, details, the baton's lease (0 none). */
void rl_req_with_acquire(struct request *q, const struct with_set *w,
			 const char *token, int64_t ttl_ms,
			 const struct acquirer *who, const char *waiter, int join,
			 int details, const struct history *h, int64_t baton_ms)
{
	req_with_begin(q, w, "a", token);
	req_with_arg(q, rl_req_num(q, 0, ttl_ms));
	rlock_strlcpy(q->label, who->label != NULL ? who->label : "",
		      sizeof(q->label));
	rl_req_put_holder(q, "x", who->waited_ms > 0 ? who->waited_ms : -1, token,
			  who);
	req_with_arg(q, q->info);
	req_with_arg(q, waiter);
	req_with_arg(q, join ? "1" : "0");
	req_with_history(q, 1, h);
	req_with_arg(q, w->names);
	req_with_arg(q, details ? "1" : "0");
	req_with_arg(q, baton_ms > 0 ? rl_req_num(q, 3, baton_ms) : "0");
}

/* ARGV after the token: ttl. */
void rl_req_with_extend(struct request *q, const struct with_set *w,
			const char *token, int64_t ttl_ms)
{
	req_with_begin(q, w, "e", token);
	req_with_arg(q, rl_req_num(q, 0, ttl_ms));
}

/* ARGV after the token: exit ('' unknown), signal, the history's length
 * and ttl. */
void rl_req_with_release(struct request *q, const struct with_set *w,
			 const char *token, const struct history *h,
			 const struct rlock_outcome *how)
{
	req_with_begin(q, w, "r", token);
	req_with_arg(q, how != NULL && how->exit >= 0 ?
			     rl_req_num(q, 0, how->exit) : "");
	req_with_arg(q, how != NULL && how->abandoned ? "abandoned" :
			     how != NULL && how->signal > 0 ?
			     rlock_signame(how->signal, q->num[3],
					   sizeof(q->num[3])) : "");
	req_with_history(q, 1, h);
}

/* ARGV after the token: the waiter id, the history's length and ttl. */
void rl_req_with_leave(struct request *q, const struct with_set *w,
		       const char *token, const char *waiter,
		       const struct history *h)
{
	req_with_begin(q, w, "l", token);
	req_with_arg(q, waiter);
	req_with_history(q, 1, h);
}

int rl_decode_with_acquire(const redisReply *r, size_t n,
			   struct with_reply *out, struct rlock_holder *h)
{
	long long v;

	memset(out, 0, sizeof(*out));
	if (r->type != REDIS_REPLY_ARRAY || rl_elem_num(r, 0, 0, 1, &v) != 0)
		return -1;
	out->granted = (int)v;
	if (out->granted) {
		if (r->elements != n + 1)
			return -1;
		for (size_t i = 0; i < n; i++) {
			if (r->element[i + 1]->type != REDIS_REPLY_INTEGER ||
			    rl_elem_num(r, i + 1, 1, FENCE_LIMIT - 1,
					&out->fence[i]) != 0)
				return -1;
		}
		return 0;
	}
	if ((r->elements != 5 && r->elements != 13) ||
	    rl_elem_num(r, 1, -1, 30LL * 86400 * 1000, &out->pttl) != 0 ||
	    rl_elem_num(r, 2, -1, 1LL << 40, &out->place) != 0 ||
	    rl_elem_num(r, 3, 0, 1, &v) != 0 ||
	    rl_elem_num(r, 4, 0, (long long)n, &out->held) != 0 ||
	    (r->elements == 13 && out->held == 0))
		return -1;
	out->joined = (int)v;
	/* The holder of the first lock held, when asked for. */
	if (r->elements == 13) {
		if (rl_parse_holder_at(r, 5, h) != 0)
			return -1;
		h->held = 1;
		h->place = out->place;
		h->limit = 1;
	}
	return 0;
}

/* "TOKEN\nNAME\nFENCE..." with a token of 32 hex digits, 1 to
 * RLOCK_WITH_MAX names that are lock names, and fences in 1..2^53. */
static int with_record(const char *s, size_t len, struct rlock_with *out);

int rl_decode_with_record(const char *s, size_t len, struct rlock_with *out)
{
	if (with_record(s, len, out) == 0)
		return 0;
	memset(out, 0, sizeof(*out));
	return -1;
}

static int with_record(const char *s, size_t len, struct rlock_with *out)
{
	const char *p = s, *end = s + len, *nl;
	size_t i;

	memset(out, 0, sizeof(*out));
	nl = memchr(p, '\n', (size_t)(end - p));
	if (nl == NULL || nl - p != RLOCK_TOKEN_LEN)
		return -1;
	for (i = 0; i < RLOCK_TOKEN_LEN; i++) {
		if (strchr("0123456789abcdef", p[i]) == NULL || p[i] == '\0')
			return -1;
	}
	memcpy(out->token, p, RLOCK_TOKEN_LEN);
	p = nl + 1;
	while (p < end + 1 && out->n < RLOCK_WITH_MAX) {
		const char *why;
		size_t nlen;

		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL || (nlen = (size_t)(nl - p)) > RLOCK_NAME_MAX)
			return -1;
		memcpy(out->name[out->n], p, nlen);
		out->name[out->n][nlen] = '\0';
		if (rlock_check_name(out->name[out->n], &why) != RLOCK_OK)
			return -1;
		p = nl + 1;
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		if (rlock_parse_ll(p, (size_t)(nl - p), 1, FENCE_LIMIT - 1,
				   &out->fence[out->n]) != 0)
			return -1;
		out->n++;
		p = nl + 1;
		if (nl == end)
			break;
	}
	return out->n >= 1 && p == end + 1 ? 0 : -1;
}
