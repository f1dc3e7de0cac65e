/*
 * fanout.c - one request to every server of a lock at once, and the rules
 * that turn their answers into one: the quorum (N/2 + 1, so one server is
 * the case N = 1), the first error worth showing, the undo of a minority
 * grant, and the validity of a lease after the time it took to get it.
 *
 * Each server has a slot that goes SEND -> WAIT -> DONE, or through RETRY
 * when its connection dropped or it is loading; what a reply means for the
 * slot is decided in one place (on_reply), and so is what a drop means
 * (on_drop).  Where a server's connection comes from is its node's
 * business (node.c: rl_node_route, rl_node_open, rl_node_heard): a redirection is
 * sent again at once, to the node's new choice.
 */
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "fanout.h"
#include "handle.h"
#include "keys.h"
#include "node.h"
#include "reply.h"
#include "request.h"

enum { ST_IDLE, ST_SEND, ST_WAIT, ST_RETRY, ST_DONE };

#define MAX_TRIES 3		/* sends per slot, the first included */
#define MAX_REDIRECTS 16	/* MOVED/ASK per request: a loop otherwise */
#define DROP_RETRY_MS 10
#define BUSY_RETRY_MS 100	/* LOADING, TRYAGAIN, CLUSTERDOWN */
#define FALLBACK_RETRY_MS 50	/* a cluster node down: ask another */

/* ---- the fan-out -------------------------------------------------------- */

void rl_fan_init(struct fan *f, const struct rlock *rl)
{
	/* Only the slots in use: the whole array is 9 KiB, and clearing it
	 * twice cost an uncontended run 6% of its instructions. */
	f->n = rl->nnode;
	f->resent = 0;
	f->extra_ms = 0;
	f->probe = 0;
	for (size_t i = 0; i < f->n; i++) {
		f->slot[i].req = NULL;
		f->slot[i].preset = 0;
		f->slot[i].res.rc = RLOCK_OK;
		f->slot[i].res.r = NULL;
		f->slot[i].res.err[0] = '\0';
		f->slot[i].res.wrongtype = 0;
	}
}

void rl_fan_all(struct fan *f, const struct request *q)
{
	for (size_t i = 0; i < f->n; i++)
		f->slot[i].req = q;
}

/* Cut a deadline to the handle's hard deadline (a lease's end). */
static int64_t bound(const struct rlock *rl, int64_t deadline)
{
	if (rl->hard_deadline > 0 && deadline > rl->hard_deadline)
		return rl->hard_deadline;
	return deadline;
}

static void finish(struct fan_slot *s, int rc, const char *err)
{
	s->res.rc = rc;
	if (err != NULL)
		snprintf(s->res.err, sizeof(s->res.err), "%s", err);
	s->state = ST_DONE;
}

static void retry_later(struct fan_slot *s, int64_t ms)
{
	s->state = ST_RETRY;
	s->retry_at = rlock_mono_ms() + ms;
}

/* The connection dropped while the request was out: send it again on a
 * new one while there are tries and time left. */
static void on_drop(struct fan *f, struct rlock_node *n, struct fan_slot *s,
		    int64_t deadline)
{
	if (rl_node_heard(n, NULL) != NODE_FAIL && s->tries < MAX_TRIES &&
	    rlock_mono_ms() < deadline) {
		retry_later(s, DROP_RETRY_MS);
		s->dropped = 1;
		f->resent++;
		return;
	}
	finish(s, RLOCK_EUNAVAIL, rl_node_errstr(n));
}

/* One reply came for slot s. */
static void on_reply(struct rlock_node *n, struct fan_slot *s, redisReply *r)
{
	const char *key = s->req->argc > 0 ? s->req->argv[0] : "";

	/* The +OK of the ASKING sent before the request. */
	if (s->skip > 0) {
		s->skip--;
		freeReplyObject(r);
		return;
	}
	s->answered = 1;
	/* A script that met a key it had not declared where a slot moves (or
	 * spans slots): this is a cluster, whose scripts declare every key;
	 * nothing was written but housekeeping (the shortest paths read before
	 * they write).  Once. */
	if (r->type == REDIS_REPLY_ERROR && s->req->wargc > 0 && !s->whole &&
	    (memmem(r->str, r->len, "non local key", 13) != NULL ||
	     memmem(r->str, r->len, "do not hash to the same slot", 28) !=
		     NULL)) {
		freeReplyObject(r);
		n->declare_all = 1;
		s->whole = 1;
		s->state = ST_SEND;
		return;
	}
	/* NOSCRIPT (after SCRIPT FLUSH or a restart): EVAL loads it. */
	if (r->type == REDIS_REPLY_ERROR && rl_reply_starts_with(r, "NOSCRIPT") &&
	    s->req->script != REQ_COMMAND && !s->use_eval) {
		freeReplyObject(r);
		s->use_eval = 1;
		s->state = ST_SEND;
		return;
	}
	switch (rl_node_heard(n, r)) {
	case NODE_OK:
		s->res.r = r;
		finish(s, RLOCK_OK, NULL);
		return;
	case NODE_RETRY:
		/* Kept for time_out, should the server say it to the end. */
		rl_classify_error(r, n->cmd, key, &s->res);
		s->res.rc = RLOCK_OK;
		freeReplyObject(r);
		retry_later(s, BUSY_RETRY_MS);
		return;
	case NODE_REDIRECT:
	case NODE_REDISCOVER:
		if (++s->redirects <= MAX_REDIRECTS) {
			/* Followed at once, twice; after that the map names
			 * a node that is down, or a demoted master: a
			 * failover under way, worth asking again soon, not
			 * sixteen times in a second. */
			if (s->redirects > 2) {
				char text[SERVER_TEXT_MAX + 1];

				snprintf(s->res.err, sizeof(s->res.err),
					 "%s: %s", rl_conn_addr(n->cmd),
					 rl_server_text(text, sizeof(text),
							r->str, r->len));
				retry_later(s, BUSY_RETRY_MS);
			} else {
				s->state = ST_SEND;
			}
			freeReplyObject(r);
			return;
		}
		/* Redirected in a loop for a whole I/O timeout: the servers
		 * are unavailable, not mistaken. */
		rl_classify_error(r, n->cmd, key, &s->res);
		s->res.rc = RLOCK_EUNAVAIL;
		freeReplyObject(r);
		s->state = ST_DONE;
		return;
	default:
		rl_classify_error(r, n->cmd, key, &s->res);
		n->full |= s->res.full;
		freeReplyObject(r);
		s->state = ST_DONE;
		return;
	}
}

/* Open the node's connection if needed and send the slot's request. */
static void send_slot(struct rlock *rl, struct rlock_node *n,
		      struct fan_slot *s, int64_t *deadline)
{
	int fresh;

	rl_node_route(n, s->req->slot);
	fresh = !rl_conn_is_up(n->cmd);
	if (rl_node_open(n, rl->hard_deadline) != RLOCK_OK) {
		/* Connected, and the handshake not answered in time. */
		n->slow |= rl_conn_refusal(n->cmd) == CONN_REFUSED_SLOW;
		/* A cluster node that is down: another may know who serves
		 * the slot now (a failover). */
		if (rl_node_fallback(n) && rlock_mono_ms() < *deadline) {
			snprintf(s->res.err, sizeof(s->res.err), "%s",
				 rl_node_errstr(n));
			retry_later(s, FALLBACK_RETRY_MS);
			return;
		}
		finish(s, RLOCK_EUNAVAIL, rl_node_errstr(n));
		return;
	}
	/* A fresh connection restarts the I/O clock for the first attempt. */
	if (fresh && s->tries == 0)
		*deadline = bound(rl, rlock_mono_ms() + rl->copts.io_timeout_ms);
	s->tries++;
	s->answered = 0;
	s->skip = 0;
	if (n->asking) {
		const char *asking = "ASKING";

		if (rl_conn_send(n->cmd, 1, &asking, NULL) != RLOCK_OK) {
			finish(s, RLOCK_ESYS, rl_conn_errstr(n->cmd));
			return;
		}
		s->skip = 1;
	}
	if (rl_req_send(n->cmd, s->req, s->use_eval,
			s->whole || rl_node_declares_all(n)) != RLOCK_OK) {
		finish(s, RLOCK_ESYS, rl_conn_errstr(n->cmd));
		return;
	}
	s->state = ST_WAIT;
}

/* The I/O timeout ran out: every slot still out fails. */
static void time_out(struct rlock *rl, struct fan *f)
{
	for (size_t i = 0; i < f->n; i++) {
		struct fan_slot *s = &f->slot[i];
		struct rlock_node *n = &rl->node[i];

		if (s->state == ST_RETRY && s->res.err[0] != '\0') {
			/* What the server kept saying (LOADING, TRYAGAIN,
			 * CLUSTERDOWN), or why no node would take it. */
			s->res.rc = RLOCK_EUNAVAIL;
			s->state = ST_DONE;
		} else if (s->state == ST_RETRY) {
			finish(s, RLOCK_EUNAVAIL, rl_node_errstr(n));
		} else if (s->state == ST_WAIT) {
			/* A Sentinel master or a cluster node that does
			 * not answer may be frozen, with a failover coming. */
			if (n->sent != NULL || n->slots != NULL)
				n->failing_over = 1;
			n->slow = 1;
			rl_conn_timed_out(n->cmd);
			finish(s, RLOCK_EUNAVAIL, rl_conn_errstr(n->cmd));
		}
	}
}

/* Whether n (of several masters) was identified on the connection it uses
 * now (rl_identify_servers). */
int rl_node_identified(const struct rlock_node *n)
{
	if (n->id_conn == NULL || n->id_conn != n->cmd || !rl_conn_is_up(n->cmd))
		return 0;
	/* Opened again since (a dropped connection resent on): the same
	 * server while it reached the same address. */
	return rl_conn_opens(n->cmd) == n->id_opens ||
	       (n->id_peer[0] != '\0' &&
		strcmp(rl_conn_peer(n->cmd), n->id_peer) == 0);
}

/* After f's request: an answer that came on a connection opened since its
 * server was identified (a reconnect in the middle) is no vote, for it
 * may come from another server. */
static void drop_unidentified(struct rlock *rl, struct fan *f)
{
	if (rl->nnode == 1 || f->probe)
		return;
	for (size_t i = 0; i < f->n; i++) {
		struct rlock_result *res = &f->slot[i].res;
		struct rlock_node *n = &rl->node[i];

		/* One never identified was left out by rl_skip_unanswered, or
		 * its caller asks no vote of it (an undo). */
		if (f->slot[i].req == NULL || res->rc != RLOCK_OK ||
		    n->id_conn == NULL || rl_node_identified(n))
			continue;
		freeReplyObject(res->r);
		res->r = NULL;
		res->rc = RLOCK_EUNAVAIL;
		rl_set_error(res->err, sizeof(res->err), "%s: connected again "
			     "during the request, to another address than the one "
			     "identified: no vote",
			     rl_conn_addr(n->cmd));
	}
}

static void fan_send_all(struct rlock *rl, struct fan *f)
{
	struct pollfd pfd[RLOCK_MAX_SERVERS];
	size_t idx[RLOCK_MAX_SERVERS], i, np, left;
	int64_t deadline, now, wake;
	int ready;

	f->resent = 0;
	deadline = bound(rl, rlock_mono_ms() + rl->copts.io_timeout_ms +
			 f->extra_ms);
	for (i = 0; i < f->n; i++) {
		struct fan_slot *s = &f->slot[i];

		/* A slot whose outcome its caller set (rl_skip_unanswered: an
		 * error) keeps it, and is not sent. */
		if (s->preset) {
			s->state = ST_DONE;
			continue;
		}
		memset(&s->res, 0, sizeof(s->res));
		s->state = s->req != NULL ? ST_SEND : ST_IDLE;
		s->use_eval = 0;
		s->whole = 0;
		s->tries = 0;
		s->dropped = 0;
		s->answered = 0;
		s->redirects = 0;
		s->skip = 0;
	}
	for (;;) {
		now = rlock_mono_ms();
		wake = deadline;
		np = 0;
		left = 0;
		ready = 0;
		for (i = 0; i < f->n; i++) {
			struct fan_slot *s = &f->slot[i];
			struct rlock_node *n = &rl->node[i];

			/* A retry due at or after the deadline is never
			 * sent: its reply could not be waited for, and an
			 * acquire abandoned that way would go unnoticed and
			 * hold until its TTL.  time_out says why. */
			if (s->state == ST_RETRY && now >= s->retry_at &&
			    s->retry_at < deadline)
				s->state = ST_SEND;
			if (s->state == ST_SEND)
				send_slot(rl, n, s, &deadline);
			/* A write that failed closed the connection. */
			if (s->state == ST_WAIT && !rl_conn_is_up(n->cmd))
				on_drop(f, n, s, deadline);
			if (s->state == ST_RETRY) {
				left++;
				if (s->retry_at < wake)
					wake = s->retry_at;
			} else if (s->state == ST_WAIT) {
				left++;
				pfd[np].fd = rl_conn_fd(n->cmd);
				pfd[np].events = rl_conn_events(n->cmd);
				pfd[np].revents = 0;
				if (rl_conn_buffered(n->cmd)) {
					pfd[np].revents = POLLIN;
					ready = 1;
				}
				idx[np++] = i;
			}
		}
		if (left == 0)
			break;
		now = rlock_mono_ms();
		if (now >= deadline) {
			time_out(rl, f);
			return;
		}
		/* A retry time may already have passed while this round
		 * connected and sent: never hand poll a negative timeout,
		 * which would wait for ever. */
		if (!ready && poll(pfd, np, wake > now ? (int)(wake - now) : 0) < 0)
			continue;
		for (size_t k = 0; k < np; k++) {
			struct fan_slot *s = &f->slot[idx[k]];
			struct rlock_node *n = &rl->node[idx[k]];
			redisReply *r = NULL;
			int got;

			if (pfd[k].revents == 0)
				continue;
			if (rl_conn_on_ready(n->cmd, pfd[k].revents) != RLOCK_OK) {
				if (rl_conn_garbled(n->cmd))
					finish(s, RLOCK_EUNAVAIL,
					       rl_conn_errstr(n->cmd));
				else
					on_drop(f, n, s, deadline);
				continue;
			}
			/* The +OK of ASKING and the reply may come together. */
			while (s->state == ST_WAIT &&
			       (got = rl_conn_take_reply(n->cmd, &r)) != 0) {
				/* A protocol error, as the guard's above:
				 * the server is unavailable to rlock. */
				if (got < 0)
					finish(s, RLOCK_EUNAVAIL,
					       rl_conn_errstr(n->cmd));
				else
					on_reply(n, s, r);
			}
		}
	}
	/* A key of another type where rlock keeps one of its own: name it
	 * (one TYPE per key of the request, only then). */
	for (i = 0; i < f->n; i++) {
		struct fan_slot *s = &f->slot[i];

		if (s->req != NULL && s->state == ST_DONE &&
		    s->res.rc != RLOCK_OK && s->res.wrongtype &&
		    rl_conn_is_up(rl->node[i].cmd))
			rl_explain_wrongtype(rl->node[i].cmd, s->req, rl->prefix,
					     deadline, &s->res);
	}
}

void rl_fan_run(struct rlock *rl, struct fan *f)
{
	fan_send_all(rl, f);
	drop_unidentified(rl, f);
}

void rl_fan_done(struct fan *f)
{
	for (size_t i = 0; i < f->n; i++) {
		if (f->slot[i].res.r != NULL)
			freeReplyObject(f->slot[i].res.r);
		f->slot[i].res.r = NULL;
	}
}

/* ---- the quorum ------------------------------------------------------- */

void rl_fan_unexpected(struct fan *f, size_t i, const char *what)
{
	f->slot[i].res.rc = RLOCK_EPROTO;
	snprintf(f->slot[i].res.err, sizeof(f->slot[i].res.err),
		 "unexpected reply to %s", what);
}

/* The code every server that was asked failed with, or RLOCK_EUNAVAIL
 * when they differ or some answered: several masters that all refused
 * for one reason (a counter that is no fence, an ACL) say that reason's
 * code, not "unavailable". */
static int common_code(const struct fan *f)
{
	int rc = RLOCK_OK;

	for (size_t i = 0; i < f->n; i++) {
		if (f->slot[i].req == NULL)
			continue;
		if (f->slot[i].res.rc == RLOCK_OK ||
		    (rc != RLOCK_OK && f->slot[i].res.rc != rc))
			return RLOCK_EUNAVAIL;
		rc = f->slot[i].res.rc;
	}
	return rc == RLOCK_OK ? RLOCK_EUNAVAIL : rc;
}

int rl_fan_first_error(struct rlock *rl, struct fan *f, size_t failed)
{
	for (size_t i = 0; i < f->n; i++) {
		const struct rlock_result *res = &f->slot[i].res;

		if (f->slot[i].req == NULL || res->rc == RLOCK_OK)
			continue;
		if (rl->nnode == 1)
			snprintf(rl->err, sizeof(rl->err), "%s", res->err);
		else
			snprintf(rl->err, sizeof(rl->err),
				 "no quorum: %zu of %zu servers failed (%s)",
				 failed, rl->nnode, res->err);
		return rl->nnode == 1 ? res->rc : common_code(f);
	}
	snprintf(rl->err, sizeof(rl->err), "no quorum");
	return RLOCK_EUNAVAIL;
}

int rl_fan_tally(struct rlock *rl, struct fan *f, const char *what,
		 long long most, size_t *yes_out)
{
	size_t i, yes = 0, no = 0, fail = 0;

	for (i = 0; i < f->n; i++) {
		struct rlock_result *res = &f->slot[i].res;

		if (f->slot[i].req == NULL)
			continue;
		if (res->rc == RLOCK_OK &&
		    (res->r->type != REDIS_REPLY_INTEGER ||
		     res->r->integer < 0 || res->r->integer > most))
			rl_fan_unexpected(f, i, what);
		if (res->rc != RLOCK_OK)
			fail++;
		else if (res->r->integer > 0)
			yes++;
		else
			no++;
	}
	if (yes_out != NULL)
		*yes_out = yes;
	if (yes >= rl->quorum)
		return RLOCK_OK;
	if (no > rl->nnode - rl->quorum)
		return RLOCK_NOTOURS;
	return rl_fan_first_error(rl, f, fail);
}

void rl_fan_undo(struct rlock *rl, const struct lock_names *n, const char *token)
{
	struct request q;
	struct fan f;

	int64_t hard = rl->hard_deadline;

	/* To every server, not only those that said yes: a grant whose reply
	 * was lost is undone too, and the script deletes only our token.
	 * Within an I/O timeout of its own, even past the caller's hard
	 * deadline: a grant the wait's end cut short is still given back. */
	rl->hard_deadline = 0;
	rl_fan_init(&f, rl);
	rl_req_release(&q, n, token, NULL, NULL, 0, rl->nnode > 1);
	rl_fan_all(&f, &q);
	rl_fan_run(rl, &f);
	rl_fan_done(&f);
	rl->hard_deadline = hard;
}
