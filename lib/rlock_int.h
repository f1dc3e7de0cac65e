/*
 * rlock_int.h - private structures of librlock, shared by its modules and
 * by the unit tests.  Nothing outside lib/ and tests/unit/ includes it.
 */
#ifndef RLOCK_INT_H
#define RLOCK_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "rlock.h"

/* ---- URLs --------------------------------------------------------- */

enum rlock_url_kind {
	RLOCK_URL_TCP,		/* redis:// */
	RLOCK_URL_TLS,		/* rediss:// */
	RLOCK_URL_UNIX,		/* unix:// */
	RLOCK_URL_SENTINEL,	/* redis-sentinel://, rediss-sentinel:// */
};

#define RLOCK_URL_MAX_HOSTS 16

struct rlock_url {
	enum rlock_url_kind kind;
	int tls;		/* rediss://, rediss-sentinel:// */
	char user[256];		/* empty: no ACL user */
	char password[512];	/* empty: no password */
	int has_password;
	int db;			/* 0 unless given */
	char path[512];		/* unix socket path */
	size_t nhosts;		/* 1 except for sentinel lists */
	struct {
		char host[256];	/* IP literal or name; IPv6 without brackets */
		int port;
	} hosts[RLOCK_URL_MAX_HOSTS];
	char master[256];	/* sentinel master name (after '#') */
};

/*
 * Parse one URL of the forms in docs/design.md#urls.  User and password
 * are percent-decoded.  Default port 6379 (26379 for sentinels), db 0.
 * Returns 0, or -1 with a short reason (static string) in *why.
 */
int rl_url_parse(const char *s, struct rlock_url *u, const char **why);

/* ---- transport ------------------------------------------------------ */

/*
 * One connection to one server, owned by one thread.  Non-blocking: many
 * connections can be driven from one poll loop (rl_conn_events/rl_conn_on_ready)
 * or one can be used synchronously with rl_conn_call.
 */
struct rlock_conn;

struct tls_ctx;

struct rlock_conn_opts {
	int64_t connect_timeout_ms;
	int64_t io_timeout_ms;
	const char *password;		/* beats the URL's when non-NULL */
	struct tls_ctx *tls;		/* for rediss:// URLs */
	int want_master;		/* HELLO: refuse a replica (Sentinel) */
	int want_peer;			/* note the address reached
					 * (rl_conn_peer): several masters */
};

/* A connection to host hostidx of u, not yet opened.  u is not copied:
 * it must outlive the connection. */
struct rlock_conn *rl_conn_new(const struct rlock_url *u, int hostidx,
			       const struct rlock_conn_opts *o);
void rl_conn_free(struct rlock_conn *c);
const char *rl_conn_errstr(const struct rlock_conn *c);
const char *rl_conn_addr(const struct rlock_conn *c);	/* "host:port" */
/* With want_peer, once open: the address the socket reached ("127.0.0.1
 * port 6379", "unix:/path"), "" when unknown.  Two connections that agree
 * on it reach one server. */
const char *rl_conn_peer(const struct rlock_conn *c);

/* The run_id line of INFO server's text (len bytes at info) into id: 40
 * hex digits, or "" when there is none such. */
void rl_read_run_id(const char *info, size_t len, char id[41]);
const struct rlock_url *rl_conn_url(const struct rlock_conn *c);
int rl_conn_fd(const struct rlock_conn *c);
int rl_conn_is_up(const struct rlock_conn *c);
/* How many times c opened: another count is another connection, which
 * may reach another server. */
unsigned long rl_conn_opens(const struct rlock_conn *c);
void rl_conn_close(struct rlock_conn *c);

/* Connect, authenticate and select the db, all before deadline (monotonic
 * ms).  With want_master, HELLO authenticates and a replica is refused.
 * Returns RLOCK_OK or RLOCK_EUNAVAIL with the reason in errstr. */
int rl_conn_open(struct rlock_conn *c, int64_t deadline);

/*
 * Whether s is an IPv4 address as URLs carry it, four decimal parts with
 * no leading zero ("127.0.0.1"), which every parser reads alike; addr gets
 * its bytes in network order.  Read here rather than by getaddrinfo or
 * inet_pton: they sit in pages of libc that a run to such an address would
 * otherwise map for this alone, 64 KiB of its peak RSS
 * (bench/RESULTS-perf.md).  Anything else is getaddrinfo's.
 */
int rl_conn_ipv4_literal(const char *s, unsigned char addr[4]);

/*
 * The name of uid in the passwd file at path (/etc/passwd), read with
 * read(2) and no stdio: what NSS's "files" source answers, without NSS,
 * whose configuration, stdio and code cost a run about 300 KB of peak RSS
 * (bench/RESULTS-perf.md).  Returns 0 with the name in name, or -1: not
 * there, no room for it, a line longer than 4 KiB before it, or NIS's
 * "+"/"-" lines (the compat source), which getpwuid must read.
 */
int rl_passwd_name(const char *path, unsigned long uid, char *name, size_t len);

/* Why the last rl_conn_open failed, when it got as far as the server. */
enum conn_refusal {
	CONN_REFUSED_NOT,		/* no: connect, TLS or I/O */
	CONN_REFUSED_AUTH,		/* authentication required or failed */
	CONN_REFUSED_REPLICA,		/* want_master, and it is a replica */
	CONN_REFUSED_OTHER,		/* an error reply to the handshake */
	CONN_REFUSED_SLOW,		/* no connection or no answer to the
					 * handshake (TLS, HELLO, AUTH) in
					 * time: a server too busy, or far */
};
enum conn_refusal rl_conn_refusal(const struct rlock_conn *c);

/*
 * Whether c was last closed for a protocol error: a reply that is no RESP2
 * (a RESP3 type byte, a bad length, past the bounds).  Such a server is
 * not asked again on a new connection as after a drop: the request that
 * was out is undone as one that may have been granted.  Returns 1 or 0.
 */
int rl_conn_garbled(const struct rlock_conn *c);

/* ---- RESP (resp.c) ---- */

/* The bytes of a request of argc arguments of lengths lens, as RESP2, and
 * the request written at dst (which has that room).  rl_resp_write returns
 * what it wrote. */
size_t rl_resp_size(int argc, const size_t *lens);
size_t rl_resp_write(char *dst, int argc, const char *const *argv,
		     const size_t *lens);

/*
 * The bounds of one reply, above the largest rlock asks for (log -n
 * 100000: 100,000 entries of about twenty fields, some 220 MB as hiredis
 * holds them): at most RLOCK_REPLY_MAX_ELEMENTS elements in one array, a
 * string or a status line of at most RLOCK_REPLY_MAX_BULK bytes, and at
 * most RLOCK_REPLY_MAX_BYTES in all, counting each element 64 bytes and
 * each declared array slot 8 on top of its bytes on the wire.
 */
#define RLOCK_REPLY_MAX_ELEMENTS 1048576
#define RLOCK_REPLY_MAX_ELEMENTS_TEXT "1048576"
#define RLOCK_REPLY_MAX_BULK (4LL << 20)
#define RLOCK_REPLY_MAX_BULK_TEXT "4 MiB"
#define RLOCK_REPLY_MAX_BYTES (512ULL << 20)
#define RLOCK_REPLY_MAX_BYTES_TEXT "512 MiB"
#define STR_BOUND(x) x##_TEXT

/* hiredis 0.14 reads at most seven levels of arrays: so does the guard. */
#define RESP_GUARD_DEPTH 7

enum resp_guard_state { GUARD_TYPE, GUARD_LINE, GUARD_BULK };

/* Where the guard is in a stream of replies (zeroed: at the start). */
struct resp_guard {
	enum resp_guard_state state;
	char type;			/* of the element being read */
	char line[24];			/* its header line, as far as it fits */
	size_t linelen;
	int line_over;			/* the line did not fit */
	long long line_total;		/* the line's bytes so far */
	long long bulk_left;		/* a string's bytes and CRLF to come */
	unsigned depth;
	long long left[RESP_GUARD_DEPTH]; /* elements to come, per level */
	unsigned long long cost;	/* of the reply being read */
	const char *failed;		/* why it refused, for good */
	int blind;			/* past a byte hiredis refuses */
};

/*
 * Read n more bytes of the stream: returns NULL while the replies stay
 * within the bounds above, else why not (a static string, "an array of
 * more than ..."), for good.  It checks the headers and lengths only;
 * hiredis reads the replies themselves once the guard let them pass, and
 * refuses what is not RESP (an unknown type byte), which the guard then
 * leaves to it.
 */
const char *rl_resp_guard_feed(struct resp_guard *g, const char *buf, size_t n);

/* Queue one command (lens NULL: the arguments are strings).  Returns
 * RLOCK_OK or RLOCK_ESYS. */
int rl_conn_send(struct rlock_conn *c, int argc, const char *const *argv,
		 const size_t *lens);

/* Poll events the connection wants now (POLLIN, plus POLLOUT while output
 * is pending).  Callers poll for these, never for a fixed POLLIN. */
short rl_conn_events(const struct rlock_conn *c);

/* Whether rl_conn_on_ready should be called without waiting for poll: input
 * already read sits inside the transport (TLS), where poll cannot see
 * it. */
int rl_conn_buffered(const struct rlock_conn *c);

/* Do the I/O that revents allows.  Returns RLOCK_OK or RLOCK_EUNAVAIL when
 * the connection failed (it is then closed). */
int rl_conn_on_ready(struct rlock_conn *c, short revents);

/* Pop one parsed reply.  Returns 1 with *r set, 0 when none is ready,
 * -1 on a protocol error (connection closed). */
int rl_conn_take_reply(struct rlock_conn *c, redisReply **r);

/* Wait for the next reply (or pushed message) before deadline.  Returns
 * RLOCK_OK with *r set, RLOCK_TIMEDOUT (the connection stays usable),
 * RLOCK_CANCELED, or RLOCK_EUNAVAIL. */
int rl_conn_wait_reply(struct rlock_conn *c, int64_t deadline, int cancel_fd,
		       redisReply **r);

/* A request went unanswered for the I/O timeout: close the connection
 * (a late reply would answer the next request) and say so in errstr.
 * Returns RLOCK_EUNAVAIL. */
int rl_conn_timed_out(struct rlock_conn *c);

/* Send one command and wait for its reply before deadline.  Opens the
 * connection if needed.  Returns RLOCK_OK with *r set (may be an error
 * reply), or RLOCK_EUNAVAIL / RLOCK_CANCELED with the reason in errstr. */
int rl_conn_call(struct rlock_conn *c, int64_t deadline, int cancel_fd,
		 int argc, const char **argv, const size_t *lens,
		 redisReply **r);

/* A result code private to lib/: a wait ran out of time. */
#define RLOCK_TIMEDOUT 100

/* ---- TLS ------------------------------------------------------------ */

/* What a TLS connection negotiated, for doctor. */
struct conn_tls_info {
	char protocol[16];		/* "TLSv1.3" */
	int verified;			/* chain and name were checked */
	int has_expiry;
	int days_left;			/* until the server's certificate expires */
};

/* Fill info for an open TLS connection and return 1; 0 for a plain one. */
int rl_conn_tls_info(const struct rlock_conn *c, struct conn_tls_info *info);

/* What a TLS client context is made of: the rlock_config's tls_ fields. */
struct tls_opts {
	const char *cacert, *cacertdir, *cert, *key, *sni;
	int insecure;
};

/*
 * A client context for opts, shared by every handle of the process that
 * asks for the same opts (run's renewal thread): OpenSSL is loaded
 * (dlopen of libssl.so.3) and the trust store read only the first time.
 * Returns RLOCK_OK with *out set, RLOCK_EUNAVAIL (no libssl, a file that
 * OpenSSL refuses, a key that does not match its certificate) or
 * RLOCK_ESYS, with a one-line reason in err.
 */
int rl_tls_ctx_get(const struct tls_opts *opts, struct tls_ctx **out, char *err,
		   size_t errlen);

/* Drop a reference taken by rl_tls_ctx_get.  Accepts NULL. */
void rl_tls_ctx_put(struct tls_ctx *t);


/* SHA-1 of data as 40 lower-case hex digits and a NUL (EVALSHA names). */
void rl_sha1_hex(const void *data, size_t len, char out[41]);

/* ---- helpers ------------------------------------------------------- */

void rl_set_error(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The most of a server's error text a message shows. */
#define SERVER_TEXT_MAX 300

/*
 * A server's error text (n bytes at s) for a message, into buf (len
 * bytes, terminated): whole when it has at most SERVER_TEXT_MAX bytes and
 * fits, else cut before a space (or, with no space near the cut, before a
 * UTF-8 character) and "..." put after it: never inside a word the reader
 * would take for the whole.  The bytes are kept as they came: the CLI
 * escapes what it prints.  Returns buf.
 */
char *rl_server_text(char *buf, size_t len, const char *s, size_t n);

#endif /* RLOCK_INT_H */
