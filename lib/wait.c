/*
 * wait.c - the one wait loop (wait.h), and the waiting it is made of:
 * subscriptions to wake-up channels, the sentinels' +switch-master watch,
 * the confirmation of a slow grant, backoff with one jitter on one clock
 * (the monotonic one; leases are timed by each kind with the boot clock).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "handle.h"
#include "node.h"
#include "reply.h"
#include "wait.h"

static int sub_up(const struct rlock_node *n)
{
	return n->sub != NULL && rl_conn_is_up(n->sub);
}

/* Whether any subscription is still up: one is enough to hear of a
 * release, and a master that is down must not be retried every round. */
static int subs_up(const struct rlock *rl)
{
	for (size_t i = 0; i < rl->nnode; i++) {
		if (sub_up(&rl->node[i]))
			return 1;
	}
	return 0;
}

void rl_unsubscribe(struct rlock *rl)
{
	/* A subscribed connection cannot run commands: close it rather than
	 * track the UNSUBSCRIBE reply. */
	for (size_t i = 0; i < rl->nnode; i++) {
		if (rl->node[i].sub != NULL)
			rl_conn_close(rl->node[i].sub);
	}
}

/* The sentinels' +switch-master connections (rl_node_watch) into p, marked
 * ready (*ready) when input waits inside the transport.  Returns how
 * many. */
static size_t watch_fds(const struct rlock *rl, struct pollfd *p, int *ready)
{
	size_t nw = 0;

	for (size_t i = 0; i < rl->nnode; i++) {
		int fd = rl_node_watch_fd(&rl->node[i]);

		if (fd < 0)
			continue;
		p[nw] = (struct pollfd){ .fd = fd, .events = POLLIN };
		if (rl_node_watch_buffered(&rl->node[i])) {
			p[nw].revents = POLLIN;
			*ready = 1;
		}
		nw++;
	}
	return nw;
}

/* After poll: whether a sentinel announced that a master of rl moved (its
 * connections are closed then: the next request asks the sentinels). */
static int watch_heard(struct rlock *rl, const struct pollfd *p, size_t nw)
{
	size_t k = 0;

	for (size_t i = 0; i < rl->nnode && k < nw; i++) {
		if (rl_node_watch_fd(&rl->node[i]) < 0)
			continue;
		if (p[k++].revents != 0 &&
		    rl_node_watch_check(&rl->node[i], p[k - 1].revents))
			return 1;
	}
	return 0;
}

/*
 * Wait until a release message arrives (several masters), a sentinel
 * announces a new master, cancel_fd is readable, or wake (monotonic ms).
 * Returns RLOCK_OK (woken), RLOCK_CANCELED.
 *
 * A message is a hint, never a grant, whatever it says: anyone with the
 * right to PUBLISH can send one, and Redis grants channels apart from
 * keys.  The caller asks the servers next.
 */
int rl_wait_release(struct rlock *rl, int64_t wake, int cancel_fd)
{
	struct pollfd p[2 * RLOCK_MAX_SERVERS + 1];
	size_t i, np, nw;
	int64_t now;
	int ready;

	for (;;) {
		/* First the sentinels' +switch-master (rl_node_watch). */
		ready = 0;
		nw = watch_fds(rl, p, &ready);
		np = nw;
		for (i = 0; i < rl->nnode; i++) {
			struct rlock_conn *c = rl->node[i].sub;

			if (!sub_up(&rl->node[i]))
				continue;
			p[np].fd = rl_conn_fd(c);
			p[np].events = rl_conn_events(c);
			p[np].revents = 0;
			/* Input held inside the transport (TLS) is invisible
			 * to poll: take it now. */
			if (rl_conn_buffered(c)) {
				p[np].revents = POLLIN;
				ready = 1;
			}
			np++;
		}
		if (cancel_fd >= 0) {
			p[np].fd = cancel_fd;
			p[np].events = POLLIN;
			p[np].revents = 0;
			np++;
		}
		now = rlock_mono_ms();
		if (now >= wake)
			return RLOCK_OK;
		/* A lease can be 30 days: more than poll's int of ms. */
		if (!ready && poll(p, np, wake - now > 60000 ? 60000 :
				   (int)(wake - now)) <= 0)
			continue;
		if (cancel_fd >= 0 && p[np - 1].revents)
			return RLOCK_CANCELED;
		if (watch_heard(rl, p, nw))
			return RLOCK_OK;	/* ask the new master */
		np = nw;
		for (i = 0; i < rl->nnode; i++) {
			struct rlock_conn *c = rl->node[i].sub;
			redisReply *r;
			int woke = 0;

			if (!sub_up(&rl->node[i]))
				continue;
			if (p[np++].revents == 0)
				continue;
			if (rl_conn_on_ready(c, p[np - 1].revents) != RLOCK_OK)
				return RLOCK_OK; /* retry at once */
			while (rl_conn_take_reply(c, &r) == 1) {
				woke = 1;
				freeReplyObject(r);
			}
			if (woke)
				return RLOCK_OK;
		}
	}
}

static unsigned jitter(unsigned max)
{
	static __thread unsigned seed;

	if (seed == 0)
		seed = (unsigned)getpid() ^ (unsigned)rlock_mono_ms();
	return max > 0 ? (unsigned)rand_r(&seed) % max : 0;
}

/* After a grant: whether a sentinel announced, while the request was out,
 * that a master of rl moved (rl_node_watch; its connections are closed then,
 * and it is marked failing over). */
static int switched_meanwhile(struct rlock *rl)
{
	struct pollfd p[RLOCK_MAX_SERVERS];
	int ready = 0;
	size_t nw = watch_fds(rl, p, &ready);

	if (nw == 0 || (!ready && poll(p, nw, 0) <= 0))
		return 0;
	return watch_heard(rl, p, nw);
}

/* Whether the sentinels of each Sentinel server of rl still name the
 * master that answered (rl_node_confirm): a slow grant may come from one they
 * replaced while the request was out. */
static int confirmed(struct rlock *rl)
{
	int ok = 1;

	for (size_t i = 0; i < rl->nnode; i++)
		ok &= rl_node_confirm(&rl->node[i], rlock_mono_ms() +
				      rl->copts.connect_timeout_ms);
	return ok;
}

/* Close the connections of the servers seen failing over: the next
 * request asks the sentinels again. */
static void drop_replaced(struct rlock *rl)
{
	for (size_t i = 0; i < rl->nnode; i++)
		if (rl->node[i].failing_over)
			rl_node_drop(&rl->node[i]);
}

/* What the last request saw of rl's servers, as the fan-out marks a
 * node: one failing over, one that takes no more clients (maxclients),
 * one that left it unanswered for the I/O timeout. */
enum seen { FAILING_OVER, FULL, SLOW };

static int seen(const struct rlock *rl, enum seen what)
{
	for (size_t i = 0; i < rl->nnode; i++) {
		const struct rlock_node *n = &rl->node[i];

		if (what == FAILING_OVER ? n->failing_over :
		    what == FULL ? n->full : n->slow)
			return 1;
	}
	return 0;
}

/* How long to wait before asking again (wait.h). */
int64_t rl_line_wait_ms(long long pttl, long long place, int in_line,
			int subscribed, unsigned rnd)
{
	int64_t ms = pttl >= 0 ? pttl + 1 + rnd % (pttl / 20 + 5) : 1000;
	int64_t beat = LINE_BEAT_MS;

	/* Further back, less often: as the script lengthens the lease. */
	if (place >= LINE_NEAR)
		beat = place >= LINE_NEAR * LINE_FAR_MAX ?
			LINE_BEAT_MS * LINE_FAR_MAX :
			LINE_BEAT_MS * place / LINE_NEAR;
	beat -= rnd % (beat / 8);

	if (in_line)
		return place != 0 || ms > beat ? beat : ms;
	return !subscribed && ms > 1000 ? 1000 : ms;
}

/* Subscribe every reachable server's second connection to the channels,
 * on the master that owns slot.  Returns how many servers listen on all
 * of them. */
static size_t subscribe(struct rlock *rl, const char *const *chan,
			size_t nchan, int slot, int64_t deadline, int cancel_fd)
{
	size_t i, j, ok = 0;

	for (i = 0; i < rl->nnode; i++) {
		struct rlock_conn *c = rl_node_sub(&rl->node[i], slot, deadline);

		for (j = 0; c != NULL && j < nchan; j++) {
			const char *argv[2] = { "SUBSCRIBE", chan[j] };
			redisReply *r = NULL;

			if (rl_conn_call(c, deadline, cancel_fd, 2, argv, NULL,
					 &r) != RLOCK_OK)
				break;
			if (r->type != REDIS_REPLY_ARRAY) {
				freeReplyObject(r);
				rl_conn_close(c);
				break;
			}
			freeReplyObject(r);
		}
		ok += c != NULL && j == nchan;
	}
	return ok;
}

/* The state of one wait, across the loop's steps. */
struct wait {
	struct rlock *rl;
	const char *name;
	const struct rlock_acquire_opts *o;
	const struct hold_kind *k;
	void *self;
	struct rlock_holder *holder;
	int64_t start, deadline, last_cb;
	int64_t cb_due;			/* a live line about once a second
					 * (a wake-up a little early draws
					 * it too); a line every wait_cb_ms
					 * never early */
	int subscribed, in_line;	/* subscribed: its wake-ups can be
					 * heard (popped or subscribed to) */
	int given_back;			/* the last try's grant, from a
					 * replaced master */
	/* One server: the wake-up lists popped on the command connection
	 * (pop_wait); pop_broken, the server refused BLPOP: wait out each
	 * beat instead. */
	int pop, pop_broken;
	const char *keys[RLOCK_WITH_MAX];
	size_t nkeys;
	int slot;
	struct rlock_lease *lease;	/* where a popped baton goes */
	int popped;			/* it went there */
};

/* The progress callback, when due; unreachable: why the servers do not
 * answer (NULL: they do). */
static void progress(struct wait *w, int64_t now, const char *unreachable)
{
	const struct rlock_acquire_opts *o = w->o;

	if (o->wait_cb == NULL || now - w->last_cb < w->cb_due)
		return;
	w->holder->unreachable = unreachable;
	o->wait_cb(w->holder, now - w->start, o->wait_arg);
	w->holder->unreachable = NULL;
	w->last_cb = now;
}

/* A wait's wake-up, capped by the progress line's next and -w's end. */
static int64_t capped(const struct wait *w, int64_t wake, int64_t now,
		      int undid)
{
	const struct rlock_acquire_opts *o = w->o;

	if ((o->wait_cb != NULL || undid) && wake > now + 1000 &&
	    (o->wait_cb_ms == 0 || undid))
		wake = now + 1000;
	if (o->wait_cb_ms > 0 && w->last_cb > 0 &&
	    wake > w->last_cb + o->wait_cb_ms)
		wake = w->last_cb + o->wait_cb_ms;
	return wake < w->deadline ? wake : w->deadline;
}

/* Listen on the kind's channels, and to the sentinels, before the next
 * try takes a place in line: a release in between is not missed, and a
 * place is taken only once its wake-up can be heard.  One server keeps
 * the wake-ups in lists, which wait for their waiter: nothing to do but
 * remember them (pop_wait). */
static int listen_now(struct wait *w, int64_t now)
{
	struct rlock *rl = w->rl;
	const char *chan[RLOCK_WITH_MAX];
	size_t nchan = 0;
	int slot = 0, rc;

	rc = w->k->channels(rl, w->self, chan, &nchan, &slot);
	if (rc != RLOCK_OK)
		return rc;
	rl_unsubscribe(rl);
	if (rl->nnode == 1) {
		memcpy(w->keys, chan, nchan * sizeof(chan[0]));
		w->nkeys = nchan;
		w->slot = slot;
		w->pop = 1;
		w->subscribed = 1;
	} else {
		w->subscribed = subscribe(rl, chan, nchan, slot,
					  now + rl->copts.io_timeout_ms,
					  w->o->cancel_fd) > 0;
	}
	/* A failover moves the wait to the new master at once, though
	 * the old one still answers as a master. */
	for (size_t i = 0; w->subscribed && i < rl->nnode; i++)
		rl_node_watch(&rl->node[i], rlock_mono_ms() +
			      rl->copts.connect_timeout_ms);
	return RLOCK_OK;
}

/* After our own undo told the masters' release channels that the lock was
 * given back: deaf to that for 50 to 150ms (Redlock's random retry
 * delay), or we would wake at once and try again, thousands of times a
 * second.  Then wait as usual, but try again within a second: a release
 * in the pause went unheard. */
static int pause_after_undo(struct wait *w, int64_t now)
{
	int64_t until = now + 50 + jitter(100);
	int rc;

	if (until > w->deadline)
		until = w->deadline;
	do
		rc = rl_wait_release(w->rl, until, w->o->cancel_fd);
	while (rc == RLOCK_OK && rlock_mono_ms() < until);
	return rc;
}

/*
 * A try failed where the servers answered before (seen_busy), a failover
 * is seen under way, or a server takes no more clients: a restart, a
 * failover, a dropped connection or a full server must not end a wait of
 * minutes.  Back off (100ms doubling to a second, jittered) and listen
 * afresh.  A wait that goes quiet while its servers are gone looks hung:
 * the progress line says what it is doing (tell).
 */
static int back_off(struct wait *w, int64_t now, int64_t *backoff,
		    int64_t retry_end, int tell)
{
	int64_t wake;

	if (tell)
		progress(w, now, w->rl->err);
	if (*backoff < 1000)
		*backoff = *backoff == 0 ? 100 : *backoff * 2;
	wake = now + *backoff + jitter((unsigned)*backoff / 2);
	if (w->o->wait_cb != NULL && tell && wake > w->last_cb + w->cb_due)
		wake = w->last_cb + w->cb_due;
	if (wake > retry_end)
		wake = retry_end;
	rl_unsubscribe(w->rl);
	w->subscribed = 0;
	return rl_wait_release(w->rl, wake, w->o->cancel_fd);
}

/* A popped wake-up r ([key, message], or nil when the pop timed out):
 * RLOCK_OK, with w->popped set when the kind took a baton from it. */
static int popped(struct wait *w, const redisReply *r)
{
	const redisReply *m;

	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    w->k->popped == NULL)
		return RLOCK_OK;
	m = r->element[1];
	if (m->type == REDIS_REPLY_STRING && m->len > 8 &&
	    memcmp(m->str, "granted\n", 8) == 0 &&
	    w->k->popped(w->rl, w->self, m->str, m->len, w->lease) ==
	    RLOCK_OK)
		w->popped = 1;
	return RLOCK_OK;
}

/*
 * Wait for a wake-up on one server: BLPOP the waiter's lists on its one
 * command connection until wake (monotonic ms), while listening to the
 * sentinels and cancel_fd too.  What comes is a server's reply from keys
 * that only a client able to delete the lock can write.  Returns RLOCK_OK
 * (try again, or w->popped: granted) or RLOCK_CANCELED.  A connection left
 * with its pop outstanding (canceled, a failover announced, no answer in
 * time) is closed: the next request opens it again.
 */
static int pop_wait(struct wait *w, int64_t wake)
{
	struct rlock *rl = w->rl;
	struct rlock_node *n = &rl->node[0];
	const char *argv[RLOCK_WITH_MAX + 2];
	struct pollfd p[RLOCK_MAX_SERVERS + 2];
	int64_t now = rlock_mono_ms(), end;
	char tmo[32];
	size_t i, nw;
	redisReply *r;
	int ready, rc = RLOCK_OK;

	if (w->pop_broken || wake - now < 10)
		return rl_wait_release(rl, wake, w->o->cancel_fd);
	rl_node_route(n, w->slot);
	if (rl_node_open(n, now + rl->copts.io_timeout_ms) != RLOCK_OK)
		return RLOCK_OK;	/* the next try says why */
	argv[0] = "BLPOP";
	for (i = 0; i < w->nkeys; i++)
		argv[1 + i] = w->keys[i];
	snprintf(tmo, sizeof(tmo), "%lld.%03lld", (long long)(wake - now) / 1000,
		 (long long)(wake - now) % 1000);
	argv[1 + i] = tmo;
	if (rl_conn_send(n->cmd, (int)i + 2, argv, NULL) != RLOCK_OK)
		return RLOCK_OK;
	/* The server answers at wake: allow it the I/O timeout past that. */
	end = wake + rl->copts.io_timeout_ms;
	for (;;) {
		ready = 0;
		nw = watch_fds(rl, p, &ready);
		p[nw].fd = rl_conn_fd(n->cmd);
		p[nw].events = rl_conn_events(n->cmd);
		p[nw].revents = 0;
		if (rl_conn_buffered(n->cmd)) {
			p[nw].revents = POLLIN;
			ready = 1;
		}
		p[nw + 1].fd = w->o->cancel_fd;
		p[nw + 1].events = POLLIN;
		p[nw + 1].revents = 0;
		now = rlock_mono_ms();
		if (now >= end)
			break;		/* no answer: closed below */
		if (!ready && poll(p, nw + 2, end - now > 60000 ? 60000 :
				   (int)(end - now)) <= 0)
			continue;
		if (p[nw + 1].revents != 0) {
			rc = RLOCK_CANCELED;
			break;
		}
		if (watch_heard(rl, p, nw))
			return RLOCK_OK;	/* its connections closed */
		if (p[nw].revents == 0)
			continue;
		if (rl_conn_on_ready(n->cmd, p[nw].revents) != RLOCK_OK)
			return RLOCK_OK;	/* dropped (closed): try again */
		if (rl_conn_take_reply(n->cmd, &r) != 1)
			continue;
		/* A cluster's redirection (a slot that moved or is moving):
		 * wait out this beat, and the next try follows it.  Another
		 * error (a server before 6.0 takes no fraction of a second,
		 * an ACL without BLPOP): wait out the beats from now on,
		 * rather than ask again at once for ever. */
		if (r->type == REDIS_REPLY_ERROR) {
			int moved = rl_reply_starts_with(r, "MOVED") ||
				    rl_reply_starts_with(r, "ASK") ||
				    rl_reply_starts_with(r, "TRYAGAIN") ||
				    rl_reply_starts_with(r, "CLUSTERDOWN");

			freeReplyObject(r);
			w->pop_broken |= !moved;
			return rl_wait_release(rl, wake, w->o->cancel_fd);
		}
		rc = popped(w, r);
		freeReplyObject(r);
		return rc;
	}
	rl_conn_close(n->cmd);
	return rc;
}

/* Told "held": listen first if not yet (then try again at once, taking a
 * place), else wait for a wake-up or the next try.  RLOCK_OK: try again;
 * else why the wait ends. */
static int wait_turn(struct wait *w, const struct hold_try *t, int64_t now)
{
	struct rlock *rl = w->rl;
	int64_t wake;
	int rc = RLOCK_OK;

	if (w->subscribed && !w->pop && !subs_up(rl))
		w->subscribed = 0;	/* dropped: subscribe again */
	if (!w->subscribed) {
		if ((rc = listen_now(w, now)) != RLOCK_OK || w->subscribed)
			return rc;
	}
	if (t->undid) {
		rc = pause_after_undo(w, now);
		now = rlock_mono_ms();
		if (rc != RLOCK_OK || now >= w->deadline)
			goto out;
	}
	progress(w, now, NULL);
	wake = now + rl_line_wait_ms(t->ttl_ms, t->place, w->in_line,
				     w->subscribed && !w->pop_broken,
				     jitter(1000));
	if (w->pop)
		rc = pop_wait(w, capped(w, wake, now, t->undid));
	else
		rc = rl_wait_release(rl, capped(w, wake, now, t->undid),
				     w->o->cancel_fd);
out:
	if (rc == RLOCK_CANCELED)
		rl_set_error(rl->err, sizeof(rl->err), "%s: canceled", w->name);
	return rc;
}

/* One try, timed, with a grant from a master the sentinels replaced while
 * the request was out (one frozen past a failover answers when it thaws)
 * given back, as they said on the watch or when asked after a slow grant:
 * the caller asks them for the new master. */
static int attempt(struct wait *w, int64_t waited_ms, int details,
		   struct rlock_lease *lease, struct hold_try *t)
{
	struct rlock *rl = w->rl;
	int64_t tried = rlock_mono_ms();
	int rc;

	memset(t, 0, sizeof(*t));
	w->given_back = 0;
	t->ttl_ms = -1;
	t->place = -1;
	for (size_t i = 0; i < rl->nnode; i++)
		rl->node[i].failing_over = rl->node[i].full =
			rl->node[i].slow = 0;
	rc = w->k->attempt(rl, w->self, waited_ms, details, w->subscribed,
			   lease, w->holder, t);
	if (rc == RLOCK_OK && (switched_meanwhile(rl) ||
			       (rlock_mono_ms() - tried >= CONFIRM_MS &&
				!confirmed(rl)))) {
		w->k->undo(rl, w->self);
		drop_replaced(rl);
		rl_set_error(rl->err, sizeof(rl->err), "%s: granted by a master "
			     "the sentinels had just replaced; given back",
			     w->name);
		w->given_back = 1;
		rc = RLOCK_EUNAVAIL;
	}
	return rc;
}

int rl_hold_wait(struct rlock *rl, const char *name,
		 const struct rlock_acquire_opts *o, const struct hold_kind *k,
		 void *self, struct rlock_lease *lease,
		 struct rlock_holder *holder)
{
	struct wait w = { rl, name, o, k, self, holder, rlock_mono_ms(), 0,
			  0, o->wait_cb_ms > 0 ? o->wait_cb_ms : 900, 0, 0,
			  0 };
	struct hold_try t;
	int64_t now, backoff = 0, retry_until, retry_end = 0;
	int64_t hard = rl->hard_deadline;
	char why[sizeof(rl->err)];
	int rc, seen_busy = 0, attempts = 0, detailed = 0, details;

	w.deadline = o->wait_ms < 0 ? INT64_MAX : w.start + o->wait_ms;
	w.lease = lease;
	/* A failover seen under way (a replica named master, READONLY, a
	 * cluster slot down) is retried even before any answer: within the
	 * wait (-n: the I/O timeout; no -w: FAILOVER_GRACE_MS). */
	retry_until = w.start + (o->wait_ms < 0 ? FAILOVER_GRACE_MS :
				 rl->copts.io_timeout_ms);
	if (o->wait_ms >= 0 && retry_until < w.deadline)
		retry_until = w.deadline;
	for (;;) {
		/* The holder's details until a busy answer gave them (a
		 * first answer may be a failover's); then for the live line
		 * on every try, and for a line every wait_cb_ms on the try
		 * it is due at. */
		details = !detailed ||
			  (o->wait_cb != NULL &&
			   (o->wait_cb_ms == 0 ||
			    rlock_mono_ms() - w.last_cb >= w.cb_due));
		/* Asking again through a failover: within what is left of
		 * the time to, not an I/O timeout past it. */
		if (backoff > 0 && hard == 0)
			rl->hard_deadline = retry_end;
		if (backoff > 0)
			memcpy(why, rl->err, sizeof(why));
		/* The first try waited for nothing, whatever the clock's
		 * millisecond turned meanwhile: its entry says so by
		 * leaving "waited" out. */
		rc = attempt(&w, attempts++ == 0 ? 0 :
			     rlock_mono_ms() - w.start, details, lease, &t);
		rl->hard_deadline = hard;
		detailed |= rc == RLOCK_BUSY && details;
		now = rlock_mono_ms();
		/* A last try that the wait's end cut short says only that
		 * time ran out: the try before it says why. */
		if (rc == RLOCK_EUNAVAIL && !w.given_back && backoff > 0 &&
		    now >= retry_end && why[0] != '\0')
			memcpy(rl->err, why, sizeof(why));
		if (rc == UNREPLICATED) {
			rc = RLOCK_EUNAVAIL;
			if (o->wait_ms > 0)
				seen_busy = 1;
		}
		retry_end = seen_busy ? w.deadline : 0;
		if (seen(rl, FAILING_OVER) && retry_until > retry_end)
			retry_end = retry_until;
		/* A server that takes no more clients is a wait, not a
		 * failure: a fleet's waiters come and go (issue 46).  For
		 * the whole of -w (without -w, as long as it takes); -n
		 * within the I/O timeout, as through a failover. */
		if (seen(rl, FULL) && rc == RLOCK_EUNAVAIL)
			retry_end = o->wait_ms == 0 ? retry_until : w.deadline;
		/* So is a server too busy to answer within the I/O timeout
		 * (a herd of TLS handshakes) for a bounded -w: a wait
		 * without -w still fails on it, as on a server that is
		 * gone. */
		if (seen(rl, SLOW) && rc == RLOCK_EUNAVAIL && o->wait_ms > 0)
			retry_end = w.deadline;
		if (rc == RLOCK_EUNAVAIL && now < retry_end) {
			rc = back_off(&w, now, &backoff, retry_end,
				      seen_busy || seen(rl, FULL) ||
				      seen(rl, SLOW));
			if (rc == RLOCK_CANCELED)
				break;
			continue;
		}
		if (rc != RLOCK_BUSY || o->wait_ms == 0 || holder->skip != 0)
			break;
		seen_busy = 1;
		backoff = 0;
		if (t.joined && w.in_line) {
			/* Our place was lost (a stall longer than the
			 * waiter's lease, a server that failed over, a baton
			 * the next took back while we were stopped) and taken
			 * again at the end: listen again where the slot's
			 * master is now. */
			rl_unsubscribe(rl);
			w.subscribed = 0;
		}
		w.in_line |= t.joined || t.in_line;
		if (now >= w.deadline || (rc = wait_turn(&w, &t, now)) !=
		    RLOCK_OK || w.popped)
			break;	/* popped: granted by the baton */
	}
	if (rc != RLOCK_OK)
		k->end(rl, self, rc, w.in_line, holder,
		       rlock_mono_ms() - w.start);
	if (w.subscribed)
		rl_unsubscribe(rl);
	for (size_t i = 0; i < rl->nnode; i++)
		rl_node_watch_close(&rl->node[i]);
	return rc;
}
