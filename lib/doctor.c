/*
 * doctor.c - rlock doctor: for every server a lock would live on, can
 * rlock work there, and can that server keep a lock safe?  Each finding is
 * one check (ok, note, warn or fail, with the fix in its message) appended
 * to a list the caller prints.
 *
 * It goes through the same layers as the lock verbs: nodes find the
 * servers (the sentinels' master, a cluster's masters), the transport
 * connects, the scripts' own argument builders make the probe.  The
 * configuration is read from INFO where it can be: managed services refuse
 * CONFIG, and a refused INFO is "unknown", never an error.  INFO does not
 * show appendfsync, nor what a failover takes: CONFIG GET asks for those
 * (appendfsync; diskless sync, its delay, min-replicas, a cluster's node
 * timeout), and where CONFIG is refused the AOF's fsync policy is a note
 * that says what to check and the failover check names the defaults it
 * assumed.
 */
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "doctor_int.h"
#include "fanout.h"
#include "handle.h"
#include "identity.h"
#include "keys.h"
#include "node.h"
#include "reply.h"
#include "request.h"
#include "rlock_doctor.h"

#define PINGS 5			/* the round trip is their median */
#define PROBE_TTL_MS 10000
#define CERT_WARN_DAYS 14
#define MEMORY_WARN_PCT 90
#define LAG_WARN_S 10		/* a replica this far behind is a warning */
#define REPLICAS_MAX 1000000	/* connected_slaves above it does not read */

/* One doctor run. */
struct doc {
	struct rlock *rl;
	struct rlock_doctor *d;
	const char *name;		/* the user's NAME, or NULL */
	int oom;
};

/* What one server said, for the checks that read it. */
struct server {
	struct rlock_node *n;
	struct rlock_conn *c;
	size_t peer;			/* c's index among n's peers */
	char addr[300];
	char *info_text;		/* INFO's text; NULL when refused */
	struct info *info;		/* its fields; NULL when refused */
	char info_why[600];		/* why INFO is unknown */
	char hello_server[16], hello_version[32];	/* "" when unsaid */
	struct server_id id;
	char mode[32], role[32];
};

/* ---- the list ----------------------------------------------------------- */

static void add(struct doc *x, const char *server, const char *check,
		int level, int code, int kind, const char *value,
		const char *fmt, ...) __attribute__((format(printf, 8, 9)));

static void add(struct doc *x, const char *server, const char *check,
		int level, int code, int kind, const char *value,
		const char *fmt, ...)
{
	struct rlock_doctor *d = x->d;
	struct rlock_check *k;
	va_list ap;

	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 32;
		struct rlock_check *nk = realloc(d->check, cap * sizeof(*nk));

		if (nk == NULL) {
			x->oom = 1;
			return;
		}
		d->check = nk;
		d->cap = cap;
	}
	k = &d->check[d->n++];
	memset(k, 0, sizeof(*k));
	snprintf(k->check, sizeof(k->check), "%s", check);
	snprintf(k->server, sizeof(k->server), "%s", server);
	k->level = level;
	k->code = level == RLOCK_CHECK_FAIL ? code : RLOCK_OK;
	k->value_kind = value != NULL ? kind : RLOCK_VALUE_NULL;
	if (value != NULL)
		snprintf(k->value, sizeof(k->value), "%s", value);
	va_start(ap, fmt);
	vsnprintf(k->message, sizeof(k->message), fmt, ap);
	va_end(ap);
}

void rlock_doctor_free(struct rlock_doctor *d)
{
	free(d->check);
	memset(d, 0, sizeof(*d));
}

/* ---- talking to one server ---------------------------------------------- */

static int64_t io_deadline(const struct doc *x)
{
	return rlock_mono_ms() + x->rl->copts.io_timeout_ms;
}

static int64_t now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static int call(struct doc *x, struct rlock_conn *c, int argc,
		const char **argv, redisReply **r)
{
	return rl_conn_call(c, io_deadline(x), -1, argc, argv, NULL, r);
}

static int is_error(const redisReply *r, const char *prefix)
{
	size_t n = strlen(prefix);

	return r->type == REDIS_REPLY_ERROR && r->len >= n &&
	       memcmp(r->str, prefix, n) == 0;
}

/* Send q as EVALSHA, and as EVAL after NOSCRIPT.  Returns RLOCK_OK with *r
 * (maybe an error reply) or RLOCK_EUNAVAIL. */
static int script(struct doc *x, struct rlock_conn *c,
		  const struct request *q, redisReply **r)
{
	for (int use_eval = 0;; use_eval = 1) {
		int rc = rl_req_send(c, q, use_eval, 1);

		if (rc == RLOCK_OK)
			rc = rl_conn_wait_reply(c, io_deadline(x), -1, r);
		if (rc == RLOCK_TIMEDOUT)
			return rl_conn_timed_out(c);
		if (rc != RLOCK_OK)
			return rc == RLOCK_ESYS ? RLOCK_EUNAVAIL : rc;
		if (use_eval || !is_error(*r, "NOSCRIPT"))
			return RLOCK_OK;
		freeReplyObject(*r);
	}
}

int rl_server_identify(const struct info *info, const char *hello_server,
		       const char *hello_version, struct server_id *id)
{
	char field[sizeof(id->product) + 8];

	memset(id, 0, sizeof(*id));
	if (rl_info_text(info, "server_name", id->product,
			 sizeof(id->product)) != INFO_OK || id->product[0] == '\0')
		snprintf(id->product, sizeof(id->product), "%s",
			 hello_server[0] != '\0' ? hello_server : "redis");
	for (char *p = id->product; *p != '\0'; p++)
		*p = (char)tolower((unsigned char)*p);
	snprintf(id->title, sizeof(id->title), "%s", id->product);
	id->title[0] = (char)toupper((unsigned char)id->title[0]);

	/* The product's own field; HELLO's version only when HELLO names
	 * the same product (Valkey in compatibility mode says 7.2.4 there). */
	snprintf(field, sizeof(field), "%s_version", id->product);
	if ((rl_info_text(info, field, id->version, sizeof(id->version)) !=
	     INFO_OK || id->version[0] == '\0') &&
	    strcasecmp(hello_server, id->product) == 0)
		snprintf(id->version, sizeof(id->version), "%s",
			 hello_version);

	/* Every Valkey has what Redis 7.2 has. */
	if (strcmp(id->product, "redis") == 0)
		snprintf(id->compat, sizeof(id->compat), "%s", id->version);
	else if (rl_info_text(info, "redis_version", id->compat,
			      sizeof(id->compat)) != INFO_OK ||
		 id->compat[0] == '\0')
		snprintf(id->compat, sizeof(id->compat), "%s",
			 strcmp(id->product, "valkey") == 0 ? "7.2.0" :
			 id->version);
	return id->version[0] != '\0' ? 0 : -1;
}

int rl_parse_version(const char *v, int *maj, int *min, int *pat)
{
	long long part[3];
	const char *p = v;

	/* MAJOR.MINOR.PATCH, each 0..65535 (an unstable Valkey says
	 * 255.255.255); nothing before or after. */
	for (int i = 0; i < 3; i++) {
		size_t n = strcspn(p, ".");

		if (n == 0 || rlock_parse_ll(p, n, 0, 65535, &part[i]) != 0 ||
		    p[0] == '-' || (i < 2 && p[n] != '.') ||
		    (i == 2 && p[n] != '\0'))
			return -1;
		p += n + 1;
	}
	*maj = (int)part[0];
	*min = (int)part[1];
	*pat = (int)part[2];
	return 0;
}

/* ---- replies, decoded -------------------------------------------------- */

/*
 * Field name of a flat [name, value, ...] array (HELLO 2, SENTINEL
 * MASTER): a string or status value in *v, n bytes.  Returns INFO_OK,
 * INFO_ABSENT, or INFO_BAD when r is no such array (not an array, an odd
 * count, a name that is not a string) or the value is not a string, or
 * the name is said twice.
 */
static int map_get(const redisReply *r, const char *name, const char **v,
		   size_t *n)
{
	const redisReply *hit = NULL;
	size_t len = strlen(name);

	*v = "";
	*n = 0;
	if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0)
		return INFO_BAD;
	for (size_t i = 0; i < r->elements; i += 2) {
		const redisReply *k = r->element[i];

		if (k->type != REDIS_REPLY_STRING &&
		    k->type != REDIS_REPLY_STATUS)
			return INFO_BAD;
		if (k->len != len || memcmp(k->str, name, len) != 0)
			continue;
		if (hit != NULL)
			return INFO_BAD;
		hit = r->element[i + 1];
	}
	if (hit == NULL)
		return INFO_ABSENT;
	if (hit->type != REDIS_REPLY_STRING && hit->type != REDIS_REPLY_STATUS)
		return INFO_BAD;
	*v = hit->str;
	*n = hit->len;
	return INFO_OK;
}

/* What HELLO 2 says of the server, each escaped ("" when unsaid). */
struct hello {
	char server[16], version[32], mode[32], role[32];
};

/* Returns 0, or -1 when the reply does not decode (h is then all ""). */
static int decode_hello(const redisReply *r, struct hello *h)
{
	static const char *const name[4] = { "server", "version", "mode",
					      "role" };
	char *buf[4] = { h->server, h->version, h->mode, h->role };
	size_t len[4] = { sizeof(h->server), sizeof(h->version),
			  sizeof(h->mode), sizeof(h->role) };

	memset(h, 0, sizeof(*h));
	for (int i = 0; i < 4; i++) {
		const char *v;
		size_t n;

		if (map_get(r, name[i], &v, &n) == INFO_BAD) {
			memset(h, 0, sizeof(*h));
			return -1;
		}
		snprintf(buf[i], len[i], "%.*s",
			 (int)(n < len[i] ? n : len[i] - 1), v);
	}
	return 0;
}

int rl_decode_sentinel_master(const redisReply *r, struct sentinel_master *m,
			      const char **bad)
{
	static const char *const name[3] = { "port", "quorum",
					      "num-other-sentinels" };
	static const long long lo[3] = { 1, 1, 0 }, hi[3] = { 65535, 1000000,
							      1000000 };
	static const char *const tname[4] = { "down-after-milliseconds",
					       "failover-timeout",
					       "parallel-syncs", "num-slaves" };
	static const long long tlo[4] = { 1, 1, 1, 0 },
			       thi[4] = { INT_MAX, INT_MAX, 1000000, 1000000 };
	long long *out[3] = { &m->port, &m->quorum, &m->others };
	long long *tout[4] = { &m->down_after, &m->failover_timeout,
			       &m->parallel_syncs, &m->replicas };
	const char *v;
	size_t n;

	memset(m, 0, sizeof(*m));
	*bad = "ip";
	if (map_get(r, "ip", &v, &n) != INFO_OK || n == 0 || n > 255)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)v[i] <= 0x20 || (unsigned char)v[i] >= 0x7f)
			return -1;
	}
	memcpy(m->ip, v, n);
	for (int i = 0; i < 3; i++) {
		*bad = name[i];
		if (map_get(r, name[i], &v, &n) != INFO_OK ||
		    rlock_parse_ll(v, n, lo[i], hi[i], out[i]) != 0)
			return -1;
	}
	*bad = NULL;
	/* The timing apart: a sentinel whose timing does not read still
	 * names the master. */
	for (int i = 0; i < 4; i++) {
		int rc = map_get(r, tname[i], &v, &n);

		if (rc == INFO_OK &&
		    rlock_parse_ll(v, n, tlo[i], thi[i], tout[i]) == 0)
			continue;
		m->timing_bad = tname[i];
		if (rc == INFO_OK)
			snprintf(m->timing_val, sizeof(m->timing_val), "%.*s",
				 (int)(n < sizeof(m->timing_val) ? n :
				       sizeof(m->timing_val) - 1), v);
		for (int k = 0; k < 4; k++)
			*tout[k] = -1;
		break;
	}
	return 0;
}

int rl_decode_config(const redisReply *r, const char *name, const char **v,
		     size_t *n)
{
	*v = "";
	*n = 0;
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 0)
		return INFO_ABSENT;
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    map_get(r, name, v, n) != INFO_OK) {
		*v = "";
		*n = 0;
		return INFO_BAD;
	}
	return INFO_OK;
}

/* Whether the n bytes at s are 40 hex digits: a cluster node's id. */
static int is_node_id(const char *s, size_t n)
{
	if (n != 40)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (!isxdigit((unsigned char)s[i]))
			return 0;
	}
	return 1;
}

/* Whether the comma list of n bytes at flags holds flag. */
static int has_flag(const char *flags, size_t n, const char *flag)
{
	size_t fl = strlen(flag);

	for (size_t i = 0; i < n;) {
		size_t e = i;

		while (e < n && flags[e] != ',')
			e++;
		if (e - i == fl && memcmp(flags + i, flag, fl) == 0)
			return 1;
		i = e + 1;
	}
	return 0;
}

#define NODES_FIELDS 8		/* id addr flags master ping pong epoch link */

int rl_decode_cluster_nodes(const char *text, size_t len,
			    struct cluster_replicas *c)
{
	const char *me = NULL;
	size_t pass;

	memset(c, 0, sizeof(*c));
	/* Two passes: the id flagged myself first, then its replicas. */
	for (pass = 0; pass < 2; pass++) {
		size_t at = 0;

		while (at < len) {
			const char *line = text + at, *f[NODES_FIELDS];
			size_t ll = 0, fl[NODES_FIELDS], nf = 0, i = 0;

			while (at + ll < len && line[ll] != '\n')
				ll++;
			at += ll + 1;
			if (ll > 0 && line[ll - 1] == '\r')
				ll--;
			if (ll == 0)
				continue;
			/* Fields split at single spaces; the slots after
			 * the eighth are not read. */
			while (i < ll && nf < NODES_FIELDS) {
				size_t e = i;

				while (e < ll && line[e] != ' ')
					e++;
				if (e == i)
					return -1;
				f[nf] = line + i;
				fl[nf++] = e - i;
				i = e + 1;
			}
			/* A node is not its own replica. */
			if (nf < NODES_FIELDS || !is_node_id(f[0], fl[0]) ||
			    !(is_node_id(f[3], fl[3]) ||
			      (fl[3] == 1 && f[3][0] == '-')) ||
			    memcmp(f[0], f[3], fl[3]) == 0)
				return -1;
			if (pass == 0 && has_flag(f[2], fl[2], "myself")) {
				if (me != NULL)
					return -1;
				me = f[0];
			}
			if (pass == 1 && fl[3] == 40 &&
			    memcmp(f[3], me, 40) == 0) {
				c->known++;
				if (has_flag(f[2], fl[2], "fail") ||
				    has_flag(f[2], fl[2], "fail?"))
					c->failing++;
			}
		}
		if (me == NULL)
			return -1;
	}
	return 0;
}

/* CONFIG GET appendfsync: {"appendfsync", always|everysec|no}.  Returns 0
 * with the policy in buf, or -1. */
static int decode_appendfsync(const redisReply *r, char *buf, size_t len)
{
	const char *v;
	size_t n;

	buf[0] = '\0';
	if (map_get(r, "appendfsync", &v, &n) != INFO_OK ||
	    r->elements != 2 ||
	    !((n == 6 && memcmp(v, "always", 6) == 0) ||
	      (n == 8 && memcmp(v, "everysec", 8) == 0) ||
	      (n == 2 && memcmp(v, "no", 2) == 0)))
		return -1;
	snprintf(buf, len, "%.*s", (int)n, v);
	return 0;
}

/* PUBSUB NUMSUB's {channel, count}: the count, 0..LLONG_MAX.  Returns 0
 * or -1. */
static int decode_numsub(const redisReply *r, long long *count)
{
	const redisReply *c;

	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING)
		return -1;
	c = r->element[1];
	if (c->type != REDIS_REPLY_INTEGER || c->integer < 0)
		return -1;
	*count = c->integer;
	return 0;
}

/* XREVRANGE's entries, [[id, [field, value, ...]], ...]: at least one
 * when one was written. */
static int is_entries(const redisReply *r, int want_one)
{
	if (r->type != REDIS_REPLY_ARRAY || (want_one && r->elements == 0))
		return 0;
	for (size_t i = 0; i < r->elements; i++) {
		const redisReply *e = r->element[i];

		if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
		    e->element[0]->type != REDIS_REPLY_STRING ||
		    e->element[1]->type != REDIS_REPLY_ARRAY ||
		    e->element[1]->elements % 2 != 0)
			return 0;
	}
	return 1;
}

/* SCAN's {cursor, keys}: a cursor of 1..20 digits, keys an array. */
static int is_scan_page(const redisReply *r)
{
	const redisReply *c;

	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2)
		return 0;
	c = r->element[0];
	if (c->type != REDIS_REPLY_STRING || c->len == 0 || c->len > 20 ||
	    strspn(c->str, "0123456789") != c->len)
		return 0;
	return r->element[1]->type == REDIS_REPLY_ARRAY;
}

static const char *user_of(const struct rlock_conn *c)
{
	return rl_conn_url(c)->user[0] != '\0' ? rl_conn_url(c)->user : "default";
}

/* What an ACL refusal costs, in a message naming the rule to add. */
static void refused(struct doc *x, struct server *s, const char *check,
		    int level, const redisReply *r, const char *key,
		    const char *cost)
{
	struct rlock_result res;
	size_t n = strlen(s->addr);
	const char *why;

	rl_classify_error(r, s->c, key, &res);
	/* The line already names the server. */
	why = strncmp(res.err, s->addr, n) == 0 && res.err[n] == ':' ?
		res.err + n + 2 : res.err;
	add(x, s->addr, check, level, res.rc, RLOCK_VALUE_STRING, "refused",
	    "%s; %s", cost, why);
}

/* ---- reach -------------------------------------------------------------- */

static void check_tls(struct doc *x, struct server *s)
{
	struct conn_tls_info t;
	char days[16];

	if (!rl_conn_tls_info(s->c, &t)) {
		const struct rlock_url *u = rl_conn_url(s->c);
		const char *h = u->hosts[0].host;
		/* Loopback and unix sockets never leave the machine. */
		int local = u->kind == RLOCK_URL_UNIX ||
			strcmp(h, "localhost") == 0 ||
			strncmp(h, "127.", 4) == 0 || strcmp(h, "::1") == 0;

		add(x, s->addr, "tls", local ? RLOCK_CHECK_OK :
		    RLOCK_CHECK_NOTE, 0, RLOCK_VALUE_NULL, NULL, "%s", local ?
		    "no TLS (a local connection)" : "no TLS: use rediss:// "
		    "unless the network to the server is trusted");
		return;
	}
	snprintf(days, sizeof(days), "%d", t.days_left);
	if (!t.verified)
		add(x, s->addr, "tls", RLOCK_CHECK_WARN, 0, RLOCK_VALUE_STRING,
		    t.protocol, "%s, certificate and name NOT verified "
		    "(--insecure): anyone in the path can pose as the server; "
		    "give its CA with --cacert instead", t.protocol);
	else if (t.has_expiry && t.days_left < CERT_WARN_DAYS)
		add(x, s->addr, "tls", RLOCK_CHECK_WARN, 0, RLOCK_VALUE_NUMBER,
		    days, "%s, name verified; the server's certificate "
		    "expires in %d day%s: renew it", t.protocol, t.days_left,
		    t.days_left == 1 ? "" : "s");
	else
		add(x, s->addr, "tls", RLOCK_CHECK_OK, 0, t.has_expiry ?
		    RLOCK_VALUE_NUMBER : RLOCK_VALUE_NULL, t.has_expiry ?
		    days : NULL, "%s, name verified, the server's "
		    "certificate expires in %d day%s", t.protocol, t.days_left,
		    t.days_left == 1 ? "" : "s");
}

static void check_auth(struct doc *x, struct server *s)
{
	const struct rlock_url *u = rl_conn_url(s->c);

	if (u->has_password || x->rl->copts.password != NULL)
		add(x, s->addr, "auth", RLOCK_CHECK_OK, 0, RLOCK_VALUE_STRING,
		    user_of(s->c), "authenticated as user '%s'",
		    user_of(s->c));
	else
		add(x, s->addr, "auth", RLOCK_CHECK_NOTE, 0,
		    RLOCK_VALUE_STRING, "default", "no password (default "
		    "user): whoever reaches this server can take or break "
		    "locks; consider an ACL user (see Least privilege)");
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/* The median of a few PINGs, in microseconds. */
static void check_rtt(struct doc *x, struct server *s)
{
	const char *argv[1] = { "PING" };
	long long us[PINGS];
	char v[32];
	int k, pong = 1;

	for (k = 0; k < PINGS; k++) {
		int64_t t0 = now_us();
		redisReply *r = NULL;

		if (call(x, s->c, 1, argv, &r) != RLOCK_OK)
			break;
		us[k] = now_us() - t0;
		pong = r->type == REDIS_REPLY_STATUS && r->len == 4 &&
		       memcmp(r->str, "PONG", 4) == 0;
		freeReplyObject(r);
		if (!pong)
			break;
	}
	if (k < PINGS) {
		add(x, s->addr, "rtt", RLOCK_CHECK_FAIL, pong ?
		    RLOCK_EUNAVAIL : RLOCK_EPROTO, RLOCK_VALUE_NULL, NULL,
		    "PING: %s", pong ? rl_conn_errstr(s->c) :
		    "the reply is not PONG");
		return;
	}
	qsort(us, PINGS, sizeof(us[0]), cmp_ll);
	snprintf(v, sizeof(v), "%.3f", (double)us[PINGS / 2] / 1000.0);
	add(x, s->addr, "rtt", RLOCK_CHECK_OK, 0, RLOCK_VALUE_NUMBER, v,
	    "round trip %sms (median of %d PINGs)", v, PINGS);
}

/* ---- server ------------------------------------------------------------- */

/* HELLO 2 tells version, mode and role with no right beyond @connection;
 * INFO, when HELLO is unknown (Redis 5) or refused.  INFO tells what
 * HELLO may not: that the server is Valkey, and its own version. */
static void learn_server(struct doc *x, struct server *s)
{
	const char *hello[2] = { "HELLO", "2" }, *info[1] = { "INFO" };
	redisReply *r = NULL;
	struct hello h;

	if (call(x, s->c, 2, hello, &r) == RLOCK_OK &&
	    r->type == REDIS_REPLY_ARRAY) {
		if (decode_hello(r, &h) != 0)
			add(x, s->addr, "hello", RLOCK_CHECK_NOTE, 0,
			    RLOCK_VALUE_NULL, NULL, "HELLO's reply does not "
			    "decode: what the server is comes from INFO");
		snprintf(s->hello_server, sizeof(s->hello_server), "%s",
			 h.server);
		snprintf(s->hello_version, sizeof(s->hello_version), "%s",
			 h.version);
		snprintf(s->mode, sizeof(s->mode), "%s", h.mode);
		snprintf(s->role, sizeof(s->role), "%s", h.role);
	}
	freeReplyObject(r);
	r = NULL;
	if (call(x, s->c, 1, info, &r) != RLOCK_OK) {
		snprintf(s->info_why, sizeof(s->info_why), "%s",
			 rl_conn_errstr(s->c));
	} else if (r->type == REDIS_REPLY_STRING) {
		/* The text may hold NULs: its length, not strlen. */
		s->info_text = malloc(r->len + 1);
		s->info = malloc(sizeof(*s->info));
		if (s->info_text == NULL || s->info == NULL) {
			free(s->info_text);
			free(s->info);
			s->info_text = NULL;
			s->info = NULL;
			x->oom = 1;
		} else {
			memcpy(s->info_text, r->str, r->len);
			s->info_text[r->len] = '\0';
			rl_info_parse(s->info, s->info_text, r->len);
		}
	} else if (r->type == REDIS_REPLY_ERROR) {
		snprintf(s->info_why, sizeof(s->info_why), "INFO refused; "
			 "allow it with ACL SETUSER %s +info", user_of(s->c));
	} else {
		snprintf(s->info_why, sizeof(s->info_why), "INFO's reply is "
			 "not a string");
	}
	freeReplyObject(r);
	rl_server_identify(s->info, s->hello_server, s->hello_version, &s->id);
	if (s->info == NULL)
		return;
	/* Valkey 8 says server_mode, unless in Redis compatibility mode. */
	if (s->mode[0] == '\0' &&
	    rl_info_text(s->info, "redis_mode", s->mode, sizeof(s->mode)) !=
	    INFO_OK)
		rl_info_text(s->info, "server_mode", s->mode, sizeof(s->mode));
	if (s->role[0] == '\0')
		rl_info_text(s->info, "role", s->role, sizeof(s->role));
}

/* A check INFO cannot answer: refused, or without field (NULL: any). */
static void unknown(struct doc *x, struct server *s, const char *check,
		    const char *field)
{
	if (s->info != NULL && field != NULL)
		add(x, s->addr, check, RLOCK_CHECK_NOTE, 0, RLOCK_VALUE_NULL,
		    NULL, "unknown: INFO has no field %s", field);
	else
		add(x, s->addr, check, RLOCK_CHECK_NOTE, 0, RLOCK_VALUE_NULL,
		    NULL, "unknown: %s", s->info_why[0] ? s->info_why :
		    "INFO refused");
}

/*
 * A field INFO has but that does not read (not a number in its range,
 * said twice, a line too long): a warning, for a server whose INFO is not
 * what Redis writes cannot be judged, and the value as it was said.
 */
static void unreadable(struct doc *x, const char *addr, const char *check,
		       const struct info *info, const char *field)
{
	char v[48];

	if (rl_info_text(info, field, v, sizeof(v)) == INFO_ABSENT)
		add(x, addr, check, RLOCK_CHECK_WARN, 0, RLOCK_VALUE_NULL,
		    NULL, "unknown: INFO has no field %s: the server's INFO "
		    "is not what Redis writes; check the server", field);
	else
		add(x, addr, check, RLOCK_CHECK_WARN, 0, RLOCK_VALUE_NULL,
		    NULL, "unknown: INFO field %s is unreadable ('%s'): the "
		    "server's INFO is not what Redis writes; check the server",
		    field, v);
}

/* The product and its own version, with what rlock can use there, judged
 * by the Redis version whose features it has. */
static void check_version(struct doc *x, struct server *s)
{
	const struct server_id *id = &s->id;
	struct rlock_doctor *d = x->d;
	size_t n = d->n;
	int maj = 0, min = 0, pat = 0;

	if (id->version[0] == '\0' && s->info != NULL) {
		add(x, s->addr, "version", RLOCK_CHECK_NOTE, 0,
		    RLOCK_VALUE_NULL, NULL, "unknown: INFO names the server "
		    "'%s' but not its version", id->product);
		return;
	}
	if (id->version[0] == '\0') {
		unknown(x, s, "version", NULL);
		return;
	}
	if (rl_parse_version(id->compat, &maj, &min, &pat) != 0) {
		add(x, s->addr, "version", RLOCK_CHECK_WARN, 0,
		    RLOCK_VALUE_STRING, id->version, "unknown: version '%s' "
		    "is not MAJOR.MINOR.PATCH: what rlock can use there is "
		    "unknown", id->compat);
		return;
	}
	if (maj < 2 || (maj == 2 && (min < 6 || (min == 6 && pat < 12))))
		add(x, s->addr, "version", RLOCK_CHECK_FAIL, RLOCK_EUNAVAIL,
		    RLOCK_VALUE_STRING, id->version, "%s %s has no SET NX "
		    "PX or Lua scripts: rlock needs Redis 2.6.12 or later",
		    id->title, id->version);
	else if (maj < 6)
		add(x, s->addr, "version", RLOCK_CHECK_NOTE, 0,
		    RLOCK_VALUE_STRING, id->version, "%s %s: SET NX PX and "
		    "scripts; no ACLs, TLS or HELLO (6.0), no sharded pub/sub "
		    "(7.0)", id->title, id->version);
	else if (maj < 7)
		add(x, s->addr, "version", RLOCK_CHECK_OK, 0,
		    RLOCK_VALUE_STRING, id->version, "%s %s: SET NX PX, "
		    "scripts, ACLs, TLS; no sharded pub/sub (7.0)", id->title,
		    id->version);
	else
		add(x, s->addr, "version", RLOCK_CHECK_OK, 0,
		    RLOCK_VALUE_STRING, id->version, "%s %s: SET NX PX, "
		    "scripts, ACLs, TLS, sharded pub/sub", id->title,
		    id->version);
	if (d->n > n)
		snprintf(d->check[n].product, sizeof(d->check[n].product),
			 "%s", id->product);
}

static void check_mode(struct doc *x, struct server *s)
{
	if (s->mode[0] == '\0')
		unknown(x, s, "mode", "redis_mode");
	else if (strcmp(s->mode, "sentinel") == 0)
		add(x, s->addr, "mode", RLOCK_CHECK_FAIL, RLOCK_EUNAVAIL,
		    RLOCK_VALUE_STRING, s->mode, "this is a sentinel, not a "
		    "Redis server: use redis-sentinel://%s#MASTERNAME",
		    s->addr);
	else
		add(x, s->addr, "mode", RLOCK_CHECK_OK, 0, RLOCK_VALUE_STRING,
		    s->mode, "%s", s->mode);
}

/* Returns 1 when the server is a replica (no probe then). */
static int check_role(struct doc *x, struct server *s)
{
	char host[256] = "", port[16] = "";

	if (s->role[0] == '\0') {
		unknown(x, s, "role", "role");
		return 0;
	}
	if (strcmp(s->role, "master") == 0) {
		add(x, s->addr, "role", RLOCK_CHECK_OK, 0, RLOCK_VALUE_STRING,
		    "master", "master");
		return 0;
	}
	rl_info_text(s->info, "master_host", host, sizeof(host));
	rl_info_text(s->info, "master_port", port, sizeof(port));
	add(x, s->addr, "role", RLOCK_CHECK_FAIL, RLOCK_EUNAVAIL,
	    RLOCK_VALUE_STRING, s->role, "a replica%s%s%s%s: locks must be "
	    "taken on the master: point rlock at it, or use a "
	    "redis-sentinel:// URL", host[0] ? " of " : "", host,
	    port[0] ? ":" : "", port);
	return 1;
}

#define PCT_MAX 1000000LL

/* u * 100 / m for u >= 0, m > 0, floored (within 1 when m is above
 * LLONG_MAX / 100), at most PCT_MAX: no product overflows. */
static long long percent(long long u, long long m)
{
	long long q = u / m, r = u % m;

	if (q >= PCT_MAX / 100)
		return PCT_MAX;
	return q * 100 + (r <= LLONG_MAX / 100 ? r * 100 / m : r / (m / 100));
}

/*
 * How many rlocks the server's maxclients leaves room for: a waiting
 * rlock holds one connection (its requests, on which it pops its
 * wake-ups), two with several masters (its requests, and the release
 * channel's subscription), a holder one (run's renewals go on its
 * requests' connection; acquire --renew's renewer has one).  A warning
 * when fewer than a tenth of maxclients are free: a fleet starting at
 * once would be refused, and wait (issue 46).
 */
static void check_clients(struct doc *x, struct server *s)
{
	long long max = 0, used = 0, room;
	char v[24];
	int rm, ru;

	if (s->info == NULL) {
		unknown(x, s, "clients", NULL);
		return;
	}
	rm = rl_info_num(s->info, "maxclients", 0, LLONG_MAX, &max);
	ru = rl_info_num(s->info, "connected_clients", 0, LLONG_MAX, &used);
	if (rm == INFO_BAD || ru == INFO_BAD) {
		unreadable(x, s->addr, "clients", s->info, rm == INFO_BAD ?
			   "maxclients" : "connected_clients");
		return;
	}
	if (rm == INFO_ABSENT || ru == INFO_ABSENT) {
		unknown(x, s, "clients", rm == INFO_ABSENT ? "maxclients" :
			"connected_clients");
		return;
	}
	room = max > used ? max - used : 0;
	snprintf(v, sizeof(v), "%lld", room);
	if (x->rl->nnode > 1)
		add(x, s->addr, "clients", room * 10 < max ? RLOCK_CHECK_WARN :
		    RLOCK_CHECK_OK, 0, RLOCK_VALUE_NUMBER, v, "%lld of "
		    "maxclients %lld in use: room for %lld waiting rlocks (2 "
		    "connections each with several masters) or %lld holders "
		    "(1 each)%s", used, max, room / 2, room, room * 10 < max ?
		    "; more wait for a free connection: raise maxclients" :
		    "");
	else
		add(x, s->addr, "clients", room * 10 < max ? RLOCK_CHECK_WARN :
		    RLOCK_CHECK_OK, 0, RLOCK_VALUE_NUMBER, v, "%lld of "
		    "maxclients %lld in use: room for %lld waiting or holding "
		    "rlocks (1 connection each)%s", used, max, room,
		    room * 10 < max ? "; more wait for a free connection: "
		    "raise maxclients" : "");
}

static void check_memory(struct doc *x, struct server *s)
{
	char used[32], max[32], pct[24];
	long long u = 0, m = 0, p;
	int ru, rm;

	if (s->info == NULL) {
		unknown(x, s, "memory", NULL);
		return;
	}
	ru = rl_info_num(s->info, "used_memory", 0, LLONG_MAX, &u);
	rm = rl_info_num(s->info, "maxmemory", 0, LLONG_MAX, &m);
	if (ru == INFO_BAD || rm == INFO_BAD) {
		unreadable(x, s->addr, "memory", s->info, ru == INFO_BAD ?
			   "used_memory" : "maxmemory");
		return;
	}
	if (ru == INFO_ABSENT) {
		unknown(x, s, "memory", "used_memory");
		return;
	}
	/* The sizes as INFO writes them for people, else in bytes. */
	if (rl_info_text(s->info, "used_memory_human", used, sizeof(used)) !=
	    INFO_OK || used[0] == '\0')
		snprintf(used, sizeof(used), "%lldB", u);
	if (rl_info_text(s->info, "maxmemory_human", max, sizeof(max)) !=
	    INFO_OK || max[0] == '\0')
		snprintf(max, sizeof(max), "%lldB", m);
	if (rm == INFO_ABSENT || m == 0) {
		add(x, s->addr, "memory", RLOCK_CHECK_OK, 0,
		    RLOCK_VALUE_STRING, used, "used %s, no maxmemory", used);
		return;
	}
	p = percent(u, m);
	snprintf(pct, sizeof(pct), "%lld", p);
	if (p >= MEMORY_WARN_PCT)
		add(x, s->addr, "memory", RLOCK_CHECK_WARN, 0,
		    RLOCK_VALUE_NUMBER, pct, "used %s of maxmemory %s (%s%%): "
		    "near the limit, new locks will be refused (OOM) or keys "
		    "evicted; raise maxmemory", used, max, pct);
	else
		add(x, s->addr, "memory", RLOCK_CHECK_OK, 0,
		    RLOCK_VALUE_NUMBER, pct, "used %s of maxmemory %s (%s%%)",
		    used, max, pct);
}

/* ---- rights: a real lock, taken, extended, woken on and released -------- */

/* A probe lock name for s: NAME.doctor-XXXXXXXX-K in NAME's slot, or
 * doctor-XXXXXXXX-K in a slot s serves on a cluster.  Returns 0, or -1
 * when none fits (NAME's slot is another master's: *other set). */
static int probe_name(struct doc *x, struct server *s, char *buf, size_t len,
		      int *other)
{
	char tok[RLOCK_TOKEN_LEN + 1], key[RLOCK_KEY_MAX + 64];
	int want = -1, k;

	*other = 0;
	if (rlock_make_token(tok) != 0)
		memcpy(tok, "00000000", 9);
	if (x->name != NULL) {
		rl_lock_key(key, sizeof(key), x->rl->prefix, x->name, "");
		want = rl_key_slot(key, strlen(key));
		if (rl_node_is_cluster(s->n) &&
		    s->n->slots[want] != s->peer + 1) {
			*other = 1;
			return -1;
		}
	}
	for (k = 0; k < 1000000; k++) {
		int slot;

		snprintf(buf, len, "%s%sdoctor-%.8s-%d", x->name ? x->name :
			 "", x->name ? "." : "", tok, k);
		if (rl_lock_key(key, sizeof(key), x->rl->prefix, buf, "") < 0)
			return -1;
		slot = rl_key_slot(key, strlen(key));
		if (want >= 0 && slot == want)
			return 0;
		if (want < 0 && (!rl_node_is_cluster(s->n) ||
				 s->n->slots[slot] == s->peer + 1))
			return 0;
	}
	return -1;
}

/* The probe's keys and channel. */
struct probe {
	char name[RLOCK_NAME_MAX + 1];
	struct lock_keys k;
	char token[RLOCK_TOKEN_LEN + 1];
	struct rlock_conn *sub;		/* the waiter's connection */
	int subscribed;
	redisReply *sub_refusal;	/* SUBSCRIBE's error reply */
	int sub_odd;			/* SUBSCRIBE's reply did not decode */
	int refused;			/* the ACL refused the acquire script */
	int recorded;			/* the history: 1 kept, 0 refused, -1 */
};

/* The probe's history lasts a minute, should its cleanup fail. */
static const struct history probe_history = { 10, 60000 };

/* SUBSCRIBE the probe's channel on a connection of its own, as a waiter
 * does. */
static void probe_subscribe(struct doc *x, struct server *s, struct probe *p)
{
	const char *argv[2] = { "SUBSCRIBE", p->k.chan };
	const struct rlock_conn_opts *o;
	redisReply *r = NULL;

	rl_node_url(s->n, -1, &o);
	p->sub = rl_conn_new(rl_conn_url(s->c), 0, o);
	if (p->sub == NULL) {
		x->oom = 1;
		return;
	}
	if (call(x, p->sub, 2, argv, &r) != RLOCK_OK)
		return;
	if (rl_reply_is_push(r, "subscribe", p->k.chan)) {
		p->subscribed = 1;
		freeReplyObject(r);
	} else if (r->type == REDIS_REPLY_ERROR) {
		p->sub_refusal = r;
	} else {
		p->sub_odd = 1;
		freeReplyObject(r);
	}
}

/* A waiter's count, as status shows it. */
static void check_numsub(struct doc *x, struct server *s, struct probe *p)
{
	const char *argv[3] = { "PUBSUB", "NUMSUB", p->k.chan };
	redisReply *r = NULL;
	long long seen;

	if (call(x, s->c, 3, argv, &r) != RLOCK_OK)
		return;
	if (r->type == REDIS_REPLY_ERROR)
		refused(x, s, "pubsub", RLOCK_CHECK_NOTE, r, p->k.key,
			"PUBSUB NUMSUB refused: status cannot count waiters on several masters");
	else if (decode_numsub(r, &seen) == 0)
		add(x, s->addr, "pubsub", RLOCK_CHECK_OK, 0,
		    RLOCK_VALUE_NUMBER, p->subscribed ? "1" : "0",
		    "PUBSUB NUMSUB counts waiters on several masters (%lld seen)",
		    seen);
	else
		add(x, s->addr, "pubsub", RLOCK_CHECK_WARN, 0,
		    RLOCK_VALUE_NULL, NULL, "PUBSUB NUMSUB's reply is not "
		    "{channel, count}: status cannot count waiters on several "
		    "masters");
	freeReplyObject(r);
}

/* Wait for the release message; returns microseconds from t0, or -1. */
static int64_t heard_release(struct doc *x, struct probe *p, int64_t t0)
{
	redisReply *r = NULL;
	int rc, heard;

	if (!p->subscribed)
		return -1;
	rc = rl_conn_wait_reply(p->sub, io_deadline(x), -1, &r);
	heard = rc == RLOCK_OK && rl_reply_is_push(r, "message", p->k.chan);
	freeReplyObject(r);
	return heard ? now_us() - t0 : -1;
}

/* The release channel: several masters' waiters listen there (one
 * server's pop their own lists, check_pop), so with one server what it
 * lacks is only noted. */
static void check_wakeup(struct doc *x, struct server *s, struct probe *p,
			 long long released, int64_t us)
{
	int level = x->rl->nnode > 1 ? RLOCK_CHECK_WARN : RLOCK_CHECK_NOTE;
	const char *who = x->rl->nnode > 1 ? "waiters" : "waiters of several "
			  "masters (not one server's)";
	char v[32], cost[160];

	if (p->sub_refusal != NULL) {
		snprintf(cost, sizeof(cost), "SUBSCRIBE refused: %s poll, up "
			 "to 1s late", who);
		refused(x, s, "wakeup", level, p->sub_refusal, p->k.key,
			cost);
	} else if (p->sub_odd) {
		add(x, s->addr, "wakeup", level, 0,
		    RLOCK_VALUE_NULL, NULL, "SUBSCRIBE's reply is not "
		    "{subscribe, channel, count}: %s cannot listen", who);
	} else if (released == 3) {
		add(x, s->addr, "wakeup", level, 0,
		    RLOCK_VALUE_NULL, NULL, "the release's PUBLISH was "
		    "refused: %s poll, up to 1s late; allow it with ACL "
		    "SETUSER %s &%s*", who, user_of(s->c), x->rl->prefix);
	} else if (us >= 0) {
		snprintf(v, sizeof(v), "%.3f", (double)us / 1000.0);
		add(x, s->addr, "wakeup", RLOCK_CHECK_OK, 0,
		    RLOCK_VALUE_NUMBER, v, "a waiter heard the release %sms "
		    "after it was sent", v);
	} else {
		add(x, s->addr, "wakeup", RLOCK_CHECK_WARN, 0,
		    RLOCK_VALUE_NULL, NULL, "no release message reached the "
		    "waiter within the I/O timeout: waiters will poll");
	}
}

/* BLPOP the probe's wake-up list for 10ms, as a waiter on one server
 * pops its own between its beats: refused, waiters are let in at their
 * next beat instead of at once. */
static void check_pop(struct doc *x, struct server *s, struct probe *p)
{
	char key[sizeof(p->k.wake) + 8];
	const char *argv[3] = { "BLPOP", key, "0.01" };
	redisReply *r = NULL;

	snprintf(key, sizeof(key), "%sdoctor", p->k.wake);
	if (call(x, s->c, 3, argv, &r) != RLOCK_OK)
		return;
	if (r->type == REDIS_REPLY_ERROR)
		refused(x, s, "pop", RLOCK_CHECK_WARN, r, key, "BLPOP "
			"refused: waiters are let in at their next beat, up "
			"to 0.4s late, instead of at once");
	else if (r->type == REDIS_REPLY_NIL)
		add(x, s->addr, "pop", RLOCK_CHECK_OK, 0, RLOCK_VALUE_NULL,
		    NULL, "BLPOP: a waiter waits on its one connection and "
		    "is woken at once");
	else
		add(x, s->addr, "pop", RLOCK_CHECK_WARN, 0, RLOCK_VALUE_NULL,
		    NULL, "BLPOP of an empty list did not answer nil: waiters "
		    "may be woken for nothing");
	freeReplyObject(r);
}

/* Acquire, extend and release the probe; returns the release's reply (1,
 * or 3 when the PUBLISH was refused), 0 when a step failed. */
static long long probe_lock(struct doc *x, struct server *s, struct probe *p,
			    int64_t *woke_us)
{
	struct acquirer who = { x->rl->host, x->rl->user, "rlock doctor",
				NULL, (long long)getpid(), 0, 0 };
	struct request q;
	redisReply *r = NULL;
	long long fence, flag, out = 0;
	char why[128];
	int64_t t0;
	int held = 0;

	rl_req_acquire(&q, &p->k.v, p->token, PROBE_TTL_MS, &who,
		       &(struct ask){ "x", "", 0, 1 }, &probe_history);
	if (script(x, s->c, &q, &r) != RLOCK_OK) {
		add(x, s->addr, "acquire", RLOCK_CHECK_FAIL, RLOCK_EUNAVAIL,
		    RLOCK_VALUE_NULL, NULL, "%s", rl_conn_errstr(s->c));
		return 0;
	}
	if (r->type == REDIS_REPLY_ERROR &&
	    rl_scripts_unavailable(r, why, sizeof(why))) {
		add(x, s->addr, "scripts", RLOCK_CHECK_FAIL, RLOCK_EUNAVAIL,
		    RLOCK_VALUE_NULL, NULL, "%s", why);
		freeReplyObject(r);
		return 0;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		/* An ACL refuses before the script runs: nothing to undo. */
		p->refused = r->len >= 6 && memcmp(r->str, "NOPERM", 6) == 0;
		refused(x, s, "acquire", RLOCK_CHECK_FAIL, r, p->k.key,
			"acquire failed");
		freeReplyObject(r);
		return 0;
	}
	/* A grant, {1, fence, recorded} or its entry's id: anything else
	 * (a busy answer for a name no one else has) is not what the probe
	 * can work with. */
	if ((r->type != REDIS_REPLY_STRING &&
	     rl_elem_num(r, 0, 1, 1, &flag) != 0) ||
	    rl_decode_grant(r, &fence, &p->recorded, NULL) != 0) {
		add(x, s->addr, "acquire", RLOCK_CHECK_FAIL, RLOCK_EPROTO,
		    RLOCK_VALUE_NULL, NULL, "unexpected reply to the acquire "
		    "script");
		freeReplyObject(r);
		return 0;
	}
	freeReplyObject(r);
	add(x, s->addr, "acquire", RLOCK_CHECK_OK, 0, RLOCK_VALUE_STRING,
	    p->name, "took probe lock '%s' (fence %lld)", p->name, fence);
	check_numsub(x, s, p);

	rl_req_extend(&q, &p->k.v, p->token, PROBE_TTL_MS, 'x');
	if (script(x, s->c, &q, &r) != RLOCK_OK)
		r = NULL;
	if (r != NULL && rl_decode_extend(r, &held) == RLOCK_OK && held)
		add(x, s->addr, "extend", RLOCK_CHECK_OK, 0, RLOCK_VALUE_NULL,
		    NULL, "extended the probe lock");
	else if (r != NULL && r->type == REDIS_REPLY_ERROR)
		refused(x, s, "extend", RLOCK_CHECK_FAIL, r, p->k.key,
			"extend failed");
	else
		add(x, s->addr, "extend", RLOCK_CHECK_FAIL, RLOCK_EPROTO,
		    RLOCK_VALUE_NULL, NULL, "extend: %s", r == NULL ?
		    rl_conn_errstr(s->c) : "unexpected reply");
	freeReplyObject(r);

	rl_req_release(&q, &p->k.v, p->token, &probe_history, NULL, 0, 1);
	t0 = now_us();
	if (script(x, s->c, &q, &r) != RLOCK_OK)
		r = NULL;
	if (r != NULL && r->type == REDIS_REPLY_INTEGER &&
	    (r->integer == 1 || r->integer == 3)) {
		out = r->integer;
		*woke_us = heard_release(x, p, t0);
		add(x, s->addr, "release", RLOCK_CHECK_OK, 0, RLOCK_VALUE_NULL,
		    NULL, "released the probe lock");
	} else if (r != NULL && r->type == REDIS_REPLY_ERROR) {
		refused(x, s, "release", RLOCK_CHECK_FAIL, r, p->k.key,
			"release failed");
	} else {
		add(x, s->addr, "release", RLOCK_CHECK_FAIL, RLOCK_EPROTO,
		    RLOCK_VALUE_NULL, NULL, "release: %s", r == NULL ?
		    rl_conn_errstr(s->c) : "unexpected reply");
	}
	freeReplyObject(r);
	return out;
}

/* Whether the probe's grant was recorded in its history (XADD), and the
 * history can be read back (XREVRANGE: log, last and status). */
static void check_history(struct doc *x, struct server *s, struct probe *p)
{
	const char *argv[6] = { "XREVRANGE", p->k.log, "+", "-", "COUNT", "1" };
	const char *user = user_of(s->c);
	redisReply *r = NULL;

	if (p->recorded == 0) {
		add(x, s->addr, "history", RLOCK_CHECK_WARN, 0,
		    RLOCK_VALUE_NULL, NULL, "XADD refused: locks work, but "
		    "no history is kept (rlock log, last); allow it with ACL "
		    "SETUSER %s +xadd +xrange +xrevrange", user);
		return;
	}
	if (call(x, s->c, 6, argv, &r) != RLOCK_OK)
		return;
	if (r->type == REDIS_REPLY_ERROR)
		refused(x, s, "history", RLOCK_CHECK_WARN, r, p->k.key,
			"XREVRANGE refused: the history is kept but rlock "
			"log, last and status cannot read it");
	else if (!is_entries(r, p->recorded == 1))
		add(x, s->addr, "history", RLOCK_CHECK_WARN, 0,
		    RLOCK_VALUE_NULL, NULL, "XREVRANGE's reply is not the "
		    "probe's history entries: rlock log, last and status "
		    "cannot read it");
	else if (p->recorded == 1)
		add(x, s->addr, "history", RLOCK_CHECK_OK, 0,
		    RLOCK_VALUE_NULL, NULL, "the probe's grant and release "
		    "were recorded in its history (%s)", p->k.log);
	freeReplyObject(r);
}

/* Delete what the probe may have left (its history, which would stay
 * its 30 days) and check that nothing remains. */
static void probe_cleanup(struct doc *x, struct server *s, struct probe *p)
{
	const char *del[8] = { "DEL", p->k.key, p->k.meta, p->k.fence,
			       p->k.log, p->k.last, p->k.grant, p->k.hold };
	const char *exists[8] = { "EXISTS", p->k.key, p->k.meta, p->k.fence,
				  p->k.log, p->k.last, p->k.grant, p->k.hold };
	redisReply *r = NULL;
	long long left = -1;

	if (call(x, s->c, 8, del, &r) != RLOCK_OK) {
		add(x, s->addr, "cleanup", RLOCK_CHECK_WARN, 0,
		    RLOCK_VALUE_NULL, NULL, "%s; delete %s yourself",
		    rl_conn_errstr(s->c), p->k.fence);
		return;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		refused(x, s, "cleanup", RLOCK_CHECK_WARN, r, p->k.key,
			"DEL refused: the probe's history is left until it "
			"expires");
		freeReplyObject(r);
		return;
	}
	freeReplyObject(r);
	r = NULL;
	if (call(x, s->c, 8, exists, &r) == RLOCK_OK &&
	    r->type == REDIS_REPLY_INTEGER && r->integer >= 0 &&
	    r->integer <= 7)
		left = r->integer;
	freeReplyObject(r);
	if (left == 0)
		add(x, s->addr, "cleanup", RLOCK_CHECK_OK, 0,
		    RLOCK_VALUE_NUMBER, "0", "the probe left no key behind "
		    "(its :grant record, :log and :log:last deleted)");
	else
		add(x, s->addr, "cleanup", RLOCK_CHECK_WARN, 0,
		    RLOCK_VALUE_NULL, NULL, "could not confirm that the "
		    "probe's keys are gone: delete %s, %s, %s, %s and %s",
		    p->k.key, p->k.grant, p->k.fence, p->k.log, p->k.last);
}

/* SCAN, as status lists the locks. */
static void check_scan(struct doc *x, struct server *s, const struct probe *p)
{
	char pattern[300];
	const char *argv[8] = { "SCAN", "0", "MATCH", pattern, "COUNT", "10",
				"TYPE", "string" };
	redisReply *r = NULL;

	snprintf(pattern, sizeof(pattern), "%s{*}", x->rl->prefix);
	if (call(x, s->c, 8, argv, &r) != RLOCK_OK)
		return;
	if (r->type == REDIS_REPLY_ERROR)
		refused(x, s, "scan", RLOCK_CHECK_WARN, r, p->k.key, "SCAN "
			"refused: 'rlock status' without NAME cannot list "
			"locks");
	else if (!is_scan_page(r))
		add(x, s->addr, "scan", RLOCK_CHECK_WARN, 0, RLOCK_VALUE_NULL,
		    NULL, "SCAN's reply is not {cursor, keys}: 'rlock status' "
		    "without NAME cannot list locks");
	else
		add(x, s->addr, "scan", RLOCK_CHECK_OK, 0, RLOCK_VALUE_NULL,
		    NULL, "SCAN lists locks for 'rlock status'");
	freeReplyObject(r);
}

static void check_rights(struct doc *x, struct server *s)
{
	struct probe p;
	int64_t woke = -1;	/* microseconds */
	long long released;
	int other;

	memset(&p, 0, sizeof(p));
	if (probe_name(x, s, p.name, sizeof(p.name), &other) != 0) {
		add(x, s->addr, "acquire", RLOCK_CHECK_NOTE, 0,
		    RLOCK_VALUE_NULL, NULL, other ? "not probed here: lock "
		    "'%s' lives on another master" : "no probe name fits "
		    "'%s'", x->name ? x->name : "");
		return;
	}
	rl_lock_keys_init(&p.k, x->rl->prefix, p.name);
	if (rlock_make_token(p.token) != 0) {
		x->oom = 1;
		return;
	}
	rl_identify(x->rl);
	probe_subscribe(x, s, &p);
	p.recorded = -1;
	released = probe_lock(x, s, &p, &woke);
	if (released != 0)
		check_wakeup(x, s, &p, released, woke);
	if (released != 0 && x->rl->nnode == 1)
		check_pop(x, s, &p);
	if (released != 0)
		check_history(x, s, &p);
	if (!p.refused)
		probe_cleanup(x, s, &p);
	check_scan(x, s, &p);
	rl_conn_free(p.sub);
	freeReplyObject(p.sub_refusal);
}

/* ---- safety of the configuration ---------------------------------------- */

static void check_eviction(struct doc *x, struct server *s)
{
	char policy[64] = "", max[32] = "";
	long long m = 0;
	int rc;

	if (s->info == NULL) {
		unknown(x, s, "eviction", "maxmemory_policy");
		return;
	}
	rc = rl_info_text(s->info, "maxmemory_policy", policy, sizeof(policy));
	if (rc == INFO_ABSENT) {
		unknown(x, s, "eviction", "maxmemory_policy");
		return;
	}
	if (rc == INFO_BAD) {
		unreadable(x, s->addr, "eviction", s->info,
			   "maxmemory_policy");
		return;
	}
	/* An absent maxmemory is none (a Redis without the field). */
	if (rl_info_num(s->info, "maxmemory", 0, LLONG_MAX, &m) == INFO_BAD &&
	    strcmp(policy, "noeviction") != 0) {
		unreadable(x, s->addr, "eviction", s->info, "maxmemory");
		return;
	}
	rl_info_text(s->info, "maxmemory_human", max, sizeof(max));
	if (strcmp(policy, "noeviction") == 0)
		add(x, s->addr, "eviction", RLOCK_CHECK_OK, 0,
		    RLOCK_VALUE_STRING, policy, "noeviction: a full server "
		    "refuses new locks (OOM) and never drops a held one");
	else if (m <= 0)
		add(x, s->addr, "eviction", RLOCK_CHECK_NOTE, 0,
		    RLOCK_VALUE_STRING, policy, "%s, but no maxmemory: nothing "
		    "is evicted; with a maxmemory it would be: set "
		    "maxmemory-policy noeviction", policy);
	else if (strncmp(policy, "allkeys-", 8) == 0)
		add(x, s->addr, "eviction", RLOCK_CHECK_WARN, 0,
		    RLOCK_VALUE_STRING, policy, "%s with maxmemory %s: any key "
		    "can be evicted, a held lock's (two holders) or its history, "
		    "whose IDs are its fences; set maxmemory-policy noeviction",
		    policy, max);
	else
		add(x, s->addr, "eviction", RLOCK_CHECK_WARN, 0,
		    RLOCK_VALUE_STRING, policy, "%s with maxmemory %s: evicts "
		    "keys with a TTL, which every held lock has (another "
		    "client then takes it: two holders); set maxmemory-policy "
		    "noeviction", policy, max);
}

/* The AOF's fsync policy from CONFIG GET, which managed services refuse:
 * "" then, and *why says whether it was refused or did not decode. */
static void appendfsync(struct doc *x, struct server *s, char *buf,
			size_t len, const char **why)
{
	const char *argv[3] = { "CONFIG", "GET", "appendfsync" };
	redisReply *r = NULL;

	buf[0] = '\0';
	*why = "CONFIG refused";
	if (call(x, s->c, 3, argv, &r) == RLOCK_OK &&
	    r->type != REDIS_REPLY_ERROR &&
	    decode_appendfsync(r, buf, len) != 0)
		*why = "CONFIG GET's reply unreadable";
	freeReplyObject(r);
}

/*
 * What a restart that loses data costs here, and the operator's cure that
 * applies.  The fence never goes back (it is floored at the server's
 * clock), but the lock itself is forgotten: a second holder can start
 * while the first runs on until it notices.  With replicas a crash is a
 * failover, whose cure is --wait-replicas (the replication check); a
 * restart without one still forgets the locks.
 */
static void check_persistence(struct doc *x, struct server *s)
{
	char status[32] = "", fsync[16], how[200];
	long long nrep = 0, aof = 0;
	const char *why;
	int rc;

	rc = rl_info_num(s->info, "aof_enabled", 0, 1, &aof);
	if (rc == INFO_ABSENT) {
		unknown(x, s, "persistence", "aof_enabled");
		return;
	}
	if (rc == INFO_BAD) {
		unreadable(x, s->addr, "persistence", s->info, "aof_enabled");
		return;
	}
	/* The advice only; the replication check reports a bad count. */
	if (rl_info_num(s->info, "connected_slaves", 0, REPLICAS_MAX, &nrep) !=
	    INFO_OK)
		nrep = 0;
	snprintf(how, sizeof(how), "%s", nrep > 0 ?
		 "never restart a crashed master at once (its replicas would "
		 "copy its empty data): keep it out for the longest TTL in "
		 "use" :
		 "keep a restarted server out of service for the longest TTL "
		 "in use");
	rl_info_text(s->info, "aof_last_write_status", status, sizeof(status));
	if (aof == 0) {
		add(x, s->addr, "persistence", RLOCK_CHECK_WARN, 0,
		    RLOCK_VALUE_STRING, "none", "no AOF: a restart forgets "
		    "every lock, and a second holder can start while the "
		    "first runs on (fences still increase); fix: %s, or "
		    "appendonly yes with appendfsync always", how);
		return;
	}
	if (strcmp(status, "ok") != 0 && status[0] != '\0') {
		add(x, s->addr, "persistence", RLOCK_CHECK_WARN, 0,
		    RLOCK_VALUE_STRING, "aof", "AOF on, but its last write "
		    "failed (%s): locks taken since are not on disk; check "
		    "the server's disk", status);
		return;
	}
	appendfsync(x, s, fsync, sizeof(fsync), &why);
	if (strcmp(fsync, "always") == 0)
		add(x, s->addr, "persistence", RLOCK_CHECK_OK, 0,
		    RLOCK_VALUE_STRING, "aof", "AOF with appendfsync always: "
		    "a crash loses no lock");
	else if (fsync[0] != '\0')
		add(x, s->addr, "persistence", RLOCK_CHECK_WARN, 0,
		    RLOCK_VALUE_STRING, "aof", "AOF with appendfsync %s: a "
		    "crash loses the locks of its last second or more; fix: "
		    "appendfsync always, or %s", fsync, how);
	else
		add(x, s->addr, "persistence", RLOCK_CHECK_NOTE, 0,
		    RLOCK_VALUE_STRING, "aof", "AOF on; appendfsync unknown "
		    "(%s): with always a crash loses no lock, with everysec "
		    "the last second of them (then %s)", why, how);
}

/* Each replica INFO describes (never as many as connected_slaves claims:
 * a count is not a loop bound), against the count. */
static void check_replication(struct doc *x, struct server *s)
{
	struct info_replica rep;
	long long nrep = 0, worst = 0, lines = 0;
	size_t pos = 0;
	int rc, down = 0;
	char v[24];

	rc = rl_info_num(s->info, "connected_slaves", 0, REPLICAS_MAX, &nrep);
	if (rc == INFO_ABSENT) {
		unknown(x, s, "replication", "connected_slaves");
		return;
	}
	if (rc == INFO_BAD) {
		unreadable(x, s->addr, "replication", s->info,
			   "connected_slaves");
		return;
	}
	while ((rc = rl_info_replica(s->info, &pos, &rep)) != INFO_ABSENT) {
		if (rc == INFO_BAD) {
			add(x, s->addr, "replication", RLOCK_CHECK_WARN, 0,
			    RLOCK_VALUE_NULL, NULL, "unknown: a slave line of "
			    "INFO is unreadable (no state, or a lag that is "
			    "not a number): check the server");
			return;
		}
		lines++;
		if (!rep.online)
			down++;
		if (rep.lag > worst)
			worst = rep.lag;
	}
	/* A replica counted but not described is going away. */
	if (lines < nrep)
		down += (int)(nrep - lines);
	snprintf(v, sizeof(v), "%lld", nrep);
	if (nrep == 0)
		add(x, s->addr, "replication", RLOCK_CHECK_NOTE, 0,
		    RLOCK_VALUE_NUMBER, v, "no replicas: a valid choice for "
		    "locks; while this server is down no lock can be taken");
	else if (down > 0 || worst > LAG_WARN_S)
		add(x, s->addr, "replication", RLOCK_CHECK_WARN, 0,
		    RLOCK_VALUE_NUMBER, v, "%lld replica%s, %d not online, "
		    "worst lag %llds: a failover now would lose recent locks; "
		    "use --wait-replicas 1 and fix the replicas", nrep,
		    nrep == 1 ? "" : "s", down, worst);
	else
		add(x, s->addr, "replication", RLOCK_CHECK_NOTE, 0,
		    RLOCK_VALUE_NUMBER, v, "%lld replica%s, lag %llds: "
		    "replication is asynchronous, a failover can lose a lock "
		    "just taken; use --wait-replicas 1", nrep,
		    nrep == 1 ? "" : "s", worst);
}

/* ---- what a failover costs a lock ---------------------------------------- */

/* a / b rounded up, for a >= 0 and b > 0 in ranges that do not overflow. */
static long long ceil_div(long long a, long long b)
{
	return a / b + (a % b != 0);
}

void rl_failover_plan(const struct failover_in *in, struct failover_out *out)
{
	long long r = in->replicas, m = in->min_replicas, need;
	long long ps = in->parallel_syncs > 0 ? in->parallel_syncs : 1;
	long long base = in->detect_ms + FAILOVER_ELECT_MS;

	memset(out, 0, sizeof(*out));
	out->rides = r > 1 ? r - 1 : 0;
	/* min-replicas-to-write M >= R: the promoted replica is one fewer
	 * than the M the new master needs. */
	out->stuck = r >= 0 && m > 0 && m > out->rides;
	out->window_ms = base;
	if (m > 0 && !out->stuck)
		out->window_ms += ceil_div(m, ps) * FAILOVER_BATCH_MS;
	/* Renewals come every TTL/3: the lease must outlast the window from
	 * a renewal sent up to a third of it before the master was lost. */
	out->ttl_s = ceil_div(out->window_ms * 3, 2000);
	out->wait_s = ceil_div(out->window_ms, 1000);
	/* A full resync: the diskless delay, then the transfer. */
	out->full_ms = in->diskless ? in->diskless_delay_s * 1000 : 0;
	if (in->dataset_bytes >= 0)
		out->full_ms += 1000 * (in->dataset_bytes == 0 ? 1 :
			ceil_div(in->dataset_bytes,
				 FAILOVER_RESYNC_BYTES_PER_S));
	need = m > 1 ? m : 1;
	out->wait1_ms = out->wait1_ttl_s = out->wait1_wait_s = -1;
	if (r >= 0 && out->rides >= need) {
		/* The replicas left come back by partial resync, unless
		 * they got writes the promoted one missed (a crash or a
		 * forced failover under load: measured, most of them):
		 * then by a full one.  The worst is the figure. */
		out->wait1_ms = base + ceil_div(need, ps) * FAILOVER_BATCH_MS +
			out->full_ms;
		out->wait1_ttl_s = ceil_div(out->wait1_ms * 3, 2000);
		out->wait1_wait_s = ceil_div(out->wait1_ms, 1000);
	}
	out->resync_ms = (in->cluster ? FAILOVER_RECONF_CLUSTER_MS :
			  FAILOVER_RECONF_SENTINEL_MS) + out->full_ms;
	out->level = r == 1 || out->stuck || in->down > 0 ?
		RLOCK_CHECK_WARN : RLOCK_CHECK_NOTE;
}

/* A message built in pieces, cut to fit. */
struct text {
	char *p;
	size_t len, at;
};

static void put(struct text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->at + 1 >= t->len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->p + t->at, t->len - t->at, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->at = (size_t)n < t->len - t->at ? t->at + (size_t)n :
			t->len - 1;
}

/* ms as seconds: "3s", or "3.5s" to the tenth above. */
static const char *secs(char *buf, size_t len, long long ms)
{
	long long tenths = ceil_div(ms, 100);

	if (tenths % 10 == 0)
		snprintf(buf, len, "%llds", tenths / 10);
	else
		snprintf(buf, len, "%lld.%llds", tenths / 10, tenths % 10);
	return buf;
}

/* bytes for people, in the units of the transfer rate (10^6). */
static const char *size_of(char *buf, size_t len, long long b)
{
	if (b < 1000000)
		snprintf(buf, len, "%lldkB", ceil_div(b, 1000));
	else if (b < 1000000000)
		snprintf(buf, len, "%.1fMB", (double)b / 1e6);
	else
		snprintf(buf, len, "%.1fGB", (double)b / 1e9);
	return buf;
}

/* What a full resync of the returning old master takes. */
static void put_resync(struct text *t, const struct failover_in *in,
		       const struct failover_out *out)
{
	char a[24], b[24], c[24];

	put(t, "~%s once it is back: %s to take it back as a replica",
	    secs(a, sizeof(a), out->resync_ms),
	    secs(b, sizeof(b), in->cluster ? FAILOVER_RECONF_CLUSTER_MS :
		 FAILOVER_RECONF_SENTINEL_MS));
	if (in->diskless)
		put(t, ", diskless delay %llds", in->diskless_delay_s);
	else
		put(t, ", an RDB written to disk");
	if (in->dataset_bytes >= 0)
		put(t, ", %s of data at %lldMB/s",
		    size_of(c, sizeof(c), in->dataset_bytes),
		    FAILOVER_RESYNC_BYTES_PER_S / 1000000);
	else
		put(t, ", and the data's transfer (its size unknown)");
}

void rl_failover_message(const struct failover_in *in,
			 const struct failover_out *out, char *buf, size_t len)
{
	struct text t = { buf, len, 0 };
	long long r = in->replicas, m = in->min_replicas;
	char a[24], b[24];

	if (len == 0)
		return;
	buf[0] = '\0';
	if (in->down > 0)
		put(&t, "%lld of %lld replicas not online (counted as none "
		    "below); ", in->down, in->down + (r > 0 ? r : 0));
	if (r == 0 && !out->stuck) {
		put(&t, "no failover: no replica %sto promote; while the "
		    "master is down no lock can be taken, and "
		    "--wait-replicas cannot be met", in->down > 0 ?
		    "online " : "");
		return;
	}
	put(&t, "failover window ~%s: ", secs(a, sizeof(a), out->window_ms));
	if (in->cluster)
		put(&t, "cluster-node-timeout %lldms, ~2s for the best "
		    "replica's election delay and the vote", in->detect_ms);
	else
		put(&t, "down-after %lldms, ~2s to elect and promote",
		    in->detect_ms);
	if (m > 0 && !out->stuck)
		put(&t, ", ~%s for min-replicas-to-write's %lld replica%s to "
		    "reconnect", secs(b, sizeof(b), out->window_ms -
				      in->detect_ms - FAILOVER_ELECT_MS), m,
		    m == 1 ? "" : "s");
	if (!in->cluster)
		put(&t, " (a failed try is retried after %s, 2 x "
		    "failover-timeout)", secs(b, sizeof(b), in->retry_ms));
	if (out->stuck) {
		put(&t, "; but min-replicas-to-write %lld with %lld replica%s "
		    "online: the new master refuses writes (no grant, no "
		    "renewal) until the old master is back and resynced (",
		    m, r, r == 1 ? "" : "s");
		put_resync(&t, in, out);
		put(&t, "), for good if it never returns; add a replica or "
		    "lower min-replicas-to-write");
		return;
	}
	put(&t, ". Hold with -t %llds or more (renewals come every TTL/3), "
	    "wait with -w %llds plus the hold.", out->ttl_s, out->wait_s);
	if (r < 0) {
		put(&t, " What --wait-replicas costs is unknown: the "
		    "replicas are (see replication).");
	} else if (out->wait1_ms >= 0) {
		put(&t, " --wait-replicas 1: -t %llds, -w %llds plus the "
		    "hold; the new master keeps %lld replica%s, back by "
		    "partial resync ", out->wait1_ttl_s, out->wait1_wait_s,
		    out->rides, out->rides == 1 ? "" : "s");
		if (in->cluster)
			put(&t, "together in ~1s");
		else
			put(&t, "~1s per parallel-syncs batch of %lld",
			    in->parallel_syncs);
		put(&t, ", or by a full one (~%s more) when they got writes "
		    "the promoted one missed", secs(b, sizeof(b),
						    out->full_ms));
		put(&t, "; N above %lld waits for the old master's full "
		    "resync (", out->rides);
		put_resync(&t, in, out);
		put(&t, "), for good if it never returns.");
	} else {
		put(&t, " --wait-replicas 1 cannot ride it out: the new "
		    "master has no replica, so no grant or renewal counts "
		    "until the old master is back and fully resynced (");
		put_resync(&t, in, out);
		put(&t, "), none at all if it never returns; add a replica.");
	}
	if (in->cluster && in->validity > 0)
		put(&t, " A replica cut off for over %s (node-timeout x "
		    "validity-factor %lld, + 10s) is never promoted.",
		    secs(a, sizeof(a), in->detect_ms * in->validity + 10000),
		    in->validity);
	else if (in->cluster && in->validity == 0)
		put(&t, " cluster-replica-validity-factor 0: a replica is "
		    "promoted however stale its data.");
}

/* Append a figure to the check just added. */
static void figure(struct doc *x, const char *name, long long v, int known)
{
	struct rlock_check *k;

	if (x->oom || x->d->n == 0)
		return;
	k = &x->d->check[x->d->n - 1];
	if (k->nfigure == RLOCK_FIGURES_MAX)
		return;
	snprintf(k->figure[k->nfigure].name, sizeof(k->figure[0].name), "%s",
		 name);
	k->figure[k->nfigure].v = known ? v : 0;
	k->figure[k->nfigure].known = known;
	k->nfigure++;
}

/* One parameter from CONFIG GET, which managed services refuse and older
 * servers may not have.  Returns INFO_OK with the value in buf (raw),
 * INFO_ABSENT with *why (refused, or no such parameter: the caller
 * assumes Redis's default and says so), or INFO_BAD with the reply's
 * value in buf when there was one. */
static int config_get(struct doc *x, struct server *s, const char *name,
		      char *buf, size_t len, const char **why)
{
	const char *argv[3] = { "CONFIG", "GET", name }, *v;
	redisReply *r = NULL;
	size_t n;
	int rc;

	buf[0] = '\0';
	*why = "CONFIG refused";
	if (call(x, s->c, 3, argv, &r) != RLOCK_OK)
		return INFO_ABSENT;
	if (r->type == REDIS_REPLY_ERROR) {
		freeReplyObject(r);
		return INFO_ABSENT;
	}
	rc = rl_decode_config(r, name, &v, &n);
	if (rc == INFO_ABSENT)
		*why = "not a parameter of this server";
	snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), v);
	freeReplyObject(r);
	return rc;
}

/* What the failover check reads of one server: each figure, read or
 * assumed, and the first that does not read. */
struct reading {
	char assumed[400];		/* "name default (why), ..." */
	const char *bad;		/* a parameter that does not read */
	char bad_val[48];
};

/* The first parameter whose value did not read, and that value. */
static void note_bad(struct reading *g, const char *name, const char *val)
{
	if (g->bad != NULL)
		return;
	g->bad = name;
	snprintf(g->bad_val, sizeof(g->bad_val), "%s", val);
}

/* CONFIG GET name as a number in lo..hi into *v; when not read, *v is
 * def and the reading says so. */
static void config_num(struct doc *x, struct server *s, struct reading *g,
		       const char *name, long long lo, long long hi,
		       long long def, long long *v)
{
	char buf[48], *p;
	const char *why;
	int rc = config_get(x, s, name, buf, sizeof(buf), &why);
	size_t at = strlen(g->assumed);

	*v = def;
	if (rc == INFO_OK && rlock_parse_ll(buf, strlen(buf), lo, hi, v) == 0)
		return;
	*v = def;
	if (rc != INFO_ABSENT) {
		note_bad(g, name, buf);
		return;
	}
	p = g->assumed + at;
	snprintf(p, sizeof(g->assumed) - at, "%s%s %lld (%s)", at ? ", " : "",
		 name, def, why);
}

/* CONFIG GET name as yes or no. */
static void config_bool(struct doc *x, struct server *s, struct reading *g,
			const char *name, int def, int *v)
{
	char buf[48];
	const char *why;
	int rc = config_get(x, s, name, buf, sizeof(buf), &why);
	size_t at = strlen(g->assumed);

	*v = def;
	if (rc == INFO_OK && (strcmp(buf, "yes") == 0 ||
			      strcmp(buf, "no") == 0)) {
		*v = strcmp(buf, "yes") == 0;
		return;
	}
	if (rc != INFO_ABSENT) {
		note_bad(g, name, buf);
		return;
	}
	snprintf(g->assumed + at, sizeof(g->assumed) - at, "%s%s %s (%s)",
		 at ? ", " : "", name, def ? "yes" : "no", why);
}

/* The online replicas INFO describes, and those counted but not online
 * (check_replication's reading, without its verdicts).  Returns INFO_OK,
 * or INFO_ABSENT / INFO_BAD (INFO refused or unreadable). */
static int replicas_now(const struct server *s, long long *online,
			long long *down)
{
	struct info_replica rep;
	long long nrep = 0, lines = 0;
	size_t pos = 0;
	int rc;

	*online = *down = 0;
	rc = rl_info_num(s->info, "connected_slaves", 0, REPLICAS_MAX, &nrep);
	if (rc != INFO_OK)
		return rc;
	while ((rc = rl_info_replica(s->info, &pos, &rep)) != INFO_ABSENT) {
		if (rc == INFO_BAD)
			return INFO_BAD;
		lines++;
		if (rep.online)
			++*online;
		else
			++*down;
	}
	if (lines < nrep)
		*down += nrep - lines;
	return INFO_OK;
}

/*
 * min-replicas-to-write, in effect only with a min-replicas-max-lag above
 * 0 (INFO then shows min_slaves_good_slaves, which tells whether it is
 * set when CONFIG is refused).  Returns 1 with *m read (0 when off), or 0
 * with *m assumed (0, or 1 for "set, value unknown") and g saying so.
 */
static int config_min_replicas(struct doc *x, struct server *s,
			       struct reading *g, long long *m)
{
	size_t at = strlen(g->assumed);
	long long lag = 10;
	const char *why;
	char buf[48];
	int rc;

	*m = 0;
	rc = config_get(x, s, "min-replicas-to-write", buf, sizeof(buf), &why);
	if (rc == INFO_OK &&
	    rlock_parse_ll(buf, strlen(buf), 0, INT_MAX, m) == 0) {
		config_num(x, s, g, "min-replicas-max-lag", 0, INT_MAX, 10,
			   &lag);
		if (lag == 0)
			*m = 0;
		return 1;
	}
	*m = 0;
	if (rc != INFO_ABSENT) {
		if (g->bad == NULL) {
			g->bad = "min-replicas-to-write";
			snprintf(g->bad_val, sizeof(g->bad_val), "%s", buf);
		}
		return 1;
	}
	if (s->info == NULL) {
		snprintf(g->assumed + at, sizeof(g->assumed) - at, "%s"
			 "min-replicas-to-write 0 (%s, INFO too)",
			 at ? ", " : "", why);
		return 0;
	}
	if (rl_info_get(s->info, "min_slaves_good_slaves", &(const char *){ NULL },
			&(size_t){ 0 }) != INFO_ABSENT)
		*m = 1;
	snprintf(g->assumed + at, sizeof(g->assumed) - at, "%s"
		 "min-replicas-to-write %s (%s; INFO %s min_slaves_good_slaves)",
		 at ? ", " : "", *m ? "1 or more" : "0", why,
		 *m ? "has" : "has no");
	return *m == 0;
}

/* What the sentinels of one URL said of its failover: the slowest
 * detection and retry, the fewest parallel syncs (the worst case among
 * them), and the first sentinel whose timing does not read. */
struct sentinel_view {
	int n;				/* sentinels whose timing read */
	long long down_after, failover_timeout, parallel_syncs, replicas;
	char bad[400];			/* "" or which, what, as said */
};

/* A failover-timeout or cluster-node-timeout above this is unreadable. */
#define TIMEOUT_MAX INT_MAX

/*
 * What a failover costs a lock on the master s, from the sentinels'
 * timing (sv) or the cluster's node timeout, the replicas now and what a
 * full resync takes.  A direct server has no failover: a short note when
 * it is the only server, nothing for several masters (Redlock rides out
 * the loss of a minority).
 */
static void check_failover(struct doc *x, struct server *s,
			   const struct sentinel_view *sv)
{
	struct failover_in in;
	struct failover_out out;
	struct reading g;
	struct cluster_replicas cr;
	long long online = 0, down = 0, m = 0, v;
	char msg[sizeof(x->d->check[0].message)], wms[24];
	int sentinel = s->n->url.kind == RLOCK_URL_SENTINEL, rc, maj = 0,
	    mn = 0, pt = 0, known_cluster = 0, m_known;

	if (!sentinel && !rl_node_is_cluster(s->n)) {
		if (x->rl->nnode == 1)
			add(x, s->addr, "failover", RLOCK_CHECK_NOTE, 0,
			    RLOCK_VALUE_NULL, NULL, "no failover (a direct "
			    "URL): while it is down no lock can be taken");
		return;
	}
	memset(&in, 0, sizeof(in));
	memset(&g, 0, sizeof(g));
	in.cluster = !sentinel;
	if (sentinel && (sv == NULL || sv->bad[0] != '\0' || sv->n == 0)) {
		if (sv != NULL && sv->bad[0] != '\0')
			add(x, s->addr, "failover", RLOCK_CHECK_WARN, 0,
			    RLOCK_VALUE_NULL, NULL, "unknown: %s: the failover "
			    "window cannot be judged; check the sentinel",
			    sv->bad);
		else
			add(x, s->addr, "failover", RLOCK_CHECK_NOTE, 0,
			    RLOCK_VALUE_NULL, NULL, "unknown: no sentinel "
			    "told its timing (SENTINEL MASTER)");
		return;
	}
	if (sentinel) {
		in.detect_ms = sv->down_after;
		in.retry_ms = 2 * sv->failover_timeout;
		in.parallel_syncs = sv->parallel_syncs;
		in.validity = -1;
	} else {
		config_num(x, s, &g, "cluster-node-timeout", 1, TIMEOUT_MAX,
			   15000, &in.detect_ms);
		config_num(x, s, &g, "cluster-replica-validity-factor", 0,
			   INT_MAX, 10, &in.validity);
		/* A failed master's replicas all follow the promoted one. */
		in.parallel_syncs = REPLICAS_MAX;
	}
	/* Redis 7.0 made diskless sync the default. */
	rl_parse_version(s->id.compat, &maj, &mn, &pt);
	config_bool(x, s, &g, "repl-diskless-sync", maj >= 7, &in.diskless);
	config_num(x, s, &g, "repl-diskless-sync-delay", 0, INT_MAX, 5,
		   &in.diskless_delay_s);
	m_known = config_min_replicas(x, s, &g, &m);
	in.min_replicas = m;
	if (g.bad != NULL) {
		add(x, s->addr, "failover", RLOCK_CHECK_WARN, 0,
		    RLOCK_VALUE_NULL, NULL, "unknown: CONFIG GET %s is "
		    "unreadable ('%s'): the failover window cannot be judged; "
		    "check the server", g.bad, g.bad_val);
		return;
	}
	rc = replicas_now(s, &online, &down);
	in.replicas = rc == INFO_OK ? online : -1;
	in.down = rc == INFO_OK ? down : 0;
	/* A cluster promotes only replicas it knows and does not flag as
	 * failing. */
	if (!sentinel && in.replicas >= 0) {
		const char *argv[2] = { "CLUSTER", "NODES" };
		redisReply *r = NULL;

		if (call(x, s->c, 2, argv, &r) == RLOCK_OK &&
		    r->type == REDIS_REPLY_STRING &&
		    rl_decode_cluster_nodes(r->str, r->len, &cr) == 0) {
			known_cluster = 1;
			if (cr.known - cr.failing < in.replicas) {
				in.down += in.replicas - (cr.known -
							  cr.failing);
				in.replicas = cr.known - cr.failing;
			}
		}
		freeReplyObject(r);
	}
	in.dataset_bytes = -1;
	if (rl_info_num(s->info, "used_memory_dataset", 0, LLONG_MAX, &v) ==
	    INFO_OK ||
	    rl_info_num(s->info, "used_memory", 0, LLONG_MAX, &v) == INFO_OK)
		in.dataset_bytes = v;
	rl_failover_plan(&in, &out);
	rl_failover_message(&in, &out, msg, sizeof(msg));
	snprintf(wms, sizeof(wms), "%lld", out.window_ms);
	add(x, s->addr, "failover", out.level, 0, RLOCK_VALUE_NUMBER, wms,
	    "%s%s%s%s%s", msg, !sentinel && !known_cluster &&
	    in.replicas >= 0 ? " CLUSTER NODES unreadable: the replicas "
	    "counted from INFO." : "", g.assumed[0] ? " Unknown, so "
	    "Redis's defaults assumed: " : "", g.assumed,
	    g.assumed[0] ? "." : "");
	figure(x, "window_ms", out.window_ms, 1);
	figure(x, "ttl_ms", out.ttl_s * 1000, 1);
	figure(x, "wait_ms", out.wait_s * 1000, 1);
	figure(x, "detect_ms", in.detect_ms, 1);
	figure(x, "retry_ms", in.retry_ms, sentinel);
	figure(x, "replicas", in.replicas, in.replicas >= 0);
	figure(x, "wait1_window_ms", out.wait1_ms, out.wait1_ms >= 0);
	figure(x, "wait1_ttl_ms", out.wait1_ttl_s * 1000, out.wait1_ms >= 0);
	figure(x, "resync_ms", out.resync_ms, 1);
	figure(x, "dataset_bytes", in.dataset_bytes, in.dataset_bytes >= 0);
	figure(x, "min_replicas", in.min_replicas, m_known);
	figure(x, "sentinel_replicas", sentinel ? sv->replicas : 0, sentinel);
}

/* ---- one server, one node ----------------------------------------------- */

/* Every check of the server behind s->c, which may not be open yet; sv
 * is what its sentinels said (NULL but for a redis-sentinel:// URL). */
static void check_server(struct doc *x, struct server *s, int64_t open_ms,
			 const struct sentinel_view *sv)
{
	char v[32];
	int replica;

	snprintf(s->addr, sizeof(s->addr), "%s", rl_conn_addr(s->c));
	if (!rl_conn_is_up(s->c)) {
		int64_t t0 = rlock_mono_ms();

		if (rl_conn_open(s->c, rlock_mono_ms() +
				 x->rl->copts.connect_timeout_ms) != RLOCK_OK) {
			add(x, s->addr, rl_conn_refusal(s->c) ==
			    CONN_REFUSED_AUTH ? "auth" : "reach",
			    RLOCK_CHECK_FAIL, RLOCK_EUNAVAIL, RLOCK_VALUE_NULL,
			    NULL, "%s", rl_conn_errstr(s->c));
			return;
		}
		open_ms = rlock_mono_ms() - t0;
	}
	snprintf(v, sizeof(v), "%lld", (long long)open_ms);
	add(x, s->addr, "reach", RLOCK_CHECK_OK, 0, RLOCK_VALUE_NUMBER, v,
	    "connected in %lldms", (long long)open_ms);
	check_tls(x, s);
	check_auth(x, s);
	check_rtt(x, s);
	if (!rl_conn_is_up(s->c))
		return;
	learn_server(x, s);
	check_version(x, s);
	check_mode(x, s);
	replica = check_role(x, s);
	if (!replica) {
		check_memory(x, s);
		check_clients(x, s);
		check_rights(x, s);
	}
	check_eviction(x, s);
	check_persistence(x, s);
	check_replication(x, s);
	if (!replica)
		check_failover(x, s, sv);
	free(s->info);
	free(s->info_text);
	s->info = NULL;
	s->info_text = NULL;
}

/* The worst case of the sentinels' timing: the slowest detection and
 * retry, the fewest replicas reconfigured at a time and known. */
static void view_add(struct sentinel_view *sv, const char *addr,
		     const struct sentinel_master *m)
{
	if (sv->bad[0] != '\0')
		return;
	if (m->timing_bad != NULL) {
		if (m->timing_val[0] != '\0')
			snprintf(sv->bad, sizeof(sv->bad), "sentinel %s's "
				 "%s is unreadable ('%s')", addr,
				 m->timing_bad, m->timing_val);
		else
			snprintf(sv->bad, sizeof(sv->bad), "sentinel %s "
				 "does not say its %s", addr, m->timing_bad);
		return;
	}
	if (sv->n == 0 || m->down_after > sv->down_after)
		sv->down_after = m->down_after;
	if (sv->n == 0 || m->failover_timeout > sv->failover_timeout)
		sv->failover_timeout = m->failover_timeout;
	if (sv->n == 0 || m->parallel_syncs < sv->parallel_syncs)
		sv->parallel_syncs = m->parallel_syncs;
	if (sv->n == 0 || m->replicas < sv->replicas)
		sv->replicas = m->replicas;
	sv->n++;
}

/* Each sentinel of a redis-sentinel:// URL: what it says of the master,
 * whether they agree, and how many there are against their quorum. */
static void check_sentinels(struct doc *x, struct rlock_node *n,
			    struct sentinel_view *sv)
{
	const char *argv[3] = { "SENTINEL", "MASTER", n->url.master };
	char first[300] = "", label[300];
	long long quorum = 0, known = 0;
	size_t reached = 0, agree = 0;

	snprintf(label, sizeof(label), "sentinels of '%s'", n->url.master);
	for (size_t i = 0; i < n->sent->url.nhosts; i++) {
		struct rlock_conn *c = rl_conn_new(&n->sent->url, (int)i,
						   &n->sent->opts);
		struct sentinel_master m;
		char at[300], said[200];
		const char *bad;
		redisReply *r = NULL;

		if (c == NULL) {
			x->oom = 1;
			return;
		}
		if (call(x, c, 3, argv, &r) != RLOCK_OK) {
			add(x, rl_conn_addr(c), "sentinel", RLOCK_CHECK_WARN, 0,
			    RLOCK_VALUE_NULL, NULL, "%s", rl_conn_errstr(c));
			rl_conn_free(c);
			continue;
		}
		if (r->type != REDIS_REPLY_ARRAY) {
			snprintf(said, sizeof(said), "%.*s", r->type ==
				 REDIS_REPLY_ERROR ? (int)r->len : 0,
				 r->type == REDIS_REPLY_ERROR ? r->str : "");
			add(x, rl_conn_addr(c), "sentinel", RLOCK_CHECK_WARN, 0,
			    RLOCK_VALUE_NULL, NULL, "does not know master "
			    "'%s'%s%s", n->url.master, said[0] ? ": " : "",
			    said);
			freeReplyObject(r);
			rl_conn_free(c);
			continue;
		}
		if (rl_decode_sentinel_master(r, &m, &bad) != 0) {
			add(x, rl_conn_addr(c), "sentinel", RLOCK_CHECK_WARN, 0,
			    RLOCK_VALUE_NULL, NULL, "unknown: its reply to "
			    "SENTINEL MASTER %s has no readable %s",
			    n->url.master, bad);
			freeReplyObject(r);
			rl_conn_free(c);
			continue;
		}
		snprintf(at, sizeof(at), "%s:%lld", m.ip, m.port);
		reached++;
		if (first[0] == '\0')
			snprintf(first, sizeof(first), "%s", at);
		if (strcmp(first, at) == 0)
			agree++;
		if (m.quorum > quorum)
			quorum = m.quorum;
		if (m.others + 1 > known)
			known = m.others + 1;
		view_add(sv, rl_conn_addr(c), &m);
		add(x, rl_conn_addr(c), "sentinel", RLOCK_CHECK_OK, 0,
		    RLOCK_VALUE_STRING, at, "names %s as master '%s' (quorum "
		    "%lld, %lld sentinel%s)", at, n->url.master, m.quorum,
		    m.others + 1, m.others == 0 ? "" : "s");
		freeReplyObject(r);
		rl_conn_free(c);
	}
	if (reached == 0)
		return;		/* rl_node_open says why, as reach */
	if (agree < reached)
		add(x, label, "sentinels", RLOCK_CHECK_WARN, 0,
		    RLOCK_VALUE_NULL, NULL, "the sentinels reached disagree on "
		    "the master (a failover under way?): run doctor again");
	else if (known < quorum || (long long)reached < quorum)
		add(x, label, "sentinels", RLOCK_CHECK_WARN, 0,
		    RLOCK_VALUE_NUMBER, "0", "%zu reached, %lld known, quorum "
		    "%lld: too few sentinels to agree on a failover; run at "
		    "least %lld", reached, known, quorum,
		    quorum > 3 ? quorum : 3);
	else if (known < 3)
		add(x, label, "sentinels", RLOCK_CHECK_NOTE, 0,
		    RLOCK_VALUE_NUMBER, "0", "%zu reached, %lld known, quorum "
		    "%lld: with fewer than 3 sentinels one lost blocks "
		    "failover", reached, known, quorum);
	else
		add(x, label, "sentinels", RLOCK_CHECK_OK, 0,
		    RLOCK_VALUE_STRING, first, "%zu reached agree on %s; %lld "
		    "known, quorum %lld", reached, first, known, quorum);
}

/* A cluster's health, from the node the URL names. */
static void check_cluster(struct doc *x, struct rlock_node *n)
{
	const char *argv[2] = { "CLUSTER", "INFO" };
	char state[32] = "", addr[300];
	redisReply *r = NULL;
	long long assigned = 0;
	struct info *ci;
	int rs, ra;

	snprintf(addr, sizeof(addr), "%s", rl_conn_addr(n->cmd));
	if (call(x, n->cmd, 2, argv, &r) != RLOCK_OK) {
		add(x, addr, "cluster", RLOCK_CHECK_FAIL, RLOCK_EUNAVAIL,
		    RLOCK_VALUE_NULL, NULL, "%s", rl_conn_errstr(n->cmd));
		return;
	}
	if (r->type != REDIS_REPLY_STRING) {
		add(x, addr, "cluster", RLOCK_CHECK_NOTE, 0, RLOCK_VALUE_NULL,
		    NULL, "unknown: CLUSTER INFO refused");
		freeReplyObject(r);
		return;
	}
	ci = malloc(sizeof(*ci));
	if (ci == NULL) {
		x->oom = 1;
		freeReplyObject(r);
		return;
	}
	rl_info_parse(ci, r->str, r->len);
	rs = rl_info_text(ci, "cluster_state", state, sizeof(state));
	ra = rl_info_num(ci, "cluster_slots_assigned", 0, CLUSTER_SLOTS,
			 &assigned);
	if (rs != INFO_OK || ra != INFO_OK)
		unreadable(x, addr, "cluster", ci, rs != INFO_OK ?
			   "cluster_state" : "cluster_slots_assigned");
	free(ci);
	freeReplyObject(r);
	if (rs != INFO_OK || ra != INFO_OK)
		return;
	if (strcmp(state, "ok") != 0)
		add(x, addr, "cluster", RLOCK_CHECK_FAIL, RLOCK_EUNAVAIL,
		    RLOCK_VALUE_STRING, state, "cluster_state:%s: the cluster "
		    "refuses requests", state);
	else if (assigned < CLUSTER_SLOTS)
		add(x, addr, "cluster", RLOCK_CHECK_WARN, 0,
		    RLOCK_VALUE_NUMBER, "0", "%lld slots served by no master: "
		    "locks whose name hashes there cannot be taken; assign "
		    "them (redis-cli --cluster fix)", CLUSTER_SLOTS - assigned);
	else
		add(x, addr, "cluster", RLOCK_CHECK_OK, 0, RLOCK_VALUE_STRING,
		    state, "cluster_state:ok, all %d slots served",
		    CLUSTER_SLOTS);
}

static void check_node(struct doc *x, struct rlock_node *n)
{
	size_t masters[NODE_MAX_PEERS];
	struct sentinel_view sv;
	struct server s;
	int64_t t0, open_ms;
	int nm;

	memset(&sv, 0, sizeof(sv));
	if (n->url.kind == RLOCK_URL_SENTINEL)
		check_sentinels(x, n, &sv);
	t0 = rlock_mono_ms();
	if (rl_node_open(n, 0) != RLOCK_OK) {
		const char *what = n->url.kind == RLOCK_URL_SENTINEL ?
			n->url.master : rl_conn_addr(n->cmd);

		add(x, what, rl_conn_refusal(n->cmd) == CONN_REFUSED_AUTH ?
		    "auth" : "reach", RLOCK_CHECK_FAIL, RLOCK_EUNAVAIL,
		    RLOCK_VALUE_NULL, NULL, "%s", rl_node_errstr(n));
		return;
	}
	open_ms = rlock_mono_ms() - t0;
	nm = rl_node_masters(n, 0, masters, NODE_MAX_PEERS);
	if (nm < 0) {
		add(x, rl_conn_addr(n->cmd), "cluster", RLOCK_CHECK_FAIL,
		    RLOCK_EUNAVAIL, RLOCK_VALUE_NULL, NULL, "%s",
		    rl_node_errstr(n));
		return;
	}
	if (rl_node_is_cluster(n))
		check_cluster(x, n);
	for (int k = 0; k < nm; k++) {
		memset(&s, 0, sizeof(s));
		s.n = n;
		s.peer = masters[k];
		s.c = n->peer[masters[k]]->cmd;
		check_server(x, &s, open_ms, n->url.kind ==
			     RLOCK_URL_SENTINEL ? &sv : NULL);
	}
}

/*
 * Several masters: every server identified as run and acquire identify
 * them (rl_identify_servers: run_id, else the identity key), so that one
 * server reached by two URLs (127.0.0.1 and 127.0.0.2, a unix socket and
 * a port, rediss and redis) fails here as it is refused there, and a
 * server that cannot be identified, which would not vote, is said.
 */
static void check_distinct(struct doc *x)
{
	struct rlock *rl = x->rl;
	int rc = rl_identify_servers(rl);

	if (rc == RLOCK_ESYS) {
		x->oom = 1;
		return;
	}
	if (rc != RLOCK_OK) {
		add(x, "all", "distinct", RLOCK_CHECK_FAIL, RLOCK_EUSAGE,
		    RLOCK_VALUE_NULL, NULL, "%s", rl->err);
		return;
	}
	for (size_t i = 0; i < rl->nnode; i++) {
		const struct rlock_node *n = &rl->node[i];

		/* One that cannot be reached has its failure already. */
		if (rl_node_identified(n) || n->probe_rc == RLOCK_EUNAVAIL ||
		    !rl_conn_is_up(n->cmd))
			continue;
		add(x, rl_conn_addr(n->cmd), "distinct", RLOCK_CHECK_FAIL,
		    n->probe_rc, RLOCK_VALUE_NULL, NULL, "%s", n->probe_err);
	}
}

int rlock_doctor_run(struct rlock *rl, const char *name,
		     struct rlock_doctor *d)
{
	struct doc x = { rl, d, name, 0 };
	const char *why;

	memset(d, 0, sizeof(*d));
	rl->err[0] = '\0';
	if (name != NULL && rlock_check_name(name, &why) != RLOCK_OK) {
		rl_set_error(rl->err, sizeof(rl->err), "invalid lock name: %s",
			     why);
		return RLOCK_EUSAGE;
	}
	/* Room for ".doctor-XXXXXXXX-K" after it. */
	if (name != NULL && strlen(name) > RLOCK_NAME_MAX - 32) {
		rl_set_error(rl->err, sizeof(rl->err), "invalid lock name: "
			     "longer than %d bytes leaves no room for the "
			     "probe's", RLOCK_NAME_MAX - 32);
		return RLOCK_EUSAGE;
	}
	for (size_t i = 0; i < rl->nnode && !x.oom; i++)
		check_node(&x, &rl->node[i]);
	if (rl->nnode > 1 && !x.oom)
		check_distinct(&x);
	if (x.oom) {
		rlock_doctor_free(d);
		rl_set_error(rl->err, sizeof(rl->err), "out of memory");
		return RLOCK_ESYS;
	}
	return RLOCK_OK;
}
