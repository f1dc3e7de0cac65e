/*
 * acquire.c - the acquire script (acquire.lua): its arguments, in its two
 * layouts, and the strict decoders of its answers: a grant, a busy
 * answer, and the wake-up a grant publishes to the next in line.
 */
#include <limits.h>
#include <string.h>

#include "keys.h"
#include "reply.h"
#include "request.h"
#include "protocol.h"

/*
 * The whole script's layout, for a waiter that takes or keeps a place in
 * line: it goes past the shortest path, so the script is spared naming
 * and parsing what it is sent whole.  KEYS: the twelve (LOCK_NKEYS, the
 * period's record, the grant's record, --min-hold's end).  ARGV: token,
 * ttl, host, pid, user, command, min-hold, details, kind, waiter, join,
 * wake-up prefix, note, waited, the history's length and ttl, and only
 * when one is asked for (a table grows by doubling: sixteen, not
 * seventeen): priority, supersede, once-per, the baton's lease and stamp,
 * the arrival.
 */
static void req_acquire_whole(struct request *q, const struct lock_names *n,
			      const char *token, int64_t ttl_ms,
			      const struct acquirer *who, const struct ask *a,
			      const struct history *h)
{
	int policy = a->priority != 0 || a->supersede || a->once_ms > 0;

	rl_req_begin_all(q, RLOCK_SCRIPT_ACQUIRE, n);
	q->argv[q->argc++] = token;
	q->argv[q->argc++] = rl_req_num(q, 0, ttl_ms);
	q->argv[q->argc++] = who->host;
	q->argv[q->argc++] = rl_req_num(q, 1, who->pid);
	q->argv[q->argc++] = who->user;
	q->argv[q->argc++] = q->label;
	q->argv[q->argc++] = rl_req_num(q, 2, who->min_hold_ms);
	q->argv[q->argc++] = a->details ? "1" : "0";
	q->argv[q->argc++] = a->kind;
	q->argv[q->argc++] = a->waiter;
	q->argv[q->argc++] = a->join ? "1" : "0";
	q->argv[q->argc++] = n->wake;
	q->argv[q->argc++] = who->note != NULL ? who->note : "";
	q->argv[q->argc++] = rl_req_num(q, 4, who->waited_ms);
	rl_req_history(q, 5, h);
	if (!policy && a->baton_ms == 0 && a->arrival == 0)
		return;
	q->argv[q->argc++] = rl_req_num(q, 7, a->priority);
	q->argv[q->argc++] = a->supersede ? "1" : "0";
	q->argv[q->argc++] = rl_req_num(q, 8, a->once_ms);
	if (a->baton_ms == 0 && a->arrival == 0)
		return;
	q->argv[q->argc++] = a->baton_ms > 0 ? rl_req_num(q, 3, a->baton_ms) : "0";
	q->argv[q->argc++] = a->baton_ms > 0 ?
			     rl_req_num(q, 9, rlock_boot_ms()) : "0";
	if (a->arrival > 0)
		q->argv[q->argc++] = rl_req_num(q, 10, a->arrival);
}

/*
 * KEYS: the lock key.  ARGV: token, ttl, the holder's fields "KIND\n
 * WAITED\nTOKEN8\nPID\nHOST\nUSER\nNOTE\nCOMMAND", and the options
 * (lib/scripts/acquire.lua) unless every one is the default: then the
 * script may grant a free lock on its shortest path.  A first try that
 * would wait sends its waiter id too (FAST '+': the shortest path may
 * still grant it); one that joins the line sends the whole layout.
 */
void rl_req_acquire(struct request *q, const struct lock_names *n,
		    const char *token, int64_t ttl_ms, const struct acquirer *who,
		    const struct ask *a, const struct history *h)
{
	int fast = strcmp(a->kind, "x") == 0 && who->min_hold_ms == 0 &&
		   a->once_ms == 0 && rl_req_default_history(h) && !a->join &&
		   a->priority == 0 && !a->supersede && a->baton_ms == 0 &&
		   a->arrival == 0 && !n->multislot;
	size_t at = 0;

	/* The label is cut at RLOCK_LABEL_MAX bytes, as status shows it. */
	rlock_strlcpy(q->label, who->label != NULL ? who->label : "",
		      sizeof(q->label));
	q->wargc = 0;
	req_acquire_whole(q, n, token, ttl_ms, who, a, h);
	if (!fast)
		return;
	rl_req_begin_short(q, RLOCK_SCRIPT_ACQUIRE, n);
	q->argv[q->argc++] = token;
	q->argv[q->argc++] = rl_req_num(q, 0, ttl_ms);
	rl_req_put_holder(q, a->kind, who->waited_ms, token, who);
	q->argv[q->argc++] = q->info;
	/* FAST: '+', or 'u' for fences ordered to the server's µs. */
	if (!a->details && a->waiter[0] == '\0') {
		if (a->micro)
			q->argv[q->argc++] = "u";
		return;
	}
	at = 0;
	rl_req_put(q->opts, sizeof(q->opts), &at, a->micro ? "u\n" : "+\n");
	rl_req_put(q->opts, sizeof(q->opts), &at, a->details ? "1\n" : "0\n");
	rl_req_put(q->opts, sizeof(q->opts), &at, a->waiter);
	rl_req_put(q->opts, sizeof(q->opts), &at, "\n0\n");
	rl_req_put_num(q->opts, sizeof(q->opts), &at, who->min_hold_ms);
	rl_req_put(q->opts, sizeof(q->opts), &at, "\n");
	rl_req_put_num(q->opts, sizeof(q->opts), &at, h != NULL ? h->max : 0);
	rl_req_put(q->opts, sizeof(q->opts), &at, "\n");
	rl_req_put_num(q->opts, sizeof(q->opts), &at, h != NULL ? h->ttl_ms : 0);
	rl_req_put(q->opts, sizeof(q->opts), &at, "\n");
	rl_req_put_num(q->opts, sizeof(q->opts), &at, a->priority);
	rl_req_put(q->opts, sizeof(q->opts), &at, a->supersede ? "\n1\n" : "\n0\n");
	rl_req_put_num(q->opts, sizeof(q->opts), &at, a->once_ms);
	rl_req_put(q->opts, sizeof(q->opts), &at, "\n");
	rl_req_put_num(q->opts, sizeof(q->opts), &at, a->baton_ms);
	rl_req_put(q->opts, sizeof(q->opts), &at, "\n");
	rl_req_put_num(q->opts, sizeof(q->opts), &at,
		a->baton_ms > 0 ? rlock_boot_ms() : 0);
	rl_req_put(q->opts, sizeof(q->opts), &at, "\n");
	rl_req_put_num(q->opts, sizeof(q->opts), &at, a->arrival);
	q->argv[q->argc++] = q->opts;
}

/*
 * A grant, {1, fence}, {1, fence, recorded}, a semaphore's {1, fence,
 * recorded, slot} or a pool's {1, fence, recorded, {members}} (read by
 * rl_decode_members): the fence a positive integer below 2^53, recorded 1 or
 * 0 (the history refused it), absent or -1 when not asked for (*recorded
 * -1), the slot 0..RLOCK_LIMIT_MAX-1 (absent: none, *slot -1; a grant an
 * older rlock made has none); or the shortest path's answer, its
 * history entry's id "MS-SEQ" (lib/scripts/entry.lua), MS 13 digits and
 * SEQ at most 3, whose fence is (MS + 1) * 1000 + SEQ (recorded 1).
 * Returns 0, or -1 for anything else: a fence of 0, a negative one, one
 * a double cannot hold, any other string.
 */
int rl_decode_grant(const redisReply *r, long long *fence, int *recorded,
		    int *slot)
{
	const redisReply *f, *h, *s;

	if (slot != NULL)
		*slot = -1;
	if (r->type == REDIS_REPLY_STRING) {
		const char *dash = memchr(r->str, '-', r->len);
		long long ms, seq;

		if (dash == NULL || dash - r->str != 13 ||
		    rlock_parse_ll(r->str, 13, 1, 9007199253690LL, &ms) != 0 ||
		    r->len - 14 < 1 || r->len - 14 > 3 ||
		    rlock_parse_ll(dash + 1, r->len - 14, 0, 999, &seq) != 0)
			return -1;
		*fence = (ms + 1) * 1000 + seq;
		*recorded = 1;
		return 0;
	}
	if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
	    r->elements > 4)
		return -1;
	f = r->element[1];
	if (f->type != REDIS_REPLY_INTEGER || f->integer < 1 ||
	    f->integer >= (1LL << 53))
		return -1;
	*fence = f->integer;
	*recorded = -1;
	if (r->elements >= 3) {
		h = r->element[2];
		if (h->type != REDIS_REPLY_INTEGER || h->integer < -1 ||
		    h->integer > 2)
			return -1;
		*recorded = (int)h->integer;
	}
	if (r->elements == 4) {
		s = r->element[3];
		/* A pool's members: rl_decode_members reads them. */
		if (s->type == REDIS_REPLY_ARRAY)
			return 0;
		if (s->type != REDIS_REPLY_INTEGER || s->integer < 0 ||
		    s->integer >= RLOCK_LIMIT_MAX)
			return -1;
		if (slot != NULL)
			*slot = (int)s->integer;
	}
	return 0;
}

/* What a busy answer says: {0, pttl, place, waiting, holders, joined,
 * kind held} and, when asked for, the holder's details. */
int rl_parse_busy(const redisReply *r, struct rlock_holder *h, int *joined,
		  long long *arrival)
{
	long long pttl, place, waiting, nholders, join, limit;
	const redisReply *k;

	/* The counts the wait is timed by, each within what the script
	 * can say: a lease left (a PTTL, or a shared holder's), a place
	 * (-1 none), a count of waiters (-1 not asked), of holders, and
	 * whether this try joined the line. */
	if ((r->elements != 7 && r->elements != 15) ||
	    rl_elem_num(r, 1, LLONG_MIN, LLONG_MAX, &pttl) != 0 ||
	    rl_elem_num(r, 2, -1, LLONG_MAX, &place) != 0 ||
	    rl_elem_num(r, 3, -1, LLONG_MAX, &waiting) != 0 ||
	    rl_elem_num(r, 4, 0, LLONG_MAX, &nholders) != 0 ||
	    rl_elem_num(r, 5, 0, FENCE_LIMIT, &join) != 0)
		return -1;
	/* The kind held: '' none (free, with others in line first), x, s,
	 * or a semaphore's limit. */
	k = r->element[6];
	if (k->type != REDIS_REPLY_STRING ||
	    (k->len != 0 && strcmp(k->str, "x") != 0 &&
	     strcmp(k->str, "s") != 0 && strcmp(k->str, "p") != 0 &&
	     rlock_parse_ll(k->str, k->len, 2, RLOCK_LIMIT_MAX, &limit) != 0))
		return -1;
	if (r->elements == 15 && rl_parse_holder_at(r, 7, h) != 0)
		return -1;
	/* Without details: only the lease left; the details are those of
	 * the last detailed answer. */
	h->held = k->len != 0;
	h->ttl_ms = pttl;
	h->place = place;
	if (waiting >= 0)
		h->waiters = waiting;
	h->nholders = nholders;
	*joined |= join != 0;
	if (join != 0 && arrival != NULL)
		*arrival = join;
	if (k->len != 0) {
		rl_parse_kind(k->str, &h->shared, &h->limit);
		h->pool = rl_pool_kind(k->str) != 0;
	}
	return 0;
}

int rl_decode_baton(const char *m, size_t len, struct baton *b)
{
	static const long long max[4] = { FENCE_LIMIT - 1, 1LL << 62,
					   1LL << 62, 2 };
	long long v[4];
	const char *at = m, *end = m + len, *nl;
	size_t k;

	if (len < 8 + RLOCK_TOKEN_LEN + 1 || memcmp(m, "granted\n", 8) != 0 ||
	    m[8 + RLOCK_TOKEN_LEN] != '\n')
		return -1;
	memcpy(b->token, m + 8, RLOCK_TOKEN_LEN);
	b->token[RLOCK_TOKEN_LEN] = '\0';
	if (strlen(b->token) != RLOCK_TOKEN_LEN)
		return -1;
	at += 8 + RLOCK_TOKEN_LEN + 1;
	for (k = 0; k < 4; k++) {
		nl = k < 3 ? memchr(at, '\n', (size_t)(end - at)) : end;
		if (nl == NULL)
			return -1;
		/* RECORDED is empty when the history was not asked for. */
		if (k == 3 && nl == at)
			v[k] = -1;
		else if (rlock_parse_ll(at, (size_t)(nl - at), k == 0 ? 1 : 0,
					max[k], &v[k]) != 0)
			return -1;
		at = nl + (k < 3);
	}
	b->fence = v[0];
	b->stamp = v[1];
	b->age = v[2];
	b->recorded = (int)v[3];
	return 0;
}
