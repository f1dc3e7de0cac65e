/*
 * bench.c - rlock bench: one thread drives many clients through honest
 * acquire, hold, release cycles, each over its own non-blocking connection,
 * all under one epoll loop.  It goes through the same transport (conn.c)
 * and the same Lua scripts (lib/scripts/) as rlock_acquire and
 * rlock_release, so what it measures is what the real commands cost the server.
 *
 * Decisions worth knowing when reading the numbers:
 *  - One request at a time per client; no pipelining.
 *  - A client told "held" waits as rlock_acquire does on one server, on
 *    its one connection (issue 46): it takes a place in the name's wait
 *    line, then pops its own wake-up list (BLPOP, P{NAME}:wake:ID) with
 *    the timeout of its timer: the holder's PTTL (the next in line), or
 *    LINE_BEAT_MS to keep its place (less often further back).  A nil
 *    reply is its timer, "wake" tries again, and "granted\n<its token>..."
 *    (the baton: the release granted it the lock in its script) is a
 *    grant, checked as one, without a request; counted in "batons".  When
 *    keys < clients every try carries the waiter's id and, for exclusive
 *    locks, the baton's first lease, as rlock run's tries in line do
 *    (lib/lock.c acq_waiter); not when --hold is longer than a third of
 *    that lease, which rlock run would renew and bench does not: those
 *    waiters are told "wake" and ask.
 *  - --limit N and --shared take semaphore places or shared locks; the
 *    exclusion check then counts holders against N (shared: none).
 *  - Mutual exclusion is checked three ways: this process knows which
 *    client holds each name (a grant while another holds it is an
 *    overlap); a release answered 0 means the token no longer held the
 *    lock; and the fence a grant returns must grow.  A holder stops
 *    holding when it sends its release, before the server can grant again.
 *  - Latencies go into log-bucket histograms of fixed size.
 *  - Every reply is decoded strictly (the decoders below); one that does
 *    not decode is an error of the run (unexpected), never a success.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "doctor_int.h"
#include "handle.h"
#include "keys.h"
#include "node.h"
#include "reply.h"
#include "request.h"
#include "wait.h"
#include "rlock_bench.h"

#define NS_PER_MS 1000000LL
#define BACKOFF_NS (10 * NS_PER_MS)	/* after an error reply */
#define TICK_NS (100 * NS_PER_MS)	/* timeouts, progress */
#define MAX_EVENTS 512
#define SOFT_ERROR_LIMIT 1000

/* ---- clock and histogram --------------------------------------------- */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * Values (nanoseconds) below 32 have a bucket each; above, every power of
 * two is cut into 16 buckets, so the error is below 1/32 of the value and
 * the whole range of a uint64_t fits in under 1000 counters.
 */
#define HIST_SUB_BITS 4
#define HIST_SUB (1 << HIST_SUB_BITS)
#define HIST_BUCKETS (HIST_SUB * (64 - HIST_SUB_BITS + 1))

struct hist {
	uint64_t n[HIST_BUCKETS];
	uint64_t count;
	uint64_t max;
	double sum;
};

static unsigned hist_index(uint64_t v)
{
	unsigned e;

	if (v < HIST_SUB)
		return (unsigned)v;
	e = 63 - (unsigned)__builtin_clzll(v);
	return (e - HIST_SUB_BITS + 1) * HIST_SUB +
	       (unsigned)((v >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1));
}

/* The middle of bucket i. */
static double hist_value(unsigned i)
{
	unsigned b = i / HIST_SUB, s = i % HIST_SUB;
	uint64_t lower, width;

	if (b == 0)
		return (double)s;
	lower = (uint64_t)(HIST_SUB + s) << (b - 1);
	width = (uint64_t)1 << (b - 1);
	return (double)lower + (double)(width - 1) / 2.0;
}

static void hist_add(struct hist *h, int64_t v)
{
	uint64_t u = v > 0 ? (uint64_t)v : 0;

	h->n[hist_index(u)]++;
	h->count++;
	h->sum += (double)u;
	if (u > h->max)
		h->max = u;
}

static double hist_quantile(const struct hist *h, double q)
{
	uint64_t want, seen = 0;
	unsigned i;

	if (h->count == 0)
		return 0;
	want = (uint64_t)(q * (double)h->count);
	if ((double)want < q * (double)h->count)
		want++;
	if (want == 0)
		want = 1;
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += h->n[i];
		if (seen >= want) {
			double v = hist_value(i);

			return v > (double)h->max ? (double)h->max : v;
		}
	}
	return (double)h->max;
}

static void hist_report(const struct hist *h, struct rlock_bench_latency *l)
{
	l->count = (long long)h->count;
	l->p50_us = hist_quantile(h, 0.50) / 1000.0;
	l->p90_us = hist_quantile(h, 0.90) / 1000.0;
	l->p99_us = hist_quantile(h, 0.99) / 1000.0;
	l->p999_us = hist_quantile(h, 0.999) / 1000.0;
	l->max_us = (double)h->max / 1000.0;
	l->mean_us = h->count ? h->sum / (double)h->count / 1000.0 : 0;
}

/* ---- state ------------------------------------------------------------ */

enum cstate {
	CS_IDLE,
	CS_PING,	/* PING in flight */
	CS_ACQ,		/* acquire in flight */
	CS_WAIT,	/* told "held": waiting for a message or the timer */
	CS_HOLD,	/* granted, holding until the timer */
	CS_REL,		/* release in flight */
	CS_BACKOFF,	/* after an error reply: op again at the timer */
	CS_DONE,
};

enum op { OP_NONE, OP_PING, OP_ACQ, OP_REL, OP_POP };

struct bclient {
	struct rlock_conn *cmd;
	enum cstate state;
	enum op op;			/* request in flight or to retry */
	int id;
	int name;
	int inflight;
	int eval;			/* next script send uses EVAL */
	int busy_seen;			/* told "held" in this acquire */
	int in_line;			/* has a place in the wait line */
	int outwait;			/* EPOLLOUT registered */
	int hpos;			/* index in the timer heap, -1 none */
	int64_t timer;			/* ns, when hpos >= 0 */
	int64_t t_sent;			/* ns, request sent */
	int64_t t_begin;		/* ns, this acquire began */
	int64_t pop_ns;			/* the BLPOP in flight's timeout */
	int64_t waited_from;		/* CLOCK_BOOTTIME ms, this acquire
					 * began: a baton's stamp is later */
	uint32_t seq;
	long long turns;		/* cycles completed in the lock phase */
	char token[RLOCK_TOKEN_LEN + 1];
	char wid[LINE_ID_LEN + 1];	/* its waiter id */
};

/* The suffixes of a name's keys and channels: its LOCK_NKEYS keys in the
 * scripts' order (cleanup_keys deletes those and the last), then the
 * release channel, the wake-up prefix and the record of the last runs. */
static const char *const name_tails[] = {
	"", KEY_META, KEY_FENCE, KEY_HOLDERS, KEY_HMETA, KEY_LINE, KEY_LEASE,
	KEY_WHO, KEY_LOG, KEY_CHANNEL, KEY_WAKE, KEY_LAST, KEY_GRANT, KEY_HOLD,
};
#define NAME_TAILS (sizeof(name_tails) / sizeof(name_tails[0]))

struct bname {
	char *s[NAME_TAILS];		/* its keys and channels */
	struct lock_names v;		/* the same, for the builders */
	int holder;			/* client holding it, -1 none */
	int nheld;			/* clients holding it */
	int releaser;			/* last client to release it */
	int64_t released_at;		/* ns its last release was sent */
	long long last_fence;
};

struct bench {
	struct rlock *rl;
	const struct rlock_bench_opts *o;
	struct rlock_bench_result *res;
	struct bclient *cl;
	struct bname *nm;
	int nc, nk;
	int ep;
	int *heap;
	int nheap;
	int active;			/* clients not CS_DONE */
	int whole;			/* scripts in their whole layout (a
					 * cluster: rl_node_declares_all) */
	int waiters;			/* keys < clients: tries take a place
					 * in line with the waiter's id */
	int64_t baton_ms;		/* the baton's first lease asked for,
					 * 0 none */
	int pop_broken;			/* BLPOP refused: wait on timers */
	int stopping;
	int rc;				/* first fatal error, RLOCK_OK none */
	enum rlock_bench_phase phase;
	long long claimed;		/* cycles begun */
	long long pings_sent;
	int64_t phase_start, phase_end, last_done, next_tick, next_progress;
	int64_t longest_wait;		/* ns, granted or cut short */
	struct hist h_ping, h_acq, h_rel, h_wait, h_hand;
	long long soft_errors;
	struct rlock_result last_soft;
	struct acquirer who;		/* the holder's metadata of every grant */
	char kind[24];			/* "x", "s" or the limit */
	unsigned seed;
};

const char *rlock_bench_error_name(int kind)
{
	static const char *const names[RLOCK_BENCH_NERR] = {
		[RLOCK_BENCH_ERR_CONNECTION] = "connection",
		[RLOCK_BENCH_ERR_TIMEOUT] = "timeout",
		[RLOCK_BENCH_ERR_OOM] = "oom",
		[RLOCK_BENCH_ERR_READONLY] = "readonly",
		[RLOCK_BENCH_ERR_LOADING] = "loading",
		[RLOCK_BENCH_ERR_BUSY] = "busy_script",
		[RLOCK_BENCH_ERR_WRONGTYPE] = "wrongtype",
		[RLOCK_BENCH_ERR_OTHER] = "other",
		[RLOCK_BENCH_ERR_UNEXPECTED] = "unexpected",
	};

	if (kind < 0 || kind >= RLOCK_BENCH_NERR)
		return "unknown";
	return names[kind];
}

/* ---- timer heap: at most one timer per client ------------------------- */

static void heap_swap(struct bench *b, int i, int j)
{
	int t = b->heap[i];

	b->heap[i] = b->heap[j];
	b->heap[j] = t;
	b->cl[b->heap[i]].hpos = i;
	b->cl[b->heap[j]].hpos = j;
}

static int64_t heap_key(const struct bench *b, int i)
{
	return b->cl[b->heap[i]].timer;
}

static void heap_fix(struct bench *b, int i)
{
	while (i > 0 && heap_key(b, (i - 1) / 2) > heap_key(b, i)) {
		heap_swap(b, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;

		if (l < b->nheap && heap_key(b, l) < heap_key(b, m))
			m = l;
		if (r < b->nheap && heap_key(b, r) < heap_key(b, m))
			m = r;
		if (m == i)
			break;
		heap_swap(b, i, m);
		i = m;
	}
}

static void timer_set(struct bench *b, struct bclient *c, int64_t when)
{
	c->timer = when;
	if (c->hpos < 0) {
		c->hpos = b->nheap;
		b->heap[b->nheap++] = c->id;
	}
	heap_fix(b, c->hpos);
}

static void timer_clear(struct bench *b, struct bclient *c)
{
	int i = c->hpos;

	if (i < 0)
		return;
	c->hpos = -1;
	b->nheap--;
	if (i == b->nheap)
		return;
	b->heap[i] = b->heap[b->nheap];
	b->cl[b->heap[i]].hpos = i;
	heap_fix(b, i);
}

/* ---- errors ----------------------------------------------------------- */

/* Stop the run with code rc and message msg (the first one wins). */
static void fatal(struct bench *b, int rc, const char *msg)
{
	if (b->rc != RLOCK_OK)
		return;
	b->rc = rc;
	snprintf(b->rl->err, sizeof(b->rl->err), "%s", msg);
}

static void conn_failed(struct bench *b, struct rlock_conn *conn)
{
	b->res->errors++;
	b->res->error_kind[RLOCK_BENCH_ERR_CONNECTION]++;
	fatal(b, RLOCK_EUNAVAIL, rl_conn_errstr(conn));
}

static int error_kind(const redisReply *r)
{
	if (rl_reply_starts_with(r, "OOM"))
		return RLOCK_BENCH_ERR_OOM;
	if (rl_reply_starts_with(r, "READONLY"))
		return RLOCK_BENCH_ERR_READONLY;
	if (rl_reply_starts_with(r, "LOADING"))
		return RLOCK_BENCH_ERR_LOADING;
	if (rl_reply_starts_with(r, "BUSY"))
		return RLOCK_BENCH_ERR_BUSY;
	if (rl_reply_starts_with(r, "WRONGTYPE"))
		return RLOCK_BENCH_ERR_WRONGTYPE;
	return RLOCK_BENCH_ERR_OTHER;
}

/*
 * An error reply, or a reply of the wrong shape (r NULL): count it and
 * try the step again after a pause.  A server that keeps refusing ends
 * the run with its own words rather than spinning to the deadline.
 */
static void soft_error(struct bench *b, struct bclient *c,
		       const redisReply *r, int64_t now)
{
	int kind = r != NULL ? error_kind(r) : RLOCK_BENCH_ERR_UNEXPECTED;

	b->res->errors++;
	b->res->error_kind[kind]++;
	b->soft_errors++;
	if (r != NULL) {
		rl_classify_error(r, c->cmd,
				     b->nm[c->name].v.key, &b->last_soft);
	} else {
		b->last_soft.rc = RLOCK_EPROTO;
		snprintf(b->last_soft.err, sizeof(b->last_soft.err),
			 "%s: unexpected reply to %s", rl_conn_addr(c->cmd),
			 c->op == OP_ACQ ? "acquire" :
			 c->op == OP_REL ? "release" :
			 c->op == OP_POP ? "BLPOP" : "PING");
	}
	if (b->soft_errors > SOFT_ERROR_LIMIT &&
	    b->soft_errors > b->res->cycles) {
		fatal(b, b->last_soft.rc, b->last_soft.err);
		return;
	}
	c->state = CS_BACKOFF;
	timer_set(b, c, now + BACKOFF_NS);
}

/* ---- sending ---------------------------------------------------------- */

/* What the transport wants to be woken for, in epoll's words. */
static uint32_t epoll_events(const struct rlock_conn *c)
{
	return EPOLLIN | (rl_conn_events(c) & POLLOUT ? EPOLLOUT : 0);
}

static void watch(struct bench *b, struct bclient *c, int out)
{
	struct epoll_event ev;

	ev.events = EPOLLIN | (out ? EPOLLOUT : 0);
	ev.data.u64 = (uint64_t)c->id * 2;
	if (epoll_ctl(b->ep, EPOLL_CTL_MOD, rl_conn_fd(c->cmd), &ev) == 0)
		c->outwait = out;
}

/* rl_conn_send has written the request at once (a failed write closed the
 * connection); what the socket did not take waits for EPOLLOUT. */
static void sent(struct bench *b, struct bclient *c, int64_t now)
{
	c->t_sent = now;
	c->inflight = 1;
	if (rl_conn_fd(c->cmd) < 0) {
		conn_failed(b, c->cmd);
		return;
	}
	if (rl_conn_events(c->cmd) & POLLOUT)
		watch(b, c, 1);
}

static void send_ping(struct bench *b, struct bclient *c, int64_t now)
{
	const char *argv[1] = { "PING" };

	b->pings_sent++;
	c->state = CS_PING;
	c->op = OP_PING;
	if (rl_conn_send(c->cmd, 1, argv, NULL) != RLOCK_OK) {
		fatal(b, RLOCK_ESYS, rl_conn_errstr(c->cmd));
		return;
	}
	sent(b, c, now);
}

static void send_acquire(struct bench *b, struct bclient *c, int64_t now)
{
	struct request q;

	/* A busy answer without details; a place in line, with the baton's
	 * lease, when clients contend (the wake-up list needs no setup). */
	rl_req_acquire(&q, &b->nm[c->name].v, c->token, b->o->ttl_ms, &b->who,
		       &(struct ask){ .kind = b->kind,
				      .waiter = b->waiters ? c->wid : "",
				      .join = b->waiters,
				      .baton_ms = b->baton_ms }, &b->rl->hist);
	c->state = CS_ACQ;
	c->op = OP_ACQ;
	if (rl_req_send(c->cmd, &q, c->eval, b->whole ||
			rl_node_declares_all(&b->rl->node[0])) != RLOCK_OK) {
		fatal(b, RLOCK_ESYS, rl_conn_errstr(c->cmd));
		return;
	}
	c->eval = 0;
	sent(b, c, now);
}

/* The wake-up list of c, which the scripts push to (line.lua's post). */
static void wake_key(const struct bench *b, const struct bclient *c,
		     char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", b->nm[c->name].v.wake, c->wid);
}

/* Wait in line as rlock does on one server: pop c's wake-up list on its
 * command connection, for ms at most (its timer). */
static void send_pop(struct bench *b, struct bclient *c, int64_t ms,
		     int64_t now)
{
	char key[RLOCK_KEY_MAX + 32], tmo[32];
	const char *argv[3] = { "BLPOP", key, tmo };

	wake_key(b, c, key, sizeof(key));
	snprintf(tmo, sizeof(tmo), "%lld.%03lld", (long long)ms / 1000,
		 (long long)ms % 1000);
	c->state = CS_WAIT;
	c->op = OP_POP;
	c->pop_ns = ms * NS_PER_MS;
	if (rl_conn_send(c->cmd, 3, argv, NULL) != RLOCK_OK) {
		fatal(b, RLOCK_ESYS, rl_conn_errstr(c->cmd));
		return;
	}
	sent(b, c, now);
}

static void send_release(struct bench *b, struct bclient *c, int64_t now)
{
	struct bname *n = &b->nm[c->name];
	struct request q;

	if (c->state == CS_HOLD) {
		/* The holder stops holding when it asks to release: the
		 * server cannot grant the name to another before that. */
		if (n->holder == c->id)
			n->holder = -1;
		n->nheld--;
		n->released_at = now;
		n->releaser = c->id;
	}
	c->state = CS_REL;
	c->op = OP_REL;
	rl_req_release(&q, &n->v, c->token, &b->rl->hist, NULL, 0, 0);
	if (rl_req_send(c->cmd, &q, c->eval, b->whole ||
			rl_node_declares_all(&b->rl->node[0])) != RLOCK_OK) {
		fatal(b, RLOCK_ESYS, rl_conn_errstr(c->cmd));
		return;
	}
	c->eval = 0;
	sent(b, c, now);
}

static void set_done(struct bench *b, struct bclient *c)
{
	timer_clear(b, c);
	if (c->state != CS_DONE)
		b->active--;
	c->state = CS_DONE;
	c->op = OP_NONE;
}

/* The run ends while c waits for a lock: its wait still counts towards
 * the longest one.  A pop still blocked closes its connection (the
 * server drops it at once); whatever next uses it opens it again. */
static void abandon(struct bench *b, struct bclient *c, int64_t now)
{
	if (c->busy_seen) {
		b->res->abandoned++;
		if (now - c->t_begin > b->longest_wait)
			b->longest_wait = now - c->t_begin;
	}
	if (c->inflight && c->op == OP_POP) {
		rl_conn_close(c->cmd);
		c->inflight = 0;
	}
	set_done(b, c);
}

/* Start the next cycle of c, or stop it when the run has enough. */
static void begin_cycle(struct bench *b, struct bclient *c, int64_t now)
{
	static const char hex[] = "0123456789abcdef";
	uint32_t s;
	int i;

	if (b->stopping || (b->o->cycles > 0 && b->claimed >= b->o->cycles)) {
		set_done(b, c);
		return;
	}
	b->claimed++;
	/* A fresh token per cycle: a random base per client and a counter,
	 * so that a stale release can never match a later grant. */
	s = ++c->seq;
	for (i = RLOCK_TOKEN_LEN - 1; i >= RLOCK_TOKEN_LEN - 8; i--) {
		c->token[i] = hex[s & 15];
		s >>= 4;
	}
	c->t_begin = now;
	if (b->baton_ms > 0)
		c->waited_from = rlock_boot_ms();
	c->busy_seen = 0;
	send_acquire(b, c, now);
}

/* ---- replies, decoded ------------------------------------------------- */

/* What the acquire script said: a grant with its fence, or busy with what
 * the wait is timed by. */
struct acq_reply {
	int granted;
	long long fence;		/* granted */
	long long pttl, place;		/* busy: the lease left, our place */
	int joined;			/* busy: this try joined the line */
};

/* A grant (rl_decode_grant) or a busy answer without details (rl_parse_busy);
 * nothing else is asked for.  Returns 0, or -1. */
static int decode_acquire(const redisReply *r, struct acq_reply *a)
{
	struct rlock_holder h;
	long long flag;
	int recorded;

	memset(a, 0, sizeof(*a));
	if (r->type != REDIS_REPLY_STRING && rl_elem_num(r, 0, 0, 1, &flag) != 0)
		return -1;
	if (r->type == REDIS_REPLY_STRING || flag == 1) {
		a->granted = 1;
		return rl_decode_grant(r, &a->fence, &recorded, NULL);
	}
	memset(&h, 0, sizeof(h));
	if (r->elements != 7 || rl_parse_busy(r, &h, &a->joined, NULL) != 0)
		return -1;
	a->pttl = h.ttl_ms;
	a->place = h.place;
	return 0;
}

/* The release script's answer: 0 not held, 1 released, 2 and 3 released
 * with a wake-up refused or not needed.  Returns 0 with *v, or -1. */
static int decode_release(const redisReply *r, long long *v)
{
	if (r->type != REDIS_REPLY_INTEGER || r->integer < 0 ||
	    r->integer > 3)
		return -1;
	*v = r->integer;
	return 0;
}

static int is_pong(const redisReply *r)
{
	return r->type == REDIS_REPLY_STATUS && r->len == 4 &&
	       memcmp(r->str, "PONG", 4) == 0;
}

/* ---- replies ---------------------------------------------------------- */

static unsigned jitter(struct bench *b, unsigned max)
{
	return max > 0 ? (unsigned)rand_r(&b->seed) % max : 0;
}

static void on_granted(struct bench *b, struct bclient *c, long long fence,
		       int64_t now)
{
	struct bname *n = &b->nm[c->name];

	/* A semaphore: at most limit holders.  Exclusive: one holder, and
	 * each grant's fence above the last (shared and semaphore grants may
	 * be answered out of order). */
	if (++n->nheld > b->o->limit && b->o->limit > 1)
		b->res->overlaps++;
	if (b->o->limit <= 1 && !b->o->shared) {
		if (n->holder >= 0 && n->holder != c->id)
			b->res->overlaps++;
		n->holder = c->id;
		if (fence <= n->last_fence)
			b->res->fence_regressions++;
		n->last_fence = fence;
	}
	c->in_line = 0;
	hist_add(&b->h_wait, now - c->t_begin);
	if (now - c->t_begin > b->longest_wait)
		b->longest_wait = now - c->t_begin;
	if (c->busy_seen && n->released_at > 0 && n->releaser != c->id)
		hist_add(&b->h_hand, now - n->released_at);
	else if (n->releaser == c->id)
		b->res->reacquired++;
	c->state = CS_HOLD;
	if (b->o->hold_ms > 0)
		timer_set(b, c, now + b->o->hold_ms * NS_PER_MS);
	else
		send_release(b, c, now);
}

static void on_busy(struct bench *b, struct bclient *c,
		    const struct acq_reply *a, int64_t now)
{
	int64_t ms;

	b->res->busy++;
	c->busy_seen = 1;
	if (a->joined) {
		if (c->in_line)
			b->res->requeued++;
		c->in_line = 1;
	}
	if (b->stopping) {
		abandon(b, c, now);
		return;
	}
	/* As rlock_acquire (lib/wait.c wait_turn, pop_wait): a wake-up
	 * pushed while the request was on its way waits in the list. */
	ms = rl_line_wait_ms(a->pttl, a->place, c->in_line,
			     b->waiters && !b->pop_broken, jitter(b, 1000));
	if (b->waiters && !b->pop_broken && ms >= 10) {
		send_pop(b, c, ms, now);
		return;
	}
	c->state = CS_WAIT;
	timer_set(b, c, now + ms * NS_PER_MS);
}

/* A script met a key it had not declared where a slot moves: a cluster,
 * whose scripts declare every key from now on (as fanout.c's on_reply). */
static int undeclared(struct bench *b, const redisReply *r)
{
	if (b->whole || (memmem(r->str, r->len, "non local key", 13) == NULL &&
			 memmem(r->str, r->len, "do not hash to the same slot",
				28) == NULL))
		return 0;
	b->whole = 1;
	return 1;
}

static void on_acquire_reply(struct bench *b, struct bclient *c,
			     const redisReply *r, int64_t now)
{
	struct acq_reply a;

	if (r->type == REDIS_REPLY_ERROR) {
		if (rl_reply_starts_with(r, "NOSCRIPT") && !c->eval) {
			b->res->noscript++;
			c->eval = 1;
			send_acquire(b, c, now);
			return;
		}
		if (undeclared(b, r)) {
			send_acquire(b, c, now);
			return;
		}
		soft_error(b, c, r, now);
		return;
	}
	if (decode_acquire(r, &a) != 0) {
		soft_error(b, c, NULL, now);
		return;
	}
	hist_add(&b->h_acq, now - c->t_sent);
	b->res->attempts++;
	if (a.granted)
		on_granted(b, c, a.fence, now);
	else
		on_busy(b, c, &a, now);
}

static void on_release_reply(struct bench *b, struct bclient *c,
			     const redisReply *r, int64_t now)
{
	long long held;

	if (r->type == REDIS_REPLY_ERROR) {
		if (rl_reply_starts_with(r, "NOSCRIPT") && !c->eval) {
			b->res->noscript++;
			c->eval = 1;
			send_release(b, c, now);
			return;
		}
		if (undeclared(b, r)) {
			send_release(b, c, now);
			return;
		}
		soft_error(b, c, r, now);
		return;
	}
	if (decode_release(r, &held) != 0) {
		soft_error(b, c, NULL, now);
		return;
	}
	hist_add(&b->h_rel, now - c->t_sent);
	if (held == 0) {
		/* The token no longer held the lock: someone else could
		 * have taken it while we thought we held it. */
		b->res->not_ours++;
	}
	b->res->cycles++;
	c->turns++;
	b->last_done = now;
	if (b->o->gap_ms > 0 && !b->stopping) {
		/* A process that exits and is started again. */
		c->state = CS_IDLE;
		timer_set(b, c, now + b->o->gap_ms * NS_PER_MS);
		return;
	}
	begin_cycle(b, c, now);
}

static void on_ping_reply(struct bench *b, struct bclient *c,
			  const redisReply *r, int64_t now)
{
	if (r->type == REDIS_REPLY_ERROR) {
		struct rlock_result e;

		rl_classify_error(r, c->cmd, "PING", &e);
		b->res->errors++;
		b->res->error_kind[error_kind(r)]++;
		fatal(b, e.rc, e.err);
		return;
	}
	if (!is_pong(r)) {
		soft_error(b, c, NULL, now);
		return;
	}
	hist_add(&b->h_ping, now - c->t_sent);
	b->res->pings++;
	b->last_done = now;
	if (b->stopping ||
	    (b->o->ping_count > 0 && b->pings_sent >= b->o->ping_count)) {
		set_done(b, c);
		return;
	}
	send_ping(b, c, now);
}

/*
 * A baton popped from c's list with c's token: a grant, which rlock takes
 * as such (lib/lock.c one_popped): timed from the release that granted it,
 * STAMP + AGE by our clock.  One older than rlock takes is confirmed by a
 * request, which finds our token, as rlock asks.
 */
static void on_baton(struct bench *b, struct bclient *c,
		     const struct baton *bt, int64_t now)
{
	int64_t boot = rlock_boot_ms(), len = b->baton_ms, t0;

	t0 = bt->stamp + bt->age - rlock_drift_ms(bt->age);
	if (t0 > boot)
		t0 = bt->stamp;
	if (len == 0 || bt->stamp < c->waited_from || bt->stamp > boot ||
	    boot - t0 >= BATON_REFENCE_MS ||
	    boot - t0 >= (len - rlock_safety_margin_ms(len)) / 2) {
		send_acquire(b, c, now);
		return;
	}
	b->res->batons++;
	on_granted(b, c, bt->fence, now);
}

/* What the pop brought: nil (its timer), [its key, "wake"] (try again),
 * or [its key, "granted\n..."] (a baton, tried again when it is an
 * earlier cycle's). */
static void on_pop_reply(struct bench *b, struct bclient *c,
			 const redisReply *r, int64_t now)
{
	char key[RLOCK_KEY_MAX + 32];
	const redisReply *k, *m;
	struct baton bt;

	if (r->type == REDIS_REPLY_ERROR) {
		/* A server before 6.0 (no fraction of a second), an ACL
		 * without BLPOP: timers from now on, as rlock waits. */
		b->pop_broken = 1;
		soft_error(b, c, r, now);
		return;
	}
	if (r->type == REDIS_REPLY_NIL) {
		b->res->timer_wakeups++;
		send_acquire(b, c, now);
		return;
	}
	wake_key(b, c, key, sizeof(key));
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    (k = r->element[0])->type != REDIS_REPLY_STRING ||
	    (m = r->element[1])->type != REDIS_REPLY_STRING ||
	    k->len != strlen(key) || memcmp(k->str, key, k->len) != 0 ||
	    ((m->len != 4 || memcmp(m->str, "wake", 4) != 0) &&
	     rl_decode_baton(m->str, m->len, &bt) != 0)) {
		soft_error(b, c, NULL, now);
		return;
	}
	b->res->wakeups++;
	if (m->len != 4 && strcmp(bt.token, c->token) == 0)
		on_baton(b, c, &bt, now);
	else
		send_acquire(b, c, now);
}

static void on_cmd_ready(struct bench *b, struct bclient *c, short revents)
{
	redisReply *r;
	int got;

	if (rl_conn_on_ready(c->cmd, revents) != RLOCK_OK) {
		conn_failed(b, c->cmd);
		return;
	}
	if (c->outwait && !(rl_conn_events(c->cmd) & POLLOUT))
		watch(b, c, 0);
	/* Input held inside the transport (TLS) is invisible to epoll. */
	while (rl_conn_buffered(c->cmd)) {
		if (rl_conn_on_ready(c->cmd, POLLIN) != RLOCK_OK) {
			conn_failed(b, c->cmd);
			return;
		}
	}
	while (b->rc == RLOCK_OK && (got = rl_conn_take_reply(c->cmd, &r)) != 0) {
		int64_t now = now_ns();

		if (got < 0) {
			conn_failed(b, c->cmd);
			return;
		}
		if (!c->inflight) {
			/* Nothing asked: a server that talks out of turn
			 * cannot be measured. */
			freeReplyObject(r);
			b->res->errors++;
			b->res->error_kind[RLOCK_BENCH_ERR_UNEXPECTED]++;
			fatal(b, RLOCK_EPROTO, "unexpected reply");
			return;
		}
		c->inflight = 0;
		switch (c->op) {
		case OP_PING:
			on_ping_reply(b, c, r, now);
			break;
		case OP_ACQ:
			on_acquire_reply(b, c, r, now);
			break;
		case OP_REL:
			on_release_reply(b, c, r, now);
			break;
		case OP_POP:
			on_pop_reply(b, c, r, now);
			break;
		default:
			break;
		}
		freeReplyObject(r);
	}
}

static void on_timer(struct bench *b, struct bclient *c, int64_t now)
{
	switch (c->state) {
	case CS_IDLE:
		begin_cycle(b, c, now);
		break;
	case CS_HOLD:
		send_release(b, c, now);
		break;
	case CS_WAIT:
		b->res->timer_wakeups++;
		send_acquire(b, c, now);
		break;
	case CS_BACKOFF:
		if (c->op == OP_ACQ || c->op == OP_POP)
			send_acquire(b, c, now);
		else if (c->op == OP_REL)
			send_release(b, c, now);
		else
			send_ping(b, c, now);
		break;
	default:
		break;
	}
}

/* The deadline passed or the run was canceled: let cycles under way end
 * (a held lock is released), start no new ones. */
static void stop(struct bench *b)
{
	int64_t now = now_ns();

	if (b->stopping)
		return;
	b->stopping = 1;
	for (int i = 0; i < b->nc; i++) {
		struct bclient *c = &b->cl[i];

		if (c->state == CS_WAIT || (c->state == CS_BACKOFF &&
					     (c->op == OP_ACQ || c->op == OP_POP)))
			abandon(b, c, now);
		else if (c->state == CS_IDLE ||
			 (c->state == CS_BACKOFF && c->op == OP_PING))
			set_done(b, c);
	}
}

/* ---- the loop ---------------------------------------------------------- */

static void check_timeouts(struct bench *b, int64_t now)
{
	int64_t limit = b->rl->copts.io_timeout_ms * NS_PER_MS;

	for (int i = 0; i < b->nc; i++) {
		struct bclient *c = &b->cl[i];

		/* A pop is answered at its timeout: the limit runs from then. */
		if (!c->inflight || now - c->t_sent <= limit +
		    (c->op == OP_POP ? c->pop_ns : 0))
			continue;
		rl_conn_timed_out(c->cmd);
		b->res->errors++;
		b->res->error_kind[RLOCK_BENCH_ERR_TIMEOUT]++;
		fatal(b, RLOCK_EUNAVAIL, rl_conn_errstr(c->cmd));
		return;
	}
}

static void fill_live(struct bench *b, int64_t now)
{
	double el = (double)(now - b->phase_start) / 1e9;

	b->res->phase = b->phase;
	if (b->phase == RLOCK_BENCH_PING) {
		b->res->ping_elapsed_s = el;
		b->res->pings_per_s = el > 0 ? (double)b->res->pings / el : 0;
	} else if (b->phase == RLOCK_BENCH_LOCK) {
		b->res->elapsed_s = el;
		b->res->cycles_per_s = el > 0 ? (double)b->res->cycles / el : 0;
	}
	b->res->violations = b->res->overlaps + b->res->not_ours +
			     b->res->fence_regressions;
}

static void on_cancel(struct bench *b)
{
	/* Level-triggered: stop watching it, or every wait returns at once. */
	epoll_ctl(b->ep, EPOLL_CTL_DEL, b->o->cancel_fd, NULL);
	b->res->canceled = 1;
	stop(b);
}

/* Run the loop until every client is done or a fatal error.  deadline: ns
 * to stop starting new work, 0 none. */
static void run_loop(struct bench *b, int64_t deadline)
{
	struct epoll_event ev[MAX_EVENTS];
	int64_t now = now_ns();

	b->next_tick = now + TICK_NS;
	b->next_progress = now + 2 * TICK_NS;
	while (b->active > 0 && b->rc == RLOCK_OK) {
		int64_t wake = b->next_tick;
		int n, i, ms;

		if (b->nheap > 0 && b->cl[b->heap[0]].timer < wake)
			wake = b->cl[b->heap[0]].timer;
		if (deadline > 0 && !b->stopping && deadline < wake)
			wake = deadline;
		now = now_ns();
		ms = wake <= now ? 0 :
			(int)((wake - now + NS_PER_MS - 1) / NS_PER_MS);
		n = epoll_wait(b->ep, ev, MAX_EVENTS, ms);
		if (n < 0 && errno != EINTR) {
			char msg[200];

			snprintf(msg, sizeof(msg), "epoll_wait: %s",
				 strerror(errno));
			fatal(b, RLOCK_ESYS, msg);
			break;
		}
		for (i = 0; i < n && b->rc == RLOCK_OK; i++) {
			uint64_t u = ev[i].data.u64;
			short re = 0;

			if (u == UINT64_MAX) {
				on_cancel(b);
				continue;
			}
			if (ev[i].events & EPOLLIN)
				re |= POLLIN;
			if (ev[i].events & EPOLLOUT)
				re |= POLLOUT;
			if (ev[i].events & EPOLLERR)
				re |= POLLERR;
			if (ev[i].events & EPOLLHUP)
				re |= POLLHUP;
			/* A pop abandoned in this batch closed its
			 * connection. */
			if (rl_conn_fd(b->cl[u / 2].cmd) >= 0)
				on_cmd_ready(b, &b->cl[u / 2], re);
		}
		now = now_ns();
		while (b->rc == RLOCK_OK && b->nheap > 0 &&
		       b->cl[b->heap[0]].timer <= now) {
			struct bclient *c = &b->cl[b->heap[0]];

			timer_clear(b, c);
			on_timer(b, c, now);
		}
		if (deadline > 0 && now >= deadline)
			stop(b);
		if (now >= b->next_tick) {
			b->next_tick = now + TICK_NS;
			check_timeouts(b, now);
		}
		if (now >= b->next_progress) {
			b->next_progress = now + 2 * TICK_NS;
			fill_live(b, now);
			if (b->o->progress != NULL)
				b->o->progress(b->res, b->o->progress_arg);
		}
	}
	b->phase_end = b->last_done > b->phase_start ? b->last_done : now_ns();
}

/* ---- setup and the phases ---------------------------------------------- */

static int bench_errno(struct bench *b, const char *what)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "%s: %s", what, strerror(errno));
	fatal(b, RLOCK_ESYS, msg);
	return b->rc;
}

static char *key_of(const char *prefix, const char *name, const char *tail)
{
	size_t n = strlen(prefix) + strlen(name) + strlen(tail) + 3;
	char *s = malloc(n);

	if (s != NULL)
		rl_lock_key(s, n, prefix, name, tail);
	return s;
}

static int bench_names(struct bench *b)
{
	unsigned char rnd[4] = { 0 };
	char name[64];

	/* Names private to this run, so that a bench never meets a real
	 * lock, nor another bench's. */
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return bench_errno(b, "getrandom");
	b->seed = (unsigned)rnd[0] << 24 | (unsigned)rnd[1] << 16 |
		  (unsigned)rnd[2] << 8 | rnd[3];
	for (int i = 0; i < b->nk; i++) {
		struct bname *n = &b->nm[i];

		snprintf(name, sizeof(name), "bench-%02x%02x%02x%02x-%d",
			 rnd[0], rnd[1], rnd[2], rnd[3], i);
		for (size_t t = 0; t < NAME_TAILS; t++) {
			n->s[t] = key_of(b->rl->prefix, name, name_tails[t]);
			if (n->s[t] == NULL)
				return bench_errno(b, "out of memory");
		}
		n->v = (struct lock_names){ n->s[0], n->s[1], n->s[2],
					    n->s[3], n->s[4], n->s[5],
					    n->s[6], n->s[7], n->s[9],
					    n->s[10], n->s[8], NULL, n->s[11],
					    n->s[12], n->s[13],
					    rl_key_slot(n->s[0], strlen(n->s[0])) };
		n->holder = -1;
		n->releaser = -1;
	}
	return RLOCK_OK;
}

/* A connection to the server of slot: the master the sentinels name, or
 * on a cluster the master that owns the slot, so that no request is ever
 * redirected. */
static int open_conn(struct bench *b, int slot, struct rlock_conn **cp)
{
	const struct rlock_conn_opts *o;
	const struct rlock_url *u = rl_node_url(&b->rl->node[0], slot, &o);
	struct rlock_conn *c;

	c = rl_conn_new(u, 0, o);
	if (c == NULL)
		return bench_errno(b, "out of memory");
	*cp = c;
	if (rl_conn_open(c, rlock_mono_ms() + b->rl->copts.connect_timeout_ms) !=
	    RLOCK_OK) {
		fatal(b, RLOCK_EUNAVAIL, rl_conn_errstr(c));
		return b->rc;
	}
	return RLOCK_OK;
}

/* The servers: the master the sentinels name, or a cluster's slot map
 * (one CLUSTER SLOTS; a plain server refuses it and is the one server).
 * The connection that asked is closed: the run holds one per client. */
static int find_servers(struct bench *b)
{
	struct rlock_node *n = &b->rl->node[0];
	size_t m[NODE_MAX_PEERS];

	if (rl_node_masters(n, 0, m, NODE_MAX_PEERS) < 0) {
		fatal(b, RLOCK_EUNAVAIL, rl_node_errstr(n));
		return b->rc;
	}
	rl_node_drop(n);
	return RLOCK_OK;
}

static int setup(struct bench *b)
{
	char id[RLOCK_TOKEN_LEN + 1];
	struct epoll_event ev;
	int64_t t0 = now_ns();
	int i;

	b->cl = calloc((size_t)b->nc, sizeof(*b->cl));
	b->nm = calloc((size_t)b->nk, sizeof(*b->nm));
	b->heap = calloc((size_t)b->nc, sizeof(*b->heap));
	if (b->cl == NULL || b->nm == NULL || b->heap == NULL)
		return bench_errno(b, "out of memory");
	if (bench_names(b) != RLOCK_OK)
		return b->rc;
	b->ep = epoll_create1(EPOLL_CLOEXEC);
	if (b->ep < 0)
		return bench_errno(b, "epoll_create1");
	for (i = 0; i < b->nc; i++) {
		struct bclient *c = &b->cl[i];

		c->id = i;
		c->name = i % b->nk;
		c->hpos = -1;
		if (rlock_make_token(c->token) != 0)
			return bench_errno(b, "getrandom");
		if (rlock_make_token(id) != 0)
			return bench_errno(b, "getrandom");
		memcpy(c->wid, id, LINE_ID_LEN);
	}
	if (find_servers(b) != RLOCK_OK)
		return b->rc;
	for (i = 0; i < b->nc; i++) {
		const struct bname *nm = &b->nm[b->cl[i].name];

		if (open_conn(b, nm->v.slot, &b->cl[i].cmd) != RLOCK_OK)
			return b->rc;
	}
	snprintf(b->res->server, sizeof(b->res->server), "%s",
		 rl_conn_addr(b->cl[0].cmd));
	for (i = 0; i < b->nc; i++) {
		ev.events = epoll_events(b->cl[i].cmd);
		ev.data.u64 = (uint64_t)i * 2;
		if (epoll_ctl(b->ep, EPOLL_CTL_ADD, rl_conn_fd(b->cl[i].cmd),
			      &ev) != 0)
			return bench_errno(b, "epoll_ctl");
	}
	if (b->o->cancel_fd >= 0) {
		ev.events = EPOLLIN;
		ev.data.u64 = UINT64_MAX;
		if (epoll_ctl(b->ep, EPOLL_CTL_ADD, b->o->cancel_fd, &ev) != 0)
			return bench_errno(b, "epoll_ctl");
	}
	b->res->setup_ms = (now_ns() - t0) / NS_PER_MS;
	return RLOCK_OK;
}

static void phase_begin(struct bench *b, enum rlock_bench_phase p)
{
	b->phase = p;
	b->res->phase = p;
	b->active = b->nc;
	b->stopping = 0;
	b->phase_start = now_ns();
	b->last_done = 0;
	for (int i = 0; i < b->nc; i++)
		b->cl[i].state = CS_IDLE;
}

static void ping_phase(struct bench *b)
{
	int64_t deadline = 0;

	phase_begin(b, RLOCK_BENCH_PING);
	if (b->o->ping_count <= 0)
		deadline = b->phase_start + b->o->ping_ms * NS_PER_MS;
	for (int i = 0; i < b->nc && b->rc == RLOCK_OK; i++) {
		if (b->o->ping_count > 0 && b->pings_sent >= b->o->ping_count)
			set_done(b, &b->cl[i]);
		else
			send_ping(b, &b->cl[i], now_ns());
	}
	run_loop(b, deadline);
	b->res->ping_elapsed_s = (double)(b->phase_end - b->phase_start) / 1e9;
	if (b->res->ping_elapsed_s > 0)
		b->res->pings_per_s = (double)b->res->pings /
				      b->res->ping_elapsed_s;
	hist_report(&b->h_ping, &b->res->ping);
}

/* The server's CPU seconds (user + system) from INFO, or -1: also when
 * INFO is refused (an ACL user without +info) or has no such fields, which
 * costs the report one figure, not the run.  Fields that are there but do
 * not read are an error of the run (unexpected). */
static double server_cpu(struct bench *b)
{
	const char *argv[2] = { "INFO", "cpu" };
	struct rlock_conn *c = b->cl[0].cmd;
	redisReply *r = NULL;
	struct info *in;
	long long sys, user;
	double total = -1;
	int rs, ru;

	if (rl_conn_call(c, rlock_mono_ms() + b->rl->copts.io_timeout_ms, -1, 2,
			 argv, NULL, &r) != RLOCK_OK) {
		fatal(b, RLOCK_EUNAVAIL, rl_conn_errstr(c));
		return -1;
	}
	if (r->type == REDIS_REPLY_STRING && (in = malloc(sizeof(*in))) !=
	    NULL) {
		rl_info_parse(in, r->str, r->len);
		rs = rl_info_seconds(in, "used_cpu_sys", &sys);
		ru = rl_info_seconds(in, "used_cpu_user", &user);
		if (rs == INFO_OK && ru == INFO_OK)
			total = (double)sys / 1e6 + (double)user / 1e6;
		else if (rs == INFO_BAD || ru == INFO_BAD) {
			b->res->errors++;
			b->res->error_kind[RLOCK_BENCH_ERR_UNEXPECTED]++;
		}
		free(in);
	} else if (r->type != REDIS_REPLY_STRING &&
		   r->type != REDIS_REPLY_ERROR) {
		b->res->errors++;
		b->res->error_kind[RLOCK_BENCH_ERR_UNEXPECTED]++;
	}
	freeReplyObject(r);
	return total;
}

static double cpu_now(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* How evenly the clients' turns were shared: the fewest and the most
 * cycles of one client, how many had none, and Jain's index (1: all had
 * as many; 1/C: one had them all). */
static void fairness(struct bench *b)
{
	double sum = 0, sq = 0;
	struct rlock_bench_result *res = b->res;

	res->turns_min = -1;
	for (int i = 0; i < b->nc; i++) {
		long long t = b->cl[i].turns;

		if (res->turns_min < 0 || t < res->turns_min)
			res->turns_min = t;
		if (t > res->turns_max)
			res->turns_max = t;
		if (t == 0)
			res->starved++;
		sum += (double)t;
		sq += (double)t * (double)t;
	}
	res->fairness = sq > 0 ? sum * sum / ((double)b->nc * sq) : 0;
}

static void lock_phase(struct bench *b)
{
	int64_t deadline = 0;
	double cpu0, scpu0, scpu1;

	scpu0 = server_cpu(b);
	if (b->rc != RLOCK_OK)
		return;
	cpu0 = cpu_now();
	phase_begin(b, RLOCK_BENCH_LOCK);
	if (b->o->cycles <= 0)
		deadline = b->phase_start + b->o->duration_ms * NS_PER_MS;
	for (int i = 0; i < b->nc && b->rc == RLOCK_OK; i++)
		begin_cycle(b, &b->cl[i], now_ns());
	run_loop(b, deadline);
	fairness(b);
	b->res->cpu_s = cpu_now() - cpu0;
	b->res->elapsed_s = (double)(b->phase_end - b->phase_start) / 1e9;
	if (b->res->elapsed_s > 0)
		b->res->cycles_per_s = (double)b->res->cycles /
				       b->res->elapsed_s;
	if (b->rc != RLOCK_OK)
		return;
	scpu1 = server_cpu(b);
	b->res->server_cpu_s = scpu0 >= 0 && scpu1 >= 0 ? scpu1 - scpu0 : -1;
}

/*
 * Delete every key of the run, fences and histories included (they never
 * expire, or only in days): one DEL per name (a cluster refuses the keys
 * of several slots in one command) and one per waiter's wake-up list (a
 * wake-up that came as the run ended), pipelined on one connection to
 * each server that holds names.  Best effort: the result stands whatever
 * happens here.
 */
static void cleanup_keys(struct bench *b)
{
	const struct rlock_node *n = &b->rl->node[0];
	char *done = calloc((size_t)b->nk, 1);
	int first = 0;

	while (done != NULL && first < b->nk) {
		const struct rlock_conn_opts *o;
		const struct rlock_url *u = rl_node_url(n, b->nm[first].v.slot, &o);
		struct rlock_conn *c = rl_conn_new(u, 0, o);
		int64_t deadline = rlock_mono_ms() + o->io_timeout_ms;
		int sent = 0;

		if (c == NULL || rl_conn_open(c, rlock_mono_ms() +
					      o->connect_timeout_ms) != RLOCK_OK) {
			rl_conn_free(c);
			break;
		}
		for (int i = first; i < b->nk; i++) {
			const char *argv[4 + LOCK_NKEYS] = { "DEL" };
			const struct rlock_conn_opts *oi;

			if (done[i] || rl_node_url(n, b->nm[i].v.slot, &oi) != u)
				continue;
			done[i] = 1;
			for (int t = 0; t < LOCK_NKEYS; t++)
				argv[1 + t] = b->nm[i].s[t];
			argv[1 + LOCK_NKEYS] = b->nm[i].v.last;
			argv[2 + LOCK_NKEYS] = b->nm[i].v.grant;
			argv[3 + LOCK_NKEYS] = b->nm[i].v.hold;
			if (rl_conn_send(c, 4 + LOCK_NKEYS, argv, NULL) ==
			    RLOCK_OK)
				sent++;
			for (int j = i; b->waiters && j < b->nc; j += b->nk) {
				char key[RLOCK_KEY_MAX + 32];

				wake_key(b, &b->cl[j], key, sizeof(key));
				argv[1] = key;
				if (rl_conn_send(c, 2, argv, NULL) == RLOCK_OK)
					sent++;
			}
		}
		while (sent-- > 0) {
			redisReply *r = NULL;

			if (rl_conn_wait_reply(c, deadline, -1, &r) != RLOCK_OK)
				break;
			freeReplyObject(r);
		}
		rl_conn_free(c);
		while (first < b->nk && done[first])
			first++;
	}
	free(done);
}

static void teardown(struct bench *b)
{
	if (b->cl != NULL) {
		for (int i = 0; i < b->nc; i++)
			rl_conn_free(b->cl[i].cmd);
	}
	if (b->nm != NULL) {
		for (int i = 0; i < b->nk; i++) {
			for (size_t t = 0; t < NAME_TAILS; t++)
				free(b->nm[i].s[t]);
		}
	}
	if (b->ep >= 0)
		close(b->ep);
	free(b->cl);
	free(b->nm);
	free(b->heap);
}

int rlock_bench(struct rlock *rl, const struct rlock_bench_opts *o,
		struct rlock_bench_result *res)
{
	struct bench b;

	memset(res, 0, sizeof(*res));
	memset(&b, 0, sizeof(b));
	res->server_cpu_s = -1;
	rl->err[0] = '\0';
	b.rl = rl;
	b.o = o;
	b.res = res;
	b.ep = -1;
	b.nc = o->clients;
	b.nk = o->keys > 0 ? o->keys : o->clients;
	if (rl->nnode != 1) {
		rl_set_error(rl->err, sizeof(rl->err), "bench drives one "
			     "server: give one --url");
		return RLOCK_EUSAGE;
	}
	if (b.nc < 1 || b.nk < 1 || b.nk > b.nc || o->ttl_ms <= 0 ||
	    o->hold_ms < 0 || o->hold_ms >= o->ttl_ms ||
	    (o->cycles <= 0 && o->duration_ms <= 0)) {
		rl_set_error(rl->err, sizeof(rl->err), "invalid bench options");
		return RLOCK_EUSAGE;
	}
	if (o->shared && o->limit > 1) {
		rl_set_error(rl->err, sizeof(rl->err), "invalid bench options");
		return RLOCK_EUSAGE;
	}
	rlock_kind(&(struct rlock_acquire_opts){ .shared = o->shared,
						 .limit = o->limit },
		   b.kind, sizeof(b.kind));
	res->clients = b.nc;
	res->keys = b.nk;
	b.waiters = b.nk < b.nc;
	/* As lib/lock.c acq_waiter: exclusive locks only. */
	if (b.waiters && strcmp(b.kind, "x") == 0) {
		int64_t bm = LINE_LEASE_MS + rlock_safety_margin_ms(o->ttl_ms);

		if (bm > o->ttl_ms)
			bm = o->ttl_ms;
		if (o->hold_ms <= bm / 3)
			b.baton_ms = bm;
	}
	rl_identify(rl);
	b.who.host = rl->host;
	b.who.user = rl->user;
	b.who.label = "rlock bench";
	b.who.pid = (long long)getpid();
	b.who.min_hold_ms = 0;
	res->phase = RLOCK_BENCH_SETUP;
	if (setup(&b) != RLOCK_OK)
		goto out;
	if (o->ping_count > 0 || o->ping_ms > 0)
		ping_phase(&b);
	if (b.rc == RLOCK_OK && !res->canceled)
		lock_phase(&b);
	hist_report(&b.h_acq, &res->acquire);
	hist_report(&b.h_rel, &res->release);
	hist_report(&b.h_wait, &res->wait);
	hist_report(&b.h_hand, &res->handoff);
	res->longest_wait_us = (double)b.longest_wait / 1000.0;
	res->violations = res->overlaps + res->not_ours +
			  res->fence_regressions;
	if (res->pings_per_s > 0 && res->cycles > 0)
		res->efficiency = res->cycles_per_s / (res->pings_per_s / 2);
	if (b.rc == RLOCK_OK)
		cleanup_keys(&b);
	res->phase = RLOCK_BENCH_DONE;
out:
	teardown(&b);
	return b.rc;
}
