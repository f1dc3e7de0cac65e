/*
 * lock.c - the lock algorithm over a set of servers.  One server is the
 * case N = 1 of Redlock: every verb sends its script to all servers at
 * once and counts a quorum of N/2 + 1, so a single server, and later
 * several independent masters, go through the same code.
 */

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fanout.h"
#include "handle.h"
#include "identity.h"
#include "keys.h"
#include "lease.h"
#include "node.h"
#include "reply.h"
#include "request.h"
#include "wait.h"




/*
 * A pool's grant, {1, fence, recorded, {member, properties, ...}}: its
 * members into rl->granted (one server: a pool has no other).  Returns 0
 * (none for another grant), or -1 for members rlock did not write.
 */
static int granted_members(struct rlock *rl, const redisReply *r)
{
	const char *why;
	int n;

	if (r->type != REDIS_REPLY_ARRAY || r->elements != 4 ||
	    r->element[3]->type != REDIS_REPLY_ARRAY)
		return 0;
	if (rl->granted == NULL &&
	    (rl->granted = calloc(RLOCK_COUNT_MAX,
				  sizeof(*rl->granted))) == NULL)
		return -1;
	n = rl_decode_members(r->element[3], rl->granted, RLOCK_COUNT_MAX, &why);
	if (n <= 0)
		return -1;
	rl->ngranted = (size_t)n;
	return 0;
}

/*
 * A semaphore's slot, from the slots each granting server gave (-1 none,
 * got 0: not granted there).  Each server gives a slot no other live
 * holder has there; with several masters only a slot a majority gave is
 * one no other holder can have too (two majorities share a server), so
 * the slot is the one that quorum servers agree on, else none (-1).
 */
static int agreed_slot(const int *slot, const long long *got, size_t n,
		       size_t quorum)
{
	for (size_t i = 0; i < n; i++) {
		size_t same = 0;

		if (got[i] == 0 || slot[i] < 0)
			continue;
		for (size_t j = 0; j < n; j++)
			if (got[j] != 0 && slot[j] == slot[i])
				same++;
		if (same >= quorum)
			return slot[i];
	}
	return -1;
}

/* ---- acquire -------------------------------------------------------- */

/*
 * With several masters, make the fence handed out durable: raise the
 * counters of the granting masters that are below it, until a quorum
 * holds a counter at least that high (majorities intersect, so the next
 * grant counts above it).  got[i] is the fence master i granted, 0 none.
 * Returns the number of masters known to be at fence or above.
 */
static size_t raise_fence(struct rlock *rl, const struct lock_keys *n,
			  const char *token, long long fence,
			  const long long *got)
{
	struct request q;
	struct fan f;
	size_t i, at = 0, low = 0;

	rl_fan_init(&f, rl);
	rl_req_fence(&q, &n->v, token, fence);
	for (i = 0; i < f.n; i++) {
		if (got[i] == fence)
			at++;
		else if (got[i] > 0 && ++low)
			f.slot[i].req = &q;
	}
	if (at >= rl->quorum || low == 0)
		return at;
	rl_fan_run(rl, &f);
	for (i = 0; i < f.n; i++) {
		if (f.slot[i].req != NULL && f.slot[i].res.rc == RLOCK_OK &&
		    rl_decode_fence(f.slot[i].res.r) == RLOCK_OK)
			at++;
	}
	rl_fan_done(&f);
	return at;
}

/*
 * WAIT until want replicas have the last write of each server in which[]
 * (the connection that wrote it: the slot's owner on a cluster), for up to
 * the I/O timeout.  Returns how many servers reached want; *least gets the
 * fewest acknowledgements and *addr where.
 */
static size_t wait_replicas(struct rlock *rl, const struct lock_keys *n, int want,
			    const int *which, long long *least, char *addr,
			    size_t addrlen)
{
	char num[16], ms[24];
	const char *argv[3] = { "WAIT", num, ms };
	struct request q;
	struct fan f;
	size_t i, ok = 0;

	snprintf(num, sizeof(num), "%d", want);
	snprintf(ms, sizeof(ms), "%lld", (long long)rl->copts.io_timeout_ms);
	rl_req_command(&q, 3, argv, n->v.slot);
	rl_fan_init(&f, rl);
	f.extra_ms = rl->copts.io_timeout_ms;
	for (i = 0; i < f.n; i++) {
		if (which[i])
			f.slot[i].req = &q;
	}
	rl_fan_run(rl, &f);
	*least = want;
	addr[0] = '\0';
	for (i = 0; i < f.n; i++) {
		const struct rlock_result *res = &f.slot[i].res;
		long long got = 0;

		if (!which[i])
			continue;
		if (res->rc == RLOCK_OK && res->r->type == REDIS_REPLY_INTEGER)
			got = res->r->integer;
		if (got >= want)
			ok++;
		if (got < *least || addr[0] == '\0') {
			*least = got < *least ? got : *least;
			snprintf(addr, addrlen, "%s", res->rc == RLOCK_OK ?
				 rl_node_addr(&rl->node[i]) : res->err);
		}
	}
	rl_fan_done(&f);
	return ok;
}

/* After a grant: make sure want replicas have it, or undo it and return
 * UNREPLICATED. */
static int replicated(struct rlock *rl, const struct lock_keys *n,
		      const char *token, int want, const long long *got)
{
	int which[RLOCK_MAX_SERVERS];
	long long least;
	char addr[600], tb[32];

	for (size_t i = 0; i < rl->nnode; i++)
		which[i] = got[i] > 0;
	if (wait_replicas(rl, n, want, which, &least, addr, sizeof(addr)) >=
	    rl->quorum)
		return RLOCK_OK;
	rl_fan_undo(rl, &n->v, token);
	/* A Sentinel master whose replicas do not follow may be one the
	 * sentinels deposed and have not yet told (a master frozen past a
	 * failover, thawed): ask them again before the next try. */
	for (size_t i = 0; i < rl->nnode; i++) {
		if (rl->node[i].sent != NULL && which[i]) {
			rl->node[i].failing_over = 1;
			rl_conn_close(rl->node[i].cmd);
		}
	}
	rl_set_error(rl->err, sizeof(rl->err), "took the lock, but only %lld "
		     "of %d replicas acknowledged within %s (%s); released it",
		     least, want, rlock_fmt_ms(rl->copts.io_timeout_ms, tb,
					       sizeof(tb)), addr);
	return UNREPLICATED;
}

/* The holders' kind disagrees with ours: say which and how. */
static int conflict(struct rlock *rl, const struct lock_keys *n,
		    const char *name, const char *ours, const char *theirs)
{
	char want[64], have[64];
	long long lim;
	int s, l;

	/* The holders' kind as rlock writes it, "x", "s" or a limit of 2
	 * or more; anything else in the field is no kind. */
	if (strcmp(theirs, "x") != 0 && strcmp(theirs, "s") != 0 &&
	    strcmp(theirs, "p") != 0 &&
	    rlock_parse_ll(theirs, strlen(theirs), 2, RLOCK_LIMIT_MAX,
			   &lim) != 0) {
		rl_set_error(rl->err, sizeof(rl->err), "%s: its holders' limit in "
			     "%s is '%s', not a kind rlock wrote ('s' or a "
			     "limit of 2 or more)", name, n->v.hmeta, theirs);
		return RLOCK_EPROTO;
	}
	rl_parse_kind(ours, &s, &l);
	if (rl_pool_kind(ours))
		snprintf(want, sizeof(want), "a pool (--pool)");
	else if (s)
		snprintf(want, sizeof(want), "a shared lock (-s)");
	else if (l > 1)
		snprintf(want, sizeof(want), "a semaphore of %d (--limit %d)",
			 l, l);
	else
		snprintf(want, sizeof(want), "an exclusive lock");
	rl_parse_kind(theirs, &s, &l);
	if (rl_pool_kind(theirs))
		snprintf(have, sizeof(have), "a pool held with --pool");
	else if (s)
		snprintf(have, sizeof(have), "held shared (-s)");
	else if (l > 1)
		snprintf(have, sizeof(have), "a semaphore of %d holders "
			 "(--limit %d)", l, l);
	else
		snprintf(have, sizeof(have), "held as an exclusive lock");
	rl_set_error(rl->err, sizeof(rl->err), "%s: is %s, not %s: every user "
		     "of a name must ask for the same kind and --limit", name,
		     have, want);
	return RLOCK_EUSAGE;
}

/* A grant's reply said the server would not record the history: 0, a
 * user without +xadd; 2, the history's key holds another type (another
 * client's data).  Keep why, for rlock_history_refused. */
static void history_refused(struct rlock *rl, size_t i, int recorded,
			    const char *key)
{
	const char *user = rl->node[i].url.user;

	if (rl->hist_refused[0] != '\0')
		return;
	rl->hist_junk = recorded == 2;
	if (recorded == 2)
		rl_set_error(rl->hist_refused, sizeof(rl->hist_refused), "%s: "
			     "%s is not a stream rlock wrote (another type): "
			     "history is not kept; 'rlock release --force' "
			     "removes it", rl_node_addr(&rl->node[i]), key);
	else
		rl_set_error(rl->hist_refused, sizeof(rl->hist_refused), "%s "
			     "refused to record the lock's history (XADD): "
			     "history is not kept; allow it with ACL SETUSER %s "
			     "+xadd +xrange +xrevrange", rl_node_addr(&rl->node[i]),
			     user[0] != '\0' ? user : "default");
}

static void record_grant(struct rlock *rl, const struct lock_keys *n,
			 const struct acquirer *who, const char *kind,
			 const struct rlock_lease *lease);

/* One acquire's own state: the lock's names, the token, what it asks for
 * and, on one server, the waiter's id and wake-up list. */
struct acq {
	const char *name;
	const struct rlock_acquire_opts *o;
	struct lock_keys n;
	struct ask a;
	char token[RLOCK_TOKEN_LEN + 1];
	char kind[24];
	char id[LINE_ID_LEN + 1];
	char mywake[RLOCK_KEY_MAX + 16 + LINE_ID_LEN];	/* its own wake-up list */
	const char *chan;		/* where a waiter listens */
	char skip[640];			/* why it gave up at once, for the
					 * history ('' none) */
	long long hint;			/* the fence of a baton whose history
					 * was refused (one_popped) */
	int64_t waited_from;		/* CLOCK_BOOTTIME when it first took
					 * a place: a baton's stamp is later */
};

/* A busy answer that ends the wait at once: {-2, who} superseded, or
 * {-3, until, host, user, pid, since, fence}, the period done (from the
 * period's record, which another client could write: what does not read
 * is unknown).  Sets h->skip, the message, and the history's reason in
 * q->skip.  Returns 0, or -1 for an answer of the wrong shape. */
static int parse_skip(struct rlock *rl, const char *name,
		      const redisReply *r, struct rlock_holder *h,
		      struct acq *q)
{
	const redisReply *e[7];
	char since[40], next[40];
	long long code, until;

	if (rl_elem_num(r, 0, -3, -2, &code) != 0 ||
	    r->elements != (code == -2 ? 2u : 7u))
		return -1;
	for (size_t i = 1; i < r->elements; i++) {
		e[i] = r->element[i];
		if (e[i]->type != REDIS_REPLY_STRING)
			return -1;
	}
	if (code == -2) {
		h->skip = RLOCK_SKIP_SUPERSEDED;
		snprintf(q->skip, sizeof(q->skip), "superseded by %.*s",
			 (int)(e[1]->len > 600 ? 600 : e[1]->len), e[1]->str);
		rl_set_error(rl->err, sizeof(rl->err), "%s: %s", name, q->skip);
		return 0;
	}
	h->skip = RLOCK_SKIP_DONE;
	until = rl_num_field(e[1]->str, e[1]->len, 1, FENCE_LIMIT, 0,
			     "period's end", h->junk, sizeof(h->junk));
	snprintf(h->host, sizeof(h->host), "%.*s", (int)e[2]->len, e[2]->str);
	snprintf(h->user, sizeof(h->user), "%.*s", (int)e[3]->len, e[3]->str);
	h->pid = rl_num_field(e[4]->str, e[4]->len, 1, INT_MAX, 0, "pid",
			      h->junk, sizeof(h->junk));
	h->since_ms = rl_num_field(e[5]->str, e[5]->len, 1, FENCE_LIMIT, 0,
				   "since", h->junk, sizeof(h->junk));
	h->fence = rl_num_field(e[6]->str, e[6]->len, 1, FENCE_LIMIT, -1,
				"fence", h->junk, sizeof(h->junk));
	snprintf(q->skip, sizeof(q->skip), "done this period by %.64s@%.200s "
		 "pid %lld", h->user, h->host, h->pid);
	rl_set_error(rl->err, sizeof(rl->err), "%s: %s at %s; the next period "
		     "starts %s", name, q->skip,
		     rlock_fmt_utc(h->since_ms, since, sizeof(since)),
		     rlock_fmt_utc(until, next, sizeof(next)));
	return 0;
}

/* The answers of one try's servers, counted. */
struct tally {
	size_t ngrant, nbusy, nfail;
	size_t unsure;			/* sent, and no answer: it may have
					 * been granted */
	long long fence;		/* the highest fence granted */
	long long got[RLOCK_MAX_SERVERS];	/* each one's, 0 none */
	int slot[RLOCK_MAX_SERVERS];
	int differs;			/* a server holds it as another kind */
	char theirs[24];		/* that kind */
};

/* One server's grant into t: its fence, whether the history took it, its
 * slot and a pool's members; junk counts as unsure (undone with the
 * rest). */
static void tally_grant(struct rlock *rl, struct acq *aq, struct fan *f,
			size_t i, struct tally *t)
{
	const redisReply *r = f->slot[i].res.r;
	int recorded;

	if (rl_decode_grant(r, &t->got[i], &recorded, &t->slot[i]) != 0) {
		/* Granted or not, no fence we can hand on. */
		t->got[i] = 0;
		rl_fan_unexpected(f, i, "acquire (a grant whose fence is not a "
				  "positive integer below 2^53)");
		t->unsure++;
		t->nfail++;
		return;
	}
	if (granted_members(rl, r) != 0) {
		rl_fan_unexpected(f, i, "acquire (a pool's member or property "
				  "that rlock did not write)");
		t->unsure++;
		t->nfail++;
		return;
	}
	t->ngrant++;
	if (recorded == 0 || recorded == 2 ||
	    (aq->hint != 0 && t->got[i] == aq->hint))
		history_refused(rl, i, recorded == 2 ? 2 : 0, aq->n.v.log);
	if (t->got[i] > t->fence)
		t->fence = t->got[i];
}

/* Count each server's answer to an acquire into t; a busy answer's holder
 * into holder. */
static void tally_answers(struct rlock *rl, const char *name, struct acq *aq,
			  struct fan *f, struct rlock_holder *holder,
			  int *joined, struct tally *t)
{
	long long arrival = 0;

	for (size_t i = 0; i < f->n; i++) {
		redisReply *r = f->slot[i].res.r;

		if (f->slot[i].res.rc != RLOCK_OK) {
			if (f->slot[i].tries > 0 && !f->slot[i].answered)
				t->unsure++;
			t->nfail++;
			continue;
		}
		/* A grant on the shortest path answers its entry's id. */
		if (r->type != REDIS_REPLY_STRING &&
		    (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
		     r->element[0]->type != REDIS_REPLY_INTEGER)) {
			rl_fan_unexpected(f, i, "acquire");
			t->nfail++;
		} else if (r->type == REDIS_REPLY_STRING || rl_elem_ll(r, 0) == 1) {
			tally_grant(rl, aq, f, i, t);
		} else if (rl_elem_ll(r, 0) == -1) {
			rl_elem_str(r, 1, t->theirs, sizeof(t->theirs));
			t->differs = 1;
		} else if ((rl_elem_ll(r, 0) == -2 || rl_elem_ll(r, 0) == -3) &&
			   parse_skip(rl, name, r, holder, aq) == 0) {
			t->nbusy++;
		} else if (rl_elem_ll(r, 0) == 0 &&
			   rl_parse_busy(r, holder, joined, &arrival) == 0) {
			/* The first place's arrival is the one kept: taken
			 * again on a new master, the place is taken there. */
			if (aq->a.arrival == 0)
				aq->a.arrival = arrival;
			t->nbusy++;
		} else {
			rl_fan_unexpected(f, i, "acquire");
			t->nfail++;
		}
	}
}

/*
 * No grant to keep: undo on all, as Redlock says, a grant that was
 * counted, and one that may have happened unseen (a server that froze or
 * dropped the connection after the request went out would otherwise keep
 * a dead token until its TTL).  Then busy, the servers' error, or a grant
 * by a quorum too late to be of use.
 */
static int no_grant(struct rlock *rl, struct acq *aq, struct fan *f,
		    const struct tally *t, int *undid)
{
	int64_t undo_ms = 0;
	int rc;

	if (t->ngrant > 0 || t->unsure > 0) {
		int64_t u0 = rlock_mono_ms();

		rl_fan_undo(rl, &aq->n.v, aq->token);
		*undid = 1;
		undo_ms = rlock_mono_ms() - u0;
	}
	if (t->nbusy > 0 && t->nbusy + t->nfail > rl->nnode - rl->quorum &&
	    t->nfail <= rl->nnode - rl->quorum)
		return RLOCK_BUSY;
	if (t->nfail == 0) {
		rl_set_error(rl->err, sizeof(rl->err), "acquire took longer "
			     "than the TTL allows");
		return RLOCK_BUSY;
	}
	rc = rl_fan_first_error(rl, f, t->nfail);
	/* A server that never answers costs the undo's wait too: say so,
	 * the time told is not all it took. */
	if (undo_ms >= 100) {
		char d[32];
		size_t len = strlen(rl->err);

		snprintf(rl->err + len, sizeof(rl->err) - len, "; undoing the "
			 "request (it may have been granted) took %s more",
			 rlock_fmt_ms(undo_ms, d, sizeof(d)));
	}
	return rc;
}

/*
 * One try at the lock.  With several masters the grant is recorded in the
 * history only once a quorum granted it (record_grant, with the fence
 * handed out): a master that granted alone is undone, and a waiter that
 * tries again and again would fill its history with grants that never
 * were.  *undid: grants were given back (several masters).
 */
static int try_acquire(struct rlock *rl, const char *name, struct acq *aq,
		       const struct rlock_acquire_opts *o,
		       struct rlock_lease *lease, struct rlock_holder *holder,
		       int *joined, int64_t waited_ms, int *undid)
{
	static const struct history none = { 0, 0 };
	const struct lock_keys *n = &aq->n;
	const struct ask *a = &aq->a;
	const char *token = aq->token;
	struct acquirer who;
	struct request q;
	struct tally t;
	struct fan f;
	int64_t t0;
	int rc;

	rl_identify(rl);
	who = (struct acquirer){ rl->host, rl->user, o->label, o->note,
				 o->pid > 0 ? o->pid : (long long)getpid(),
				 o->min_hold_ms, waited_ms };
	*undid = 0;
	*joined = 0;
	if ((rc = rl_identify_servers(rl)) != RLOCK_OK)
		return rc;
	rl_req_acquire(&q, &n->v, token, o->ttl_ms, &who, a,
		       rl->nnode > 1 ? &none : &rl->hist);
	rl_fan_init(&f, rl);
	rl_fan_all(&f, &q);
	rl_skip_unanswered(rl, &f);
	t0 = rlock_boot_ms();
	rl_fan_run(rl, &f);
	if (rl->nnode > 1 &&
	    rlock_distinct(rl, rl->err, sizeof(rl->err)) != RLOCK_OK) {
		char why[sizeof(rl->err)];

		/* Whatever it granted is given back, and the reason kept. */
		memcpy(why, rl->err, sizeof(why));
		rl_fan_undo(rl, &n->v, token);
		memcpy(rl->err, why, sizeof(why));
		rl_fan_done(&f);
		return RLOCK_EUSAGE;
	}
	memset(&t, 0, sizeof(t));
	tally_answers(rl, name, aq, &f, holder, joined, &t);
	if (t.differs) {
		if (t.ngrant > 0 || t.unsure > 0)
			rl_fan_undo(rl, &n->v, token);
		rl_fan_done(&f);
		return conflict(rl, n, name, a->kind, t.theirs);
	}
	if (holder->skip != 0) {
		/* One server only: nothing was granted. */
		rl_fan_done(&f);
		return RLOCK_BUSY;
	}
	if (t.ngrant >= rl->quorum && rl->nnode > 1 &&
	    raise_fence(rl, n, token, t.fence, t.got) < rl->quorum) {
		rl_set_error(rl->err, sizeof(rl->err), "no quorum: the fence "
			     "could not be raised on a majority");
		rl_fan_undo(rl, &n->v, token);
		rl_fan_done(&f);
		return RLOCK_EUNAVAIL;
	}
	if (t.ngrant >= rl->quorum && o->wait_replicas > 0 &&
	    (rc = replicated(rl, n, token, o->wait_replicas, t.got)) !=
	    RLOCK_OK) {
		rl_fan_done(&f);
		return rc;
	}
	if (t.ngrant >= rl->quorum &&
	    rl_lease_valid(o->ttl_ms, rlock_boot_ms() - t0)) {
		rl_lease_init(lease, token, t.fence, o, a->kind, who.pid, t0);
		lease->slot = agreed_slot(t.slot, t.got, f.n, rl->quorum);
		if (rl->nnode > 1)
			record_grant(rl, n, &who, a->kind, lease);
		rc = RLOCK_OK;
	} else {
		rc = no_grant(rl, aq, &f, &t, undid);
	}
	rl_fan_done(&f);
	return rc;
}

/* A waiter's id: 64 random bits in hex, public (its wake-up list is a
 * key that SCAN lists), unlike the token. */
static int make_waiter_id(char id[LINE_ID_LEN + 1])
{
	char t[RLOCK_TOKEN_LEN + 1];

	if (rlock_make_token(t) != 0)
		return -1;
	memcpy(id, t, LINE_ID_LEN);
	id[LINE_ID_LEN] = '\0';
	explicit_bzero(t, sizeof(t));
	return 0;
}

/* Give up a place in line, within one I/O timeout; a waiter that cannot
 * say so loses its place when its lease ends. */
static void leave_line(struct rlock *rl, const struct lock_keys *n,
		       const struct ask *a, const char *token)
{
	struct request q;
	struct fan f;

	rl_req_leave(&q, &n->v, a->kind, a->waiter, token, &rl->hist);
	rl_fan_init(&f, rl);
	rl_fan_all(&f, &q);
	rl_fan_run(rl, &f);
	rl_fan_done(&f);
}

const char *rlock_kind(const struct rlock_acquire_opts *o, char *buf,
		       size_t len)
{
	const char *k = o->shared ? "s" : "x";
	char n[24];

	/* A pool's holder asks as "pK" for K members. */
	if (o->count > 0) {
		n[0] = 'p';
		n[1 + rlock_lltoa(n + 1, o->count)] = '\0';
		k = n;
	} else if (!o->shared && o->limit > 1) {
		n[rlock_lltoa(n, o->limit)] = '\0';
		k = n;
	}
	rlock_strlcpy(buf, k, len);
	return buf;
}

int rlock_check_acquire(struct rlock *rl, const struct rlock_acquire_opts *o)
{
	char kind[24];

	rlock_kind(o, kind, sizeof(kind));
	if (rl->nnode > 1 && o->count > 0) {
		rl_set_error(rl->err, sizeof(rl->err), "pools need one server "
			     "(or one Sentinel or Cluster URL): on several "
			     "independent masters a quorum could give a member "
			     "to two holders");
		return RLOCK_EUSAGE;
	}
	if (rl->nnode > 1 && strcmp(kind, "x") != 0) {
		rl_set_error(rl->err, sizeof(rl->err), "shared locks and "
			     "semaphores need one server (or one Sentinel or "
			     "Cluster URL): on several independent masters a "
			     "quorum could let in more holders than allowed");
		return RLOCK_EUSAGE;
	}
	if (rl->nnode > 1 && o->once_per_ms > 0) {
		rl_set_error(rl->err, sizeof(rl->err), "--once-per needs one "
			     "server (or one Sentinel or Cluster URL): on several "
			     "independent masters a minority could call a period "
			     "done");
		return RLOCK_EUSAGE;
	}
	if (rl->nnode > 1 && (o->supersede || o->priority != 0)) {
		rl_set_error(rl->err, sizeof(rl->err), "--supersede and "
			     "--priority need one server (or one Sentinel or "
			     "Cluster URL): several masters keep no wait line");
		return RLOCK_EUSAGE;
	}
	if (o->once_per_ms > 0 && strcmp(kind, "x") != 0) {
		rl_set_error(rl->err, sizeof(rl->err), "--once-per needs an "
			     "exclusive lock: not with --shared or --limit");
		return RLOCK_EUSAGE;
	}
	return RLOCK_OK;
}

static int acq_init(struct rlock *rl, const char *name,
		    const struct rlock_acquire_opts *o, struct acq *q)
{
	int rc = rl_make_names(rl, name, &q->n);

	if (rc != RLOCK_OK)
		return rc;
	q->name = name;
	q->o = o;
	rlock_kind(o, q->kind, sizeof(q->kind));
	rc = rlock_check_acquire(rl, o);
	if (rc != RLOCK_OK)
		return rc;
	if (o->token != NULL) {
		snprintf(q->token, sizeof(q->token), "%s", o->token);
	} else if (rlock_make_token(q->token) != 0) {
		rl_set_error(rl->err, sizeof(rl->err),
			     "cannot make a token: %s", strerror(errno));
		return RLOCK_ESYS;
	}
	/* One server keeps a wait line (which -n respects too): a first try
	 * asks as a newcomer, whose place would be at the end ("new" is no
	 * id: it never joins); several masters would each keep their own
	 * line, in different orders, so waiters there are woken by the
	 * release channel and try in no order. */
	q->id[0] = '\0';
	q->chan = q->n.chan;
	q->a = (struct ask){ q->kind, rl->nnode == 1 ? "new" : "", 0, 1,
			     o->priority, o->supersede, o->once_per_ms, 0 };
	for (size_t i = 0; i < rl->nnode; i++)
		q->a.micro |= rl->node[i].sent != NULL ||
			      rl_node_is_cluster(&rl->node[i]);
	q->skip[0] = '\0';
	q->hint = 0;
	q->waited_from = rlock_boot_ms();
	return RLOCK_OK;
}

/* Before waiting in the one server's line: the waiter's id and wake-up
 * channel, made only now so that an uncontended acquire (rlock run's
 * start-up) does without them. */
static int acq_waiter(struct rlock *rl, struct acq *q,
		      const struct rlock_acquire_opts *o)
{
	if (rl->nnode != 1 || q->id[0] != '\0')
		return RLOCK_OK;
	if (make_waiter_id(q->id) != 0) {
		rl_set_error(rl->err, sizeof(rl->err), "cannot make a waiter "
			     "id: %s", strerror(errno));
		return RLOCK_ESYS;
	}
	snprintf(q->mywake, sizeof(q->mywake), "%s%s", q->n.wake,
		 q->id);
	q->chan = q->mywake;
	q->a.waiter = q->id;
	if (o->baton && strcmp(q->kind, "x") == 0 && o->once_per_ms == 0 &&
	    o->wait_replicas == 0) {
		int64_t b = LINE_LEASE_MS + rlock_safety_margin_ms(o->ttl_ms);

		q->a.baton_ms = b < o->ttl_ms ? b : o->ttl_ms;
	}
	return RLOCK_OK;
}

/* Record one history entry of values v (EV_NFIELDS) on every server,
 * keeping rl->err.  Best effort: returns the fan-out's code. */
static int record(struct rlock *rl, const struct lock_keys *n, const char *run,
		  const char *const *v)
{
	char why[sizeof(rl->err)];
	struct request q;
	struct fan f;
	int rc;

	if (rl->hist.max == 0)
		return RLOCK_OK;
	memcpy(why, rl->err, sizeof(why));
	rl_req_log(&q, &n->v, &rl->hist, run, v);
	rl_fan_init(&f, rl);
	rl_fan_all(&f, &q);
	rl_fan_run(rl, &f);
	for (size_t i = 0; i < f.n; i++) {
		const redisReply *r = f.slot[i].res.r;

		if (f.slot[i].res.rc == RLOCK_OK &&
		    r->type == REDIS_REPLY_INTEGER &&
		    (r->integer == 0 || r->integer == 2))
			history_refused(rl, i, (int)r->integer, n->v.log);
	}
	rc = rl_fan_tally(rl, &f, "log", 2, NULL);
	rl_fan_done(&f);
	memcpy(rl->err, why, sizeof(why));
	return rc;
}

/* A grant of several masters, once a quorum made it: recorded on every one,
 * with the fence handed out. */
static void record_grant(struct rlock *rl, const struct lock_keys *n,
			 const struct acquirer *who, const char *kind,
			 const struct rlock_lease *lease)
{
	const char *v[EV_NFIELDS] = { 0 };
	char pid[24], fence[24], waited[24], tok[9], slot[24];
	char label[RLOCK_LABEL_MAX + 1];

	snprintf(pid, sizeof(pid), "%lld", who->pid);
	snprintf(fence, sizeof(fence), "%lld", lease->fence);
	snprintf(waited, sizeof(waited), "%lld", (long long)who->waited_ms);
	snprintf(tok, sizeof(tok), "%.8s", lease->token);
	/* Cut as the acquire script's metadata is. */
	snprintf(label, sizeof(label), "%s",
		 who->label != NULL ? who->label : "");
	v[EV_EVENT] = "acquired";
	v[EV_HOST] = who->host;
	v[EV_USER] = who->user;
	v[EV_PID] = pid;
	v[EV_KIND] = kind;
	v[EV_FENCE] = fence;
	v[EV_TOKEN] = tok;
	v[EV_WAITED] = waited;
	v[EV_COMMAND] = label;
	v[EV_NOTE] = who->note;
	if (lease->slot >= 0) {
		snprintf(slot, sizeof(slot), "%d", lease->slot);
		v[EV_SLOT] = slot;
	}
	record(rl, n, NULL, v);
}

/* "USER@HOST pid N", for the history's reasons. */
static const char *who_str(const char *user, const char *host, long long pid,
			   char *buf, size_t len)
{
	snprintf(buf, len, "%.64s@%.200s pid %lld", user, host, pid);
	return buf;
}

/* An acquire that gave up: record it as skipped, with who held the lock. */
static void record_skipped(struct rlock *rl, struct acq *q,
			   const struct rlock_acquire_opts *o, int rc,
			   const struct rlock_holder *h, int64_t waited)
{
	const char *v[EV_NFIELDS] = { 0 };
	char pid[24], ms[24], tb[32], who[400], reason[sizeof(q->skip)], tok[9];

	rl_identify(rl);
	if (h->host[0] != '\0')
		who_str(h->user, h->host, h->pid, who, sizeof(who));
	else
		snprintf(who, sizeof(who), "another client (no rlock "
			 "metadata)");
	if (q->skip[0] != '\0')
		snprintf(reason, sizeof(reason), "%s", q->skip);
	else if (rc == RLOCK_CANCELED)
		snprintf(reason, sizeof(reason), "interrupted");
	else if (!h->held)
		snprintf(reason, sizeof(reason), "%lld waiting in line came "
			 "first", h->waiters);
	else if (o->wait_ms != 0)
		snprintf(reason, sizeof(reason), "timed out after %s; held "
			 "by %s", rlock_fmt_ms(waited, tb, sizeof(tb)), who);
	else
		snprintf(reason, sizeof(reason), "held by %s", who);
	snprintf(pid, sizeof(pid), "%lld",
		 o->pid > 0 ? o->pid : (long long)getpid());
	snprintf(ms, sizeof(ms), "%lld", (long long)waited);
	snprintf(tok, sizeof(tok), "%.8s", q->token);
	v[EV_EVENT] = "skipped";
	v[EV_HOST] = rl->host;
	v[EV_USER] = rl->user;
	v[EV_PID] = pid;
	v[EV_KIND] = q->kind;
	v[EV_TOKEN] = tok;
	v[EV_WAITED] = ms;
	v[EV_REASON] = reason;
	v[EV_COMMAND] = o->label;
	v[EV_NOTE] = o->note;
	record(rl, &q->n, NULL, v);
}

/* A lease's end that no release records: event "lost" (code the
 * keepalive's result) or "stepped-down", with its reason, in the history
 * and the record of the last runs. */
static int record_end(struct rlock *rl, const char *name,
		      const struct rlock_lease *lease, const char *event,
		      int code, const char *reason,
		      const struct rlock_outcome *how)
{
	const char *v[EV_NFIELDS] = { 0 };
	char pid[24], fence[24], held[24], ex[24], sig[16], tok[9];
	char why[sizeof(rl->err) + 32], run[sizeof(why) + 512];
	struct lock_keys n;
	int rc;

	rc = rl_make_names(rl, name, &n);
	if (rc != RLOCK_OK)
		return rc;
	rl_identify(rl);
	snprintf(pid, sizeof(pid), "%lld", lease->pid);
	fence[0] = '\0';
	if (lease->fence > 0)
		snprintf(fence, sizeof(fence), "%lld", lease->fence);
	snprintf(held, sizeof(held), "%lld",
		 (long long)(rlock_boot_ms() - lease->taken_boot_ms));
	snprintf(tok, sizeof(tok), "%.8s", lease->token);
	v[EV_EVENT] = event;
	v[EV_HOST] = rl->host;
	v[EV_USER] = rl->user;
	v[EV_PID] = lease->pid > 0 ? pid : NULL;
	/* A lease knows exclusive from not; a shared lock's or a
	 * semaphore's kind is its grant's, which readers join. */
	v[EV_KIND] = lease->kind == 'h' ? NULL : "x";
	v[EV_FENCE] = fence[0] != '\0' ? fence : NULL;
	v[EV_TOKEN] = tok;
	v[EV_HELD] = held;
	if (how != NULL && how->exit >= 0) {
		snprintf(ex, sizeof(ex), "%d", how->exit);
		v[EV_EXIT] = ex;
	}
	if (how != NULL && how->signal > 0)
		v[EV_SIGNAL] = rlock_signame(how->signal, sig, sizeof(sig));
	snprintf(why, sizeof(why), "%s%s", code == RLOCK_NOTOURS ?
		 "renewal refused: " : "", reason);
	v[EV_REASON] = why;
	/* The record of the last runs: "EVENT\nKIND\nEXIT\nSIGNAL\n
	 * TOKEN8\nREASON\n" and a holder's record (fence, since, hold,
	 * pid, host, user, note, command) of what this lease knows. */
	for (char *p = why; *p != '\0'; p++)
		if (*p == '\n')
			*p = ' ';
	snprintf(run, sizeof(run), "%s\n%s\n%s\n%s\n%s\n%s\n%s\n\n0\n"
		 "%s\n%s\n%s\n\n", event, lease->kind == 'h' ? "" : "x",
		 v[EV_EXIT] != NULL ? v[EV_EXIT] : "",
		 v[EV_SIGNAL] != NULL ? v[EV_SIGNAL] : "", tok, why, fence,
		 v[EV_PID] != NULL ? pid : "", rl->host, rl->user);
	return record(rl, &n, run, v);
}

/* A set's loss (the set of rl, asked for by its first name) is recorded
 * in the history of every lock of the set, each with its own fence: a
 * reader of one lock's history learns of it, whoever renewed the set. */
int rlock_record_lost(struct rlock *rl, const char *name,
		      const struct rlock_lease *lease, int code,
		      const char *reason, const struct rlock_outcome *how)
{
	const struct with_set *w = rl->with;
	struct rlock_lease l = *lease;
	char one[RLOCK_NAME_MAX + 1];
	const char *p;
	int rc = RLOCK_OK, r;

	if (w == NULL || strcmp(name, w->first) != 0)
		return record_end(rl, name, lease, "lost", code, reason, how);
	p = w->names;
	for (size_t i = 0; i < w->n; i++) {
		size_t len = strcspn(p, "\n");

		memcpy(one, p, len);
		one[len] = '\0';
		p += len + (p[len] == '\n');
		/* A fence the set does not know (0) is the lease's for its
		 * first name, and none for the others. */
		l.fence = w->fence[i] > 0 ? w->fence[i] :
			  i == 0 ? lease->fence : 0;
		r = record_end(rl, one, &l, "lost", code, reason, how);
		if (rc == RLOCK_OK)
			rc = r;
	}
	return rc;
}

const char *rlock_history_refused(const struct rlock *rl)
{
	return rl->hist_refused[0] != '\0' ? rl->hist_refused : NULL;
}

int rlock_history_junk(const struct rlock *rl)
{
	return rl->hist_refused[0] != '\0' && rl->hist_junk;
}

/* After a wait that ended without the lock: leave the line, and say why
 * when nothing did yet. */
static void acq_end(struct rlock *rl, const char *name, struct acq *q,
		    int rc, int in_line, const struct rlock_holder *holder)
{
	/* A skip took us out of the line already. */
	if (in_line && holder->skip == 0 &&
	    (rc == RLOCK_BUSY || rc == RLOCK_CANCELED)) {
		char why[sizeof(rl->err)];

		memcpy(why, rl->err, sizeof(why));
		leave_line(rl, &q->n, &q->a, q->token);
		memcpy(rl->err, why, sizeof(why));
	}
	if (rc == RLOCK_BUSY && rl->err[0] == '\0' && !holder->held)
		rl_set_error(rl->err, sizeof(rl->err), "%s: free, but %lld "
			     "waiting in line come first", name,
			     holder->waiters);
	else if (rc == RLOCK_BUSY && rl->err[0] == '\0')
		rl_set_error(rl->err, sizeof(rl->err), "%s: held", name);
}

/* ---- a single lock, a shared hold, a semaphore's place, a pool's members:
 * the kinds one key's scripts grant, as the wait loop (wait.c) asks them */

static int one_attempt(struct rlock *rl, void *self, int64_t waited_ms,
		       int details, int listening, struct rlock_lease *lease,
		       struct rlock_holder *h, struct hold_try *t)
{
	struct acq *q = self;
	int rc;

	q->a.details = details;
	q->a.join = listening && q->id[0] != '\0';
	rc = try_acquire(rl, q->name, q, q->o, lease, h, &t->joined,
			 waited_ms, &t->undid);
	t->ttl_ms = h->ttl_ms;
	t->place = h->place;
	return rc;
}

static void one_undo(struct rlock *rl, void *self)
{
	struct acq *q = self;

	rl_fan_undo(rl, &q->n.v, q->token);
}

static int one_channels(struct rlock *rl, void *self, const char **chan,
			size_t *nchan, int *slot)
{
	struct acq *q = self;
	int rc = acq_waiter(rl, q, q->o);

	chan[0] = q->chan;
	*nchan = 1;
	*slot = q->n.v.slot;
	return rc;
}

/*
 * The baton, popped (wait.h): the lock is ours from the release that
 * granted it, for the baton's first lease, timed from the grant as our
 * clock sees it: STAMP, when we sent the beat the grant read, plus AGE,
 * the server's ms between the two (less the drift allowance; from STAMP
 * alone when the server's clock ran fast).  Asked as usual instead (the
 * next try finds our token and confirms it, with a new fence when it is
 * old): through Sentinel, where a master frozen past a failover could
 * have granted it; when it is not our token or stamp; when the grant may be
 * BATON_REFENCE_MS old or more; when too little of its lease is left.
 */
static int one_popped(struct rlock *rl, void *self, const char *msg,
		      size_t len, struct rlock_lease *lease)
{
	struct acq *q = self;
	struct baton b;
	int64_t now = rlock_boot_ms(), t0, len_ms = q->a.baton_ms;

	if (rl_decode_baton(msg, len, &b) != 0 || strcmp(b.token, q->token) != 0)
		return RLOCK_BUSY;
	if (b.recorded == 0 || b.recorded == 2)
		q->hint = b.fence;	/* warned of once confirmed */
	if (len_ms == 0 || rl->nnode != 1 || rl->node[0].sent != NULL ||
	    b.stamp < q->waited_from || b.stamp > now)
		return RLOCK_BUSY;
	t0 = b.stamp + b.age - rlock_drift_ms(b.age);
	if (t0 > now)
		t0 = b.stamp;
	if (now - t0 >= BATON_REFENCE_MS ||
	    now - t0 >= (len_ms - rlock_safety_margin_ms(len_ms)) / 2)
		return RLOCK_BUSY;
	rl_lease_init(lease, q->token, b.fence, q->o, "x",
		      q->o->pid > 0 ? q->o->pid : (long long)getpid(), t0);
	lease->first_ms = len_ms;
	if (b.recorded == 0 || b.recorded == 2)
		history_refused(rl, 0, b.recorded, q->n.v.log);
	return RLOCK_OK;
}

static void one_end(struct rlock *rl, void *self, int rc, int in_line,
		    const struct rlock_holder *h, int64_t waited_ms)
{
	struct acq *q = self;

	acq_end(rl, q->name, q, rc, in_line, h);
	if (rc == RLOCK_BUSY || rc == RLOCK_CANCELED)
		record_skipped(rl, q, q->o, rc, h, waited_ms);
}

int rlock_acquire(struct rlock *rl, const char *name,
		  const struct rlock_acquire_opts *o,
		  struct rlock_lease *lease, struct rlock_holder *holder)
{
	struct rlock_holder h;
	struct hold_kind one = { .attempt = one_attempt, .undo = one_undo,
				 .channels = one_channels,
				 .popped = one_popped, .end = one_end };
	struct acq q;
	int rc;

	rl->err[0] = '\0';
	rl->ngranted = 0;
	if (holder == NULL)
		holder = &h;
	memset(holder, 0, sizeof(*holder));
	if (rl->with != NULL)
		return rl_with_acquire(rl, name, o, lease, holder);
	rc = acq_init(rl, name, o, &q);
	if (rc != RLOCK_OK)
		return rc;
	return rl_hold_wait(rl, name, o, &one, &q, lease, holder);
}

/* ---- extend, release, force ---------------------------------------- */

int rlock_extend(struct rlock *rl, const char *name, const char *token,
		 int64_t ttl_ms, struct rlock_lease *lease)
{
	struct request q;
	struct fan f;
	struct lock_keys n;
	int64_t t0;
	int rc, kind;

	if (rl->with != NULL && strcmp(name, rl->with->first) == 0)
		return rl_with_extend(rl, token, ttl_ms, lease);
	rc = rl_make_names(rl, name, &n);
	if (rc != RLOCK_OK)
		return rc;
	/* A token of unknown kind (extend's command line) is looked for as
	 * the exclusive holder's, then among the shared ones. */
	kind = lease != NULL && lease->kind != 0 ? lease->kind : 'x';
	if ((rc = rl_identify_servers(rl)) != RLOCK_OK)
		return rc;
	for (;;) {
		rl_req_extend(&q, &n.v, token, ttl_ms, kind);
		rl_fan_init(&f, rl);
		rl_fan_all(&f, &q);
		rl_skip_unanswered(rl, &f);
		t0 = rlock_boot_ms();
		rl_fan_run(rl, &f);
		rc = rl_fan_tally(rl, &f, "extend", 1, NULL);
		if (rc != RLOCK_NOTOURS || kind == 'h' ||
		    (lease != NULL && lease->kind != 0))
			break;
		rl_fan_done(&f);
		kind = 'h';
	}
	if (rc == RLOCK_OK && lease != NULL && lease->wait_replicas > 0) {
		/* The replicas' copy is the one a failover brings back: a
		 * renewal they did not get is no renewal.  It confirms
		 * nothing, and the lease keeps the deadline of the last one
		 * they did get, so that a master frozen past a failover, whose
		 * replicas moved on, cannot keep the command running while
		 * the new master lets the copy expire. */
		int which[RLOCK_MAX_SERVERS];
		long long least;
		char addr[600], tb[32];

		for (size_t i = 0; i < f.n; i++)
			which[i] = f.slot[i].res.rc == RLOCK_OK &&
				   f.slot[i].res.r->integer > 0;
		if (wait_replicas(rl, &n, lease->wait_replicas, which, &least,
				  addr, sizeof(addr)) < rl->quorum) {
			rl_set_error(rl->err, sizeof(rl->err), "%s: renewed, but "
				     "only %lld of %d replicas acknowledged "
				     "within %s (%s)", name, least,
				     lease->wait_replicas,
				     rlock_fmt_ms(rl->copts.io_timeout_ms, tb,
					       sizeof(tb)), addr);
			rl_fan_done(&f);
			return RLOCK_EUNAVAIL;
		}
	}
	if (rc == RLOCK_OK && lease != NULL) {
		/* The server restarted its clock no earlier than we sent.
		 * Atomic stores: run reads these while its renewal thread
		 * may still be renewing (renewer_lease). */
		__atomic_store_n(&lease->ttl_ms, ttl_ms, __ATOMIC_RELAXED);
		__atomic_store_n(&lease->first_ms, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&lease->renewed_boot_ms, t0,
				 __ATOMIC_RELEASE);
	}
	if (rc == RLOCK_NOTOURS)
		rl_set_error(rl->err, sizeof(rl->err),
			     "%s: token does not hold the lock", name);
	rl_fan_done(&f);
	return rc;
}

int rlock_holds(struct rlock *rl, const char *name, const char *token,
		int kind)
{
	struct request q;
	struct fan f;
	struct lock_keys n;
	int rc;

	if ((rc = rl_make_names(rl, name, &n)) != RLOCK_OK ||
	    (rc = rl_identify_servers(rl)) != RLOCK_OK)
		return rc;
	/* An exclusive hold, else a shared, semaphore or pool one. */
	for (kind = kind == 'h' ? 'h' : 'x';; kind = 'h') {
		rl_req_extend(&q, &n.v, token, 0, kind);
		rl_fan_ask(rl, &f, &q);
		rc = rl_fan_tally(rl, &f, "extend", 1, NULL);
		rl_fan_done(&f);
		if (rc != RLOCK_NOTOURS || kind == 'h')
			break;
	}
	if (rc == RLOCK_NOTOURS)
		rl_set_error(rl->err, sizeof(rl->err),
			     "%s: token does not hold the lock", name);
	return rc;
}

/*
 * A server whose connection dropped after the release was sent, and that
 * says "not ours" to the resend, most likely did the release the first
 * time: while the lease is still ours by our own clock, nobody else can
 * have taken the lock there.  Count those as released.  Returns how many.
 */
static size_t count_lost_replies(struct fan *f, const struct rlock_lease *lease)
{
	size_t i, n = 0;

	if (lease == NULL || rlock_boot_ms() >= rl_lease_end(lease))
		return 0;
	for (i = 0; i < f->n; i++) {
		redisReply *r = f->slot[i].res.r;

		if (f->slot[i].dropped && f->slot[i].res.rc == RLOCK_OK &&
		    r->type == REDIS_REPLY_INTEGER && r->integer == 0) {
			r->integer = 1;
			n++;
		}
	}
	return n;
}

/* Whether a server released but could not publish the wake-up (3). */
static int unannounced(const struct fan *f)
{
	for (size_t i = 0; i < f->n; i++) {
		const redisReply *r = f->slot[i].res.r;

		if (f->slot[i].res.rc == RLOCK_OK &&
		    r->type == REDIS_REPLY_INTEGER && r->integer == 3)
			return 1;
	}
	return 0;
}

/* rlock_release, its entry in history h (NULL: none, another entry
 * says how the lease ended). */
static int release(struct rlock *rl, const char *name, const char *token,
		   const struct rlock_lease *lease,
		   const struct rlock_outcome *how, const struct history *h)
{
	struct request q;
	struct fan f;
	struct lock_keys n;
	size_t lost;
	int rc;

	rl->err[0] = '\0';
	if (rl->with != NULL && strcmp(name, rl->with->first) == 0)
		return rl_with_release(rl, token, lease, how);
	rc = rl_make_names(rl, name, &n);
	if (rc != RLOCK_OK)
		return rc;
	if ((rc = rl_identify_servers(rl)) != RLOCK_OK)
		return rc;
	rl_req_release(&q, &n.v, token, h, how,
		       lease != NULL ? lease->once_ms : 0, rl->nnode > 1);
	rl_fan_ask(rl, &f, &q);
	lost = count_lost_replies(&f, lease);
	rc = rl_fan_tally(rl, &f, "release", 3, NULL);
	/* Refused on the release channel (several masters), or on the
	 * wake-up list of a waiter in line (one server). */
	if (rc == RLOCK_OK && unannounced(&f))
		rl_set_error(rl->err, sizeof(rl->err), "%s: released; the "
			     "server refused the wake-up message on %s%s (no "
			     "right to %s?): waiters notice when they poll",
			     name, rl->nnode > 1 ? n.chan : n.wake,
			     rl->nnode > 1 ? "" : "*", rl->nnode > 1 ?
			     "publish on it" : "write it");
	else if (rc == RLOCK_OK && lost > 0)
		rl_set_error(rl->err, sizeof(rl->err), "%s: released (the "
			     "reply was lost; the retry found the lock "
			     "free)", name);
	else if (rc == RLOCK_NOTOURS)
		rl_set_error(rl->err, sizeof(rl->err),
			     "%s: token does not hold the lock", name);
	rl_fan_done(&f);
	return rc;
}

int rlock_release(struct rlock *rl, const char *name, const char *token,
		  const struct rlock_lease *lease,
		  const struct rlock_outcome *how)
{
	return release(rl, name, token, lease, how, &rl->hist);
}

/*
 * A leader's step-down: its lease ends by its own choice, recorded once,
 * as "stepped-down" with the reason, before the release that hands the
 * lock on (which records nothing more): the history reads promoted,
 * stepped down, the next promoted, in that order.
 */
int rlock_step_down(struct rlock *rl, const char *name,
		    const struct rlock_lease *lease, const char *reason,
		    const struct rlock_outcome *how)
{
	/* Best effort, as a loss's record: a history refused is said by
	 * rlock_history_refused, and the lock is given up all the same. */
	(void)record_end(rl, name, lease, "stepped-down", RLOCK_OK, reason,
			 how);
	return release(rl, name, lease->token, lease, how, NULL);
}

int rlock_force_release(struct rlock *rl, const char *name,
			struct rlock_holder *was)
{
	struct request q;
	struct fan f;
	struct lock_keys n;
	size_t i, removed = 0, fail = 0;
	char by[400];
	int rc;

	rc = rl_make_names(rl, name, &n);
	if (rc != RLOCK_OK)
		return rc;
	memset(was, 0, sizeof(*was));
	rl_identify(rl);
	snprintf(by, sizeof(by), "by %.64s@%.200s pid %lld", rl->user,
		 rl->host, (long long)getpid());
	if ((rc = rl_identify_servers(rl)) != RLOCK_OK)
		return rc;
	rl_req_force(&q, &n.v, by, &rl->hist);
	rl_fan_ask(rl, &f, &q);
	for (i = 0; i < f.n; i++) {
		struct rlock_result *res = &f.slot[i].res;
		struct force_reply fr;

		if (res->rc == RLOCK_OK &&
		    rl_decode_force(res->r, &fr, was) != RLOCK_OK)
			rl_fan_unexpected(&f, i, "release");
		if (res->rc != RLOCK_OK) {
			fail++;
			continue;
		}
		if (fr.junk > was->junk_keys)
			was->junk_keys = fr.junk;
		if (fr.held) {
			was->nholders = fr.holders;
			removed++;
		}
	}
	/* Removing is forceful: any server that removed counts, but every
	 * server must have answered for "was not held" to be true. */
	if (removed > 0 || (was->junk_keys > 0 && fail == 0))
		rc = RLOCK_OK;
	else if (fail > 0)
		rc = rl_fan_first_error(rl, &f, fail);
	else
		rc = RLOCK_NOTOURS;
	rl_fan_done(&f);
	return rc;
}

/* ---- keepalive ------------------------------------------------------ */

int rlock_renew(struct rlock *rl, const char *name, struct rlock_lease *lease)
{
	int64_t left = rl_lease_end(lease) - rlock_boot_ms();
	int rc;

	if (left <= 0) {
		rl_set_error(rl->err, sizeof(rl->err), "the lease may have run "
			     "out");
		return RLOCK_LOST;
	}
	/* Bound the I/O by the lease: a reply that comes after the
	 * deadline is of no use. */
	rl->hard_deadline = rlock_mono_ms() + left;
	rc = rlock_extend(rl, name, lease->token, lease->ttl_ms, lease);
	rl->hard_deadline = 0;
	return rc;
}

/* How nap ended. */
enum nap_end { NAP_TIME, NAP_STOPPED, NAP_DROPPED };

/*
 * Sleep until wake_boot (CLOCK_BOOTTIME ms), until stop_fd is readable, or
 * until the server closes one of rl's idle command connections: a restart
 * or a failover (the sentinels kill the clients of both nodes) drops it
 * at once, and the lease is worth checking then, not at the next renewal.
 */
static enum nap_end nap(struct rlock *rl, int64_t wake_boot, int stop_fd)
{
	struct pollfd p[1 + RLOCK_MAX_SERVERS];
	int fds[RLOCK_MAX_SERVERS];
	size_t i, nw;

	for (;;) {
		int64_t left = wake_boot - rlock_boot_ms();

		if (left <= 0)
			return NAP_TIME;
		/* poll counts on the monotonic clock, which stops during
		 * suspend: wake at least every second to look again. */
		if (left > 1000)
			left = 1000;
		p[0] = (struct pollfd){ .fd = stop_fd, .events = POLLIN };
		nw = rlock_watch_fds(rl, fds);
		for (i = 0; i < nw; i++)
			p[1 + i] = (struct pollfd){ .fd = fds[i],
						    .events = POLLIN };
		if (poll(p, 1 + nw, (int)left) <= 0)
			continue;
		if (p[0].revents != 0)
			return NAP_STOPPED;
		for (i = 0; i < nw; i++) {
			if (p[1 + i].revents != 0 &&
			    rlock_watch_dropped(rl, i, p[1 + i].revents))
				return NAP_DROPPED;
		}
	}
}

size_t rlock_watch_fds(const struct rlock *rl, int *fds)
{
	for (size_t i = 0; i < rl->nnode; i++)
		fds[i] = rl_node_idle_fd(&rl->node[i]);
	return rl->nnode;
}

int rlock_watch_dropped(struct rlock *rl, size_t i, short revents)
{
	return i < rl->nnode && rl_node_idle_check(&rl->node[i], revents);
}

/* The pause before renewing again after a renewal failed: from 20 ms,
 * doubling while nothing answers, at most a quarter of the period and
 * 500 ms, so that a server back from a restart is asked at once. */
static int64_t renew_backoff(int64_t period, int failures)
{
	int64_t retry = 20, most = period / 4;

	if (most > 500)
		most = 500;
	for (int i = 1; i < failures && retry < most; i++)
		retry *= 2;
	if (retry > most)
		retry = most;
	return retry < 5 ? 5 : retry;
}

/*
 * Open the connections that renewing name uses (the master of its slot;
 * with several masters, each), so that nap can watch them from the start
 * and not only after the first renewal.  One that cannot be opened now is
 * opened again when the renewal comes.  A cluster's map is learned first
 * (CLUSTER SLOTS; one error reply from a server that is no cluster): when
 * the one node the URL names dies, the others know where its slots went.
 */
static void watch_open(struct rlock *rl, const char *name, int64_t hard)
{
	size_t masters[RLOCK_MAX_SERVERS];
	int len, slot;

	if (rl->watching)
		return;
	/* The slot is all it needs of the lock's names: the key alone. */
	len = rl_lock_key(rl->keybuf, sizeof(rl->keybuf), rl->prefix, name, "");
	if (len < 0)
		return;
	rl->watching = 1;
	slot = rl_key_slot(rl->keybuf, (size_t)len);
	if (rl->nnode == 1 && rl->node[0].sent == NULL &&
	    !rl_node_is_cluster(&rl->node[0]))
		rl_node_masters(&rl->node[0], hard, masters, RLOCK_MAX_SERVERS);
	for (size_t i = 0; i < rl->nnode; i++) {
		rl_node_route(&rl->node[i], slot);
		rl_node_open(&rl->node[i], hard);
	}
}

void rlock_watch_open(struct rlock *rl, const char *name,
		      const struct rlock_lease *lease)
{
	watch_open(rl, name, rlock_mono_ms() + (rl_lease_end(lease) -
		   rlock_boot_ms()));
}

int rlock_keepalive(struct rlock *rl, const char *name,
		    struct rlock_lease *lease, int stop_fd, int at_once)
{
	int64_t period = lease->ttl_ms / 3, next, lost_at, now;
	int rc, failures = 0;

	next = at_once ? rlock_boot_ms() : rl_lease_renew_at(lease);
	rlock_watch_open(rl, name, lease);
	for (;;) {
		lost_at = rl_lease_end(lease);
		now = rlock_boot_ms();
		if (now >= lost_at)
			goto lost;
		if (nap(rl, next < lost_at ? next : lost_at, stop_fd) ==
		    NAP_STOPPED)
			return RLOCK_OK;
		rc = rlock_renew(rl, name, lease);
		if (rc == RLOCK_LOST)
			goto lost;
		if (rc == RLOCK_OK) {
			failures = 0;
			next = rl_lease_renew_at(lease);
		} else if (rc == RLOCK_NOTOURS) {
			rl_set_error(rl->err, sizeof(rl->err),
				     "the token no longer holds it");
			return RLOCK_NOTOURS;
		} else {
			/* Keep trying until the lease may have run out. */
			next = rlock_boot_ms() +
			       renew_backoff(period, ++failures);
		}
	}
lost:
	{
		char tb[32];

		(void)name;
		rl_set_error(rl->err, sizeof(rl->err), "no renewal "
			     "confirmed for %s",
			     rlock_fmt_ms(rlock_boot_ms() -
					  lease->renewed_boot_ms, tb,
					  sizeof(tb)));
	}
	return RLOCK_LOST;
}
