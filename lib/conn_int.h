/*
 * conn_int.h - the connection's insides, shared by the transport's two
 * implementations: plain sockets (conn.c) and TLS (tls.c).  Nothing above
 * the transport includes it.
 */
#ifndef RLOCK_CONN_INT_H
#define RLOCK_CONN_INT_H

#include "rlock_int.h"

struct tls_conn;

/*
 * What differs between a plain and a TLS connection.  Both move bytes
 * between the connection's buffers and its non-blocking socket; neither
 * ever blocks outside start.
 */
struct transport {
	/* After the socket connected: the TLS handshake, before deadline
	 * (monotonic ms).  Returns RLOCK_OK or fails the connection. */
	int (*start)(struct rlock_conn *c, int64_t deadline);
	/* Write what the socket takes of c->obuf. */
	int (*flush)(struct rlock_conn *c);
	/* Read what the socket has and feed the reply reader. */
	int (*fill)(struct rlock_conn *c);
	/* Whether output is waiting for the socket. */
	int (*out_pending)(const struct rlock_conn *c);
	/* Whether input already read sits inside the transport, where
	 * poll(2) cannot see it. */
	int (*in_buffered)(const struct rlock_conn *c);
	void (*close)(struct rlock_conn *c);
	/* The name the server is verified by, when it is not the URL's
	 * host (--sni), or NULL. */
	const char *(*server_name)(const struct rlock_conn *c);
};

extern const struct transport rlock_plain_transport;
/* The TLS transport registers itself when its first context is made
 * (lib/tls.c); until then a rediss:// connection fails. */
void rl_conn_register_tls(const struct transport *t);

struct rlock_conn {
	const struct rlock_url *url;	/* the caller's, outlives us */
	int hostidx;
	struct rlock_conn_opts opts;
	const struct transport *tp;
	struct tls_conn *tls;		/* TLS state while open */
	char password[512];
	int has_password;
	int fd;
	int up;
	unsigned long opens;		/* times it opened: a new one is a
					 * server to identify again */
	enum conn_refusal refusal;	/* why the last rl_conn_open failed */
	long long replies;		/* read since the connection opened */
	int garbled;			/* closed for a reply that is no RESP2 */
	redisReader *reader;
	struct resp_guard guard;	/* bounds what reaches the reader */
	char *obuf;			/* requests, as RESP */
	size_t olen, ocap;
	char addr[600];
	char peer[600];			/* the address reached (want_peer) */
	char err[512];
};

/* Fail c: put "fmt" (with the address and why) in its errstr, close it and
 * return RLOCK_EUNAVAIL. */
int rl_conn_fail(struct rlock_conn *c, const char *fmt, const char *why);

/* Wait until fd is ready for events or deadline passes.  Returns the
 * revents, 0 on timeout, -1 when cancel_fd became readable. */
int rl_conn_wait_fd(int fd, short events, int64_t deadline, int cancel_fd);

/* Send what the socket takes of the len bytes at buf (MSG_NOSIGNAL) and
 * move the rest to its start.  Returns RLOCK_OK or fails the connection. */
int rl_conn_write(struct rlock_conn *c, char *buf, size_t *len);

/* Feed n bytes of replies to the reader. */
int rl_conn_feed(struct rlock_conn *c, const char *buf, size_t n);

/* The host name a TLS connection verifies: --sni, else the URL's host. */
const char *rl_conn_host(const struct rlock_conn *c);

#endif /* RLOCK_CONN_INT_H */
