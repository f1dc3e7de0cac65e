/*
 * node.c - the topology: where each server of a lock is reached.
 *
 * A node is one URL.  Direct, it is that URL's server.  Sentinel, it is
 * the master the sentinels name: asked for in order (the one that answered
 * last first), checked with HELLO (a replica is refused), and asked for
 * again whenever the connection drops, which is how Sentinel tells clients
 * of a failover, or answers READONLY.  Cluster: any redis:// node may turn
 * out to be one; the first MOVED says so.  The node then keeps the masters
 * redirections name as peers and a slot map, sends each request to the
 * owner of its slot, follows MOVED (remembered) and ASK (once, after
 * ASKING), and has TRYAGAIN and CLUSTERDOWN sent again.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "keys.h"
#include "node.h"
#include "reply.h"

#define DOWN_MS 1000		/* a cluster peer that refused: others first */
#define REASK_MS 150		/* between rounds of asking the sentinels */

static int64_t cut(int64_t deadline, int64_t hard)
{
	return hard > 0 && deadline > hard ? hard : deadline;
}

/* ---- peers ------------------------------------------------------------ */

/* A peer at host:port (NULL host: the URL's own server), with the node's
 * credentials, TLS and db.  Returns its index, or -1 when out of memory
 * or room. */
static int peer_add(struct rlock_node *n, const char *host, int port)
{
	const struct rlock_conn_opts *o = n->sent != NULL ? &n->mopts :
		n->copts;
	struct peer *p;

	if (n->npeer == NODE_MAX_PEERS)
		return -1;
	if (n->npeer == n->cappeer) {
		size_t cap = n->cappeer ? n->cappeer * 2 : 1;
		struct peer **np = realloc(n->peer, cap * sizeof(*np));

		if (np == NULL)
			return -1;
		n->peer = np;
		n->cappeer = cap;
	}
	/* Not calloc: the URL is copied whole, and zeroing it first cost
	 * an uncontended run 5% of its instructions. */
	p = malloc(sizeof(*p));
	if (p == NULL)
		return -1;
	p->url = n->url;
	p->down_until = 0;
	if (host != NULL) {
		p->url.kind = n->url.tls ? RLOCK_URL_TLS : RLOCK_URL_TCP;
		p->url.nhosts = 1;
		snprintf(p->url.hosts[0].host, sizeof(p->url.hosts[0].host),
			 "%s", host);
		p->url.hosts[0].port = port;
		p->url.master[0] = '\0';
	}
	p->cmd = rl_conn_new(&p->url, 0, o);
	if (p->cmd == NULL) {
		free(p);
		return -1;
	}
	n->peer[n->npeer] = p;
	return (int)n->npeer++;
}

/* The peer at host:port, added when new.  -1 when out of memory or room. */
static int peer_find(struct rlock_node *n, const char *host, int port)
{
	for (size_t i = 0; i < n->npeer; i++) {
		const struct rlock_url *u = &n->peer[i]->url;

		if (u->kind != RLOCK_URL_UNIX && u->hosts[0].port == port &&
		    strcasecmp(u->hosts[0].host, host) == 0)
			return (int)i;
	}
	return peer_add(n, host, port);
}

static void use_peer(struct rlock_node *n, size_t i)
{
	n->cur = i;
	n->cmd = n->peer[i]->cmd;
}

/* Aim peer i at host:port (Sentinel's master moved): a new connection. */
static int peer_move(struct rlock_node *n, size_t i, const char *host,
		     int port)
{
	struct peer *p = n->peer[i];
	struct rlock_conn *c;

	if (p->url.hosts[0].port == port &&
	    strcmp(p->url.hosts[0].host, host) == 0)
		return RLOCK_OK;
	snprintf(p->url.hosts[0].host, sizeof(p->url.hosts[0].host), "%s",
		 host);
	p->url.hosts[0].port = port;
	c = rl_conn_new(&p->url, 0, &n->mopts);
	if (c == NULL)
		return RLOCK_ESYS;
	rl_conn_free(p->cmd);
	p->cmd = c;
	if (n->cur == i)
		n->cmd = c;
	return RLOCK_OK;
}

int rl_node_init(struct rlock_node *n, const struct rlock_conn_opts *o,
		 const struct sentinel_auth *sa)
{
	struct sentinels *st;

	n->copts = o;
	n->ask = -1;
	if (n->url.kind != RLOCK_URL_SENTINEL) {
		if (peer_add(n, NULL, 0) < 0)
			return RLOCK_ESYS;
		use_peer(n, 0);
		return RLOCK_OK;
	}
	st = calloc(1, sizeof(*st));
	if (st == NULL)
		return RLOCK_ESYS;
	n->sent = st;
	/* The URL's user and password are the master's; the sentinels have
	 * their own, or none. */
	n->mopts = *o;
	n->mopts.want_master = 1;
	st->opts = *o;
	st->opts.password = NULL;
	/* A sentinel's whole answer is bounded by the connect timeout
	 * (ask_sentinel), and said so when it runs out. */
	st->opts.io_timeout_ms = o->connect_timeout_ms;
	st->url = n->url;
	st->url.user[0] = '\0';
	explicit_bzero(st->url.password, sizeof(st->url.password));
	st->url.has_password = 0;
	if (sa != NULL && sa->user != NULL)
		snprintf(st->url.user, sizeof(st->url.user), "%s", sa->user);
	if (sa != NULL && sa->password != NULL) {
		snprintf(st->pass, sizeof(st->pass), "%s", sa->password);
		st->opts.password = st->pass;
	}
	/* The master's address comes from the sentinels. */
	if (peer_add(n, "", 0) < 0)
		return RLOCK_ESYS;
	use_peer(n, 0);
	return RLOCK_OK;
}

void rl_node_free(struct rlock_node *n)
{
	for (size_t i = 0; i < n->npeer; i++) {
		rl_conn_free(n->peer[i]->cmd);
		explicit_bzero(n->peer[i]->url.password,
			       sizeof(n->peer[i]->url.password));
		free(n->peer[i]);
	}
	free(n->peer);
	n->peer = NULL;
	n->npeer = n->cappeer = 0;
	rl_conn_free(n->sub);
	n->sub = NULL;
	if (n->suburl != NULL)
		explicit_bzero(n->suburl->password, sizeof(n->suburl->password));
	free(n->suburl);
	n->suburl = NULL;
	free(n->slots);
	n->slots = NULL;
	if (n->sent != NULL) {
		rl_conn_free(n->sent->watch);
		explicit_bzero(n->sent, sizeof(*n->sent));
	}
	free(n->sent);
	n->sent = NULL;
	explicit_bzero(n->url.password, sizeof(n->url.password));
}

const char *rl_node_addr(const struct rlock_node *n)
{
	/* Before the sentinels named a master, the URL's name for it. */
	if (n->sent != NULL && n->peer[0]->url.hosts[0].port == 0)
		return n->url.master;
	return rl_conn_addr(n->cmd);
}

int rl_node_is_cluster(const struct rlock_node *n)
{
	return n->slots != NULL;
}

int rl_node_declares_all(const struct rlock_node *n)
{
	return n->slots != NULL || n->declare_all;
}

const char *rl_node_errstr(const struct rlock_node *n)
{
	return n->err[0] != '\0' ? n->err : rl_conn_errstr(n->cmd);
}

/* ---- cluster ------------------------------------------------------------ */

/* The first peer that is not known to be down, preferring cur. */
static size_t live_peer(const struct rlock_node *n)
{
	int64_t now = rlock_mono_ms();

	if (n->peer[n->cur]->down_until <= now)
		return n->cur;
	for (size_t i = 0; i < n->npeer; i++) {
		if (n->peer[i]->down_until <= now)
			return i;
	}
	return n->cur;
}

void rl_node_route(struct rlock_node *n, int slot)
{
	n->asking = 0;
	if (n->ask >= 0) {
		use_peer(n, (size_t)n->ask);
		n->ask = -1;
		n->asking = 1;
	} else if (n->slots != NULL && slot >= 0 && n->slots[slot] > 0) {
		use_peer(n, n->slots[slot] - 1u);
	} else if (n->slots != NULL && slot >= 0) {
		use_peer(n, live_peer(n));
	}
}

/* Forget the slots of peer i, which dropped or refused: until a node that
 * answers says who owns them now. */
static void peer_forget(struct rlock_node *n, size_t i)
{
	for (size_t s = 0; s < CLUSTER_SLOTS; s++) {
		if (n->slots[s] == i + 1)
			n->slots[s] = 0;
	}
}

static int learn_cluster(struct rlock_node *n)
{
	if (n->slots == NULL)
		n->slots = calloc(CLUSTER_SLOTS, 1);
	return n->slots != NULL ? 0 : -1;
}

/* Whether the n bytes at s can be a host a server names (CLUSTER SLOTS,
 * MOVED, the sentinels): 1 to 255 printable bytes, no space, so that one
 * that is not can reach neither a resolver nor a terminal. */
static int host_ok(const char *s, size_t n)
{
	if (n == 0 || n > 255)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return 0;
	return 1;
}

int rl_decode_redirect(const char *s, size_t len, struct peer_addr *to)
{
	const char *end = s + len, *sp, *sp2, *colon;
	long long port, slot;

	/* "MOVED", the slot, "host:port" (an empty host: the one asked;
	 * "?" an unknown one). */
	if ((sp = memchr(s, ' ', len)) == NULL ||
	    (sp2 = memchr(sp + 1, ' ', (size_t)(end - sp - 1))) == NULL ||
	    rlock_parse_ll(sp + 1, (size_t)(sp2 - sp - 1), 0,
			   CLUSTER_SLOTS - 1, &slot) != 0)
		return -1;
	colon = memrchr(sp2 + 1, ':', (size_t)(end - sp2 - 1));
	if (colon == NULL ||
	    rlock_parse_ll(colon + 1, (size_t)(end - colon - 1), 1, 65535,
			   &port) != 0 ||
	    (colon > sp2 + 1 && !host_ok(sp2 + 1, (size_t)(colon - sp2 - 1))) ||
	    (colon == sp2 + 2 && sp2[1] == '?'))
		return -1;
	memcpy(to->host, sp2 + 1, (size_t)(colon - sp2 - 1));
	to->host[colon - sp2 - 1] = '\0';
	to->port = (int)port;
	to->lo = to->hi = (int)slot;
	return 0;
}

/*
 * "MOVED 3999 127.0.0.1:6381" or "ASK ...": the slot and the peer named,
 * added when new.  An empty host means the host we asked.  Returns the
 * peer, or -1 (unreadable, out of memory or room).
 */
static int redirect_peer(struct rlock_node *n, const redisReply *r, int *slot)
{
	struct peer_addr to;

	if (rl_decode_redirect(r->str, r->len, &to) != 0)
		return -1;
	if (to.host[0] == '\0')
		snprintf(to.host, sizeof(to.host), "%s",
			 n->peer[n->cur]->url.hosts[0].host);
	*slot = to.lo;
	if (learn_cluster(n) < 0)
		return -1;
	return peer_find(n, to.host, to.port);
}

static enum node_next redirected(struct rlock_node *n, const redisReply *r,
				 int ask)
{
	int slot, p = redirect_peer(n, r, &slot);

	if (p < 0) {
		char text[SERVER_TEXT_MAX + 1];

		snprintf(n->err, sizeof(n->err), "%s: cannot follow %s",
			 rl_conn_addr(n->cmd),
			 rl_server_text(text, sizeof(text), r->str, r->len));
		return NODE_FAIL;
	}
	n->peer[p]->down_until = 0;
	if (ask)
		n->ask = p;
	else
		n->slots[slot] = (unsigned char)(p + 1);
	return NODE_REDIRECT;
}

int rl_node_fallback(const struct rlock_node *n)
{
	return n->slots != NULL && n->npeer > 1;
}

int rl_decode_slot_range(const redisReply *e, struct peer_addr *to)
{
	const redisReply *m;

	if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
	    e->element[0]->type != REDIS_REPLY_INTEGER ||
	    e->element[1]->type != REDIS_REPLY_INTEGER ||
	    e->element[2]->type != REDIS_REPLY_ARRAY ||
	    e->element[2]->elements < 2)
		return -1;
	m = e->element[2];
	if (e->element[0]->integer < 0 ||
	    e->element[1]->integer >= CLUSTER_SLOTS ||
	    e->element[0]->integer > e->element[1]->integer ||
	    m->element[0]->type != REDIS_REPLY_STRING ||
	    m->element[1]->type != REDIS_REPLY_INTEGER ||
	    m->element[1]->integer < 1 || m->element[1]->integer > 65535 ||
	    (m->element[0]->len > 0 &&
	     !host_ok(m->element[0]->str, m->element[0]->len)))
		return -1;
	to->lo = (int)e->element[0]->integer;
	to->hi = (int)e->element[1]->integer;
	memcpy(to->host, m->element[0]->str, m->element[0]->len);
	to->host[m->element[0]->len] = '\0';
	to->port = (int)m->element[1]->integer;
	return 0;
}

/* "CLUSTER SLOTS": [[start, end, [host, port, id], replicas...], ...]. */
static int read_slots(struct rlock_node *n, const redisReply *r, size_t *out,
		      size_t max, size_t *count)
{
	*count = 0;
	if (learn_cluster(n) < 0)
		return RLOCK_ESYS;
	for (size_t i = 0; i < r->elements; i++) {
		struct peer_addr a;
		size_t k;
		int p;

		if (rl_decode_slot_range(r->element[i], &a) != 0)
			return RLOCK_EPROTO;
		p = peer_find(n, a.host[0] != '\0' ? a.host :
			      n->peer[n->cur]->url.hosts[0].host, a.port);
		if (p < 0)
			return RLOCK_ESYS;
		memset(n->slots + a.lo, p + 1, (size_t)(a.hi - a.lo + 1));
		for (k = 0; k < *count && out[k] != (size_t)p; k++)
			;
		if (k == *count && *count < max)
			out[(*count)++] = (size_t)p;
	}
	return RLOCK_OK;
}

int rl_decode_master_addr(const redisReply *r, struct peer_addr *to)
{
	long long port;

	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING ||
	    r->element[1]->type != REDIS_REPLY_STRING ||
	    !host_ok(r->element[0]->str, r->element[0]->len) ||
	    rlock_parse_ll(r->element[1]->str, r->element[1]->len, 1, 65535,
			   &port) != 0)
		return -1;
	memcpy(to->host, r->element[0]->str, r->element[0]->len);
	to->host[r->element[0]->len] = '\0';
	to->port = (int)port;
	to->lo = to->hi = -1;
	return 0;
}

int rl_node_masters(struct rlock_node *n, int64_t hard, size_t *out, size_t max)
{
	const char *argv[2] = { "CLUSTER", "SLOTS" };
	redisReply *r = NULL;
	size_t count = 0;
	int rc;

	n->err[0] = '\0';
	rl_node_route(n, -1);
	rc = rl_node_open(n, hard);
	if (rc != RLOCK_OK)
		return -1;
	rc = rl_conn_call(n->cmd, cut(rlock_mono_ms() + n->copts->io_timeout_ms,
				      hard), -1, 2, argv, NULL, &r);
	if (rc != RLOCK_OK)
		return -1;
	if (r->type == REDIS_REPLY_ERROR && n->slots == NULL) {
		/* "cluster support disabled" (or refused): one server. */
		freeReplyObject(r);
		out[0] = n->cur;
		return 1;
	}
	rc = r->type == REDIS_REPLY_ARRAY ?
		read_slots(n, r, out, max, &count) : RLOCK_EPROTO;
	if (rc != RLOCK_OK)
		snprintf(n->err, sizeof(n->err), "%s: %s", rl_conn_addr(n->cmd),
			 rc == RLOCK_ESYS ? "out of memory" :
			 "unexpected reply to CLUSTER SLOTS");
	freeReplyObject(r);
	return rc == RLOCK_OK ? (int)count : -1;
}

/* ---- sentinel ------------------------------------------------------------ */

/* What asking one sentinel gave. */
enum asked {
	ASKED_MASTER,		/* host and port filled */
	ASKED_DOWN,		/* unreachable, or no answer in time */
	ASKED_UNKNOWN,		/* it does not know the master name */
	ASKED_NOAUTH,		/* it wants a password */
	ASKED_BADAUTH,		/* it refused ours */
	ASKED_ERROR,		/* another error reply */
};

static enum asked ask_sentinel(struct rlock_node *n, size_t i, int64_t hard,
			       char *host, size_t hostlen, int *port,
			       char *why, size_t whylen)
{
	const char *argv[3] = { "SENTINEL", "GET-MASTER-ADDR-BY-NAME",
				n->url.master };
	struct rlock_conn *c = rl_conn_new(&n->sent->url, (int)i,
					   &n->sent->opts);
	int64_t until = cut(rlock_mono_ms() + n->copts->connect_timeout_ms,
			    hard);
	redisReply *r = NULL;
	enum asked a = ASKED_ERROR;
	struct peer_addr to;
	int rc;

	if (c == NULL) {
		snprintf(why, whylen, "out of memory");
		return ASKED_DOWN;
	}
	/* A sentinel that does not answer within the connect timeout, the
	 * question included, is skipped: the next one may. */
	rc = rl_conn_open(c, until);
	if (rc == RLOCK_OK)
		rc = rl_conn_call(c, until, -1, 3, argv, NULL, &r);
	if (rc != RLOCK_OK) {
		snprintf(why, whylen, "%s", rl_conn_errstr(c));
		a = rl_conn_refusal(c) == CONN_REFUSED_AUTH ? ASKED_BADAUTH :
			ASKED_DOWN;
		rl_conn_free(c);
		return a;
	}
	if (r->type == REDIS_REPLY_NIL) {
		a = ASKED_UNKNOWN;
	} else if (rl_decode_master_addr(r, &to) == 0) {
		snprintf(host, hostlen, "%s", to.host);
		*port = to.port;
		a = ASKED_MASTER;
	} else if (r->type == REDIS_REPLY_ERROR && rl_reply_starts_with(r, "NOAUTH")) {
		a = ASKED_NOAUTH;
	} else if (r->type == REDIS_REPLY_ERROR) {
		char text[SERVER_TEXT_MAX + 1];

		snprintf(why, whylen, "%s: %s", rl_conn_addr(c),
			 rl_server_text(text, sizeof(text), r->str, r->len));
	} else {
		snprintf(why, whylen, "%s: unexpected reply to SENTINEL "
			 "GET-MASTER-ADDR-BY-NAME", rl_conn_addr(c));
	}
	if (a == ASKED_NOAUTH)
		snprintf(why, whylen, "%s", rl_conn_addr(c));
	freeReplyObject(r);
	rl_conn_free(c);
	return a;
}

/*
 * Whether the sentinels still name the master of n's requests: 0 when one
 * that answers names another (a master frozen past a failover answers,
 * as it thaws, what was sent to it before), 1 when every one that
 * answered names it, or none answered (nothing says otherwise).  Every
 * sentinel is asked: one that has not yet heard of a failover names the
 * old master.
 */
int rl_node_confirm(struct rlock_node *n, int64_t hard)
{
	const struct rlock_url *u;
	char host[256], why[520];
	int port;

	if (n->sent == NULL)
		return 1;
	u = &n->peer[n->cur]->url;
	for (size_t i = 0; i < n->sent->url.nhosts; i++) {
		if (ask_sentinel(n, i, hard, host, sizeof(host), &port, why,
				 sizeof(why)) != ASKED_MASTER)
			continue;
		if (port != u->hosts[0].port ||
		    strcmp(host, u->hosts[0].host) != 0) {
			n->failing_over = 1;
			return 0;
		}
	}
	return 1;
}

/* "a:1, b:2, c:3" for the messages. */
static void sentinel_list(const struct rlock_node *n, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n->sent->url.nhosts && o < len; i++) {
		int k = snprintf(buf + o, len - o, "%s%s:%d", i ? ", " : "",
				 n->sent->url.hosts[i].host,
				 n->sent->url.hosts[i].port);

		if (k < 0)
			break;
		o += (size_t)k;
	}
}

/* Sleep ms, or until hard. */
static void pause_ms(int64_t ms, int64_t hard)
{
	int64_t until = cut(rlock_mono_ms() + ms, hard);

	while (rlock_mono_ms() < until)
		poll(NULL, 0, (int)(until - rlock_mono_ms()));
}

/*
 * Ask the sentinels for the master and connect to it.  A sentinel that is
 * down is skipped.  A master named that turns out to be a replica, or
 * does not answer, is a failover under way: the next sentinel may know
 * better (one that was not the leader learns of a new master late), so
 * it is asked in the same round; each address is tried once a round.
 * Then a pause, and another round, for up to the connect timeout; the
 * caller may try again within its own time (n->failing_over says it may).
 * Every sentinel down, none knowing the name, or a refused password fail
 * at once.
 */
static int resolve(struct rlock_node *n, int64_t hard)
{
	int64_t until = cut(rlock_mono_ms() + n->copts->connect_timeout_ms,
			    hard);
	size_t ns = n->sent->url.nhosts, ntried;
	char host[256], why[520] = "", list[400];
	char bad_host[256] = "";
	enum asked last = ASKED_DOWN;
	int port = 0, bad_port = 0, reached, unknown, replica = 0, rc;
	struct {
		char host[256];
		int port;
	} tried[RLOCK_URL_MAX_HOSTS];

	for (;;) {
		reached = unknown = 0;
		ntried = 0;
		for (size_t k = 0; k < ns; k++) {
			size_t i = (n->sent->last + k) % ns, t;
			enum asked a = ask_sentinel(n, i, hard, host,
						    sizeof(host), &port, why,
						    sizeof(why));

			if (a == ASKED_DOWN)
				continue;
			reached++;
			last = a;
			if (a == ASKED_UNKNOWN)
				unknown++;
			if (a == ASKED_NOAUTH || a == ASKED_BADAUTH)
				goto fail;
			if (a != ASKED_MASTER)
				continue;
			for (t = 0; t < ntried; t++) {
				if (tried[t].port == port &&
				    strcmp(tried[t].host, host) == 0)
					break;
			}
			if (t < ntried)
				continue;	/* failed already this round */
			if (peer_move(n, 0, host, port) != RLOCK_OK) {
				snprintf(why, sizeof(why), "out of memory");
				goto fail;
			}
			use_peer(n, 0);
			rc = rl_conn_open(n->cmd, cut(rlock_mono_ms() +
					n->copts->connect_timeout_ms, hard));
			if (rc == RLOCK_OK) {
				n->sent->last = i;
				return RLOCK_OK;
			}
			snprintf(why, sizeof(why), "%s", rl_conn_errstr(n->cmd));
			if (rl_conn_refusal(n->cmd) == CONN_REFUSED_AUTH) {
				last = ASKED_ERROR;
				goto fail;
			}
			replica = rl_conn_refusal(n->cmd) == CONN_REFUSED_REPLICA;
			snprintf(bad_host, sizeof(bad_host), "%s", host);
			bad_port = port;
			n->failing_over = 1;
			snprintf(tried[ntried].host, sizeof(tried[0].host),
				 "%s", host);
			tried[ntried++].port = port;
			if (rlock_mono_ms() >= until)
				break;
		}
		if (reached == 0 || (size_t)unknown == ns ||
		    (unknown > 0 && unknown == reached))
			break;
		if (rlock_mono_ms() + REASK_MS >= until)
			break;
		pause_ms(REASK_MS, hard);
	}
fail:
	sentinel_list(n, list, sizeof(list));
	if (reached == 0)
		snprintf(n->err, sizeof(n->err), "no sentinel reachable for "
			 "master '%s' (tried %s): %s", n->url.master, list,
			 why);
	else if (last == ASKED_UNKNOWN)
		snprintf(n->err, sizeof(n->err), "sentinels do not know "
			 "master '%s' (asked %s)", n->url.master, list);
	else if (last == ASKED_NOAUTH)
		snprintf(n->err, sizeof(n->err), "sentinel %s requires a "
			 "password: give it with --sentinel-password-file or "
			 "RLOCK_SENTINEL_PASSWORD", why);
	else if (last == ASKED_BADAUTH)
		snprintf(n->err, sizeof(n->err), "sentinel authentication "
			 "failed: %s", why);
	else if (replica)
		snprintf(n->err, sizeof(n->err), "the sentinels name %s:%d as "
			 "master '%s', but it %s", bad_host, bad_port,
			 n->url.master, "is a replica (a failover under way?)");
	else
		snprintf(n->err, sizeof(n->err), "master '%s': %s",
			 n->url.master, why);
	return RLOCK_EUNAVAIL;
}

/* ---- hearing of a failover -------------------------------------------- */

void rl_node_watch(struct rlock_node *n, int64_t deadline)
{
	const char *argv[2] = { "SUBSCRIBE", "+switch-master" };
	struct sentinels *st = n->sent;
	redisReply *r = NULL;

	if (st == NULL || (st->watch != NULL && rl_conn_is_up(st->watch)))
		return;
	rl_conn_free(st->watch);
	st->watch = rl_conn_new(&st->url, (int)st->last, &st->opts);
	if (st->watch == NULL)
		return;
	deadline = cut(deadline, rlock_mono_ms() +
		       n->copts->connect_timeout_ms);
	if (rl_conn_open(st->watch, deadline) != RLOCK_OK ||
	    rl_conn_call(st->watch, deadline, -1, 2, argv, NULL, &r) !=
	    RLOCK_OK || r->type != REDIS_REPLY_ARRAY)
		rl_conn_close(st->watch);
	freeReplyObject(r);
}

int rl_node_watch_fd(const struct rlock_node *n)
{
	if (n->sent == NULL || n->sent->watch == NULL ||
	    !rl_conn_is_up(n->sent->watch))
		return -1;
	return rl_conn_fd(n->sent->watch);
}

int rl_node_watch_buffered(const struct rlock_node *n)
{
	return rl_node_watch_fd(n) >= 0 && rl_conn_buffered(n->sent->watch);
}

int rl_node_is_switch(const redisReply *r, const char *master)
{
	const redisReply *m;
	size_t len = strlen(master);

	if (r->type != REDIS_REPLY_ARRAY || r->elements != 3)
		return 0;
	for (size_t i = 0; i < 3; i++) {
		if (r->element[i]->type != REDIS_REPLY_STRING)
			return 0;
	}
	if (r->element[0]->len != 7 ||
	    memcmp(r->element[0]->str, "message", 7) != 0 ||
	    r->element[1]->len != 14 ||
	    memcmp(r->element[1]->str, "+switch-master", 14) != 0)
		return 0;
	m = r->element[2];
	return m->len > len && m->str[len] == ' ' &&
		memcmp(m->str, master, len) == 0;
}

int rl_node_watch_check(struct rlock_node *n, short revents)
{
	struct rlock_conn *w = n->sent != NULL ? n->sent->watch : NULL;
	redisReply *r = NULL;
	int moved = 0;

	if (w == NULL || !rl_conn_is_up(w))
		return 0;
	if (rl_conn_on_ready(w, revents) != RLOCK_OK) {
		rl_conn_close(w);	/* opened again by the next rl_node_watch */
		return 0;
	}
	while (rl_conn_take_reply(w, &r) == 1) {
		moved |= rl_node_is_switch(r, n->url.master);
		freeReplyObject(r);
	}
	if (moved) {
		n->failing_over = 1;
		rl_node_drop(n);
	}
	return moved;
}

void rl_node_drop(struct rlock_node *n)
{
	rl_conn_close(n->cmd);
	if (n->sub != NULL)
		rl_conn_close(n->sub);
}

void rl_node_watch_close(struct rlock_node *n)
{
	if (n->sent != NULL && n->sent->watch != NULL)
		rl_conn_close(n->sent->watch);
}

/* ---- the node's connections ----------------------------------------------- */

int rl_node_open(struct rlock_node *n, int64_t hard)
{
	int rc;

	n->err[0] = '\0';
	if (rl_conn_is_up(n->cmd))
		return RLOCK_OK;
	/* Sentinel: every new connection asks who the master is now. */
	if (n->sent != NULL)
		return resolve(n, hard);
	rc = rl_conn_open(n->cmd, cut(rlock_mono_ms() +
				      n->copts->connect_timeout_ms, hard));
	if (rc != RLOCK_OK && n->slots != NULL) {
		n->failing_over = 1;
		n->peer[n->cur]->down_until = rlock_mono_ms() + DOWN_MS;
		peer_forget(n, n->cur);
	}
	return rc;
}

enum node_next rl_node_heard(struct rlock_node *n, const redisReply *r)
{
	if (r == NULL) {
		if (n->sent != NULL) {
			n->failing_over = 1;
			return NODE_REDISCOVER;
		}
		/* A cluster node that dropped may have failed over: ask
		 * another who owns the slot now. */
		if (n->slots != NULL) {
			n->failing_over = 1;
			peer_forget(n, n->cur);
		}
		return NODE_RETRY;
	}
	if (r->type != REDIS_REPLY_ERROR)
		return NODE_OK;
	if (rl_reply_starts_with(r, "TRYAGAIN") && n->asking) {
		/* The node importing the slot has some of the keys, not all:
		 * ask it again after the pause, not the one that said ASK. */
		n->ask = (int)n->cur;
		return NODE_RETRY;
	}
	if (rl_reply_starts_with(r, "TRYAGAIN") || rl_reply_starts_with(r, "CLUSTERDOWN")) {
		n->failing_over = 1;
		return NODE_RETRY;
	}
	/* Too few replicas for min-replicas-to-write: after a failover,
	 * until they have synced with the new master, or while one is
	 * down; worth waiting for within the caller's wait. */
	if (rl_reply_starts_with(r, "NOREPLICAS")) {
		n->failing_over = 1;
		return NODE_RETRY;
	}
	if (rl_reply_starts_with(r, "LOADING"))
		return NODE_RETRY;
	if (rl_reply_starts_with(r, "MOVED "))
		return redirected(n, r, 0);
	if (rl_reply_starts_with(r, "ASK "))
		return redirected(n, r, 1);
	if (n->sent != NULL &&
	    (rl_reply_starts_with(r, "READONLY") || rl_reply_starts_with(r, "MASTERDOWN"))) {
		/* The master we were given is one no longer. */
		n->failing_over = 1;
		rl_conn_close(n->cmd);
		return NODE_REDISCOVER;
	}
	return NODE_FAIL;
}

int rl_node_idle_fd(const struct rlock_node *n)
{
	return rl_conn_is_up(n->cmd) ? rl_conn_fd(n->cmd) : -1;
}

int rl_node_idle_check(struct rlock_node *n, short revents)
{
	redisReply *r = NULL;
	int got;

	if (rl_conn_on_ready(n->cmd, revents) == RLOCK_OK) {
		got = rl_conn_take_reply(n->cmd, &r);
		if (got == 0)
			return 0;
		if (got > 0)
			freeReplyObject(r);
		rl_conn_close(n->cmd);
	}
	if (n->slots != NULL)
		peer_forget(n, n->cur);
	return 1;
}

struct rlock_conn *rl_node_sub(struct rlock_node *n, int slot, int64_t hard)
{
	const struct rlock_url *u;
	struct rlock_url *su = n->suburl;

	rl_node_route(n, slot);
	n->asking = 0;
	if (rl_node_open(n, hard) != RLOCK_OK)
		return NULL;
	u = &n->peer[n->cur]->url;
	if (n->sub != NULL && (u->kind == RLOCK_URL_UNIX ||
			       (u->hosts[0].port == su->hosts[0].port &&
				strcmp(u->hosts[0].host,
				       su->hosts[0].host) == 0)))
		return n->sub;
	rl_conn_free(n->sub);
	n->sub = NULL;
	if (su == NULL && (su = malloc(sizeof(*su))) == NULL) {
		snprintf(n->err, sizeof(n->err), "out of memory");
		return NULL;
	}
	n->suburl = su;
	*su = *u;
	n->sub = rl_conn_new(su, 0, n->sent != NULL ? &n->mopts : n->copts);
	if (n->sub == NULL)
		snprintf(n->err, sizeof(n->err), "out of memory");
	return n->sub;
}

const struct rlock_url *rl_node_url(const struct rlock_node *n, int slot,
				    const struct rlock_conn_opts **o)
{
	size_t p = n->cur;

	if (n->slots != NULL && slot >= 0 && n->slots[slot] > 0)
		p = n->slots[slot] - 1u;
	*o = n->sent != NULL ? &n->mopts : n->copts;
	return &n->peer[p]->url;
}
