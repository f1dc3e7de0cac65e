/*
 * status.c - reading a lock's state: status (who holds it, who waits, its
 * last run), list (every lock under the prefix) and the history (log,
 * last).  Writing stays in the scripts (scripts.c), the lock operations in
 * lock.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_int.h"

/* ---- status and list ------------------------------------------------ */

/* The I/O deadline of one request from now, cut to the hard deadline. */
static int64_t bound_io(const struct rlock *rl)
{
	int64_t d = rlock_mono_ms() + rl->copts.io_timeout_ms;

	return rl->hard_deadline > 0 && d > rl->hard_deadline ?
		rl->hard_deadline : d;
}

/* What server i said of the lock, for status's per-server view. */
static void fill_view(struct rlock *rl, struct fan *f, size_t i,
		      struct rlock_view *v)
{
	const struct rlock_result *res = &f->slot[i].res;

	memset(v, 0, sizeof(*v));
	snprintf(v->addr, sizeof(v->addr), "%s", node_addr(&rl->node[i]));
	if (res->rc != RLOCK_OK) {
		v->state = RLOCK_VIEW_ERROR;
		snprintf(v->error, sizeof(v->error), "%s", res->err);
		return;
	}
	parse_holder(res->r, &v->holder);
	v->state = v->holder.held ? RLOCK_VIEW_HELD : RLOCK_VIEW_FREE;
}

/* The most subscribers of the release channel on any server, or -1 when
 * none would say (an ACL user without PUBSUB): unknown, not zero. */
static long long count_waiters(struct rlock *rl, const struct names *n)
{
	const char *argv[3] = { "PUBSUB", "NUMSUB", n->k.chan };
	struct request q;
	struct fan f;
	long long most = -1;

	/* Waiters subscribe on the master that owns the lock's slot. */
	req_command(&q, 3, argv, n->v.slot);
	fan_init(&f, rl);
	fan_all(&f, &q);
	fan_run(rl, &f);
	for (size_t i = 0; i < f.n; i++) {
		const redisReply *r = f.slot[i].res.r;

		if (f.slot[i].res.rc == RLOCK_OK &&
		    r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
		    elem_ll(r, 1) > most)
			most = elem_ll(r, 1);
	}
	fan_done(&f);
	return most;
}

/* Events read from the servers, before they are merged. */
struct evlist {
	struct rlock_event *ev;
	size_t n, cap;
};

static int parse_entry(const redisReply *e, struct rlock_event *ev);
static void join_grant(struct rlock_event *e, const struct rlock_event *g);
static int unjoined(const struct rlock_event *e);
static void join_older(struct rlock *rl, const struct names *nm,
		       struct evlist *l);

/* The last run a server's status answer names, kept when it is the
 * newest so far. */
static void status_last(struct rlock *rl, const redisReply *r)
{
	struct rlock_event ev;

	struct rlock_event grant;

	if (r->type != REDIS_REPLY_ARRAY || r->elements < 17 ||
	    parse_entry(r->element[16], &ev) != 0)
		return;
	if (r->elements > 17 && parse_entry(r->element[17], &grant) == 0)
		join_grant(&ev, &grant);
	if (!rl->has_last || ev.time_ms > rl->last.time_ms) {
		rl->last = ev;
		rl->has_last = 1;
	}
}

int rlock_status_last(const struct rlock *rl, const struct rlock_event **e)
{
	*e = &rl->last;
	return rl->has_last;
}

/* The period done: {until, host, user, pid, since, done, fence, per}, or
 * {} (a record of an older rlock has no per: 0). */
static void parse_once(const redisReply *r, struct rlock_once *o)
{
	memset(o, 0, sizeof(*o));
	if (r->type != REDIS_REPLY_ARRAY || r->elements < 7)
		return;
	o->present = 1;
	o->until_ms = elem_ll(r, 0);
	elem_str(r, 1, o->host, sizeof(o->host));
	elem_str(r, 2, o->user, sizeof(o->user));
	o->pid = elem_ll(r, 3);
	o->since_ms = elem_ll(r, 4);
	o->done_ms = elem_ll(r, 5);
	o->fence = elem_ll(r, 6);
	o->period_ms = elem_ll(r, 7);
}

/* The rest of a status answer after the holder: kind, holders, waiting,
 * the next in line and the list of holders. */
static void parse_status(const redisReply *r, struct rlock_holder *h,
			 struct rlock_holder **list, size_t *nlist)
{
	const redisReply *l;
	char k[24], *next;
	long long now;

	if (r->elements < 15)
		return;
	if (r->elements > 15)
		elem_str(r, 15, h->note, sizeof(h->note));
	now = elem_ll(r, 9);
	elem_str(r, 10, k, sizeof(k));
	parse_kind(k, &h->shared, &h->limit);
	h->nholders = elem_ll(r, 11);
	h->waiters = elem_ll(r, 12);
	l = r->element[13];
	if (l->type == REDIS_REPLY_STRING && l->len > 0) {
		next = strndup(l->str, l->len);
		if (next != NULL)
			parse_waiter(next, now, &h->next);
		free(next);
	}
	if (r->elements > 18)
		parse_once(r->element[18], &h->once);
	l = r->element[14];
	if (list == NULL || l->type != REDIS_REPLY_ARRAY || l->elements == 0)
		return;
	*list = calloc(l->elements, sizeof(**list));
	if (*list == NULL)
		return;
	for (size_t i = 0; i < l->elements; i++) {
		const redisReply *e = l->element[i];
		struct rlock_holder *x = &(*list)[*nlist];
		char *meta;

		if (e->type != REDIS_REPLY_ARRAY || e->elements != 3)
			continue;
		x->held = 1;
		x->shared = h->shared;
		x->limit = h->limit;
		x->place = -1;
		elem_str(e, 0, x->token_prefix, sizeof(x->token_prefix));
		x->ttl_ms = elem_ll(e, 1);
		meta = e->element[2]->type == REDIS_REPLY_STRING ?
		       strndup(e->element[2]->str, e->element[2]->len) : NULL;
		if (meta != NULL)
			parse_meta(meta, now, x);
		free(meta);
		(*nlist)++;
	}
}

int rlock_status(struct rlock *rl, const char *name, struct rlock_holder *out,
		 struct rlock_view *each)
{
	struct rlock_holder h[RLOCK_MAX_SERVERS];
	struct request q;
	struct fan f;
	struct names n;
	size_t i, fail = 0, ok = 0;
	long long fence = 0;
	int rc;

	rc = make_names(rl, name, &n);
	if (rc != RLOCK_OK)
		return rc;
	memset(out, 0, sizeof(*out));
	free(rl->holders);
	rl->holders = NULL;
	rl->nholders = 0;
	rl->has_last = 0;
	if ((rc = first_distinct(rl)) != RLOCK_OK)
		return rc;
	req_status(&q, &n.v);
	fan_init(&f, rl);
	fan_all(&f, &q);
	skip_unanswered(rl, &f);
	fan_run(rl, &f);
	for (i = 0; i < f.n; i++) {
		if (f.slot[i].res.rc == RLOCK_OK &&
		    parse_holder(f.slot[i].res.r, &h[i]) != 0)
			fan_unexpected(&f, i, "status");
		if (f.slot[i].res.rc == RLOCK_OK) {
			parse_status(f.slot[i].res.r, &h[i], rl->nnode == 1 ?
				     &rl->holders : NULL, &rl->nholders);
			status_last(rl, f.slot[i].res.r);
		}
		if (each != NULL)
			fill_view(rl, &f, i, &each[i]);
		if (f.slot[i].res.rc != RLOCK_OK) {
			fail++;
			continue;
		}
		ok++;
		if (h[i].fence > fence)
			fence = h[i].fence;
	}
	if (ok < rl->quorum) {
		rc = fan_first_error(rl, &f, fail);
		fan_done(&f);
		return rc;
	}
	/* Held when one token holds it on a quorum; shown is that holder
	 * as the server with the highest fence knows it. */
	for (i = 0; i < f.n; i++) {
		size_t same = 0;

		if (f.slot[i].res.rc != RLOCK_OK || !h[i].held)
			continue;
		for (size_t j = 0; j < f.n; j++) {
			if (f.slot[j].res.rc == RLOCK_OK && h[j].held &&
			    strcmp(h[j].token_prefix, h[i].token_prefix) == 0)
				same++;
		}
		if (same >= rl->quorum && (!out->held || h[i].fence > out->fence))
			*out = h[i];
	}
	fan_done(&f);
	/* The script looks for the last run's grant among 50 entries. */
	if (rl->has_last && unjoined(&rl->last)) {
		struct evlist one = { &rl->last, 1, 1 };

		join_older(rl, &n, &one);
	}
	if (!out->held) {
		/* The line of the one server (several keep none). */
		struct rlock_waiter next = { 0 };
		struct rlock_once once = { 0 };
		long long waiters = 0;

		if (rl->nnode == 1) {
			waiters = h[0].waiters;
			next = h[0].next;
			once = h[0].once;
		}
		memset(out, 0, sizeof(*out));
		out->ttl_ms = -2;
		out->fence = fence;
		out->limit = 1;
		out->waiters = waiters;
		out->next = next;
		out->once = once;
	}
	out->place = -1;
	/* Several masters keep no line: their waiters listen on the release
	 * channel. */
	if (rl->nnode > 1)
		out->waiters = count_waiters(rl, &n);
	return RLOCK_OK;
}

size_t rlock_status_holders(const struct rlock *rl,
			    const struct rlock_holder **list)
{
	*list = rl->holders;
	return rl->nholders;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lock names in one SCAN reply, appended to *names.  Returns RLOCK_OK,
 * RLOCK_EPROTO for a reply of the wrong shape or RLOCK_ESYS. */
static int take_names(const redisReply *r, size_t plen, size_t slen,
		      char cursor[32], char ***names, size_t *nnames,
		      size_t *cap)
{
	const redisReply *keys;

	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING ||
	    r->element[1]->type != REDIS_REPLY_ARRAY)
		return RLOCK_EPROTO;
	snprintf(cursor, 32, "%s", r->element[0]->str);
	keys = r->element[1];
	for (size_t k = 0; k < keys->elements; k++) {
		const redisReply *e = keys->element[k];
		char *nm;

		if (e->type != REDIS_REPLY_STRING || e->len < plen + slen + 2)
			continue;
		if (*nnames == *cap) {
			size_t nc = *cap ? *cap * 2 : 64;
			char **nn = realloc(*names, nc * sizeof(*nn));

			if (nn == NULL)
				return RLOCK_ESYS;
			*names = nn;
			*cap = nc;
		}
		/* prefix{NAME}suffix: the name between the braces. */
		nm = strndup(e->str + plen + 1, e->len - plen - slen - 2);
		if (nm == NULL)
			return RLOCK_ESYS;
		(*names)[(*nnames)++] = nm;
	}
	return RLOCK_OK;
}

/* One SCAN over pattern for keys of type; slen: the suffix after the
 * name's closing brace. */
static int scan_pass(struct rlock *rl, struct rlock_conn *c,
		     const char *pattern, const char *type, size_t slen,
		     char cursor[32], char ***names, size_t *nnames,
		     size_t *cap, char *err, size_t errlen)
{
	size_t plen = strlen(rl->prefix);
	int rc;

	do {
		/* Only keys of the type: a key of another type under the
		 * prefix is not a lock (Redis 6 and later). */
		const char *argv[8] = { "SCAN", cursor, "MATCH", pattern,
					"COUNT", "1000", "TYPE", type };
		redisReply *r = NULL;
		struct rlock_result res;

		rc = conn_call(c, bound_io(rl), -1, 8, argv, NULL, &r);
		if (rc != RLOCK_OK) {
			snprintf(err, errlen, "%s", conn_errstr(c));
			return rc;
		}
		if (r->type == REDIS_REPLY_ERROR) {
			classify_error(r, c, "SCAN", &res);
			snprintf(err, errlen, "%s", res.err);
			freeReplyObject(r);
			return res.rc;
		}
		rc = take_names(r, plen, slen, cursor, names, nnames, cap);
		freeReplyObject(r);
		if (rc == RLOCK_EPROTO)
			snprintf(err, errlen, "%s: unexpected reply to SCAN",
				 conn_addr(c));
		else if (rc != RLOCK_OK)
			snprintf(err, errlen, "out of memory");
	} while (rc == RLOCK_OK && strcmp(cursor, "0") != 0);
	return rc;
}

/* SCAN one server for the locks under pattern, into *names.  Returns
 * RLOCK_OK, or an error with the reason in err. */
static int scan_server(struct rlock *rl, struct rlock_conn *c,
		       const char *pattern, char ***names, size_t *nnames,
		       size_t *cap, char *err, size_t errlen)
{
	char cursor[32] = "0", pat[sizeof(rl->prefix) * 2 + 24];
	int rc = RLOCK_OK;

	/* An exclusive lock's key, and the holders of a shared lock or a
	 * semaphore. */
	for (int pass = 0; pass < 2 && rc == RLOCK_OK; pass++) {
		snprintf(pat, sizeof(pat), "%s%s", pattern,
			 pass ? KEY_HOLDERS : "");
		snprintf(cursor, sizeof(cursor), "0");
		rc = scan_pass(rl, c, pat, pass ? "zset" : "string",
			       pass ? strlen(KEY_HOLDERS) : 0, cursor, names,
			       nnames, cap, err, errlen);
	}
	return rc;
}

/* Every lock on server i: on each master of a cluster. */
static int scan_node(struct rlock *rl, size_t i, const char *pattern,
		     char ***names, size_t *nnames, size_t *cap, char *err,
		     size_t errlen)
{
	struct rlock_node *n = &rl->node[i];
	size_t masters[NODE_MAX_PEERS];
	int nm, rc = RLOCK_OK;

	nm = node_masters(n, rl->hard_deadline, masters, NODE_MAX_PEERS);
	if (nm < 0) {
		snprintf(err, errlen, "%s", node_errstr(n));
		return RLOCK_EUNAVAIL;
	}
	for (int k = 0; k < nm && rc == RLOCK_OK; k++)
		rc = scan_server(rl, n->peer[masters[k]]->cmd, pattern, names,
				 nnames, cap, err, errlen);
	return rc;
}

int rlock_list(struct rlock *rl, int (*cb)(const char *name, void *arg),
	       void *arg)
{
	char pattern[sizeof(rl->prefix) * 2 + 8], err[sizeof(rl->err)];
	char **names = NULL;
	size_t nnames = 0, cap = 0, i, j = 0, failed = 0;
	int rc = RLOCK_OK;

	/* The prefix is literal: escape the glob characters SCAN knows. */
	for (i = 0; rl->prefix[i] != '\0'; i++) {
		if (strchr("*?[]\\", rl->prefix[i]) != NULL)
			pattern[j++] = '\\';
		pattern[j++] = rl->prefix[i];
	}
	memcpy(pattern + j, "{*}", 4);
	/* A lock held by a quorum is on a majority: with the others up, a
	 * server that fails hides none of them. */
	for (i = 0; i < rl->nnode && rc == RLOCK_OK; i++) {
		int r = scan_node(rl, i, pattern, &names, &nnames, &cap, err,
				  sizeof(err));

		if (r == RLOCK_ESYS) {
			set_error(rl->err, sizeof(rl->err), "%s", err);
			rc = r;
		} else if (r != RLOCK_OK && ++failed > rl->nnode - rl->quorum) {
			if (rl->nnode == 1)
				set_error(rl->err, sizeof(rl->err), "%s",
					  err);
			else
				set_error(rl->err, sizeof(rl->err),
					  "no quorum: %zu of %zu servers "
					  "failed (%s)", failed, rl->nnode,
					  err);
			rc = rl->nnode == 1 ? r : RLOCK_EUNAVAIL;
		}
	}
	if (rc == RLOCK_OK && nnames > 0) {
		/* SCAN may return a key twice, and N servers N times. */
		qsort(names, nnames, sizeof(*names), cmp_str);
		for (i = 0; i < nnames; i++) {
			if (i > 0 && strcmp(names[i], names[i - 1]) == 0)
				continue;
			if (cb(names[i], arg) != 0)
				break;
		}
	}
	for (i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	return rc;
}


/* ---- the history ---------------------------------------------------- */

/* Field f of an entry (name and value as the stream has them) into ev;
 * fields rlock does not know are passed over. */
static void set_field(struct rlock_event *ev, const redisReply *f,
		      const redisReply *v)
{
	char num[24];
	int i;

	for (i = 0; i < EV_NFIELDS; i++) {
		if (f->len == strlen(ev_field[i]) &&
		    memcmp(f->str, ev_field[i], f->len) == 0)
			break;
	}
#define COPY(dst) snprintf(dst, sizeof(dst), "%.*s", (int)v->len, v->str)
	COPY(num);
	switch (i) {
	case EV_EVENT: COPY(ev->event); break;
	case EV_HOST: COPY(ev->host); break;
	case EV_USER: COPY(ev->user); break;
	case EV_KIND: COPY(ev->kind); break;
	case EV_TOKEN: COPY(ev->token); break;
	case EV_SIGNAL: COPY(ev->signal); break;
	case EV_REASON: COPY(ev->reason); break;
	case EV_COMMAND: COPY(ev->command); break;
	case EV_NOTE: COPY(ev->note); break;
	case EV_PID: ev->pid = num[0] != '\0' ? strtoll(num, NULL, 10) : -1;
		break;
	case EV_FENCE: ev->fence = num[0] != '\0' ? strtoll(num, NULL, 10) : -1;
		break;
	case EV_WAITED:
		ev->waited_ms = num[0] != '\0' ? strtoll(num, NULL, 10) : -1;
		break;
	case EV_HELD:
		ev->held_ms = num[0] != '\0' ? strtoll(num, NULL, 10) : -1;
		break;
	case EV_SINCE:
		ev->since_ms = num[0] != '\0' ? strtoll(num, NULL, 10) : -1;
		break;
	case EV_EXIT:
		ev->exit = num[0] != '\0' ? (int)strtol(num, NULL, 10) : -1;
		break;
	}
#undef COPY
}

/* A stream entry, [id, [field, value, ...]], into ev.  Returns 0, or -1
 * for anything else (an empty reply: no entry). */
static int parse_entry(const redisReply *e, struct rlock_event *ev)
{
	const redisReply *fv;

	memset(ev, 0, sizeof(*ev));
	ev->pid = ev->fence = ev->waited_ms = ev->held_ms = ev->since_ms = -1;
	ev->exit = -1;
	ev->servers = 1;
	if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
	    e->element[0]->type != REDIS_REPLY_STRING ||
	    e->element[1]->type != REDIS_REPLY_ARRAY)
		return -1;
	elem_str(e, 0, ev->id, sizeof(ev->id));
	ev->time_ms = strtoll(ev->id, NULL, 10);
	fv = e->element[1];
	for (size_t i = 0; i + 1 < fv->elements; i += 2) {
		if (fv->element[i]->type == REDIS_REPLY_STRING &&
		    fv->element[i + 1]->type == REDIS_REPLY_STRING)
			set_field(ev, fv->element[i], fv->element[i + 1]);
	}
	/* A release says since when the lock was held; its entry's ID says
	 * when it ended, on the same clock. */
	if (ev->held_ms < 0 && ev->since_ms >= 0)
		ev->held_ms = ev->time_ms > ev->since_ms ?
			      ev->time_ms - ev->since_ms : 0;
	return ev->event[0] != '\0' ? 0 : -1;
}

int rlock_event_ok(const struct rlock_event *e)
{
	return strcmp(e->event, "released") == 0 && e->exit <= 0;
}

/*
 * A release names the grant it ends by the token: who held the lock, the
 * kind and the fence are in the grant's record (the release writes no more,
 * to spare the server on the hot path).  Fill them into e from grant g.
 */
static void join_grant(struct rlock_event *e, const struct rlock_event *g)
{
	if (strcmp(g->event, "acquired") != 0 || strcmp(g->token, e->token) != 0)
		return;
	if (e->host[0] == '\0')
		snprintf(e->host, sizeof(e->host), "%s", g->host);
	if (e->user[0] == '\0')
		snprintf(e->user, sizeof(e->user), "%s", g->user);
	if (e->pid < 0)
		e->pid = g->pid;
	if (e->kind[0] == '\0')
		snprintf(e->kind, sizeof(e->kind), "%s", g->kind);
	if (e->fence < 0)
		e->fence = g->fence;
}

/* Whether e ends a grant that has not been joined to it yet: a release
 * (it names no holder), a loss (its kind, for a shared or semaphore
 * lease). */
static int unjoined(const struct rlock_event *e)
{
	return (strcmp(e->event, "released") == 0 ||
		strcmp(e->event, "lost") == 0) &&
	       (e->host[0] == '\0' || e->kind[0] == '\0') &&
	       e->token[0] != '\0';
}

/* Join every release in ev (oldest first) to its grant among the GRANTS
 * grants before it: a ring, so that a long history costs n * GRANTS. */
#define GRANTS 64
static void join_grants(struct rlock_event *ev, size_t n)
{
	size_t ring[GRANTS], nring = 0;

	for (size_t i = 0; i < n; i++) {
		if (strcmp(ev[i].event, "acquired") == 0) {
			ring[nring++ % GRANTS] = i;
			continue;
		}
		for (size_t k = 0; unjoined(&ev[i]) && k < nring && k < GRANTS;
		     k++) {
			const struct rlock_event *g =
				&ev[ring[(nring - 1 - k) % GRANTS]];

			if (strcmp(g->token, ev[i].token) == 0) {
				join_grant(&ev[i], g);
				break;
			}
		}
	}
}


static int evlist_add(struct evlist *l, const struct rlock_event *e)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct rlock_event *p = realloc(l->ev, cap * sizeof(*p));

		if (p == NULL)
			return -1;
		l->ev = p;
		l->cap = cap;
	}
	l->ev[l->n++] = *e;
	return 0;
}

/* The id that follows id ("ms-seq"), for a read that starts after it. */
static void next_id(const char *id, char *out, size_t len)
{
	unsigned long long ms = 0, seq = 0;

	if (sscanf(id, "%llu-%llu", &ms, &seq) != 2)
		ms = seq = 0;
	else if (seq == ~0ULL)
		ms++, seq = 0;
	else
		seq++;
	snprintf(out, len, "%llu-%llu", ms, seq);
}

/* The sequence part of a stream id ("ms-seq"). */
static unsigned long long id_seq(const char *id)
{
	const char *dash = strchr(id, '-');

	return dash != NULL ? strtoull(dash + 1, NULL, 10) : 0;
}

/*
 * By time, then by the entry's place in its stream, then fence.  One
 * stream's ids are its order: events of one millisecond (a semaphore's
 * places taken and given back, a lease found gone after the next grant)
 * need not have increasing fences, and "ms-10" sorts before "ms-9" as a
 * string.  The fence only orders what several masters wrote.
 */
static int cmp_time(const void *a, const void *b)
{
	const struct rlock_event *x = a, *y = b;
	unsigned long long sx = id_seq(x->id), sy = id_seq(y->id);

	if (x->time_ms != y->time_ms)
		return x->time_ms < y->time_ms ? -1 : 1;
	if (sx != sy)
		return sx < sy ? -1 : 1;
	if (x->fence != y->fence)
		return x->fence < y->fence ? -1 : 1;
	return strcmp(x->token, y->token);
}

/* One event recorded by several masters: the same kind and token, from
 * another master (one master can record a token's grant twice: an acquire
 * that was undone tries again with its token). */
static int same_event(const struct rlock_event *x, const struct rlock_event *y)
{
	return x->token[0] != '\0' && strcmp(x->token, y->token) == 0 &&
	       strcmp(x->event, y->event) == 0 && (x->from & y->from) == 0;
}

/*
 * One acquisition has one fence, the one handed out.  Its acquired record
 * carries it (written once a quorum granted), but a master that rlock did
 * not raise to it (raising stops at a quorum) keeps its own lower fence in
 * the metadata its release is recorded from.  When that master's record is
 * the only one of the release (the others restarted empty, or refused the
 * write), the event would show a lower fence than the holder had: give
 * every event of a token the highest fence any of them carries.
 */
static void one_fence(struct evlist *l)
{
	size_t i, j;

	for (i = 0; i < l->n; i++) {
		struct rlock_event *e = &l->ev[i];

		if (e->fence < 0 || e->token[0] == '\0')
			continue;
		for (j = 0; j < l->n; j++) {
			if (l->ev[j].fence > e->fence &&
			    strcmp(l->ev[j].token, e->token) == 0)
				e->fence = l->ev[j].fence;
		}
	}
}

/* Sort l by time and, with several masters, count each event once: the
 * earliest record stands for all, with the fence handed out (one_fence)
 * and how many servers recorded it. */
static void merge(struct evlist *l, int several)
{
	size_t i, j, out = 0;

	if (l->n > 1)
		qsort(l->ev, l->n, sizeof(*l->ev), cmp_time);
	if (!several)
		return;
	for (i = 0; i < l->n; i++) {
		for (j = 0; j < out; j++) {
			if (same_event(&l->ev[j], &l->ev[i]))
				break;
		}
		if (j < out) {
			l->ev[j].servers++;
			l->ev[j].from |= l->ev[i].from;
			if (l->ev[i].fence > l->ev[j].fence)
				l->ev[j].fence = l->ev[i].fence;
			continue;
		}
		l->ev[out++] = l->ev[i];
	}
	l->n = out;
	one_fence(l);
}

/*
 * Ask every server for part of name's stream: the newest max entries from
 * since_ms on (XREVRANGE), up to top (NULL: the end), or with follow those
 * after pos[i] (XRANGE).
 * Adds them to l, and moves pos (when given) to the newest entry each
 * server had.  Returns RLOCK_OK when at least one server answered.
 */
static int read_log(struct rlock *rl, const struct names *n, size_t max,
		    long long since_ms, const char *top, int follow,
		    char (*pos)[48], struct evlist *l)
{
	struct request q[RLOCK_MAX_SERVERS];
	char count[24], since[24], from[RLOCK_MAX_SERVERS][48];
	struct fan f;
	size_t i, ok = 0, fail = 0;
	int rc = RLOCK_OK;

	/* One server given twice would count each event as recorded by
	 * both. */
	if ((rc = first_distinct(rl)) != RLOCK_OK)
		return rc;
	snprintf(count, sizeof(count), "%zu", max);
	snprintf(since, sizeof(since), "%lld", since_ms);
	fan_init(&f, rl);
	for (i = 0; i < rl->nnode; i++) {
		const char *argv[6] = { "XREVRANGE", n->v.log,
					top != NULL ? top : "+",
					since_ms > 0 ? since : "-", "COUNT",
					count };

		if (follow) {
			next_id(pos[i][0] != '\0' ? pos[i] : "0-0",
				from[i], sizeof(from[i]));
			argv[0] = "XRANGE";
			argv[2] = from[i];
			argv[3] = "+";
		}
		req_command(&q[i], 6, argv, n->v.slot);
		f.slot[i].req = &q[i];
	}
	skip_unanswered(rl, &f);
	fan_run(rl, &f);
	for (i = 0; i < f.n; i++) {
		const redisReply *r = f.slot[i].res.r;

		if (f.slot[i].res.rc == RLOCK_OK &&
		    r->type != REDIS_REPLY_ARRAY)
			fan_unexpected(&f, i, "log");
		if (f.slot[i].res.rc != RLOCK_OK) {
			fail++;
			continue;
		}
		ok++;
		for (size_t j = 0; j < r->elements; j++) {
			struct rlock_event ev;

			if (parse_entry(r->element[j], &ev) != 0)
				continue;
			ev.from = 1u << i;
			/* XRANGE's last is the newest, XREVRANGE's first. */
			if (pos != NULL && (follow || j == 0))
				snprintf(pos[i], sizeof(pos[i]), "%s", ev.id);
			if (evlist_add(l, &ev) != 0) {
				set_error(rl->err, sizeof(rl->err),
					  "out of memory");
				rc = RLOCK_ESYS;
			}
		}
	}
	if (ok == 0)
		rc = fan_first_error(rl, &f, fail);
	fan_done(&f);
	return rc;
}

/*
 * Releases in l whose grant was not among the events read (a long hold, a
 * read that starts at --since, a follower that showed the grant earlier):
 * look for their grants among the GRANTS * 4 entries before the oldest of
 * them.  One more read, and only then; a grant trimmed from the history
 * leaves its release without a holder.
 */
static void join_older(struct rlock *rl, const struct names *nm,
		       struct evlist *l)
{
	struct evlist g = { 0 };
	const char *top = NULL;
	size_t i, j;

	for (i = 0; i < l->n && top == NULL; i++) {
		if (unjoined(&l->ev[i]))
			top = l->ev[i].id;
	}
	if (top == NULL ||
	    read_log(rl, nm, GRANTS * 4, 0, top, 0, NULL, &g) != RLOCK_OK) {
		free(g.ev);
		return;
	}
	merge(&g, rl->nnode > 1);
	for (i = 0; i < l->n; i++) {
		for (j = g.n; unjoined(&l->ev[i]) && j-- > 0;) {
			if (strcmp(g.ev[j].event, "acquired") == 0 &&
			    strcmp(g.ev[j].token, l->ev[i].token) == 0)
				join_grant(&l->ev[i], &g.ev[j]);
		}
	}
	free(g.ev);
}

/* Read name's events as read_log does, merge the servers' records and join
 * each release to its grant: into l, oldest first. */
static int read_events(struct rlock *rl, const char *name, size_t max,
		       long long since_ms, int follow, char (*pos)[48],
		       struct evlist *l)
{
	struct names nm;
	int rc;

	rc = make_names(rl, name, &nm);
	if (rc != RLOCK_OK)
		return rc;
	rc = read_log(rl, &nm, max, since_ms, NULL, follow, pos, l);
	if (rc != RLOCK_OK) {
		free(l->ev);
		*l = (struct evlist){ 0 };
		return rc;
	}
	merge(l, rl->nnode > 1);
	join_grants(l->ev, l->n);
	join_older(rl, &nm, l);
	return RLOCK_OK;
}

int rlock_log(struct rlock *rl, const char *name, size_t max,
	      long long since_ms, struct rlock_event **ev, size_t *n,
	      struct rlock_log_cursor *cur)
{
	struct evlist l = { 0 };
	int rc;

	*ev = NULL;
	*n = 0;
	if (cur != NULL)
		memset(cur, 0, sizeof(*cur));
	/* A few more than asked for: the grants of the oldest releases. */
	rc = read_events(rl, name, max + GRANTS, since_ms, 0,
			 cur != NULL ? cur->id : NULL, &l);
	if (rc != RLOCK_OK)
		return rc;
	if (l.n > max) {
		memmove(l.ev, l.ev + (l.n - max), max * sizeof(*l.ev));
		l.n = max;
	}
	*ev = l.ev;
	*n = l.n;
	return RLOCK_OK;
}

int rlock_log_follow(struct rlock *rl, const char *name,
		     struct rlock_log_cursor *cur, struct rlock_event **ev,
		     size_t *n)
{
	struct evlist l = { 0 };
	size_t i, j, out = 0;
	int rc;

	*ev = NULL;
	*n = 0;
	rc = read_events(rl, name, 1000, 0, 1, cur->id, &l);
	if (rc != RLOCK_OK)
		return rc;
	/* With several masters, one master's record of an event may come a
	 * read later than another's: shown once, all the same. */
	for (i = 0; i < l.n; i++) {
		char key[32];

		snprintf(key, sizeof(key), "%.11s:%.8s", l.ev[i].event,
			 l.ev[i].token);
		for (j = 0; rl->nnode > 1 && j < sizeof(cur->seen) /
		     sizeof(cur->seen[0]); j++) {
			if (strcmp(cur->seen[j], key) == 0)
				break;
		}
		if (rl->nnode > 1 && j < sizeof(cur->seen) / sizeof(cur->seen[0]))
			continue;
		snprintf(cur->seen[cur->nseen++ % (sizeof(cur->seen) /
			 sizeof(cur->seen[0]))], sizeof(cur->seen[0]), "%s", key);
		l.ev[out++] = l.ev[i];
	}
	l.n = out;
	*ev = l.ev;
	*n = l.n;
	return RLOCK_OK;
}

int rlock_last(struct rlock *rl, const char *name, struct rlock_event *last,
	       int *has_last, struct rlock_event *ok, int *has_ok)
{
	struct evlist l = { 0 };
	size_t i, want = 200;
	int rc;

	*has_last = *has_ok = 0;
	for (;;) {
		rc = read_events(rl, name, want, 0, 0, NULL, &l);
		if (rc != RLOCK_OK)
			break;
		for (i = l.n; i-- > 0;) {
			const struct rlock_event *e = &l.ev[i];

			if (!*has_last && (strcmp(e->event, "released") == 0 ||
					   strcmp(e->event, "lost") == 0)) {
				*last = *e;
				*has_last = 1;
			}
			if (!*has_ok && rlock_event_ok(e)) {
				*ok = *e;
				*has_ok = 1;
			}
		}
		/* The last success may be further back than the last run:
		 * read the whole history once before saying "never". */
		if (*has_ok || l.n < want || want > 200)
			break;
		free(l.ev);
		l = (struct evlist){ 0 };
		*has_last = 0;
		want = 1000000;
	}
	/* The command and note are the acquired record's. */
	for (i = 0; rc == RLOCK_OK && i < l.n; i++) {
		const struct rlock_event *e = &l.ev[i];

		if (strcmp(e->event, "acquired") != 0)
			continue;
		if (*has_last && strcmp(e->token, last->token) == 0) {
			snprintf(last->command, sizeof(last->command), "%s",
				 e->command);
			snprintf(last->note, sizeof(last->note), "%s", e->note);
		}
		if (*has_ok && strcmp(e->token, ok->token) == 0) {
			snprintf(ok->command, sizeof(ok->command), "%s",
				 e->command);
			snprintf(ok->note, sizeof(ok->note), "%s", e->note);
		}
	}
	free(l.ev);
	return rc;
}
