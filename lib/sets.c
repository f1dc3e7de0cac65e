/*
 * sets.c - several locks held together (--with, issue 35): all of them or
 * none, by one script per request on one server (lib/scripts/with.lua),
 * one token and one lease for the set.  The set waits as one waiter, with
 * one place in each lock's line, all of the same arrival: sets that share
 * names are in one order in every line, so they never wait on each other.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fanout.h"
#include "handle.h"
#include "keys.h"
#include "lease.h"
#include "node.h"
#include "request.h"
#include "wait.h"

int rlock_with(struct rlock *rl, const char *const *names, size_t n)
{
	struct with_set *w;
	size_t i, j, at = 0;
	const char *why;

	rl->err[0] = '\0';
	if (n < 1 || n > RLOCK_WITH_MAX) {
		rl_set_error(rl->err, sizeof(rl->err), "--with: at most %d locks "
			     "at once", RLOCK_WITH_MAX);
		return RLOCK_EUSAGE;
	}
	if (rl->nnode > 1) {
		rl_set_error(rl->err, sizeof(rl->err), "--with needs one server "
			     "(or one Sentinel or Cluster URL): several masters "
			     "would each grant the set in their own order");
		return RLOCK_EUSAGE;
	}
	for (i = 0; i < n; i++) {
		if (rlock_check_name(names[i], &why) != RLOCK_OK) {
			rl_set_error(rl->err, sizeof(rl->err), "invalid lock "
				     "name: %s", why);
			return RLOCK_EUSAGE;
		}
		for (j = 0; j < i; j++) {
			if (strcmp(names[i], names[j]) == 0) {
				rl_set_error(rl->err, sizeof(rl->err), "--with: "
					     "lock '%.200s' named twice",
					     names[i]);
				return RLOCK_EUSAGE;
			}
		}
	}
	w = calloc(1, sizeof(*w));
	if (w == NULL) {
		rl_set_error(rl->err, sizeof(rl->err), "cannot allocate: %s",
			     strerror(errno));
		return RLOCK_ESYS;
	}
	w->n = n;
	w->sameslot = 1;
	for (i = 0; i < n; i++) {
		int len = rl_lock_key(w->key[i], sizeof(w->key[i]), rl->prefix,
				      names[i], "");
		char line[RLOCK_KEY_MAX + 16];

		static const char *const suffix[12] = {
			KEY_META, KEY_HOLDERS, KEY_HMETA, KEY_LINE, KEY_LEASE,
			KEY_WHO, KEY_FENCE, KEY_LOG, KEY_ONCE, KEY_GRANT,
			KEY_HOLD, KEY_WITH,
		};

		for (j = 0; j < 12; j++)
			snprintf(w->more[i][j], sizeof(w->more[i][j]), "%s%s",
				 w->key[i], suffix[j]);
		snprintf(w->wake[i], sizeof(w->wake[i]), "%s%s", w->key[i],
			 KEY_WAKE);
		snprintf(line, sizeof(line), "%s%s", w->key[i], KEY_LINE);
		/* The script names each lock's keys from its lock key: on
		 * a Cluster they must all be in one slot. */
		if (i == 0)
			w->slot = rl_key_slot(w->key[0], (size_t)len);
		if (rl_key_slot(w->key[i], (size_t)len) != w->slot ||
		    rl_key_slot(line, strlen(line)) != w->slot)
			w->sameslot = 0;
		if (i > 0)
			w->names[at++] = '\n';
		memcpy(w->names + at, names[i], strlen(names[i]));
		at += strlen(names[i]);
	}
	rlock_strlcpy(w->first, names[0], sizeof(w->first));
	free(rl->with);
	rl->with = w;
	return RLOCK_OK;
}

int rlock_with_adopt(struct rlock *rl, const struct rlock_with *w)
{
	const char *names[RLOCK_WITH_MAX];
	int rc;

	if (w->n < 1 || w->n > RLOCK_WITH_MAX) {
		rl_set_error(rl->err, sizeof(rl->err), "--with: a record of %zu "
			     "locks", w->n);
		return RLOCK_EPROTO;
	}
	for (size_t i = 0; i < w->n; i++)
		names[i] = w->name[i];
	rc = rlock_with(rl, names, w->n);
	if (rc == RLOCK_OK)
		memcpy(rl->with->fence, w->fence, w->n * sizeof(w->fence[0]));
	return rc;
}

long long rlock_with_fence(const struct rlock *rl, size_t i)
{
	return rl->with != NULL && i < rl->with->n ? rl->with->fence[i] : 0;
}

const char *rlock_with_busy(const struct rlock *rl)
{
	struct with_set *w = rl->with;
	const char *p;
	size_t i, len;

	if (w == NULL || w->held == 0)
		return NULL;
	/* The names, one a line: the held-th. */
	for (p = w->names, i = 1; i < w->held; i++)
		p = strchr(p, '\n') + 1;
	len = strcspn(p, "\n");
	memcpy(w->busy, p, len);
	w->busy[len] = '\0';
	return w->busy;
}

/* The names of the set, for messages: "db, cache, queue" (cut). */
static const char *set_text(const struct with_set *w, char *buf, size_t len)
{
	size_t at = 0;

	for (const char *p = w->names; *p != '\0' && at + 3 < len; p++) {
		if (*p == '\n') {
			buf[at++] = ',';
			buf[at++] = ' ';
		} else {
			buf[at++] = *p;
		}
	}
	buf[at] = '\0';
	return buf;
}

/* Names a Cluster keeps apart: refused with the fix, before the server
 * would say CROSSSLOT (or once it has, when the handle did not know yet
 * that it talks to a cluster). */
static int cross_slot(struct rlock *rl)
{
	rl_set_error(rl->err, sizeof(rl->err), "--with on a Redis Cluster: the "
		     "locks' keys are in different slots; give the names one "
		     "hash tag, e.g. '{deploy}db' and '{deploy}cache'");
	return RLOCK_EUSAGE;
}

/* Send q to the one server and keep its answer in *r (freed by the
 * caller), or return the error with rl->err set.  *dropped (when not
 * NULL): the answer is to a second send, after the connection dropped. */
static int with_call_d(struct rlock *rl, const struct request *q,
		       redisReply **r, int *dropped)
{
	struct fan f;
	int rc;

	*r = NULL;
	if (dropped != NULL)
		*dropped = 0;
	if (!rl->with->sameslot && rl_node_is_cluster(&rl->node[0]))
		return cross_slot(rl);
	rl_fan_init(&f, rl);
	rl_fan_all(&f, q);
	rl_fan_run(rl, &f);
	if (f.slot[0].res.rc != RLOCK_OK) {
		if (strstr(f.slot[0].res.err, "CROSSSLOT") != NULL)
			rc = cross_slot(rl);
		else
			rc = rl_fan_first_error(rl, &f, 1);
		rl_fan_done(&f);
		return rc;
	}
	*r = f.slot[0].res.r;
	f.slot[0].res.r = NULL;
	if (dropped != NULL)
		*dropped = f.slot[0].dropped;
	rl_fan_done(&f);
	return RLOCK_OK;
}

static int with_call(struct rlock *rl, const struct request *q,
		     redisReply **r)
{
	return with_call_d(rl, q, r, NULL);
}

static void set_lease(struct rlock_lease *l, const char *token,
		      long long fence, const struct rlock_acquire_opts *o,
		      long long pid, int64_t t0)
{
	memset(l, 0, sizeof(*l));
	rlock_strlcpy(l->token, token, sizeof(l->token));
	l->fence = fence;
	l->ttl_ms = o->ttl_ms;
	l->taken_boot_ms = t0;
	l->renewed_boot_ms = t0;
	l->kind = 'x';
	l->slot = -1;		/* no semaphore's slot */
	l->pid = pid;
}

static void leave_all(struct rlock *rl, const char *token, const char *id)
{
	struct request q;
	redisReply *r;
	char why[sizeof(rl->err)];

	memcpy(why, rl->err, sizeof(why));
	rl_req_with_leave(&q, rl->with, token, id, &rl->hist);
	if (with_call(rl, &q, &r) == RLOCK_OK)
		freeReplyObject(r);
	memcpy(rl->err, why, sizeof(why));
}

/* A set that gave up (busy, -w ran out, a signal): recorded as skipped in
 * the history of each of its locks, as one lock's is, the reason naming
 * the lock held and its holder.  Best effort: one request per lock. */
static void with_skipped(struct rlock *rl, const char *token,
			 const struct rlock_acquire_opts *o, int rc,
			 const struct rlock_holder *h, int64_t waited)
{
	const char *v[EV_NFIELDS] = { 0 }, *busy = rlock_with_busy(rl);
	char pid[24], ms[24], tb[32], reason[700], tok[9], why[sizeof(rl->err)];
	struct lock_keys *n = malloc(sizeof(*n));
	const char *p = rl->with->names;

	if (n == NULL || rl->hist.max == 0) {
		free(n);
		return;
	}
	memcpy(why, rl->err, sizeof(why));
	if (rc == RLOCK_CANCELED)
		snprintf(reason, sizeof(reason), "interrupted");
	else if (busy == NULL || !h->held)
		snprintf(reason, sizeof(reason), "not every lock of the set "
			 "free, or others in line came first");
	else
		snprintf(reason, sizeof(reason), "%s%s%s%.200s held by "
			 "%.64s@%.200s pid %lld", o->wait_ms != 0 ? "timed out "
			 "after " : "", o->wait_ms != 0 ? rlock_fmt_ms(waited,
			 tb, sizeof(tb)) : "", o->wait_ms != 0 ? "; " : "",
			 busy, h->user, h->host, h->pid);
	snprintf(pid, sizeof(pid), "%lld",
		 o->pid > 0 ? o->pid : (long long)getpid());
	snprintf(ms, sizeof(ms), "%lld", (long long)waited);
	snprintf(tok, sizeof(tok), "%.8s", token);
	v[EV_EVENT] = "skipped";
	v[EV_HOST] = rl->host;
	v[EV_USER] = rl->user;
	v[EV_PID] = pid;
	v[EV_KIND] = "x";
	v[EV_TOKEN] = tok;
	v[EV_WAITED] = ms;
	v[EV_REASON] = reason;
	v[EV_COMMAND] = o->label;
	v[EV_NOTE] = o->note;
	for (size_t i = 0; i < rl->with->n; i++) {
		char name[RLOCK_NAME_MAX + 1];
		size_t len = strcspn(p, "\n");
		struct request q;
		struct fan f;

		memcpy(name, p, len);
		name[len] = '\0';
		p += len + (p[len] == '\n');
		if (rl_make_names(rl, name, n) != RLOCK_OK)
			continue;
		rl_req_log(&q, &n->v, &rl->hist, NULL, v);
		rl_fan_init(&f, rl);
		rl_fan_all(&f, &q);
		rl_fan_run(rl, &f);
		rl_fan_done(&f);
	}
	free(n);
	memcpy(rl->err, why, sizeof(why));
}

/* A waiting run's baton (o->baton): the release that frees the set's
 * locks grants it the set, with a first lease this long, and wakes it
 * (lib/scripts/baton.lua); the set confirms the grant with its next
 * request, which finds the set its own, before its command starts.  Not
 * on a Cluster, where a single lock's release may not name the other
 * locks' keys, nor with a prefix whose newline would break the record
 * the script keeps (0: woken, the set asks itself). */
static int64_t baton_ms(const struct rlock *rl,
			const struct rlock_acquire_opts *o)
{
	int64_t b = LINE_LEASE_MS + rlock_safety_margin_ms(o->ttl_ms);

	if (!o->baton || rl_node_is_cluster(&rl->node[0]) ||
	    strchr(rl->prefix, '\n') != NULL)
		return 0;
	return b < o->ttl_ms ? b : o->ttl_ms;
}

/* A set's wait, as the wait loop (wait.c) asks it. */
struct set_wait {
	struct rlock *rl;
	const char *name;
	const struct rlock_acquire_opts *o;
	struct acquirer who;
	char token[RLOCK_TOKEN_LEN + 1];
	char id[RLOCK_TOKEN_LEN + 1];	/* the waiter's, kept while the wait
					 * lasts: the places a failover
					 * carried to a new master are still
					 * the set's */
	char chan[RLOCK_WITH_MAX][RLOCK_KEY_MAX + 16 + LINE_ID_LEN + 1];
};

/* Give the set back (a grant that came too late, or from a replaced
 * master). */
static void set_undo(struct rlock *rl, void *self)
{
	struct set_wait *s = self;
	struct request u;
	redisReply *r;

	rl_req_with_release(&u, rl->with, s->token, &rl->hist, NULL);
	if (with_call(rl, &u, &r) == RLOCK_OK)
		freeReplyObject(r);
}

static int set_attempt(struct rlock *rl, void *self, int64_t waited_ms,
		       int details, int listening, struct rlock_lease *lease,
		       struct rlock_holder *h, struct hold_try *t)
{
	struct set_wait *s = self;
	struct with_set *w = rl->with;
	struct with_reply wr;
	struct request q;
	redisReply *r;
	int64_t t0;
	int rc;

	s->who.waited_ms = waited_ms;
	/* Who holds a lock of the set: for the first answer's message, and
	 * the caller's live line. */
	rl_req_with_acquire(&q, w, s->token, s->o->ttl_ms, &s->who,
			    listening ? s->id : "", listening, details,
			    &rl->hist, baton_ms(rl, s->o));
	t0 = rlock_boot_ms();
	rc = with_call(rl, &q, &r);
	if (rc != RLOCK_OK)
		return rc;
	if (rl_decode_with_acquire(r, w->n, &wr, h) != 0) {
		rl_set_error(rl->err, sizeof(rl->err), "%s: unexpected reply to "
			     "acquire (--with)", s->name);
		freeReplyObject(r);
		return RLOCK_EPROTO;
	}
	freeReplyObject(r);
	if (wr.granted && !rl_lease_valid(s->o->ttl_ms, rlock_boot_ms() - t0)) {
		/* Granted too late to be of use: given back, the reason
		 * kept. */
		set_undo(rl, s);
		rl_set_error(rl->err, sizeof(rl->err), "acquire took longer "
			     "than the TTL allows");
		return RLOCK_EUNAVAIL;
	}
	if (wr.granted) {
		memcpy(w->fence, wr.fence, sizeof(w->fence));
		set_lease(lease, s->token, wr.fence[0], s->o, s->who.pid, t0);
		return RLOCK_OK;
	}
	t->joined = wr.joined;
	t->in_line = wr.place >= 0;
	t->ttl_ms = wr.pttl;
	t->place = wr.place;
	if (wr.held == 0)
		h->held = 0;
	h->place = wr.place;
	w->held = (size_t)wr.held;
	return RLOCK_BUSY;
}

/* The set's wake-up lists (one server) or release channels (several
 * masters), one per lock, for its waiter id. */
static int set_channels(struct rlock *rl, void *self, const char **chan,
			size_t *nchan, int *slot)
{
	struct set_wait *s = self;
	struct with_set *w = rl->with;

	if (s->id[0] == '\0' && rlock_make_token(s->id) != 0) {
		rl_set_error(rl->err, sizeof(rl->err), "cannot make a waiter "
			     "id: %s", strerror(errno));
		return RLOCK_ESYS;
	}
	s->id[LINE_ID_LEN] = '\0';
	for (size_t i = 0; i < w->n; i++) {
		snprintf(s->chan[i], sizeof(s->chan[i]), "%s%s", w->wake[i],
			 s->id);
		chan[i] = s->chan[i];
	}
	*nchan = w->n;
	*slot = w->slot;
	return RLOCK_OK;
}

static void set_end(struct rlock *rl, void *self, int rc, int in_line,
		    const struct rlock_holder *h, int64_t waited_ms)
{
	struct set_wait *s = self;
	char names[200];

	if (in_line && s->id[0] != '\0')
		leave_all(rl, s->token, s->id);
	if (rc == RLOCK_BUSY && !h->held)
		rl_set_error(rl->err, sizeof(rl->err), "%s: not all free, or "
			     "others in line come first",
			     set_text(rl->with, names, sizeof(names)));
	if (rc == RLOCK_BUSY || rc == RLOCK_CANCELED)
		with_skipped(rl, s->token, s->o, rc, h, waited_ms);
}

int rl_with_acquire(struct rlock *rl, const char *name,
		    const struct rlock_acquire_opts *o, struct rlock_lease *lease,
		    struct rlock_holder *holder)
{
	static const struct hold_kind set = { .attempt = set_attempt,
					      .undo = set_undo,
					      .channels = set_channels,
					      .end = set_end };
	struct with_set *w = rl->with;
	struct set_wait *s;
	int rc;

	if (strcmp(name, w->first) != 0) {
		rl_set_error(rl->err, sizeof(rl->err), "--with: the set is "
			     "asked for by its first name");
		return RLOCK_EUSAGE;
	}
	if (o->shared || o->limit > 1 || o->once_per_ms > 0 ||
	    o->supersede || o->priority != 0 || o->min_hold_ms > 0 ||
	    o->wait_replicas > 0) {
		rl_set_error(rl->err, sizeof(rl->err), "--with takes exclusive "
			     "locks only: not with -s, -l, --once-per, "
			     "--supersede, --priority, --min-hold or "
			     "--wait-replicas");
		return RLOCK_EUSAGE;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		rl_set_error(rl->err, sizeof(rl->err), "out of memory");
		return RLOCK_ESYS;
	}
	s->rl = rl;
	s->name = name;
	s->o = o;
	if (o->token != NULL) {
		rlock_strlcpy(s->token, o->token, sizeof(s->token));
	} else if (rlock_make_token(s->token) != 0) {
		rl_set_error(rl->err, sizeof(rl->err), "cannot make a token: %s",
			     strerror(errno));
		free(s);
		return RLOCK_ESYS;
	}
	rl_identify(rl);
	s->who = (struct acquirer){ rl->host, rl->user, o->label, o->note,
				    o->pid > 0 ? o->pid : (long long)getpid(),
				    0, 0 };
	rc = rl_hold_wait(rl, name, o, &set, s, lease, holder);
	explicit_bzero(s->token, sizeof(s->token));
	free(s);
	return rc;
}

int rl_with_extend(struct rlock *rl, const char *token, int64_t ttl_ms,
		   struct rlock_lease *lease)
{
	struct request q;
	redisReply *r;
	int64_t t0 = rlock_boot_ms();
	int rc;

	rl_req_with_extend(&q, rl->with, token, ttl_ms);
	rc = with_call(rl, &q, &r);
	if (rc != RLOCK_OK)
		return rc;
	if (r->type != REDIS_REPLY_INTEGER || r->integer < 0 ||
	    r->integer > 1) {
		rl_set_error(rl->err, sizeof(rl->err), "%s: unexpected reply to "
			     "extend (--with)", rl->with->first);
		rc = RLOCK_EPROTO;
	} else if (r->integer == 0) {
		rl_set_error(rl->err, sizeof(rl->err), "%s: token does not hold "
			     "every lock of the set", rl->with->first);
		rc = RLOCK_NOTOURS;
	} else if (lease != NULL) {
		__atomic_store_n(&lease->ttl_ms, ttl_ms, __ATOMIC_RELAXED);
		__atomic_store_n(&lease->renewed_boot_ms, t0,
				 __ATOMIC_RELEASE);
	}
	freeReplyObject(r);
	return rc;
}

int rl_with_release(struct rlock *rl, const char *token,
		    const struct rlock_lease *lease,
		    const struct rlock_outcome *how)
{
	struct request q;
	redisReply *r;
	int rc, dropped;

	rl_req_with_release(&q, rl->with, token, &rl->hist, how);
	rc = with_call_d(rl, &q, &r, &dropped);
	if (rc != RLOCK_OK)
		return rc;
	/* Sent again after the connection dropped, and told "not held":
	 * the first send most likely released, as nobody else can have
	 * taken the locks while the lease is ours by our own clock. */
	if (dropped && lease != NULL && r->type == REDIS_REPLY_INTEGER &&
	    r->integer == 0 && rlock_boot_ms() < lease->renewed_boot_ms +
	    lease->ttl_ms - rlock_safety_margin_ms(lease->ttl_ms)) {
		rl_set_error(rl->err, sizeof(rl->err), "%s: released (the reply "
			     "was lost; the retry found the locks free)",
			     rl->with->first);
		freeReplyObject(r);
		return RLOCK_OK;
	}
	if (r->type != REDIS_REPLY_INTEGER || r->integer < 0 ||
	    r->integer > (long long)rl->with->n) {
		rl_set_error(rl->err, sizeof(rl->err), "%s: unexpected reply to "
			     "release (--with)", rl->with->first);
		rc = RLOCK_EPROTO;
	} else if (r->integer == 0) {
		rl_set_error(rl->err, sizeof(rl->err), "%s: token does not hold "
			     "the lock", rl->with->first);
		rc = RLOCK_NOTOURS;
	} else if ((size_t)r->integer < rl->with->n) {
		/* Losing one is losing the set: the holder learns it as a
		 * token that no longer holds its lock. */
		rl_set_error(rl->err, sizeof(rl->err), "%s: released %lld of the "
			     "%zu locks of the set; the token no longer held the "
			     "others", rl->with->first, r->integer, rl->with->n);
		rc = RLOCK_NOTOURS;
	}
	freeReplyObject(r);
	return rc;
}

int rlock_with_read(struct rlock *rl, const char *name, struct rlock_with *out)
{
	struct lock_keys *n;
	struct request q;
	struct fan f;
	const char *argv[2] = { "GET", NULL };
	redisReply *r;
	int rc;

	memset(out, 0, sizeof(*out));
	rl->err[0] = '\0';
	if (rl->nnode != 1)
		return RLOCK_OK;
	n = malloc(sizeof(*n));
	if (n == NULL) {
		rl_set_error(rl->err, sizeof(rl->err), "cannot allocate: %s",
			     strerror(errno));
		return RLOCK_ESYS;
	}
	rc = rl_make_names(rl, name, n);
	if (rc != RLOCK_OK) {
		free(n);
		return rc;
	}
	{
		char key[RLOCK_KEY_MAX + 16];

		snprintf(key, sizeof(key), "%s%s", n->key, KEY_WITH);
		argv[1] = key;
		rl_req_command(&q, 2, argv, n->v.slot);
		rl_fan_init(&f, rl);
		rl_fan_all(&f, &q);
		rl_fan_run(rl, &f);
		r = f.slot[0].res.r;
		if (f.slot[0].res.rc != RLOCK_OK) {
			rc = rl_fan_first_error(rl, &f, 1);
		} else if (r->type == REDIS_REPLY_NIL) {
			rc = RLOCK_OK;
		} else if (r->type != REDIS_REPLY_STRING ||
			   rl_decode_with_record(r->str, r->len, out) != 0) {
			memset(out, 0, sizeof(*out));
			rl_set_error(rl->err, sizeof(rl->err), "%s: not a record "
				     "of locks held together (another client's "
				     "data?)", key);
			rc = RLOCK_EPROTO;
		}
		rl_fan_done(&f);
	}
	free(n);
	return rc;
}
