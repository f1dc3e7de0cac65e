/*
 * history.c - reading a lock's history: its entries decoded strictly
 * (another client could have written any of them), a release joined to
 * its grant, several masters' copies merged, log (a page, or following
 * it) and last (the record of the last runs, checked against the history
 * and the server's clock).  The scripts write it (lib/scripts/log.lua,
 * release.lua).
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fanout.h"
#include "handle.h"
#include "identity.h"
#include "keys.h"
#include "reply.h"
#include "request.h"

/* Events read from the servers, before they are merged. */
struct evlist {
	struct rlock_event *ev;
	size_t n, cap;
};

static void join_older(struct rlock *rl, const struct lock_keys *nm,
		       struct evlist *l);

/* A stream id, "MS-SEQ", into its parts.  Returns 0, or -1. */
int rl_decode_id(const char *s, size_t n, long long *ms, unsigned long long *seq)
{
	const char *dash = memchr(s, '-', n);
	long long q;

	if (dash == NULL ||
	    rlock_parse_ll(s, (size_t)(dash - s), 0, LLONG_MAX, ms) != 0)
		return -1;
	/* The sequence is 64 bits; rlock's readers never need more than
	 * its order, which any value below 2^63 keeps. */
	if (rlock_parse_ll(dash + 1, n - (size_t)(dash - s) - 1, 0, LLONG_MAX,
			   &q) != 0)
		return -1;
	*seq = (unsigned long long)q;
	return 0;
}

/* Whether the n bytes at v are a kind rlock writes. */
static int kind_ok(const char *v, size_t n)
{
	long long l;

	char k[8];

	if (n > 0 && n < sizeof(k) && v[0] == 'p') {
		memcpy(k, v, n);
		k[n] = '\0';
		return rl_pool_kind(k) != 0;
	}
	return (n == 1 && (v[0] == 'x' || v[0] == 's')) ||
	       rlock_parse_ll(v, n, 2, RLOCK_LIMIT_MAX, &l) == 0;
}

/* Whether the n bytes at v are a signal's name as rlock writes it. */
static int signal_ok(const char *v, size_t n)
{
	if (n == 0 || n > 10)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((v[i] >= 'A' && v[i] <= 'Z') ||
		      (v[i] >= '0' && v[i] <= '9') || v[i] == '+' ||
		      v[i] == '-'))
			return 0;
	return 1;
}

/* A token prefix: up to 8 lowercase hex digits. */
static int token_ok(const char *v, size_t n)
{
	if (n == 0 || n > 8)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((v[i] >= '0' && v[i] <= '9') ||
		      (v[i] >= 'a' && v[i] <= 'f')))
			return 0;
	return 1;
}

/* A text field that another client may have written: kept (it is shown
 * escaped), cut to its room. */
#define COPY(dst) snprintf(dst, sizeof(dst), "%.*s", (int)n, v)

/* Field i (EV_*) of the n bytes at v into ev: numbers within what rlock
 * writes, kinds, signals and tokens as rlock writes them; anything else
 * is unknown and marked in ev->bad, the first noted in ev->junk. */
static void set_field(struct rlock_event *ev, int i, const char *v, size_t n)
{
	static const long long lo[EV_NFIELDS] = {
		[EV_PID] = 1, [EV_FENCE] = 1, [EV_WAITED] = 0,
		[EV_SINCE] = 1, [EV_HELD] = 0, [EV_EXIT] = 0,
	};
	static const long long hi[EV_NFIELDS] = {
		[EV_PID] = INT_MAX, [EV_FENCE] = FENCE_LIMIT,
		[EV_WAITED] = FENCE_LIMIT, [EV_SINCE] = FENCE_LIMIT,
		[EV_HELD] = FENCE_LIMIT, [EV_EXIT] = 255,
		[EV_SLOT] = RLOCK_LIMIT_MAX - 1,
	};
	long long *num[EV_NFIELDS] = {
		[EV_PID] = &ev->pid, [EV_FENCE] = &ev->fence,
		[EV_WAITED] = &ev->waited_ms, [EV_SINCE] = &ev->since_ms,
		[EV_HELD] = &ev->held_ms, [EV_SLOT] = &ev->slot,
	};
	long long x;
	int ok = 1;

	switch (i) {
	case EV_EVENT: COPY(ev->event); ok = n > 0 && n < sizeof(ev->event);
		break;
	case EV_HOST: COPY(ev->host); break;
	case EV_USER: COPY(ev->user); break;
	case EV_REASON: COPY(ev->reason); break;
	case EV_COMMAND: COPY(ev->command); break;
	case EV_NOTE: COPY(ev->note); break;
	case EV_MEMBERS:
		/* Names, one a line: no other control character. */
		for (size_t j = 0; j < n && ok; j++)
			ok = ((unsigned char)v[j] >= 0x20 &&
			      (unsigned char)v[j] != 0x7f) || v[j] == '\n';
		/* Cut to its room, as the command is. */
		ok = ok && n > 0;
		if (ok)
			COPY(ev->members);
		break;
	case EV_KIND:
		ok = n == 0 || kind_ok(v, n);
		if (ok)
			COPY(ev->kind);
		break;
	case EV_TOKEN:
		ok = n == 0 || token_ok(v, n);
		if (ok)
			COPY(ev->token);
		break;
	case EV_SIGNAL:
		ok = n == 0 || signal_ok(v, n);
		if (ok)
			COPY(ev->signal);
		break;
	case EV_EXIT:
		ok = n == 0 || rlock_parse_ll(v, n, lo[i], hi[i], &x) == 0;
		if (ok && n > 0)
			ev->exit = (int)x;
		break;
	case EV_PID: case EV_FENCE: case EV_WAITED: case EV_SINCE:
	case EV_HELD: case EV_SLOT:
		/* A slot as rlock writes it: no leading 0 (slot.lua). */
		ok = n == 0 || (rlock_parse_ll(v, n, lo[i], hi[i], &x) == 0 &&
				(i != EV_SLOT || n == 1 || v[0] != '0'));
		if (ok && n > 0)
			*num[i] = x;
		break;
	}
	if (!ok) {
		ev->bad |= 1u << i;
		rl_note_junk(ev->junk, sizeof(ev->junk), rl_ev_field[i], v, n);
	}
}
#undef COPY

static void event_init(struct rlock_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->pid = ev->fence = ev->waited_ms = ev->held_ms = ev->since_ms = -1;
	ev->slot = -1;
	ev->exit = -1;
	ev->servers = 1;
}

/* A release says since when the lock was held; its entry's ID says when
 * it ended, on the same clock. */
static void event_held(struct rlock_event *ev)
{
	if (ev->held_ms < 0 && ev->since_ms >= 0)
		ev->held_ms = ev->time_ms > ev->since_ms ?
			      ev->time_ms - ev->since_ms : 0;
}

/*
 * A packed entry (lib/scripts/entry.lua): one field, "a1" a grant with
 * "KIND\nWAITED\nTOKEN8\nPID\nHOST\nUSER\nNOTE\nCOMMAND" (the command
 * runs to the end), "r1" a release with "TOKEN8\nEXIT\nSIGNAL".  Each
 * value is checked as the field of its name would be; a value of the
 * wrong shape marks the event as not rlock's.  Returns the fields seen.
 */
static unsigned unpack_entry(struct rlock_event *ev, int grant, const char *v,
			     size_t n)
{
	static const int a1[] = { EV_KIND, EV_WAITED, EV_TOKEN, EV_PID,
				  EV_HOST, EV_USER, EV_NOTE, EV_COMMAND };
	static const int r1[] = { EV_TOKEN, EV_EXIT, EV_SIGNAL };
	const int *order = grant ? a1 : r1;
	size_t nf = grant ? 8 : 3, i;
	const char *p = v, *end = v + n;
	unsigned seen = 0;

	set_field(ev, EV_EVENT, grant ? "acquired" : "released", 8);
	for (i = 0; i < nf; i++) {
		const char *nl = i + 1 < nf ? memchr(p, '\n', end - p) : NULL;
		size_t len = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);

		if (nl == NULL && i + 1 < nf)
			break;
		set_field(ev, order[i], p, len);
		seen |= 1u << order[i];
		p = nl != NULL ? nl + 1 : end;
	}
	if (i < nf) {
		ev->bad |= 1u << EV_EVENT;
		rl_note_junk(ev->junk, sizeof(ev->junk), grant ? "a1" : "r1", v, n);
	}
	return seen;
}

/* A grant's "with" (--with): the other names of its set, one a line,
 * each a lock name, all of them fitting ev->with; anything else is junk. */
static void set_with(struct rlock_event *ev, const char *v, size_t n)
{
	const char *p = v, *end = v + n, *why;
	char name[RLOCK_NAME_MAX + 1];

	if (n == 0 || n >= sizeof(ev->with))
		goto junk;
	while (p <= end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);

		memcpy(name, p, len);
		name[len] = '\0';
		if (rlock_check_name(name, &why) != RLOCK_OK)
			goto junk;
		if (nl == NULL)
			break;
		p = nl + 1;
	}
	memcpy(ev->with, v, n);
	ev->with[n] = '\0';
	return;
junk:
	rl_note_junk(ev->junk, sizeof(ev->junk), "with", v, n);
}

int rl_decode_entry(const redisReply *e, struct rlock_event *ev)
{
	const redisReply *fv;
	unsigned long long seq;
	unsigned seen = 0;
	char packed = 0;

	event_init(ev);
	if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
	    e->element[0]->type != REDIS_REPLY_STRING ||
	    e->element[1]->type != REDIS_REPLY_ARRAY ||
	    e->element[0]->len >= sizeof(ev->id) ||
	    rl_decode_id(e->element[0]->str, e->element[0]->len, &ev->time_ms,
			 &seq) != 0)
		return -1;
	memcpy(ev->id, e->element[0]->str, e->element[0]->len);
	fv = e->element[1];
	if (fv->elements % 2 != 0)
		return -1;
	for (size_t i = 0; i < fv->elements; i += 2) {
		const redisReply *f = fv->element[i], *v = fv->element[i + 1];
		int k;

		if (f->type != REDIS_REPLY_STRING ||
		    v->type != REDIS_REPLY_STRING)
			return -1;
		/* Fields rlock does not know are passed over. */
		for (k = 0; k < EV_NFIELDS; k++) {
			if (f->len == strlen(rl_ev_field[k]) &&
			    memcmp(f->str, rl_ev_field[k], f->len) == 0)
				break;
		}
		if (k < EV_NFIELDS) {
			set_field(ev, k, v->str, v->len);
			seen |= 1u << k;
		} else if (f->len == 2 && (memcmp(f->str, "a1", 2) == 0 ||
					   memcmp(f->str, "r1", 2) == 0)) {
			seen |= unpack_entry(ev, f->str[0] == 'a', v->str,
					     v->len);
			packed = f->str[0];
		} else if (f->len == 4 && memcmp(f->str, "with", 4) == 0) {
			set_with(ev, v->str, v->len);
		}
	}
	/* A packed grant's fence is its entry's id, unless it says another
	 * (a server that refused the stream's ids, several masters). */
	if (packed == 'a' && !(seen & 1u << EV_FENCE) && seq <= 999 &&
	    ev->time_ms >= 1000000000000LL && ev->time_ms <= 9007199253690LL)
		ev->fence = (ev->time_ms + 1) * 1000 + (long long)seq;
	event_held(ev);
	/* A grant leaves out what is the common case, to spare the server
	 * on the path every lock takes: an exclusive lock, no wait (a field
	 * there but empty is not known). */
	if (strcmp(ev->event, "acquired") == 0) {
		if (!(seen & 1u << EV_KIND))
			ev->kind[0] = 'x';
		if (!(seen & 1u << EV_WAITED))
			ev->waited_ms = 0;
	}
	/* An entry with no event is no event rlock wrote. */
	return ev->event[0] != '\0' ? 0 : 1;
}

int rl_decode_run(const char *s, size_t n, struct rlock_event *ev)
{
	/* "1\nID\nEVENT\nKIND\nEXIT\nSIGNAL\nTOKEN8\nREASON\n" and the
	 * holder's record "FENCE\nSINCE\nHOLD\nPID\nHOST\nUSER\nNOTE\n
	 * COMMAND" (seven fields, no note, from an older rlock). */
	static const int order[] = {
		-1, -2, EV_EVENT, EV_KIND, EV_EXIT, EV_SIGNAL, EV_TOKEN,
		EV_REASON, EV_FENCE, EV_SINCE, -3, EV_PID, EV_HOST, EV_USER,
		EV_NOTE, EV_COMMAND,
	};
	const size_t nord = sizeof(order) / sizeof(order[0]);
	const char *f[sizeof(order) / sizeof(order[0])], *end = s + n;
	size_t len[sizeof(order) / sizeof(order[0])], nf = 0;
	unsigned long long seq;
	const char *p = s;

	event_init(ev);
	/* Split at newlines; the last field runs to the end. */
	while (nf < nord) {
		const char *nl = nf + 1 < nord ? memchr(p, '\n', end - p) : NULL;

		f[nf] = p;
		len[nf] = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
		nf++;
		if (nl == NULL)
			break;
		p = nl + 1;
	}
	if (nf < 8 || len[0] != 1 || f[0][0] != '1' ||
	    len[1] >= sizeof(ev->id) ||
	    rl_decode_id(f[1], len[1], &ev->time_ms, &seq) != 0)
		return -1;
	memcpy(ev->id, f[1], len[1]);
	/* An older holder's record has no note: its command moves up. */
	if (nf == nord - 1) {
		f[nord - 1] = f[nord - 2];
		len[nord - 1] = len[nord - 2];
		len[nord - 2] = 0;
		nf = nord;
	} else if (nf != 8 && nf != nord) {
		return -1;
	}
	for (size_t i = 2; i < nf; i++) {
		if (order[i] >= 0)
			set_field(ev, order[i], f[i], len[i]);
	}
	event_held(ev);
	return ev->event[0] != '\0' ? 0 : -1;
}

int rl_decode_ok(const char *s, size_t n, struct rlock_event *ev)
{
	unsigned long long seq;

	event_init(ev);
	if (n >= sizeof(ev->id) || rl_decode_id(s, n, &ev->time_ms, &seq) != 0)
		return -1;
	memcpy(ev->id, s, n);
	snprintf(ev->event, sizeof(ev->event), "released");
	ev->trimmed = 1;
	return 0;
}

int rl_decode_ok_check(const redisReply *r, const char *id,
		       struct rlock_event *ev)
{
	int d;

	if (r->type != REDIS_REPLY_ARRAY || r->elements > 1)
		return -1;
	if (r->elements == 0)
		return OKREC_TRIMMED;
	if ((d = rl_decode_entry(r->element[0], ev)) < 0)
		return -1;
	/* XREVRANGE's end is inclusive: another id is one before it. */
	if (strcmp(ev->id, id) != 0)
		return OKREC_NONE;
	return d == 0 && rlock_event_ok(ev) ? OKREC_ENTRY : OKREC_FAILED;
}

int rl_decode_time(const redisReply *r, long long *ms)
{
	long long sec, usec;

	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING ||
	    r->element[1]->type != REDIS_REPLY_STRING ||
	    rl_elem_num(r, 0, 0, FENCE_LIMIT / 1000000, &sec) != 0 ||
	    rl_elem_num(r, 1, 0, 999999, &usec) != 0)
		return -1;
	*ms = sec * 1000 + usec / 1000;
	return 0;
}

int rlock_event_ok(const struct rlock_event *e)
{
	return strcmp(e->event, "released") == 0 &&
	       (e->bad & (1u << EV_EXIT | 1u << EV_SIGNAL | 1u << EV_EVENT)) ==
	       0 && e->signal[0] == '\0' &&
	       (e->exit == 0 || (e->exit == -1 && e->reason[0] == '\0'));
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
	if (e->slot < 0)
		e->slot = g->slot;
	if (e->members[0] == '\0')
		snprintf(e->members, sizeof(e->members), "%s", g->members);
	/* A release says when it ended; its grant's entry, when it began
	 * (a release of an older rlock said since itself). */
	if (e->since_ms < 0 && e->held_ms < 0) {
		e->since_ms = g->time_ms;
		event_held(e);
	}
}

/* Whether e ends a run: a release, an abandoned lease, a loss, a
 * leader's step-down. */
static int ends_run(const struct rlock_event *e)
{
	return strcmp(e->event, "released") == 0 ||
	       strcmp(e->event, "abandoned") == 0 ||
	       strcmp(e->event, "lost") == 0 ||
	       strcmp(e->event, "stepped-down") == 0;
}

/* Whether e ends a grant that has not been joined to it yet: a release
 * (it names no holder), a loss (its kind, for a shared or semaphore
 * lease). */
static int unjoined(const struct rlock_event *e)
{
	return (strcmp(e->event, "released") == 0 || ends_run(e)) &&
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
	unsigned long long seq = 0;
	long long ms = 0;

	if (rl_decode_id(id, strlen(id), &ms, &seq) != 0)
		ms = 0, seq = 0;
	else
		seq++;
	snprintf(out, len, "%lld-%llu", ms, seq);
}

/* The sequence part of a stream id ("ms-seq"; ids are decoded before). */
static unsigned long long id_seq(const char *id)
{
	unsigned long long seq;
	long long ms;

	return rl_decode_id(id, strlen(id), &ms, &seq) == 0 ? seq : 0;
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

/* By token, then event, then time: the records that may be one event
 * recorded by several masters side by side, oldest first. */
static int cmp_group(const void *a, const void *b)
{
	const struct rlock_event *x = a, *y = b;
	int c = strcmp(x->token, y->token);

	if (c == 0)
		c = strcmp(x->event, y->event);
	return c != 0 ? c : cmp_time(a, b);
}

/*
 * One acquisition has one fence, the one handed out.  Its acquired record
 * carries it (written once a quorum granted), but a master that rlock did
 * not raise to it (raising stops at a quorum) keeps its own lower fence in
 * the metadata its release is recorded from.  When that master's record is
 * the only one of the release (the others restarted empty, or refused the
 * write), the event would show a lower fence than the holder had: give
 * every event of a token the highest fence any of them carries.  ev[0..n)
 * is sorted by token.
 */
static void one_fence(struct rlock_event *ev, size_t n)
{
	for (size_t i = 0, j; i < n; i = j) {
		long long most = ev[i].fence;

		for (j = i + 1; j < n && strcmp(ev[j].token, ev[i].token) == 0;
		     j++)
			if (ev[j].fence > most)
				most = ev[j].fence;
		for (size_t k = i; ev[i].token[0] != '\0' && k < j; k++)
			if (ev[k].fence >= 0)
				ev[k].fence = most;
	}
}

/*
 * Count each of the records of one token and event (ev[0..n), oldest
 * first) once per event: one master can record a token's grant twice (an
 * acquire that was undone tries again with its token), so the k-th record
 * of a master joins the first event that master has not recorded yet.
 * Per master, those are the events from next[m] on.  Returns how many
 * events are left at the front of ev.
 */
static size_t merge_group(struct rlock_event *ev, size_t n)
{
	size_t next[RLOCK_MAX_SERVERS] = { 0 }, out = 0;

	for (size_t k = 0; k < n; k++) {
		unsigned m = (unsigned)__builtin_ctz(ev[k].from);

		if (ev[k].token[0] != '\0' && next[m] < out) {
			struct rlock_event *e = &ev[next[m]++];

			e->servers++;
			e->from |= ev[k].from;
			if (ev[k].fence > e->fence)
				e->fence = ev[k].fence;
			continue;
		}
		ev[out++] = ev[k];
		next[m] = out;
	}
	return out;
}

/* Sort l by time and, with several masters, count each event once: the
 * earliest record stands for all, with the fence handed out (one_fence)
 * and how many servers recorded it.  O(n log n). */
static void merge(struct evlist *l, int several)
{
	size_t i, j, out = 0;

	if (several && l->n > 1) {
		qsort(l->ev, l->n, sizeof(*l->ev), cmp_group);
		for (i = 0; i < l->n; i = j) {
			size_t kept;

			for (j = i + 1; j < l->n &&
			     strcmp(l->ev[j].token, l->ev[i].token) == 0 &&
			     strcmp(l->ev[j].event, l->ev[i].event) == 0; j++)
				;
			kept = merge_group(l->ev + i, j - i);
			memmove(l->ev + out, l->ev + i, kept * sizeof(*l->ev));
			out += kept;
		}
		l->n = out;
		one_fence(l->ev, l->n);
	}
	if (l->n > 1)
		qsort(l->ev, l->n, sizeof(*l->ev), cmp_time);
}

/*
 * Ask every server for part of name's stream: the newest max entries from
 * since_ms on (XREVRANGE), up to top (NULL: the end), or with follow those
 * after pos[i] (XRANGE).
 * Adds them to l, and moves pos (when given) to the newest entry each
 * server had.  Returns RLOCK_OK when at least one server answered.
 */
static int read_log(struct rlock *rl, const struct lock_keys *n, size_t max,
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
	if ((rc = rl_identify_servers(rl)) != RLOCK_OK)
		return rc;
	snprintf(count, sizeof(count), "%zu", max);
	snprintf(since, sizeof(since), "%lld", since_ms);
	rl_fan_init(&f, rl);
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
		rl_req_command(&q[i], 6, argv, n->v.slot);
		f.slot[i].req = &q[i];
	}
	rl_skip_unanswered(rl, &f);
	rl_fan_run(rl, &f);
	for (i = 0; i < f.n; i++) {
		const redisReply *r = f.slot[i].res.r;
		size_t before = l->n;

		if (f.slot[i].res.rc == RLOCK_OK &&
		    (r->type != REDIS_REPLY_ARRAY || r->elements > max))
			rl_fan_unexpected(&f, i, "log");
		if (f.slot[i].res.rc != RLOCK_OK) {
			fail++;
			continue;
		}
		ok++;
		for (size_t j = 0; j < r->elements; j++) {
			struct rlock_event ev;
			int d = rl_decode_entry(r->element[j], &ev);

			if (d < 0) {
				/* Not a stream's reply: none of it counts. */
				rl_fan_unexpected(&f, i, "XREVRANGE");
				l->n = before;
				ok--;
				fail++;
				break;
			}
			if (d != 0)
				continue;
			ev.from = 1u << i;
			/* XRANGE's last is the newest, XREVRANGE's first. */
			if (pos != NULL && (follow || j == 0))
				snprintf(pos[i], sizeof(pos[i]), "%s", ev.id);
			if (evlist_add(l, &ev) != 0) {
				rl_set_error(rl->err, sizeof(rl->err),
					     "out of memory");
				rc = RLOCK_ESYS;
			}
		}
	}
	if (ok == 0)
		rc = rl_fan_first_error(rl, &f, fail);
	rl_fan_done(&f);
	return rc;
}

/*
 * Releases in l whose grant was not among the events read (a long hold, a
 * read that starts at --since, a follower that showed the grant earlier):
 * look for their grants among the GRANTS * 4 entries before the oldest of
 * them.  One more read, and only then; a grant trimmed from the history
 * leaves its release without a holder.
 */
static void join_older(struct rlock *rl, const struct lock_keys *nm,
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
	struct lock_keys nm;
	int rc;

	rc = rl_make_names(rl, name, &nm);
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

		snprintf(key, sizeof(key), "%.15s:%.8s", l.ev[i].event,
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

/* The newer of e and what *have (flag *has) holds, into it; e also when
 * both are one event (tie: a history entry says more than the record). */
static void keep_newer(struct rlock_event *have, int *has,
		       const struct rlock_event *e, int tie)
{
	int c = *has ? cmp_time(e, have) : 1;

	if (c > 0 || (tie && c == 0)) {
		*have = *e;
		*has = 1;
	}
}

/* Note, once per rlock_last, what it ignored as another client's data. */
static void last_note(struct rlock *rl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void last_note(struct rlock *rl, const char *fmt, ...)
{
	va_list ap;

	if (rl->last_junk[0] != '\0')
		return;
	va_start(ap, fmt);
	vsnprintf(rl->last_junk, sizeof(rl->last_junk), fmt, ap);
	va_end(ap);
}

/* Note that the record of the last success, the n bytes at v (cut at 40,
 * raw: escaped where it is shown), was ignored, and why. */
static void ok_junk(struct rlock *rl, const struct lock_keys *nm, const char *v,
		    size_t n, const char *why)
{
	last_note(rl, "ignored %s ok '%.*s%s' (another client's data): %s",
		  nm->v.last, (int)(n > 40 ? 40 : n), v, n > 40 ? "..." : "",
		  why);
}

/*
 * The record of the last runs on every server (HMGET LOG:last run ok:
 * the last that did not end well, the last that did), the newest run
 * into run and the newest success into ok as the record names it, still
 * to be checked against the history (rlock_last).  A record of another
 * type, or a run that does not decode (not rlock's), leaves it to the
 * history; an ok that is no entry's ID is noted.  Returns RLOCK_OK, or
 * the error when no quorum answered (the history would not either: not
 * waited for twice).
 */
static int read_runs(struct rlock *rl, const struct lock_keys *n,
		     struct rlock_event *run, int *has_run,
		     struct rlock_event *ok, int *has_ok)
{
	const char *argv[4] = { "HMGET", n->v.last, "run", "ok" };
	struct request q;
	struct fan f;
	size_t fail = 0;
	int rc = RLOCK_OK;

	rl_req_command(&q, 4, argv, n->v.slot);
	rl_fan_ask(rl, &f, &q);
	for (size_t i = 0; i < f.n; i++) {
		const redisReply *r = f.slot[i].res.r;

		/* An error reply (another type at the key) is an answer;
		 * no answer at all is worth waiting for once only. */
		if (f.slot[i].res.rc != RLOCK_OK && !f.slot[i].res.wrongtype)
			fail++;
		if (f.slot[i].res.rc != RLOCK_OK ||
		    r->type != REDIS_REPLY_ARRAY || r->elements != 2)
			continue;
		for (size_t k = 0; k < 2; k++) {
			const redisReply *e = r->element[k];
			struct rlock_event ev;

			if (e->type != REDIS_REPLY_STRING)
				continue;
			if (k == 1 && rl_decode_ok(e->str, e->len, &ev) != 0) {
				ok_junk(rl, n, e->str, e->len,
					"not a history entry's ID");
				continue;
			}
			if (k == 0 && (rl_decode_run(e->str, e->len, &ev) != 0 ||
				       !ends_run(&ev)))
				continue;
			ev.from = 1u << i;
			if (k == 0)
				keep_newer(run, has_run, &ev, 0);
			else
				keep_newer(ok, has_ok, &ev, 0);
		}
	}
	if (fail > rl->nnode - rl->quorum)
		rc = rl_fan_first_error(rl, &f, fail);
	rl_fan_done(&f);
	return rc;
}

/*
 * The servers' clock (TIME, asked of the servers that keep the lock), in
 * ms: the latest any of them gives, so that several masters a few ms
 * apart never make a fresh success one from the future.  Into *now.
 * Returns RLOCK_OK, or the error when none answered.
 */
static int server_clock(struct rlock *rl, const struct lock_keys *n,
			long long *now)
{
	const char *argv[1] = { "TIME" };
	struct request q;
	struct fan f;
	size_t fail = 0;
	int rc = RLOCK_OK;

	*now = -1;
	rl_req_command(&q, 1, argv, n->v.slot);
	rl_fan_ask(rl, &f, &q);
	for (size_t i = 0; i < f.n; i++) {
		long long t = -1;

		if (f.slot[i].res.rc == RLOCK_OK &&
		    rl_decode_time(f.slot[i].res.r, &t) != 0)
			rl_fan_unexpected(&f, i, "TIME");
		if (f.slot[i].res.rc != RLOCK_OK) {
			fail++;
			continue;
		}
		if (t > *now)
			*now = t;
	}
	if (*now < 0)
		rc = rl_fan_first_error(rl, &f, fail);
	rl_fan_done(&f);
	return rc;
}

/*
 * Whether the record's ok, which the history does not vouch for, is later
 * than the servers' clock, asked once (*now: -1 not yet).  Returns 1 or
 * 0, or -1 when no server told its clock.
 */
static int ok_ahead(struct rlock *rl, const struct lock_keys *nm,
		    const struct rlock_event *ok, long long *now)
{
	if (*now < 0 && server_clock(rl, nm, now) != RLOCK_OK) {
		*now = -1;
		return -1;
	}
	return ok->time_ms > *now;
}

/* Why the record's ok that names no entry is ignored. */
static const char *no_entry(struct rlock *rl, const struct lock_keys *nm,
			    const struct rlock_event *ok, long long *now)
{
	return ok_ahead(rl, nm, ok, now) == 1 ?
	       "later than the server's clock" :
	       "the history has no entry of that ID";
}

/*
 * Whether the record of the last success, ok (server i's: the one bit of
 * ok->from), names a success: one read of that server's history at and
 * before ok's ID.  A success the history holds goes into *entry, whatever
 * its time (a history's ids run ahead of the clock where its fences do:
 * entry.lua); a record the history starts after (trimmed) is the only
 * witness, and stands if it is not later than the servers' clock (*now,
 * asked then).  Anything else is noted.  Returns OKREC_ENTRY,
 * OKREC_TRIMMED, or -1: the record is ignored.
 */
static int check_ok(struct rlock *rl, const struct lock_keys *nm,
		    const struct rlock_event *ok, struct rlock_event *entry,
		    long long *now)
{
	const char *argv[6] = { "XREVRANGE", nm->v.log, ok->id, "-", "COUNT",
				"1" };
	unsigned i = (unsigned)__builtin_ctz(ok->from);
	const char *id = ok->id;
	struct request q;
	struct fan f;
	int v = -1;

	rl_req_command(&q, 6, argv, nm->v.slot);
	rl_fan_init(&f, rl);
	f.slot[i].req = &q;
	rl_fan_run(rl, &f);
	if (f.slot[i].res.rc == RLOCK_OK &&
	    (v = rl_decode_ok_check(f.slot[i].res.r, id, entry)) < 0)
		rl_fan_unexpected(&f, i, "XREVRANGE");
	switch (v) {
	case OKREC_ENTRY:
		entry->from = 1u << i;
		break;
	case OKREC_TRIMMED:
		if (ok_ahead(rl, nm, ok, now) == 1) {
			ok_junk(rl, nm, id, strlen(id),
				"later than the server's clock");
			v = -1;
		} else if (*now < 0) {
			last_note(rl, "ignored %s ok '%s': it could not be "
				  "checked against the server's clock: %s",
				  nm->v.last, id, rl->err);
			v = -1;
		}
		break;
	case OKREC_FAILED:
		ok_junk(rl, nm, id, strlen(id), "its history entry is no "
			"success");
		v = -1;
		break;
	case OKREC_NONE:
		ok_junk(rl, nm, id, strlen(id), no_entry(rl, nm, ok, now));
		v = -1;
		break;
	default:
		/* Not checked, not believed. */
		last_note(rl, "ignored %s ok '%s': it could not be checked "
			  "against the history: %s", nm->v.last, id,
			  f.slot[i].res.err);
		break;
	}
	rl_fan_done(&f);
	return v;
}

/* The id before id ("ms-seq"), for a read that ends before it; "" when
 * there is none. */
static void prev_id(const char *id, char *out, size_t len)
{
	unsigned long long seq;
	long long ms;

	if (rl_decode_id(id, strlen(id), &ms, &seq) != 0 ||
	    (ms == 0 && seq == 0))
		snprintf(out, len, "%s", "");
	else if (seq > 0)
		snprintf(out, len, "%lld-%llu", ms, seq - 1);
	else
		snprintf(out, len, "%lld-%llu", ms - 1, ~0ULL);
}

/* The order of two stream ids of one server: by MS, then SEQ (ids are
 * decoded before; top "+" is above every id). */
static int cmp_id(const char *a, const char *b)
{
	int ta = strcmp(a, "+") == 0, tb = strcmp(b, "+") == 0;
	unsigned long long sa = 0, sb = 0;
	long long ma = 0, mb = 0;

	if (ta || tb)
		return ta - tb;
	rl_decode_id(a, strlen(a), &ma, &sa);
	rl_decode_id(b, strlen(b), &mb, &sb);
	if (ma != mb)
		return ma < mb ? -1 : 1;
	return sa < sb ? -1 : sa > sb;
}

/* Whether id, which names no entry of page l (read down from top), lies
 * within what the page holds of the history of server from: between its
 * oldest entry there and top.  Then it is no entry at all. */
static int inside_page(const char *id, unsigned from, const struct evlist *l,
		       const char *top)
{
	const char *lo = NULL;

	for (size_t i = 0; i < l->n; i++) {
		if ((l->ev[i].from & from) != 0 &&
		    (lo == NULL || cmp_id(l->ev[i].id, lo) < 0))
			lo = l->ev[i].id;
	}
	return lo != NULL && cmp_id(id, lo) > 0 && cmp_id(id, top) <= 0;
}

/* The command and note of e's grant, when it is among ev[0..n). */
static void grant_text(struct rlock_event *e, const struct rlock_event *ev,
		       size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(ev[i].event, "acquired") != 0 ||
		    strcmp(ev[i].token, e->token) != 0 || e->token[0] == '\0')
			continue;
		snprintf(e->command, sizeof(e->command), "%s", ev[i].command);
		snprintf(e->note, sizeof(e->note), "%s", ev[i].note);
	}
}

#define LAST_PAGE 500

/* rlock_last's reading of the history against the record of last runs. */
struct last_scan {
	struct rlock *rl;
	struct lock_keys nm;
	struct rlock_event *last, *ok;	/* the record's last run and success */
	int rec_run, rec_ok;		/* each read and not yet matched to
					 * an entry of the pages read */
	struct rlock_event found[2];	/* the history's last run, success */
	int got[2];
	long long now;			/* the server's clock, -1 not read */
};

/* A record whose entry the page holds is that entry: the history's event
 * (several masters: its earliest record, counted once) stands for it,
 * whatever the record's time, and a success only if the entry is one.
 * One that none matched, inside what the page holds, is no entry: said
 * here, whether or not a newer success makes it matter. */
static void match_records(struct last_scan *x, const struct evlist *l,
			  const char *top)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct rlock_event *e = &l->ev[i];

		if (x->rec_run && strcmp(e->id, x->last->id) == 0 &&
		    (e->from & x->last->from) != 0)
			x->rec_run = 0;
		if (x->rec_ok && strcmp(e->id, x->ok->id) == 0 &&
		    (e->from & x->ok->from) != 0) {
			if (!rlock_event_ok(e))
				ok_junk(x->rl, &x->nm, x->ok->id,
					strlen(x->ok->id), "its history entry "
					"is no success");
			x->rec_ok = 0;
		}
	}
	if (x->rec_ok && inside_page(x->ok->id, x->ok->from, l, top)) {
		ok_junk(x->rl, &x->nm, x->ok->id, strlen(x->ok->id),
			no_entry(x->rl, &x->nm, x->ok, &x->now));
		x->rec_ok = 0;
	}
}

/* The newest end of a run and success of a page (oldest first), unless
 * a newer page gave them. */
static void take_newest(struct last_scan *x, struct evlist *l)
{
	merge(l, x->rl->nnode > 1);
	join_grants(l->ev, l->n);
	for (size_t i = l->n; i-- > 0;) {
		struct rlock_event *e = &l->ev[i];

		if (!x->got[0] && ends_run(e)) {
			grant_text(e, l->ev, i);
			x->found[0] = *e;
			x->got[0] = 1;
		}
		if (!x->got[1] && rlock_event_ok(e)) {
			grant_text(e, l->ev, i);
			x->found[1] = *e;
			x->got[1] = 1;
		}
	}
}

/* A success the record names beyond the pages read, newer than any they
 * hold: its entry, or the start of the history after it (one read, only
 * then).  Ignored, the pages go on. */
static void check_beyond(struct last_scan *x)
{
	struct rlock_event entry;

	switch (check_ok(x->rl, &x->nm, x->ok, &entry, &x->now)) {
	case OKREC_ENTRY:
		x->found[1] = entry;
		x->got[1] = 1;
		x->rec_ok = 0;
		break;
	case OKREC_TRIMMED:
		break;
	default:
		x->rec_ok = 0;
		break;
	}
}

/* The newest page of the history, and older ones only while what the
 * record does not say (a history an older rlock wrote, a record ignored)
 * is still missing: at most RLOCK_LAST_SCAN entries, a page at a time.
 * A success ends a run too. */
static int scan_history(struct last_scan *x)
{
	char top[48] = "+";
	size_t read = 0;
	int checked = 0, rc;

	for (;;) {
		struct evlist l = { 0 };

		if (read >= RLOCK_LAST_SCAN || top[0] == '\0' ||
		    (read > 0 && (x->got[0] || x->got[1] || x->rec_run ||
				  x->rec_ok) && (x->got[1] || x->rec_ok))) {
			if (!x->rec_ok || checked ||
			    (x->got[1] && cmp_time(&x->found[1], x->ok) >= 0))
				return RLOCK_OK;
			checked = 1;
			check_beyond(x);
			continue;
		}
		rc = read_log(x->rl, &x->nm, LAST_PAGE, 0, top, 0, NULL, &l);
		if (rc != RLOCK_OK) {
			free(l.ev);
			return rc;
		}
		match_records(x, &l, top);
		take_newest(x, &l);
		read += LAST_PAGE;
		if (l.n > 0)
			prev_id(l.ev[0].id, top, sizeof(top));
		/* Fewer than a page on every server: the history's start. */
		if (l.n < LAST_PAGE)
			top[0] = '\0';
		free(l.ev);
	}
}

int rlock_last(struct rlock *rl, const char *name, struct rlock_event *last,
	       int *has_last, struct rlock_event *ok, int *has_ok)
{
	struct last_scan *x;
	int rc;

	*has_last = *has_ok = 0;
	rl->last_junk[0] = '\0';
	if ((x = calloc(1, sizeof(*x))) == NULL) {
		rl_set_error(rl->err, sizeof(rl->err), "out of memory");
		return RLOCK_ESYS;
	}
	x->rl = rl;
	x->last = last;
	x->ok = ok;
	x->now = -1;
	rc = rl_make_names(rl, name, &x->nm);
	if (rc == RLOCK_OK)
		rc = rl_identify_servers(rl);
	if (rc == RLOCK_OK)
		rc = read_runs(rl, &x->nm, last, &x->rec_run, ok, &x->rec_ok);
	if (rc == RLOCK_OK)
		rc = scan_history(x);
	if (rc != RLOCK_OK) {
		free(x);
		return rc;
	}
	/* Releases whose grant is older than what was read. */
	for (int k = 0; k < 2; k++) {
		if (x->got[k] && unjoined(&x->found[k])) {
			struct evlist one = { &x->found[k], 1, 1 };

			join_older(rl, &x->nm, &one);
		}
	}
	/* A release that ended well writes only 'ok': the last run is the
	 * newer of the two records, and of what the history holds. */
	*has_last = x->rec_run;
	*has_ok = x->rec_ok;
	if (x->rec_ok)
		keep_newer(last, has_last, ok, 0);
	if (x->got[0])
		keep_newer(last, has_last, &x->found[0], 1);
	if (x->got[1]) {
		keep_newer(last, has_last, &x->found[1], 1);
		keep_newer(ok, has_ok, &x->found[1], 1);
	}
	free(x);
	return RLOCK_OK;
}

const char *rlock_last_junk(const struct rlock *rl)
{
	return rl->last_junk[0] != '\0' ? rl->last_junk : NULL;
}

void rl_history_join_grant(struct rlock_event *e, const struct rlock_event *g)
{
	join_grant(e, g);
}

void rl_history_join_older(struct rlock *rl, const struct lock_keys *nm,
			   struct rlock_event *e)
{
	struct evlist one = { e, 1, 1 };

	if (unjoined(e))
		join_older(rl, nm, &one);
}
