/*
 * lock.c - the lock algorithm over a set of servers.  One server is the
 * case N = 1 of Redlock: every verb sends its script to all servers at
 * once and counts a quorum of N/2 + 1, so a single server, and later
 * several independent masters, go through the same code.
 */
#include <errno.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lock_int.h"

/* ---- handle --------------------------------------------------------- */

/* Make the TLS context when a URL asks for TLS. */
static int setup_tls(struct rlock *rl, const struct rlock_config *cfg,
		     char *err, size_t errlen)
{
	struct tls_opts o;
	size_t i;

	for (i = 0; i < rl->nsrv; i++) {
		if (rl->srv[i].url.kind == RLOCK_URL_TLS)
			break;
	}
	if (i == rl->nsrv)
		return RLOCK_OK;
	o.cacert = cfg->tls_cacert;
	o.cacertdir = cfg->tls_cacertdir;
	o.cert = cfg->tls_cert;
	o.key = cfg->tls_key;
	o.sni = cfg->tls_sni;
	o.insecure = cfg->tls_insecure;
	return tls_ctx_get(&o, &rl->copts.tls, err, errlen);
}

struct rlock *rlock_new(const struct rlock_config *cfg, int *code, char *err,
			size_t errlen)
{
	struct rlock *rl;
	size_t i;

	*code = RLOCK_EUSAGE;
	if (cfg->nurls == 0 || cfg->nurls > RLOCK_MAX_SERVERS) {
		rlock_seterr(err, errlen, "between 1 and %d servers needed",
			     RLOCK_MAX_SERVERS);
		return NULL;
	}
	if (cfg->nurls == 2) {
		rlock_seterr(err, errlen, "two servers cannot form a quorum: "
			     "give one URL, or three or more independent masters");
		return NULL;
	}
	if (cfg->prefix != NULL && strlen(cfg->prefix) >= sizeof(rl->prefix)) {
		rlock_seterr(err, errlen, "prefix longer than %zu bytes",
			     sizeof(rl->prefix) - 1);
		return NULL;
	}
	rl = calloc(1, sizeof(*rl));
	if (rl != NULL)
		rl->srv = calloc(cfg->nurls, sizeof(*rl->srv));
	if (rl == NULL || rl->srv == NULL) {
		free(rl);
		goto oom;
	}
	rl->copts.connect_timeout_ms = cfg->connect_timeout_ms > 0 ?
		cfg->connect_timeout_ms : 2000;
	rl->copts.io_timeout_ms = cfg->io_timeout_ms > 0 ?
		cfg->io_timeout_ms : 2000;
	if (cfg->password != NULL) {
		snprintf(rl->password, sizeof(rl->password), "%s",
			 cfg->password);
		rl->copts.password = rl->password;
	}
	snprintf(rl->prefix, sizeof(rl->prefix), "%s",
		 cfg->prefix != NULL ? cfg->prefix : "rlock:");
	for (i = 0; i < cfg->nurls; i++) {
		const char *why = NULL;
		struct rlock_url *u = &rl->srv[i].url;

		if (rlock_url_parse(cfg->urls[i], u, &why) != 0) {
			rlock_seterr(err, errlen, "invalid URL '%s': %s",
				     cfg->urls[i], why);
			goto fail;
		}
		if (u->kind == RLOCK_URL_SENTINEL) {
			rlock_seterr(err, errlen, "%s: redis-sentinel:// URLs "
				     "are not supported yet", cfg->urls[i]);
			goto fail;
		}
		rl->nsrv++;
	}
	*code = setup_tls(rl, cfg, err, errlen);
	if (*code != RLOCK_OK)
		goto fail;
	for (i = 0; i < rl->nsrv; i++) {
		rl->srv[i].cmd = conn_new(&rl->srv[i].url, 0, &rl->copts);
		rl->srv[i].sub = conn_new(&rl->srv[i].url, 0, &rl->copts);
		if (rl->srv[i].cmd == NULL || rl->srv[i].sub == NULL) {
			rlock_free(rl);
			goto oom;
		}
	}
	rl->quorum = rl->nsrv / 2 + 1;
	return rl;
oom:
	*code = RLOCK_ESYS;
	rlock_seterr(err, errlen, "out of memory");
	return NULL;
fail:
	rlock_free(rl);
	return NULL;
}

/*
 * Who we are, for the holder's metadata: looked up at the first acquire
 * only, since a renewal thread, release, extend and status never need it.
 * $USER spares the NSS look-up, which would cost more than the lock itself
 * on loopback; the name is shown to people, never trusted.
 */
void rlock_identify(struct rlock *rl)
{
	const char *env;
	struct passwd *pw;

	if (rl->host[0] != '\0')
		return;
	if (gethostname(rl->host, sizeof(rl->host)) != 0)
		snprintf(rl->host, sizeof(rl->host), "unknown");
	rl->host[sizeof(rl->host) - 1] = '\0';
	env = getenv("USER");
	if (env == NULL || *env == '\0')
		env = getenv("LOGNAME");
	if (env != NULL && *env != '\0') {
		snprintf(rl->user, sizeof(rl->user), "%s", env);
	} else if ((pw = getpwuid(geteuid())) != NULL) {
		snprintf(rl->user, sizeof(rl->user), "%s", pw->pw_name);
	} else {
		snprintf(rl->user, sizeof(rl->user), "%u",
			 (unsigned)geteuid());
	}
}

void rlock_free(struct rlock *rl)
{
	if (rl == NULL)
		return;
	for (size_t i = 0; i < rl->nsrv; i++) {
		conn_free(rl->srv[i].cmd);
		conn_free(rl->srv[i].sub);
	}
	free(rl->srv);
	tls_ctx_put(rl->copts.tls);
	explicit_bzero(rl->password, sizeof(rl->password));
	free(rl);
}

const char *rlock_errstr(const struct rlock *rl)
{
	return rl->err;
}

const char *rlock_key(struct rlock *rl, const char *name)
{
	snprintf(rl->keybuf, sizeof(rl->keybuf), "%s{%s}", rl->prefix, name);
	return rl->keybuf;
}

/* The four names of lock name: key, meta, fence counter and channel. */
struct names {
	char key[RLOCK_KEY_MAX];
	char meta[RLOCK_KEY_MAX + 16];
	char fence[RLOCK_KEY_MAX + 16];
	char chan[RLOCK_KEY_MAX + 16];
};

static int make_names(struct rlock *rl, const char *name, struct names *n)
{
	const char *why;

	if (rlock_check_name(name, &why) != RLOCK_OK) {
		rlock_seterr(rl->err, sizeof(rl->err),
			     "invalid lock name: %s", why);
		return RLOCK_EUSAGE;
	}
	snprintf(n->key, sizeof(n->key), "%s{%s}", rl->prefix, name);
	snprintf(n->meta, sizeof(n->meta), "%s:meta", n->key);
	snprintf(n->fence, sizeof(n->fence), "%s:fence", n->key);
	snprintf(n->chan, sizeof(n->chan), "%s:released", n->key);
	return RLOCK_OK;
}

int64_t rlock_safety_margin_ms(int64_t ttl_ms)
{
	/* Clock drift between us and the server (1%, as Redlock assumes)
	 * plus time to stop the command before the server frees the key. */
	return ttl_ms / 10 + 2;
}

/* ---- reading replies ------------------------------------------------ */

static long long elem_ll(const redisReply *r, size_t i)
{
	const redisReply *e;

	if (r->type != REDIS_REPLY_ARRAY || i >= r->elements)
		return 0;
	e = r->element[i];
	if (e->type == REDIS_REPLY_INTEGER)
		return e->integer;
	if (e->type == REDIS_REPLY_STRING)
		return strtoll(e->str, NULL, 10);
	return 0;
}

static void elem_str(const redisReply *r, size_t i, char *buf, size_t len)
{
	const redisReply *e;

	buf[0] = '\0';
	if (r->type != REDIS_REPLY_ARRAY || i >= r->elements)
		return;
	e = r->element[i];
	if (e->type == REDIS_REPLY_STRING || e->type == REDIS_REPLY_STATUS)
		snprintf(buf, len, "%.*s", (int)e->len, e->str);
}

/* Holder layout shared by the acquire, force and status scripts:
 * {flag, pttl, host, pid, user, command, since, fence, token8, now}. */
static int parse_holder(const redisReply *r, struct rlock_holder *h)
{
	char tmp[32];

	if (r->type != REDIS_REPLY_ARRAY || r->elements < 10)
		return -1;
	memset(h, 0, sizeof(*h));
	h->held = elem_ll(r, 0) != 0;
	h->ttl_ms = elem_ll(r, 1);
	elem_str(r, 2, h->host, sizeof(h->host));
	elem_str(r, 3, tmp, sizeof(tmp));
	h->pid = strtoll(tmp, NULL, 10);
	elem_str(r, 4, h->user, sizeof(h->user));
	elem_str(r, 5, h->command, sizeof(h->command));
	h->since_ms = elem_ll(r, 6);
	h->fence = elem_ll(r, 7);
	elem_str(r, 8, h->token_prefix, sizeof(h->token_prefix));
	if (h->since_ms > 0)
		h->age_ms = elem_ll(r, 9) - h->since_ms;
	return 0;
}

/* Copy the first error among res into rl->err and return its code; with
 * nsrv > 1 say how many servers failed. */
static int first_error(struct rlock *rl, struct rlock_result *res,
		       size_t failed)
{
	for (size_t i = 0; i < rl->nsrv; i++) {
		if (res[i].rc == RLOCK_OK)
			continue;
		if (rl->nsrv == 1)
			snprintf(rl->err, sizeof(rl->err), "%s", res[i].err);
		else
			snprintf(rl->err, sizeof(rl->err),
				 "no quorum: %zu of %zu servers failed (%s)",
				 failed, rl->nsrv, res[i].err);
		return rl->nsrv == 1 ? res[i].rc : RLOCK_EUNAVAIL;
	}
	snprintf(rl->err, sizeof(rl->err), "no quorum");
	return RLOCK_EUNAVAIL;
}

static void unexpected(struct rlock_result *res, const char *what)
{
	res->rc = RLOCK_EPROTO;
	snprintf(res->err, sizeof(res->err), "unexpected reply to %s", what);
}

/* ---- acquire -------------------------------------------------------- */

/* Undo a partial grant on the servers that gave it. */
static void undo(struct rlock *rl, const struct names *n, const char *token,
		 const int *granted)
{
	struct rlock_result res[RLOCK_MAX_SERVERS];
	const char *keys[2] = { n->key, n->meta };
	const char *args[2] = { token, n->chan };
	size_t i, any = 0;

	for (i = 0; i < rl->nsrv; i++)
		any += granted[i];
	if (any == 0)
		return;
	rlock_eval_all(rl, RLOCK_SCRIPT_RELEASE, 2, keys, 2, args, res);
	rlock_results_free(rl, res);
}

/* One attempt on every server.  Returns RLOCK_OK, RLOCK_BUSY with holder
 * filled, or an error. */
static int try_acquire(struct rlock *rl, const struct names *n,
		       const struct rlock_acquire_opts *o, const char *token,
		       int details, struct rlock_lease *lease,
		       struct rlock_holder *holder)
{
	struct rlock_result res[RLOCK_MAX_SERVERS];
	char ttl[32], pid[32], minhold[32], label[RLOCK_LABEL_MAX + 1];
	const char *keys[3] = { n->key, n->meta, n->fence };
	const char *args[8];
	int granted[RLOCK_MAX_SERVERS] = { 0 };
	size_t i, ngrant = 0, nbusy = 0, nfail = 0;
	long long fence = 0;
	int64_t t0, elapsed, drift;
	int rc;

	snprintf(ttl, sizeof(ttl), "%lld", (long long)o->ttl_ms);
	snprintf(pid, sizeof(pid), "%lld",
		 o->pid > 0 ? o->pid : (long long)getpid());
	snprintf(minhold, sizeof(minhold), "%lld", (long long)o->min_hold_ms);
	rlock_identify(rl);
	args[0] = token;
	args[1] = ttl;
	args[2] = rl->host;
	args[3] = pid;
	args[4] = rl->user;
	/* The label is cut at RLOCK_LABEL_MAX bytes, as status shows it. */
	snprintf(label, sizeof(label), "%s", o->label != NULL ? o->label : "");
	args[5] = label;
	args[6] = minhold;
	args[7] = details ? "1" : "0";
	t0 = rlock_boot_ms();
	rlock_eval_all(rl, RLOCK_SCRIPT_ACQUIRE, 3, keys, 8, args, res);
	elapsed = rlock_boot_ms() - t0;
	for (i = 0; i < rl->nsrv; i++) {
		redisReply *r = res[i].r;

		if (res[i].rc != RLOCK_OK) {
			nfail++;
			continue;
		}
		if (r->type != REDIS_REPLY_ARRAY || r->elements < 2) {
			unexpected(&res[i], "acquire");
			nfail++;
			continue;
		}
		if (elem_ll(r, 0) == 1) {
			granted[i] = 1;
			ngrant++;
			if (elem_ll(r, 1) > fence)
				fence = elem_ll(r, 1);
		} else if (r->elements == 2) {
			/* The cheap answer: only the lease left; the
			 * details are those of the last detailed answer. */
			holder->held = 1;
			holder->ttl_ms = elem_ll(r, 1);
			nbusy++;
		} else if (parse_holder(r, holder) == 0) {
			nbusy++;
		} else {
			unexpected(&res[i], "acquire");
			nfail++;
		}
	}
	drift = o->ttl_ms / 100 + 2;
	if (ngrant >= rl->quorum && elapsed < o->ttl_ms - drift) {
		snprintf(lease->token, sizeof(lease->token), "%s", token);
		lease->fence = fence;
		lease->ttl_ms = o->ttl_ms;
		lease->taken_boot_ms = t0;
		lease->renewed_boot_ms = t0;
		rc = RLOCK_OK;
	} else {
		if (ngrant > 0)
			undo(rl, n, token, granted);
		if (nbusy > 0 && nbusy + nfail > rl->nsrv - rl->quorum &&
		    nfail <= rl->nsrv - rl->quorum) {
			rc = RLOCK_BUSY;
		} else if (nfail > 0) {
			rc = first_error(rl, res, nfail);
		} else {
			/* Granted by a quorum, too late to be of use. */
			rlock_seterr(rl->err, sizeof(rl->err), "acquire took "
				     "longer than the TTL allows");
			rc = RLOCK_BUSY;
		}
	}
	rlock_results_free(rl, res);
	return rc;
}

/* Subscribe every reachable server's second connection to the release
 * channel.  Returns the number subscribed. */
static size_t subscribe(struct rlock *rl, const struct names *n,
			int64_t deadline, int cancel_fd)
{
	size_t i, ok = 0;

	for (i = 0; i < rl->nsrv; i++) {
		struct rlock_conn *c = rl->srv[i].sub;
		const char *argv[2] = { "SUBSCRIBE", n->chan };
		redisReply *r = NULL;

		if (conn_call(c, deadline, cancel_fd, 2, argv, NULL, &r) !=
		    RLOCK_OK)
			continue;
		if (r->type == REDIS_REPLY_ARRAY)
			ok++;
		else
			conn_close(c);
		freeReplyObject(r);
	}
	return ok;
}

/* Whether any subscription is still up: one is enough to hear of a
 * release, and a master that is down must not be retried every round. */
static int subs_up(const struct rlock *rl)
{
	for (size_t i = 0; i < rl->nsrv; i++) {
		if (conn_is_up(rl->srv[i].sub))
			return 1;
	}
	return 0;
}

static void unsubscribe(struct rlock *rl)
{
	/* A subscribed connection cannot run commands: close it rather than
	 * track the UNSUBSCRIBE reply. */
	for (size_t i = 0; i < rl->nsrv; i++)
		conn_close(rl->srv[i].sub);
}

/* Wait until a release message arrives, cancel_fd is readable, or wake
 * (monotonic ms).  Returns RLOCK_OK (woken), RLOCK_CANCELED. */
static int wait_release(struct rlock *rl, int64_t wake, int cancel_fd)
{
	struct pollfd p[RLOCK_MAX_SERVERS + 1];
	size_t i, np;
	int64_t now;
	int ready;

	for (;;) {
		np = 0;
		ready = 0;
		for (i = 0; i < rl->nsrv; i++) {
			struct rlock_conn *c = rl->srv[i].sub;

			if (!conn_is_up(c))
				continue;
			p[np].fd = conn_fd(c);
			p[np].events = conn_events(c);
			p[np].revents = 0;
			/* Input held inside the transport (TLS) is invisible
			 * to poll: take it now. */
			if (conn_buffered(c)) {
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
		np = 0;
		for (i = 0; i < rl->nsrv; i++) {
			struct rlock_conn *c = rl->srv[i].sub;
			redisReply *r;
			int woke = 0;

			if (!conn_is_up(c))
				continue;
			if (p[np++].revents == 0)
				continue;
			if (conn_on_ready(c, p[np - 1].revents) != RLOCK_OK)
				return RLOCK_OK; /* retry at once */
			while (conn_take_reply(c, &r) == 1) {
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

int rlock_acquire(struct rlock *rl, const char *name,
		  const struct rlock_acquire_opts *o,
		  struct rlock_lease *lease, struct rlock_holder *holder)
{
	struct rlock_holder h;
	struct names n;
	char token[RLOCK_TOKEN_LEN + 1];
	int64_t start = rlock_mono_ms(), deadline, now, wake, last_cb = 0;
	int64_t backoff = 0;
	int rc, subscribed = 0, seen_busy = 0, attempts = 0;

	rl->err[0] = '\0';
	if (holder == NULL)
		holder = &h;
	memset(holder, 0, sizeof(*holder));
	rc = make_names(rl, name, &n);
	if (rc != RLOCK_OK)
		return rc;
	if (o->token != NULL) {
		snprintf(token, sizeof(token), "%s", o->token);
	} else if (rlock_make_token(token) != 0) {
		rlock_seterr(rl->err, sizeof(rl->err),
			     "cannot make a token: %s", strerror(errno));
		return RLOCK_ESYS;
	}
	deadline = o->wait_ms < 0 ? INT64_MAX : start + o->wait_ms;
	for (;;) {
		rc = try_acquire(rl, &n, o, token,
				 attempts++ == 0 || o->wait_cb != NULL, lease,
				 holder);
		now = rlock_mono_ms();
		if (rc == RLOCK_EUNAVAIL && seen_busy && now < deadline) {
			/* The servers answered before: a restart or a dropped
			 * connection must not end a wait of minutes.  Back off
			 * and try again while the wait lasts; a server that
			 * never answered fails at once, above. */
			if (backoff < 1000)
				backoff = backoff == 0 ? 100 : backoff * 2;
			wake = now + backoff + jitter((unsigned)backoff / 2);
			if (wake > deadline)
				wake = deadline;
			unsubscribe(rl);
			subscribed = 0;
			rc = wait_release(rl, wake, o->cancel_fd);
			if (rc == RLOCK_CANCELED)
				break;
			continue;
		}
		if (rc != RLOCK_BUSY || o->wait_ms == 0)
			break;
		seen_busy = 1;
		backoff = 0;
		if (now >= deadline)
			break;
		if (subscribed && !subs_up(rl))
			subscribed = 0; /* dropped: subscribe again */
		if (!subscribed) {
			/* Subscribe, then try once more: a release between
			 * the first try and the subscription is not missed. */
			subscribed = subscribe(rl, &n, now +
					       rl->copts.io_timeout_ms,
					       o->cancel_fd) > 0;
			if (subscribed)
				continue;
		}
		if (o->wait_cb != NULL && now - last_cb >= 900) {
			o->wait_cb(holder, now - start, o->wait_arg);
			last_cb = now;
		}
		/* Wake on a release message, or when the holder's lease runs
		 * out (a holder that died never publishes), plus jitter so
		 * that waiters do not all arrive at once. */
		if (holder->ttl_ms >= 0)
			wake = now + holder->ttl_ms + 1 +
				jitter((unsigned)(holder->ttl_ms / 20 + 5));
		else
			wake = now + 1000;
		if (!subscribed && wake > now + 1000)
			wake = now + 1000; /* no channel: check back */
		if (o->wait_cb != NULL && wake > now + 1000)
			wake = now + 1000;
		if (wake > deadline)
			wake = deadline;
		rc = wait_release(rl, wake, o->cancel_fd);
		if (rc == RLOCK_CANCELED) {
			rlock_seterr(rl->err, sizeof(rl->err), "%s: canceled",
				     name);
			break;
		}
	}
	if (subscribed)
		unsubscribe(rl);
	if (rc == RLOCK_BUSY && rl->err[0] == '\0')
		rlock_seterr(rl->err, sizeof(rl->err), "%s: held", name);
	return rc;
}

/* ---- extend, release, force ---------------------------------------- */

/* Count a quorum among integer replies: positive is yes, zero is no. */
static int tally(struct rlock *rl, struct rlock_result *res,
		 const char *what, size_t *yes_out)
{
	size_t i, yes = 0, no = 0, fail = 0;

	for (i = 0; i < rl->nsrv; i++) {
		if (res[i].rc == RLOCK_OK &&
		    res[i].r->type != REDIS_REPLY_INTEGER)
			unexpected(&res[i], what);
		if (res[i].rc != RLOCK_OK)
			fail++;
		else if (res[i].r->integer > 0)
			yes++;
		else
			no++;
	}
	if (yes_out != NULL)
		*yes_out = yes;
	if (yes >= rl->quorum)
		return RLOCK_OK;
	if (no > rl->nsrv - rl->quorum)
		return RLOCK_NOTOURS;
	return first_error(rl, res, fail);
}

int rlock_extend(struct rlock *rl, const char *name, const char *token,
		 int64_t ttl_ms, struct rlock_lease *lease)
{
	struct rlock_result res[RLOCK_MAX_SERVERS];
	struct names n;
	char ttl[32];
	const char *keys[2], *args[2];
	int64_t t0;
	int rc;

	rc = make_names(rl, name, &n);
	if (rc != RLOCK_OK)
		return rc;
	snprintf(ttl, sizeof(ttl), "%lld", (long long)ttl_ms);
	keys[0] = n.key;
	keys[1] = n.meta;
	args[0] = token;
	args[1] = ttl;
	t0 = rlock_boot_ms();
	rlock_eval_all(rl, RLOCK_SCRIPT_EXTEND, 2, keys, 2, args, res);
	rc = tally(rl, res, "extend", NULL);
	if (rc == RLOCK_OK && lease != NULL) {
		/* The server restarted its clock no earlier than we sent. */
		lease->renewed_boot_ms = t0;
		lease->ttl_ms = ttl_ms;
	}
	if (rc == RLOCK_NOTOURS)
		rlock_seterr(rl->err, sizeof(rl->err),
			     "%s: token does not hold the lock", name);
	rlock_results_free(rl, res);
	return rc;
}

int rlock_release(struct rlock *rl, const char *name, const char *token,
		  const struct rlock_lease *lease)
{
	struct rlock_result res[RLOCK_MAX_SERVERS];
	struct names n;
	const char *keys[2], *args[2];
	int rc;

	rl->err[0] = '\0';
	rc = make_names(rl, name, &n);
	if (rc != RLOCK_OK)
		return rc;
	keys[0] = n.key;
	keys[1] = n.meta;
	args[0] = token;
	args[1] = n.chan;
	rlock_eval_all(rl, RLOCK_SCRIPT_RELEASE, 2, keys, 2, args, res);
	rc = tally(rl, res, "release", NULL);
	if (rc == RLOCK_NOTOURS && rl->resent > 0 && lease != NULL &&
	    rlock_boot_ms() < lease->renewed_boot_ms + lease->ttl_ms -
	    rlock_safety_margin_ms(lease->ttl_ms)) {
		/* Nobody else could have taken a lease that was still ours:
		 * the request whose reply was lost did the release. */
		rlock_seterr(rl->err, sizeof(rl->err), "%s: released (the "
			     "reply was lost; the retry found the lock "
			     "free)", name);
		rc = RLOCK_OK;
	} else if (rc == RLOCK_NOTOURS) {
		rlock_seterr(rl->err, sizeof(rl->err),
			     "%s: token does not hold the lock", name);
	}
	rlock_results_free(rl, res);
	return rc;
}

int rlock_force_release(struct rlock *rl, const char *name,
			struct rlock_holder *was)
{
	struct rlock_result res[RLOCK_MAX_SERVERS];
	struct names n;
	const char *keys[2], *args[1];
	size_t i, removed = 0, fail = 0;
	int rc;

	rc = make_names(rl, name, &n);
	if (rc != RLOCK_OK)
		return rc;
	memset(was, 0, sizeof(*was));
	keys[0] = n.key;
	keys[1] = n.meta;
	args[0] = n.chan;
	rlock_eval_all(rl, RLOCK_SCRIPT_FORCE, 2, keys, 1, args, res);
	for (i = 0; i < rl->nsrv; i++) {
		if (res[i].rc != RLOCK_OK) {
			fail++;
			continue;
		}
		if (res[i].r->type != REDIS_REPLY_ARRAY) {
			unexpected(&res[i], "release");
			fail++;
			continue;
		}
		if (elem_ll(res[i].r, 0) == 1 &&
		    parse_holder(res[i].r, was) == 0)
			removed++;
	}
	/* Removing is forceful: any server that removed counts, but every
	 * server must have answered for "was not held" to be true. */
	if (removed > 0)
		rc = RLOCK_OK;
	else if (fail > 0)
		rc = first_error(rl, res, fail);
	else
		rc = RLOCK_NOTOURS;
	rlock_results_free(rl, res);
	return rc;
}

/* ---- status and list ------------------------------------------------ */

int rlock_status(struct rlock *rl, const char *name, struct rlock_holder *out)
{
	struct rlock_result res[RLOCK_MAX_SERVERS];
	struct rlock_holder h;
	struct names n;
	const char *keys[3];
	size_t i, held = 0, fail = 0, ok = 0;
	int rc;

	rc = make_names(rl, name, &n);
	if (rc != RLOCK_OK)
		return rc;
	memset(out, 0, sizeof(*out));
	keys[0] = n.key;
	keys[1] = n.meta;
	keys[2] = n.fence;
	rlock_eval_all(rl, RLOCK_SCRIPT_STATUS, 3, keys, 0, NULL, res);
	for (i = 0; i < rl->nsrv; i++) {
		if (res[i].rc == RLOCK_OK && parse_holder(res[i].r, &h) != 0)
			unexpected(&res[i], "status");
		if (res[i].rc != RLOCK_OK) {
			fail++;
			continue;
		}
		ok++;
		if (h.held) {
			if (held == 0 || h.fence > out->fence)
				*out = h;
			held++;
		} else if (held == 0 && h.fence > out->fence) {
			out->fence = h.fence;
		}
	}
	rlock_results_free(rl, res);
	if (ok < rl->quorum)
		return first_error(rl, res, fail);
	out->held = held >= rl->quorum;
	if (!out->held) {
		long long fence = out->fence;

		memset(out, 0, sizeof(*out));
		out->fence = fence;
		out->ttl_ms = -2;
	}
	/* Waiters are the subscribers of the release channel. */
	out->waiters = 0;
	for (i = 0; i < rl->nsrv; i++) {
		const char *argv[3] = { "PUBSUB", "NUMSUB", n.chan };
		redisReply *r = NULL;

		if (conn_call(rl->srv[i].cmd, rlock_mono_ms() +
			      rl->copts.io_timeout_ms, -1, 3, argv, NULL,
			      &r) != RLOCK_OK)
			continue;
		if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
		    elem_ll(r, 1) > out->waiters)
			out->waiters = elem_ll(r, 1);
		freeReplyObject(r);
	}
	return RLOCK_OK;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int rlock_list(struct rlock *rl, int (*cb)(const char *name, void *arg),
	       void *arg)
{
	char pattern[sizeof(rl->prefix) * 2 + 8];
	char **names = NULL;
	size_t nnames = 0, cap = 0, plen = strlen(rl->prefix), i, j = 0;
	int rc = RLOCK_OK;

	/* The prefix is literal: escape the glob characters SCAN knows. */
	for (i = 0; rl->prefix[i] != '\0'; i++) {
		if (strchr("*?[]\\", rl->prefix[i]) != NULL)
			pattern[j++] = '\\';
		pattern[j++] = rl->prefix[i];
	}
	memcpy(pattern + j, "{*}", 4);
	for (i = 0; i < rl->nsrv && rc == RLOCK_OK; i++) {
		char cursor[32] = "0";

		do {
			/* Only strings: a key of another type under the
			 * prefix is not a lock (Redis 6 and later). */
			const char *argv[8] = { "SCAN", cursor, "MATCH",
						pattern, "COUNT", "1000",
						"TYPE", "string" };
			redisReply *r = NULL, *keys;

			rc = conn_call(rl->srv[i].cmd, rlock_mono_ms() +
				       rl->copts.io_timeout_ms, -1, 8, argv,
				       NULL, &r);
			if (rc != RLOCK_OK) {
				snprintf(rl->err, sizeof(rl->err), "%s",
					 conn_errstr(rl->srv[i].cmd));
				break;
			}
			if (r->type == REDIS_REPLY_ERROR) {
				struct rlock_result e;

				rlock_classify_error(r,
						     conn_addr(rl->srv[i].cmd),
						     pattern, &e);
				snprintf(rl->err, sizeof(rl->err), "%s", e.err);
				rc = e.rc;
				freeReplyObject(r);
				break;
			}
			if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
			    r->element[0]->type != REDIS_REPLY_STRING ||
			    r->element[1]->type != REDIS_REPLY_ARRAY) {
				snprintf(rl->err, sizeof(rl->err),
					 "%s: unexpected reply to SCAN",
					 conn_addr(rl->srv[i].cmd));
				rc = RLOCK_EPROTO;
				freeReplyObject(r);
				break;
			}
			snprintf(cursor, sizeof(cursor), "%s",
				 r->element[0]->str);
			keys = r->element[1];
			for (size_t k = 0; k < keys->elements; k++) {
				const redisReply *e = keys->element[k];
				char *nm;

				if (e->type != REDIS_REPLY_STRING ||
				    e->len < plen + 2)
					continue;
				if (nnames == cap) {
					char **nn;

					cap = cap ? cap * 2 : 64;
					nn = realloc(names, cap * sizeof(*nn));
					if (nn == NULL) {
						rc = RLOCK_ESYS;
						break;
					}
					names = nn;
				}
				nm = strndup(e->str + plen + 1,
					     e->len - plen - 2);
				if (nm == NULL) {
					rc = RLOCK_ESYS;
					break;
				}
				names[nnames++] = nm;
			}
			freeReplyObject(r);
			if (rc == RLOCK_ESYS)
				rlock_seterr(rl->err, sizeof(rl->err),
					     "out of memory");
		} while (rc == RLOCK_OK && strcmp(cursor, "0") != 0);
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

/* ---- keepalive ------------------------------------------------------ */

/* Sleep until wake_boot (CLOCK_BOOTTIME ms) or until stop_fd is readable.
 * Returns 1 when stopped. */
static int nap(int64_t wake_boot, int stop_fd)
{
	struct pollfd p = { .fd = stop_fd, .events = POLLIN };

	for (;;) {
		int64_t left = wake_boot - rlock_boot_ms();

		if (left <= 0)
			return 0;
		/* poll counts on the monotonic clock, which stops during
		 * suspend: wake at least every second to look again. */
		if (left > 1000)
			left = 1000;
		if (poll(&p, stop_fd >= 0 ? 1 : 0, (int)left) > 0)
			return 1;
	}
}

int rlock_keepalive(struct rlock *rl, const char *name,
		    struct rlock_lease *lease, int stop_fd)
{
	int64_t period = lease->ttl_ms / 3, margin, next, lost_at, now;
	int rc;

	margin = rlock_safety_margin_ms(lease->ttl_ms);
	next = lease->renewed_boot_ms + period;
	for (;;) {
		lost_at = lease->renewed_boot_ms + lease->ttl_ms - margin;
		now = rlock_boot_ms();
		if (now >= lost_at)
			goto lost;
		if (nap(next < lost_at ? next : lost_at, stop_fd))
			return RLOCK_OK;
		now = rlock_boot_ms();
		if (now >= lost_at)
			goto lost;
		/* Bound the I/O by the lease: a reply that comes after the
		 * deadline is of no use. */
		rl->hard_deadline = rlock_mono_ms() + (lost_at - now);
		rc = rlock_extend(rl, name, lease->token, lease->ttl_ms, lease);
		rl->hard_deadline = 0;
		if (rc == RLOCK_OK) {
			next = lease->renewed_boot_ms + period;
		} else if (rc == RLOCK_NOTOURS) {
			rlock_seterr(rl->err, sizeof(rl->err),
				     "the token no longer holds it");
			return RLOCK_NOTOURS;
		} else {
			/* Keep trying, faster than the period, until the
			 * lease may have run out. */
			int64_t retry = period / 4;

			if (retry > 500)
				retry = 500;
			if (retry < 5)
				retry = 5;
			next = rlock_boot_ms() + retry;
		}
	}
lost:
	{
		char tb[32];

		(void)name;
		rlock_seterr(rl->err, sizeof(rl->err), "no renewal "
			     "confirmed for %s",
			     rlock_fmt_ms(rlock_boot_ms() -
					  lease->renewed_boot_ms, tb,
					  sizeof(tb)));
	}
	return RLOCK_LOST;
}
