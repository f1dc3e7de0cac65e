/*
 * conn.c - the transport: one non-blocking connection to one Redis server
 * over TCP or a unix socket, in plain text or TLS (tls.c).  hiredis only
 * formats commands and parses replies; the socket, the buffers and the
 * timeouts are ours.  What differs between plain and TLS sits behind
 * struct transport; nothing above this file knows which one it talks to.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "conn_int.h"

/* "host:port", "[v6]:port" for an IPv6 address, into buf. */
static void host_port(char *buf, size_t len, const char *host, int port)
{
	int v6 = strchr(host, ':') != NULL;
	char num[24];

	num[0] = ':';
	num[1 + rlock_utoa(num + 1, (unsigned)port)] = '\0';
	rlock_join(buf, len, (const char *[]){ v6 ? "[" : "", host,
					       v6 ? "]" : "", num, NULL });
}

/* TLS, once lib/tls.c registered it (rl_conn_register_tls): the core never
 * names it, as hiredis's core never names its ssl.c. */
static const struct transport *tls_transport;

struct rlock_conn *rl_conn_new(const struct rlock_url *u, int hostidx,
			       const struct rlock_conn_opts *o)
{
	struct rlock_conn *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->url = u;
	c->hostidx = hostidx;
	c->opts = *o;
	/* A rediss:// connection takes TLS when it opens (rl_conn_open). */
	c->tp = &rlock_plain_transport;
	c->fd = -1;
	if (o->password != NULL) {
		rlock_strlcpy(c->password, o->password, sizeof(c->password));
		c->has_password = 1;
	} else if (u->has_password) {
		rlock_strlcpy(c->password, u->password, sizeof(c->password));
		c->has_password = 1;
	}
	if (u->kind == RLOCK_URL_UNIX)
		rlock_strlcpy(c->addr, u->path, sizeof(c->addr));
	else
		host_port(c->addr, sizeof(c->addr), u->hosts[hostidx].host,
			  u->hosts[hostidx].port);
	return c;
}

void rl_conn_close(struct rlock_conn *c)
{
	c->tp->close(c);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->up = 0;
	if (c->reader != NULL)
		redisReaderFree(c->reader);
	c->reader = NULL;
	memset(&c->guard, 0, sizeof(c->guard));
	c->olen = 0;
	c->replies = 0;
}

void rl_conn_free(struct rlock_conn *c)
{
	if (c == NULL)
		return;
	rl_conn_close(c);
	free(c->obuf);
	/* The password may be read back from a core dump otherwise. */
	explicit_bzero(c->password, sizeof(c->password));
	free(c);
}

const char *rl_conn_errstr(const struct rlock_conn *c)
{
	return c->err;
}

const char *rl_conn_addr(const struct rlock_conn *c)
{
	return c->addr;
}

const struct rlock_url *rl_conn_url(const struct rlock_conn *c)
{
	return c->url;
}

enum conn_refusal rl_conn_refusal(const struct rlock_conn *c)
{
	return c->refusal;
}

int rl_conn_garbled(const struct rlock_conn *c)
{
	return c->garbled;
}

int rl_conn_fd(const struct rlock_conn *c)
{
	return c->fd;
}

int rl_conn_is_up(const struct rlock_conn *c)
{
	return c->up;
}

unsigned long rl_conn_opens(const struct rlock_conn *c)
{
	return c->opens;
}

const char *rl_conn_host(const struct rlock_conn *c)
{
	const char *sni = c->tp->server_name != NULL ?
			  c->tp->server_name(c) : NULL;

	return sni != NULL ? sni : c->url->hosts[c->hostidx].host;
}

int rl_conn_fail(struct rlock_conn *c, const char *fmt, const char *why)
{
	rl_set_error(c->err, sizeof(c->err), fmt, c->addr, why);
	rl_conn_close(c);
	return RLOCK_EUNAVAIL;
}

int rl_conn_wait_fd(int fd, short events, int64_t deadline, int cancel_fd)
{
	struct pollfd p[2];
	int n, timeout;

	for (;;) {
		int64_t left = deadline - rlock_mono_ms();

		if (left <= 0)
			return 0;
		timeout = left > 60000 ? 60000 : (int)left;
		p[0].fd = fd;
		p[0].events = events;
		p[0].revents = 0;
		p[1].fd = cancel_fd;
		p[1].events = POLLIN;
		p[1].revents = 0;
		n = poll(p, cancel_fd >= 0 ? 2 : 1, timeout);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return POLLERR;
		if (cancel_fd >= 0 && p[1].revents)
			return -1;
		if (n > 0 && p[0].revents)
			return p[0].revents;
	}
}

/* Start a non-blocking connect to one address and wait for it.  Returns 0
 * or an errno value. */
static int connect_addr(struct rlock_conn *c, const struct sockaddr *sa,
			socklen_t salen, int64_t deadline)
{
	int fd, rc, soerr = 0;
	socklen_t len = sizeof(soerr);

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		return errno;
	rc = connect(fd, sa, salen);
	if (rc < 0 && errno != EINPROGRESS) {
		soerr = errno;
		close(fd);
		return soerr;
	}
	if (rc < 0) {
		rc = rl_conn_wait_fd(fd, POLLOUT, deadline, -1);
		if (rc == 0) {
			close(fd);
			return ETIMEDOUT;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
			soerr = errno;
		if (soerr != 0) {
			close(fd);
			return soerr;
		}
	}
	if (sa->sa_family != AF_UNIX) {
		int one = 1;

		/* Every request is one small write: never let Nagle hold it. */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	}
	c->fd = fd;
	return 0;
}

int rl_conn_ipv4_literal(const char *s, unsigned char addr[4])
{
	for (int i = 0; i < 4; i++) {
		unsigned part = 0;
		const char *start;

		if (i > 0 && *s++ != '.')
			return 0;
		start = s;
		while (*s >= '0' && *s <= '9' && s - start < 3)
			part = part * 10 + (unsigned)(*s++ - '0');
		if (s == start || part > 255 ||
		    (*start == '0' && s - start > 1))
			return 0;
		addr[i] = (unsigned char)part;
	}
	return *s == '\0';
}

static int connect_any(struct rlock_conn *c, int64_t deadline)
{
	const char *host = c->url->hosts[c->hostidx].host;
	int port = c->url->hosts[c->hostidx].port;
	struct addrinfo hints, *res = NULL, *ai;
	struct sockaddr_in sin;
	unsigned char v4[4];
	char num[24];
	int e = 0, gai;

	if (c->url->kind == RLOCK_URL_UNIX) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };

		if (strlen(c->url->path) >= sizeof(sun.sun_path))
			return rl_conn_fail(c, "cannot connect to %s: %s",
				    "socket path too long");
		memcpy(sun.sun_path, c->url->path, strlen(c->url->path) + 1);
		e = connect_addr(c, (struct sockaddr *)&sun, sizeof(sun),
				 deadline);
	} else if (rl_conn_ipv4_literal(host, v4)) {
		memset(&sin, 0, sizeof(sin));
		memcpy(&sin.sin_addr, v4, sizeof(v4));
		sin.sin_family = AF_INET;
		sin.sin_port = htons((uint16_t)port);
		e = connect_addr(c, (struct sockaddr *)&sin, sizeof(sin),
				 deadline);
	} else {
		memset(&hints, 0, sizeof(hints));
		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		/* An IP literal must never cost a DNS query. */
		hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
		num[rlock_utoa(num, (unsigned)port)] = '\0';
		gai = getaddrinfo(host, num, &hints, &res);
		if (gai == EAI_NONAME) {
			hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG;
			gai = getaddrinfo(host, num, &hints, &res);
		}
		if (gai != 0)
			return rl_conn_fail(c, "cannot connect to %s: %s",
					    gai_strerror(gai));
		for (ai = res; ai != NULL; ai = ai->ai_next) {
			e = connect_addr(c, ai->ai_addr, ai->ai_addrlen,
					 deadline);
			if (e == 0 || e == ETIMEDOUT)
				break;
		}
		freeaddrinfo(res);
	}
	if (e != 0) {
		int rc = rl_conn_fail(c, "cannot connect to %s: %s",
				      e == ETIMEDOUT ? "timed out" :
				      strerror(e));

		/* A listen queue full (a herd of TLS handshakes ahead): the
		 * server drops the connect, as one that is far away does;
		 * one refused is not there. */
		if (e == ETIMEDOUT)
			c->refusal = CONN_REFUSED_SLOW;
		return rc;
	}
	return RLOCK_OK;
}

/* Send one command during the handshake and check for an error reply. */
static int handshake_call(struct rlock_conn *c, int64_t deadline, int argc,
			  const char **argv, const char *what,
			  enum conn_refusal why_refused)
{
	redisReply *r = NULL;
	int rc;

	c->up = 1;
	rc = rl_conn_call(c, deadline, -1, argc, argv, NULL, &r);
	if (rc != RLOCK_OK)
		return rc;
	if (r->type == REDIS_REPLY_ERROR) {
		char why[400], text[SERVER_TEXT_MAX + 1];

		snprintf(why, sizeof(why), "%s: %s", what,
			 rl_server_text(text, sizeof(text), r->str, r->len));
		freeReplyObject(r);
		c->refusal = why_refused;
		return rl_conn_fail(c, "%s: %s", why);
	}
	freeReplyObject(r);
	return RLOCK_OK;
}

static int auth(struct rlock_conn *c, int64_t deadline)
{
	const char *argv[3];
	int argc = 0;

	argv[argc++] = "AUTH";
	if (c->url->user[0] != '\0')
		argv[argc++] = c->url->user;
	argv[argc++] = c->password;
	return handshake_call(c, deadline, argc, argv,
			      "authentication failed", CONN_REFUSED_AUTH);
}

/* The value of field name in HELLO 2's flat array of names and values. */
static const redisReply *hello_field(const redisReply *r, const char *name)
{
	for (size_t i = 0; i + 1 < r->elements; i += 2) {
		const redisReply *k = r->element[i];

		if (k->type == REDIS_REPLY_STRING && strcmp(k->str, name) == 0)
			return r->element[i + 1];
	}
	return NULL;
}

/*
 * HELLO 2 [AUTH user pass]: authenticate and learn the role in one round
 * trip, with no right beyond @connection (ROLE and INFO are @dangerous).
 * A replica is refused.  Returns RLOCK_OK, 1 when the server predates
 * HELLO or refuses it to the user (authenticate with AUTH and trust the
 * sentinels), or fails the connection.
 */
static int hello(struct rlock_conn *c, int64_t deadline)
{
	const char *argv[5] = { "HELLO", "2", "AUTH", "default", c->password };
	const redisReply *role;
	redisReply *r = NULL;
	char why[300];
	int rc;

	if (c->url->user[0] != '\0')
		argv[3] = c->url->user;
	c->up = 1;
	rc = rl_conn_call(c, deadline, -1, c->has_password ? 5 : 2, argv, NULL,
			  &r);
	if (rc != RLOCK_OK)
		return rc;
	if (r->type == REDIS_REPLY_ERROR) {
		/* Redis 5 has no HELLO; an ACL user may lack it: AUTH, and
		 * trust the sentinels, as before HELLO. */
		int old = strncmp(r->str, "ERR unknown command", 19) == 0 ||
			  strncmp(r->str, "NOPERM", 6) == 0;
		char text[SERVER_TEXT_MAX + 1];

		snprintf(why, sizeof(why), "authentication failed: %s",
			 rl_server_text(text, sizeof(text), r->str, r->len));
		freeReplyObject(r);
		if (old)
			return 1;
		c->refusal = CONN_REFUSED_AUTH;
		return rl_conn_fail(c, "%s: %s", why);
	}
	role = r->type == REDIS_REPLY_ARRAY ? hello_field(r, "role") : NULL;
	if (role != NULL && role->type == REDIS_REPLY_STRING &&
	    strcmp(role->str, "master") != 0) {
		snprintf(why, sizeof(why), "is a replica (role %s), not the "
			 "master", role->str);
		freeReplyObject(r);
		c->refusal = CONN_REFUSED_REPLICA;
		rl_set_error(c->err, sizeof(c->err), "%s %s", c->addr, why);
		rl_conn_close(c);
		return RLOCK_EUNAVAIL;
	}
	freeReplyObject(r);
	return RLOCK_OK;
}

void rl_read_run_id(const char *info, size_t len, char id[41])
{
	const char *p = memmem(info, len, "\nrun_id:", 8);
	size_t n = 0;

	id[0] = '\0';
	if (p == NULL)
		return;
	p += 8;
	while (n < 40 && p + n < info + len && isxdigit((unsigned char)p[n]))
		n++;
	if (n == 40 && (p + n == info + len || p[n] == '\r' || p[n] == '\n')) {
		memcpy(id, p, 40);
		id[40] = '\0';
	}
}

/* The address the socket reached, for telling two URLs of one server
 * apart (several masters): no request, a look at the socket. */
static void note_peer(struct rlock_conn *c)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[INET6_ADDRSTRLEN], port[8];

	c->peer[0] = '\0';
	if (c->url->kind == RLOCK_URL_UNIX)
		rlock_join(c->peer, sizeof(c->peer),
			   (const char *[]){ "unix:", c->url->path, NULL });
	else if (getpeername(c->fd, (struct sockaddr *)&ss, &sl) == 0 &&
		 getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host),
			     port, sizeof(port),
			     NI_NUMERICHOST | NI_NUMERICSERV) == 0)
		rlock_join(c->peer, sizeof(c->peer),
			   (const char *[]){ host, " port ", port, NULL });
}

const char *rl_conn_peer(const struct rlock_conn *c)
{
	return c->peer;
}

int rl_conn_open(struct rlock_conn *c, int64_t deadline)
{
	int64_t io_deadline;
	int rc;

	rl_conn_close(c);
	c->refusal = CONN_REFUSED_NOT;
	c->garbled = 0;
	/* A rediss:// URL with no TLS transport registered (no TLS context
	 * was made for it) fails: it never falls back to plain text. */
	if (c->url->tls && tls_transport == NULL)
		return rl_conn_fail(c, "%s: %s",
				    "TLS is not set up for this connection");
	if (c->url->tls)
		c->tp = tls_transport;
	rc = connect_any(c, deadline);
	if (rc == RLOCK_OK && c->tp->start != NULL)
		rc = c->tp->start(c, deadline);
	if (rc != RLOCK_OK)
		return rc;
	c->reader = redisReaderCreate();
	if (c->reader == NULL)
		return rl_conn_fail(c, "%s: %s", "out of memory");
	io_deadline = rlock_mono_ms() + c->opts.io_timeout_ms;
	rc = c->opts.want_master ? hello(c, io_deadline) : 1;
	if (rc == 1 && c->has_password)
		rc = auth(c, io_deadline);
	if (rc != RLOCK_OK && rc != 1)
		return rc;
	if (c->url->db != 0) {
		char db[16];
		const char *argv[2] = { "SELECT", db };

		snprintf(db, sizeof(db), "%d", c->url->db);
		rc = handshake_call(c, io_deadline, 2, argv, "cannot select db",
				    CONN_REFUSED_OTHER);
		if (rc != RLOCK_OK)
			return rc;
	}
	if (c->opts.want_peer)
		note_peer(c);
	c->up = 1;
	c->opens++;
	return RLOCK_OK;
}

/* Room for n more bytes of output. */
static int out_room(struct rlock_conn *c, size_t n)
{
	size_t cap;
	char *nb;

	if (c->olen + n <= c->ocap)
		return RLOCK_OK;
	cap = (c->olen + n) * 2;
	nb = realloc(c->obuf, cap);
	if (nb == NULL) {
		rl_set_error(c->err, sizeof(c->err), "%s: out of memory",
			     c->addr);
		return RLOCK_ESYS;
	}
	c->obuf = nb;
	c->ocap = cap;
	return RLOCK_OK;
}

#define SEND_ARGS 64			/* lengths kept on the stack */

int rl_conn_send(struct rlock_conn *c, int argc, const char *const *argv,
		 const size_t *lens)
{
	size_t own[SEND_ARGS], *len = own;
	int rc;

	/* The request goes straight into the output buffer, which stays
	 * allocated: no formatting library, no allocation per request. */
	if (lens == NULL) {
		if (argc > SEND_ARGS &&
		    (len = malloc((size_t)argc * sizeof(*len))) == NULL) {
			rl_set_error(c->err, sizeof(c->err), "%s: out of memory",
				     c->addr);
			return RLOCK_ESYS;
		}
		for (int i = 0; i < argc; i++)
			len[i] = strlen(argv[i]);
		lens = len;
	}
	rc = out_room(c, rl_resp_size(argc, lens));
	if (rc == RLOCK_OK)
		c->olen += rl_resp_write(c->obuf + c->olen, argc, argv, lens);
	if (len != own)
		free(len);
	if (rc != RLOCK_OK)
		return rc;
	/* Write at once: a request almost always fits the socket buffer,
	 * and a poll for POLLOUT first would cost a system call each time.
	 * A failure closes the connection; the caller sees it as down. */
	if (c->fd >= 0)
		rl_conn_on_ready(c, POLLOUT);
	return RLOCK_OK;
}

short rl_conn_events(const struct rlock_conn *c)
{
	return POLLIN | (c->tp->out_pending(c) ? POLLOUT : 0);
}

int rl_conn_buffered(const struct rlock_conn *c)
{
	return c->fd >= 0 && c->tp->in_buffered(c);
}

int rl_conn_feed(struct rlock_conn *c, const char *buf, size_t n)
{
	const char *why = rl_resp_guard_feed(&c->guard, buf, n);

	if (why != NULL) {
		char msg[200];

		snprintf(msg, sizeof(msg), "protocol error: %s", why);
		c->garbled = 1;
		return rl_conn_fail(c, "%s: %s", msg);
	}
	if (redisReaderFeed(c->reader, buf, n) != 0)
		return rl_conn_fail(c, "%s: %s", "out of memory");
	return RLOCK_OK;
}

int rl_conn_on_ready(struct rlock_conn *c, short revents)
{
	int rc;

	if (c->fd < 0)
		return rl_conn_fail(c, "%s: %s", "not connected");
	if ((revents & POLLOUT) && c->tp->out_pending(c)) {
		rc = c->tp->flush(c);
		if (rc != RLOCK_OK)
			return rc;
	}
	if (revents & (POLLIN | POLLERR | POLLHUP))
		return c->tp->fill(c);
	return RLOCK_OK;
}

/* ---- plain sockets ---------------------------------------------------- */

int rl_conn_write(struct rlock_conn *c, char *buf, size_t *len)
{
	ssize_t n;

	if (*len == 0)
		return RLOCK_OK;
	n = send(c->fd, buf, *len, MSG_NOSIGNAL);
	if (n < 0 && errno != EAGAIN && errno != EINTR)
		return rl_conn_fail(c, "%s: connection lost: %s", strerror(errno));
	if (n > 0) {
		memmove(buf, buf + n, *len - (size_t)n);
		*len -= (size_t)n;
	}
	return RLOCK_OK;
}

static int plain_flush(struct rlock_conn *c)
{
	return rl_conn_write(c, c->obuf, &c->olen);
}

static int plain_fill(struct rlock_conn *c)
{
	char buf[16384];
	ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
	/* A TLS port drops a plain client at its first request without a
	 * word: the one hint such a client can get. */
	const char *hint = c->replies > 0 || c->url->kind == RLOCK_URL_UNIX ?
		"" : c->url->kind == RLOCK_URL_SENTINEL ?
		" (does it require TLS? use rediss-sentinel://)" :
		" (does it require TLS? use rediss://)";
	char why[200];

	if (n == 0) {
		snprintf(why, sizeof(why), "connection closed by server%s",
			 hint);
		return rl_conn_fail(c, "%s: %s", why);
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		snprintf(why, sizeof(why), "connection lost: %s%s",
			 strerror(errno), hint);
		return rl_conn_fail(c, "%s: %s", why);
	}
	if (n > 0)
		return rl_conn_feed(c, buf, (size_t)n);
	return RLOCK_OK;
}

static int plain_out_pending(const struct rlock_conn *c)
{
	return c->olen > 0;
}

static int plain_in_buffered(const struct rlock_conn *c)
{
	(void)c;
	return 0;
}

static void plain_close(struct rlock_conn *c)
{
	(void)c;
}

const struct transport rlock_plain_transport = {
	.start = NULL,
	.flush = plain_flush,
	.fill = plain_fill,
	.out_pending = plain_out_pending,
	.in_buffered = plain_in_buffered,
	.close = plain_close,
	.server_name = NULL,
};

void rl_conn_register_tls(const struct transport *t)
{
	tls_transport = t;
}

int rl_conn_take_reply(struct rlock_conn *c, redisReply **r)
{
	void *reply = NULL;

	*r = NULL;
	if (c->reader == NULL)
		return 0;
	if (redisReaderGetReply(c->reader, &reply) != 0) {
		static const char pfx[] = "Protocol error, ";
		const char *e = c->reader->errstr;
		char why[200];

		/* A byte that starts no reply at all: the peer speaks
		 * something else (an HTTP server answers '<' or "HTTP/1.1"),
		 * and the user has the wrong port, not a broken Redis. */
		if (strstr(e, "as reply type byte") != NULL) {
			if (strncmp(e, pfx, sizeof(pfx) - 1) == 0)
				e += sizeof(pfx) - 1;
			snprintf(why, sizeof(why), "protocol error: %s; is "
				 "this a Redis server?", e);
		} else {
			snprintf(why, sizeof(why), "protocol error: %s", e);
		}
		c->garbled = 1;
		rl_conn_fail(c, "%s: %s", why);
		return -1;
	}
	if (reply == NULL)
		return 0;
	c->replies++;
	*r = reply;
	return 1;
}

int rl_conn_wait_reply(struct rlock_conn *c, int64_t deadline, int cancel_fd,
		       redisReply **r)
{
	int rc, ev;

	for (;;) {
		rc = rl_conn_take_reply(c, r);
		if (rc == 1)
			return RLOCK_OK;
		if (rc < 0 || c->fd < 0)
			return RLOCK_EUNAVAIL;
		if (rl_conn_buffered(c)) {
			rc = rl_conn_on_ready(c, POLLIN);
			if (rc != RLOCK_OK)
				return rc;
			continue;
		}
		ev = rl_conn_wait_fd(c->fd, rl_conn_events(c), deadline, cancel_fd);
		if (ev < 0) {
			rl_set_error(c->err, sizeof(c->err), "%s: canceled",
				     c->addr);
			return RLOCK_CANCELED;
		}
		if (ev == 0)
			return RLOCK_TIMEDOUT;
		rc = rl_conn_on_ready(c, (short)ev);
		if (rc != RLOCK_OK)
			return rc;
	}
}

int rl_conn_timed_out(struct rlock_conn *c)
{
	char why[64], tb[32];

	int rc;

	/* A late reply would answer the next request: start over. */
	snprintf(why, sizeof(why), "no reply within %s",
		 rlock_fmt_ms(c->opts.io_timeout_ms, tb, sizeof(tb)));
	rc = rl_conn_fail(c, "%s: %s", why);
	c->refusal = CONN_REFUSED_SLOW;	/* in a handshake: too busy */
	return rc;
}

int rl_conn_call(struct rlock_conn *c, int64_t deadline, int cancel_fd,
		 int argc, const char **argv, const size_t *lens,
		 redisReply **r)
{
	int rc;

	*r = NULL;
	if (!c->up) {
		int64_t cd = rlock_mono_ms() + c->opts.connect_timeout_ms;

		rc = rl_conn_open(c, cd < deadline ? cd : deadline);
		if (rc != RLOCK_OK)
			return rc;
	}
	rc = rl_conn_send(c, argc, argv, lens);
	if (rc != RLOCK_OK)
		return rc;
	rc = rl_conn_wait_reply(c, deadline, cancel_fd, r);
	if (rc == RLOCK_TIMEDOUT)
		return rl_conn_timed_out(c);
	if (rc == RLOCK_CANCELED)
		rl_conn_close(c);
	return rc;
}
