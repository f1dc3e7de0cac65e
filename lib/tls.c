/*
 * tls.c - the TLS transport, over memory BIOs: OpenSSL never touches the
 * socket.  It encrypts what conn.c queues and decrypts what the socket
 * brings, and conn.c's own non-blocking send/recv move the ciphertext.
 * So there is no SIGPIPE (send has MSG_NOSIGNAL), no WANT_WRITE to track,
 * and no plaintext left inside OpenSSL where poll cannot see it: every
 * read drains SSL_read until it wants more.
 *
 * libssl is loaded with dlopen on the first rediss:// URL, not linked:
 * mapping and relocating it and libcrypto at every start would cost a
 * plain `rlock run` about a third of its time.  The functions are typed
 * from OpenSSL's own headers, so a wrong signature does not compile.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "conn_int.h"

/* ---- loading libssl ------------------------------------------------- */

#define OSSL_FUNCS(X)                                                      \
	X(OPENSSL_init_ssl) X(TLS_client_method) X(SSL_CTX_new)            \
	X(SSL_CTX_free) X(SSL_CTX_set_options) X(SSL_CTX_ctrl)             \
	X(SSL_CTX_set_verify) X(SSL_CTX_load_verify_locations)             \
	X(SSL_CTX_load_verify_dir) X(SSL_CTX_set_default_verify_paths)     \
	X(SSL_CTX_use_certificate_chain_file)                              \
	X(SSL_CTX_use_PrivateKey_file) X(SSL_CTX_check_private_key) X(SSL_CTX_set_default_passwd_cb) X(SSL_CTX_sess_set_new_cb) X(SSL_set_session) X(SSL_SESSION_free) X(SSL_set_ex_data) X(SSL_get_ex_data)        \
	X(SSL_new) X(SSL_free) X(SSL_set_bio) X(SSL_set_connect_state)     \
	X(SSL_ctrl) X(SSL_do_handshake) X(SSL_read) X(SSL_write)           \
	X(SSL_get_error) X(SSL_get_verify_result) X(SSL_pending)           \
	X(SSL_get0_peer_certificate) X(BIO_new) X(BIO_free) X(BIO_s_mem) X(BIO_read)   \
	X(BIO_write) X(BIO_ctrl_pending) X(ERR_get_error)                  \
	X(ERR_peek_error) X(ERR_clear_error) X(ERR_reason_error_string)    \
	X(X509_verify_cert_error_string) X(X509_check_host)                \
	X(X509_check_ip_asc) X(X509_get_ext_d2i) X(OPENSSL_sk_num)         \
	X(OPENSSL_sk_value) X(GENERAL_NAMES_free) X(ASN1_STRING_get0_data) \
	X(ASN1_STRING_length) X(X509_get_default_cert_dir)                 \
	X(X509_get_default_cert_dir_env) X(X509_get_default_cert_file_env) \
	X(SSL_get_version) X(X509_get0_notAfter) X(ASN1_TIME_diff)

#define OSSL_MEMBER(f) __typeof__(f) *f;
static struct {
	OSSL_FUNCS(OSSL_MEMBER)
} ossl;
#undef OSSL_MEMBER

static pthread_mutex_t tls_lock = PTHREAD_MUTEX_INITIALIZER;
static void *libssl;

/* Load libssl and its functions once.  Called with tls_lock held. */
static int load_openssl(char *err, size_t errlen)
{
	void *h;

	if (libssl != NULL)
		return RLOCK_OK;
	h = dlopen(RLOCK_TLS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		rl_set_error(err, errlen, "TLS: cannot load " RLOCK_TLS_LIBRARY
			     " (%s): install libssl3", dlerror());
		return RLOCK_EUNAVAIL;
	}
#define OSSL_LOAD(f)                                                       \
	if ((*(void **)&ossl.f = dlsym(h, #f)) == NULL) {                  \
		rl_set_error(err, errlen, "TLS: " RLOCK_TLS_LIBRARY        \
			     " has no %s: OpenSSL 3 is needed", #f);       \
		dlclose(h);                                                \
		return RLOCK_EUNAVAIL;                                     \
	}
	OSSL_FUNCS(OSSL_LOAD)
#undef OSSL_LOAD
	/* No atexit cleanup: a forked child that execs must not run it. */
	if (ossl.OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT, NULL) != 1) {
		rl_set_error(err, errlen, "TLS: cannot initialise OpenSSL");
		dlclose(h);
		return RLOCK_EUNAVAIL;
	}
	libssl = h;
	return RLOCK_OK;
}

/* The reason of OpenSSL's first queued error, never "(null)". */
static const char *ossl_reason(void)
{
	const char *s = ossl.ERR_reason_error_string(ossl.ERR_peek_error());

	return s != NULL ? s : "unknown error";
}

/* ---- the client context --------------------------------------------- */

#define TLS_SESSIONS 16

struct tls_ctx {
	SSL_CTX *ctx;
	int refs;
	int insecure;
	char *sni;
	char *cacert, *cacertdir, *cert, *key;	/* what it was made of */
	/* The last session of each server (under tls_lock), so that the
	 * next connection (acquire --renew's renewer, a waiter's after a
	 * drop)
	 * resumes it instead of paying a full handshake. */
	struct {
		char addr[600];		/* as rl_conn_addr */
		SSL_SESSION *sess;
	} sessions[TLS_SESSIONS];
};

/* The one context shared by the handles of this process. */
static struct tls_ctx *shared;

static int same(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

static int ctx_matches(const struct tls_ctx *t, const struct tls_opts *o)
{
	return same(t->cacert, o->cacert) && same(t->cacertdir, o->cacertdir) &&
	       same(t->cert, o->cert) && same(t->key, o->key) &&
	       same(t->sni, o->sni) && t->insecure == o->insecure;
}

static void ctx_free(struct tls_ctx *t)
{
	if (t == NULL)
		return;
	for (int i = 0; i < TLS_SESSIONS; i++) {
		if (t->sessions[i].sess != NULL)
			ossl.SSL_SESSION_free(t->sessions[i].sess);
	}
	if (t->ctx != NULL)
		ossl.SSL_CTX_free(t->ctx);
	free(t->sni);
	free(t->cacert);
	free(t->cacertdir);
	free(t->cert);
	free(t->key);
	free(t);
}

/* Whether dir holds a hashed certificate ("*.0", as c_rehash makes). */
static int has_hashed_certs(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	if (d == NULL)
		return 0;
	while (!found && (e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);

		found = n > 2 && strcmp(e->d_name + n - 2, ".0") == 0;
	}
	closedir(d);
	return found;
}

/*
 * Where trusted CAs come from.  Without --cacert or --cacertdir, the
 * system's hashed directory is read lazily, one certificate per lookup:
 * OpenSSL 3 parses the whole bundle file eagerly, which costs tens of
 * milliseconds at every start.  SSL_CERT_DIR (lazy too) and SSL_CERT_FILE
 * are honoured as OpenSSL does, and a system with no hashed directory
 * falls back to the bundle.
 */
static int load_trust(struct tls_ctx *t, const struct tls_opts *o, char *err,
		      size_t errlen)
{
	const char *env, *dir;

	if (o->cacert != NULL || o->cacertdir != NULL) {
		if (ossl.SSL_CTX_load_verify_locations(t->ctx, o->cacert,
						       o->cacertdir) != 1) {
			rl_set_error(err, errlen, "TLS: cannot load %s %s: %s",
				     o->cacert != NULL ? "--cacert" :
				     "--cacertdir", o->cacert != NULL ?
				     o->cacert : o->cacertdir, ossl_reason());
			return RLOCK_EUNAVAIL;
		}
		return RLOCK_OK;
	}
	/* SSL_CERT_DIR may list several directories, as OpenSSL allows. */
	env = getenv(ossl.X509_get_default_cert_dir_env());
	dir = env != NULL && *env != '\0' ? env :
		ossl.X509_get_default_cert_dir();
	if (getenv(ossl.X509_get_default_cert_file_env()) == NULL &&
	    (dir == env || has_hashed_certs(dir))) {
		if (ossl.SSL_CTX_load_verify_dir(t->ctx, dir) == 1)
			return RLOCK_OK;
	}
	if (ossl.SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
		rl_set_error(err, errlen, "TLS: cannot load the system's "
			     "trusted certificates: %s", ossl_reason());
		return RLOCK_EUNAVAIL;
	}
	return RLOCK_OK;
}

/* Set when OpenSSL asked for a passphrase (under tls_lock). */
static int asked_passphrase;

/* An encrypted key: say so instead of letting OpenSSL prompt on the
 * terminal, which cron does not have. */
static int no_passphrase(char *buf, int size, int rwflag, void *arg)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)arg;
	asked_passphrase = 1;
	return -1;
}

static int load_client_cert(struct tls_ctx *t, const struct tls_opts *o,
			    char *err, size_t errlen)
{
	const char *key = o->key != NULL ? o->key : o->cert;

	if (o->cert == NULL)
		return RLOCK_OK;
	asked_passphrase = 0;
	ossl.SSL_CTX_set_default_passwd_cb(t->ctx, no_passphrase);
	if (ossl.SSL_CTX_use_certificate_chain_file(t->ctx, o->cert) != 1) {
		rl_set_error(err, errlen, "TLS: cannot load --cert %s: %s",
			     o->cert, ossl_reason());
		return RLOCK_EUNAVAIL;
	}
	if (ossl.SSL_CTX_use_PrivateKey_file(t->ctx, key, SSL_FILETYPE_PEM) !=
	    1) {
		if (asked_passphrase)
			rl_set_error(err, errlen, "TLS: %s %s is encrypted and "
				     "rlock reads no passphrase (decrypt it with "
				     "openssl pkey)",
				     o->key != NULL ? "--key" : "--cert", key);
		else if (ERR_GET_REASON(ossl.ERR_peek_error()) ==
		    X509_R_KEY_VALUES_MISMATCH)
			rl_set_error(err, errlen, "TLS: --key %s does not "
				     "match --cert %s", key, o->cert);
		else if (o->key != NULL)
			rl_set_error(err, errlen, "TLS: cannot load --key %s: "
				     "%s", key, ossl_reason());
		else
			rl_set_error(err, errlen, "TLS: no private key in "
				     "--cert %s (give --key)", key);
		return RLOCK_EUNAVAIL;
	}
	if (ossl.SSL_CTX_check_private_key(t->ctx) != 1) {
		rl_set_error(err, errlen, "TLS: --key %s does not match --cert "
			     "%s", key, o->cert);
		return RLOCK_EUNAVAIL;
	}
	return RLOCK_OK;
}

/* The session slot of addr: its own, else a free one, else the first. */
static int session_slot(struct tls_ctx *t, const char *addr)
{
	int i, free_slot = -1;

	for (i = 0; i < TLS_SESSIONS; i++) {
		if (t->sessions[i].sess != NULL &&
		    strcmp(t->sessions[i].addr, addr) == 0)
			return i;
		if (t->sessions[i].sess == NULL && free_slot < 0)
			free_slot = i;
	}
	return free_slot >= 0 ? free_slot : 0;
}

/* OpenSSL has a new session (a TLS 1.3 ticket comes with the first
 * reply): keep it for the next connection to the same server.  Returning
 * 1 keeps the reference OpenSSL hands over. */
static int new_session(SSL *ssl, SSL_SESSION *sess)
{
	struct rlock_conn *c = ossl.SSL_get_ex_data(ssl, 0);
	struct tls_ctx *t;
	int i;

	if (c == NULL)
		return 0;
	t = c->opts.tls;
	pthread_mutex_lock(&tls_lock);
	i = session_slot(t, c->addr);
	if (t->sessions[i].sess != NULL)
		ossl.SSL_SESSION_free(t->sessions[i].sess);
	snprintf(t->sessions[i].addr, sizeof(t->sessions[i].addr), "%s",
		 c->addr);
	t->sessions[i].sess = sess;
	pthread_mutex_unlock(&tls_lock);
	return 1;
}

/* Offer ssl the last session of c's server, if any, once: Redis keeps
 * its sessions on the server, and such a ticket resumes only once. */
static void resume_session(struct rlock_conn *c, SSL *ssl)
{
	struct tls_ctx *t = c->opts.tls;
	int i;

	pthread_mutex_lock(&tls_lock);
	i = session_slot(t, c->addr);
	if (t->sessions[i].sess != NULL &&
	    strcmp(t->sessions[i].addr, c->addr) == 0) {
		ossl.SSL_set_session(ssl, t->sessions[i].sess);
		ossl.SSL_SESSION_free(t->sessions[i].sess);
		t->sessions[i].sess = NULL;
	}
	pthread_mutex_unlock(&tls_lock);
}

static char *dup_or_null(const char *s, int *oom)
{
	char *d;

	if (s == NULL)
		return NULL;
	d = strdup(s);
	if (d == NULL)
		*oom = 1;
	return d;
}

static int ctx_new(const struct tls_opts *o, struct tls_ctx **out, char *err,
		   size_t errlen)
{
	struct tls_ctx *t = calloc(1, sizeof(*t));
	int oom = 0, rc;

	if (t == NULL)
		goto oom;
	t->refs = 1;
	t->insecure = o->insecure;
	t->sni = dup_or_null(o->sni, &oom);
	t->cacert = dup_or_null(o->cacert, &oom);
	t->cacertdir = dup_or_null(o->cacertdir, &oom);
	t->cert = dup_or_null(o->cert, &oom);
	t->key = dup_or_null(o->key, &oom);
	if (oom)
		goto oom;
	ossl.ERR_clear_error();
	t->ctx = ossl.SSL_CTX_new(ossl.TLS_client_method());
	if (t->ctx == NULL) {
		rl_set_error(err, errlen, "TLS: cannot make a context: %s",
			     ossl_reason());
		ctx_free(t);
		return RLOCK_EUNAVAIL;
	}
	ossl.SSL_CTX_ctrl(t->ctx, SSL_CTRL_SET_MIN_PROTO_VERSION,
			  TLS1_2_VERSION, NULL);
	/* A killed server gives an EOF without close_notify: that is a lost
	 * connection like any other, not a protocol error. */
	ossl.SSL_CTX_set_options(t->ctx, SSL_OP_NO_RENEGOTIATION |
				 SSL_OP_IGNORE_UNEXPECTED_EOF);
	ossl.SSL_CTX_set_verify(t->ctx, o->insecure ? SSL_VERIFY_NONE :
				SSL_VERIFY_PEER, NULL);
	ossl.SSL_CTX_ctrl(t->ctx, SSL_CTRL_SET_SESS_CACHE_MODE,
			  SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE,
			  NULL);
	ossl.SSL_CTX_sess_set_new_cb(t->ctx, new_session);
	rc = o->insecure ? RLOCK_OK : load_trust(t, o, err, errlen);
	if (rc == RLOCK_OK)
		rc = load_client_cert(t, o, err, errlen);
	if (rc != RLOCK_OK) {
		ctx_free(t);
		return rc;
	}
	*out = t;
	return RLOCK_OK;
oom:
	ctx_free(t);
	rl_set_error(err, errlen, "out of memory");
	return RLOCK_ESYS;
}

static const struct transport tls_transport;

int rl_tls_ctx_get(const struct tls_opts *o, struct tls_ctx **out, char *err,
		   size_t errlen)
{
	int rc;

	pthread_mutex_lock(&tls_lock);
	rc = load_openssl(err, errlen);
	if (rc == RLOCK_OK && shared != NULL && ctx_matches(shared, o)) {
		shared->refs++;
		*out = shared;
	} else if (rc == RLOCK_OK) {
		rc = ctx_new(o, out, err, errlen);
		if (rc == RLOCK_OK && shared == NULL)
			shared = *out;
		if (rc == RLOCK_OK)
			rl_conn_register_tls(&tls_transport);
	}
	pthread_mutex_unlock(&tls_lock);
	return rc;
}

void rl_tls_ctx_put(struct tls_ctx *t)
{
	if (t == NULL)
		return;
	pthread_mutex_lock(&tls_lock);
	if (--t->refs == 0) {
		if (shared == t)
			shared = NULL;
		ctx_free(t);
	}
	pthread_mutex_unlock(&tls_lock);
}

/* The --sni name of the context, or NULL. */
static const char *tls_ctx_sni(const struct tls_ctx *t)
{
	return t != NULL ? t->sni : NULL;
}

/* ---- one connection --------------------------------------------------- */

struct tls_conn {
	SSL *ssl;
	BIO *rbio, *wbio;	/* network -> OpenSSL, OpenSSL -> network */
	char *cbuf;		/* ciphertext waiting for the socket */
	size_t clen, ccap;
	int handshaken;
};

static void tls_close(struct rlock_conn *c)
{
	struct tls_conn *s = c->tls;

	if (s == NULL)
		return;
	/* SSL_free frees both BIOs, which SSL_set_bio gave it. */
	if (s->ssl != NULL)
		ossl.SSL_free(s->ssl);
	free(s->cbuf);
	free(s);
	c->tls = NULL;
}

/* Move what OpenSSL wrote into wbio to cbuf. */
static int drain_wbio(struct rlock_conn *c)
{
	struct tls_conn *s = c->tls;
	size_t n = ossl.BIO_ctrl_pending(s->wbio);
	int got;

	if (n == 0)
		return RLOCK_OK;
	if (s->clen + n > s->ccap) {
		size_t cap = (s->clen + n) * 2;
		char *nb = realloc(s->cbuf, cap);

		if (nb == NULL)
			return rl_conn_fail(c, "%s: %s", "out of memory");
		s->cbuf = nb;
		s->ccap = cap;
	}
	got = ossl.BIO_read(s->wbio, s->cbuf + s->clen, (int)n);
	if (got > 0)
		s->clen += (size_t)got;
	return RLOCK_OK;
}

/* Send what the socket takes of cbuf. */
static int send_cipher(struct rlock_conn *c)
{
	return rl_conn_write(c, c->tls->cbuf, &c->tls->clen);
}

/* Receive ciphertext into rbio.  Returns 1 when bytes came, 0 when none
 * did (*eof tells the end of the stream), or -errno. */
static int recv_cipher(struct rlock_conn *c, int *eof)
{
	char buf[16384];
	ssize_t n = recv(c->fd, buf, sizeof(buf), 0);

	*eof = 0;
	if (n == 0) {
		*eof = 1;
		return 0;
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR)
		return -errno;
	if (n > 0 && ossl.BIO_write(c->tls->rbio, buf, (int)n) != (int)n)
		return -ENOMEM;
	return n > 0;
}

static int is_ip_literal(const char *host)
{
	unsigned char a[16];

	return inet_pton(AF_INET, host, a) == 1 ||
	       inet_pton(AF_INET6, host, a) == 1;
}

/* The certificate's DNS and IP subject-alt-names, comma-separated. */
static void cert_names(X509 *cert, char *buf, size_t len)
{
	GENERAL_NAMES *names;
	size_t used = 0;
	int i, n;

	buf[0] = '\0';
	names = ossl.X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
	if (names == NULL) {
		snprintf(buf, len, "no subject-alt-name");
		return;
	}
	n = ossl.OPENSSL_sk_num((const OPENSSL_STACK *)names);
	for (i = 0; i < n && used + 1 < len; i++) {
		const GENERAL_NAME *g =
			ossl.OPENSSL_sk_value((const OPENSSL_STACK *)names, i);
		const unsigned char *d;
		char ip[INET6_ADDRSTRLEN] = "";
		int l;

		if (g->type != GEN_DNS && g->type != GEN_IPADD)
			continue;
		d = ossl.ASN1_STRING_get0_data(g->d.ia5);
		l = ossl.ASN1_STRING_length(g->d.ia5);
		if (g->type == GEN_IPADD && (l == 4 || l == 16))
			inet_ntop(l == 4 ? AF_INET : AF_INET6, d, ip,
				  sizeof(ip));
		if (g->type == GEN_IPADD)
			used += (size_t)snprintf(buf + used, len - used, "%s%s",
						 used ? ", " : "", ip);
		else
			used += (size_t)snprintf(buf + used, len - used,
						 "%s%.*s", used ? ", " : "", l,
						 (const char *)d);
	}
	if (used >= len)
		buf[len - 1] = '\0';
	ossl.GENERAL_NAMES_free(names);
}

/*
 * Check that the certificate names the host we meant (--sni, else the
 * URL's host), as DNS name or IP address.  The chain was verified in the
 * handshake; hiredis and redis-cli stop there, and accept any certificate
 * a trusted CA signed for any name.
 */
static int check_name(struct rlock_conn *c)
{
	X509 *cert = ossl.SSL_get0_peer_certificate(c->tls->ssl);
	const char *host = rl_conn_host(c);
	char names[300], why[600];
	int ok;

	if (cert == NULL)
		return rl_conn_fail(c, "%s: %s", "TLS: the server sent no "
				    "certificate");
	if (is_ip_literal(host))
		ok = ossl.X509_check_ip_asc(cert, host, 0) == 1;
	else
		ok = ossl.X509_check_host(cert, host, 0,
					  X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS,
					  NULL) == 1;
	if (ok)
		return RLOCK_OK;
	cert_names(cert, names, sizeof(names));
	snprintf(why, sizeof(why), "TLS: certificate is for %s, not %s (use "
		 "--sni NAME or fix the certificate)", names, host);
	return rl_conn_fail(c, "%s: %s", why);
}

/* Turn a failed SSL_do_handshake or SSL_read into one line naming what
 * users can act on. */
static int tls_failed(struct rlock_conn *c, int ret)
{
	int e = ossl.SSL_get_error(c->tls->ssl, ret);
	unsigned long err = ossl.ERR_peek_error();
	int reason = ERR_GET_REASON(err);
	char why[400];

	if (e == SSL_ERROR_ZERO_RETURN ||
	    (e == SSL_ERROR_SYSCALL && err == 0) ||
	    reason == SSL_R_UNEXPECTED_EOF_WHILE_READING)
		return rl_conn_fail(c, "%s: %s", c->tls->handshaken ?
				    "connection closed by server" :
				    "TLS: connection closed during the handshake");
	if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED) {
		long v = ossl.SSL_get_verify_result(c->tls->ssl);

		snprintf(why, sizeof(why), "TLS: certificate not trusted: %s "
			 "(give its CA with --cacert)",
			 ossl.X509_verify_cert_error_string(v));
	} else if (reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED ||
		   (reason == SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE &&
		    !c->tls->handshaken)) {
		snprintf(why, sizeof(why), "TLS: the server requires a client "
			 "certificate (--cert, --key)");
	} else if (reason == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE ||
		   reason == SSL_R_TLSV1_ALERT_UNKNOWN_CA ||
		   reason == SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN ||
		   reason == SSL_R_TLSV1_ALERT_DECRYPT_ERROR) {
		snprintf(why, sizeof(why), "TLS: the server rejected our client "
			 "certificate (%s)", ossl_reason());
	} else if (reason == SSL_R_WRONG_VERSION_NUMBER ||
		   reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
		   reason == SSL_R_HTTP_REQUEST) {
		snprintf(why, sizeof(why), "TLS: the server answered in plain "
			 "text (use redis://, not rediss://)");
	} else if (e == SSL_ERROR_SYSCALL) {
		snprintf(why, sizeof(why), "connection lost: %s",
			 strerror(errno));
	} else {
		snprintf(why, sizeof(why), "TLS: %s", ossl_reason());
	}
	ossl.ERR_clear_error();
	return rl_conn_fail(c, "%s: %s", why);
}

/* Handshake after the TCP connect, bounded by the connect deadline: a TLS
 * client on a plain Redis port would otherwise wait for ever (the server
 * reads the hello as an inline command and waits for its newline). */
static int tls_start(struct rlock_conn *c, int64_t deadline)
{
	struct tls_conn *s;
	const char *host = rl_conn_host(c);

	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return rl_conn_fail(c, "%s: %s", "out of memory");
	c->tls = s;
	ossl.ERR_clear_error();
	s->ssl = ossl.SSL_new(c->opts.tls->ctx);
	s->rbio = ossl.BIO_new(ossl.BIO_s_mem());
	s->wbio = ossl.BIO_new(ossl.BIO_s_mem());
	if (s->ssl == NULL || s->rbio == NULL || s->wbio == NULL) {
		/* Not yet handed to the SSL, which tls_close frees. */
		if (s->rbio != NULL)
			ossl.BIO_free(s->rbio);
		if (s->wbio != NULL)
			ossl.BIO_free(s->wbio);
		return rl_conn_fail(c, "%s: TLS: %s", ossl_reason());
	}
	ossl.SSL_set_bio(s->ssl, s->rbio, s->wbio);
	ossl.SSL_set_connect_state(s->ssl);
	ossl.SSL_set_ex_data(s->ssl, 0, c);
	resume_session(c, s->ssl);
	/* RFC 6066: SNI carries names, never addresses. */
	if (!is_ip_literal(host))
		ossl.SSL_ctrl(s->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME,
			      TLSEXT_NAMETYPE_host_name, (void *)host);
	for (;;) {
		int ret = ossl.SSL_do_handshake(s->ssl), e, eof, got, ev;

		if (drain_wbio(c) != RLOCK_OK)
			return RLOCK_EUNAVAIL;
		if (ret == 1)
			break;
		e = ossl.SSL_get_error(s->ssl, ret);
		if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
			return tls_failed(c, ret);
		/* Send our flight, then wait for the server's. */
		while (s->clen > 0) {
			if (send_cipher(c) != RLOCK_OK)
				return RLOCK_EUNAVAIL;
			if (s->clen > 0 &&
			    rl_conn_wait_fd(c->fd, POLLOUT, deadline, -1) <= 0)
				goto timeout;
		}
		ev = rl_conn_wait_fd(c->fd, POLLIN, deadline, -1);
		if (ev <= 0)
			goto timeout;
		got = recv_cipher(c, &eof);
		if (got < 0) {
			errno = -got;
			return rl_conn_fail(c, "%s: connection lost: %s",
					    strerror(errno));
		}
		if (eof)
			return rl_conn_fail(c, "%s: %s", "TLS: connection closed "
					    "during the handshake (is it a TLS "
					    "port?)");
	}
	s->handshaken = 1;
	if (!c->opts.tls->insecure)
		return check_name(c);
	return RLOCK_OK;
timeout:
	{
		char why[200], tb[32];
		int rc;

		/* The connect timeout, as the user gave it: the TCP connect
		 * took part of it, so the time measured here is a little
		 * less, and depends on the machine. */
		snprintf(why, sizeof(why), "TLS: no TLS handshake within %s "
			 "(is it a plain port? use redis://)",
			 rlock_fmt_ms(c->opts.connect_timeout_ms, tb,
				      sizeof(tb)));
		rc = rl_conn_fail(c, "%s: %s", why);
		c->refusal = CONN_REFUSED_SLOW;
		return rc;
	}
}

/* Encrypt every queued request into cbuf, then send what the socket
 * takes.  SSL_write into a memory BIO always takes everything. */
static int tls_flush(struct rlock_conn *c)
{
	struct tls_conn *s = c->tls;

	if (c->olen > 0) {
		int n = ossl.SSL_write(s->ssl, c->obuf, (int)c->olen);

		if (n <= 0)
			return tls_failed(c, n);
		memmove(c->obuf, c->obuf + n, c->olen - (size_t)n);
		c->olen -= (size_t)n;
		if (drain_wbio(c) != RLOCK_OK)
			return RLOCK_EUNAVAIL;
	}
	return send_cipher(c);
}

/* Read what the socket has, then decrypt until OpenSSL wants more: what it
 * holds back would be invisible to poll. */
static int tls_fill(struct rlock_conn *c)
{
	struct tls_conn *s = c->tls;
	char buf[16384];
	int got, eof, n, rc;

	got = recv_cipher(c, &eof);
	if (got < 0) {
		errno = -got;
		return rl_conn_fail(c, "%s: connection lost: %s", strerror(errno));
	}
	for (;;) {
		n = ossl.SSL_read(s->ssl, buf, sizeof(buf));
		if (n <= 0)
			break;
		rc = rl_conn_feed(c, buf, (size_t)n);
		if (rc != RLOCK_OK)
			return rc;
	}
	rc = ossl.SSL_get_error(s->ssl, n);
	if (rc != SSL_ERROR_WANT_READ && rc != SSL_ERROR_WANT_WRITE)
		return tls_failed(c, n);
	/* A TLS 1.3 key update or ticket may want an answer. */
	if (drain_wbio(c) != RLOCK_OK || send_cipher(c) != RLOCK_OK)
		return RLOCK_EUNAVAIL;
	if (eof)
		return rl_conn_fail(c, "%s: %s", "connection closed by server");
	return RLOCK_OK;
}

static int tls_out_pending(const struct rlock_conn *c)
{
	return c->olen > 0 || (c->tls != NULL && c->tls->clen > 0);
}

/* Decrypted bytes that SSL_read has not handed out.  Ciphertext left in
 * rbio is not: it is the start of a record whose rest is still on the
 * way, and poll will say when it comes. */
static int tls_in_buffered(const struct rlock_conn *c)
{
	return c->tls != NULL && c->tls->ssl != NULL &&
	       ossl.SSL_pending(c->tls->ssl) > 0;
}

static const char *tls_server_name(const struct rlock_conn *c)
{
	return tls_ctx_sni(c->opts.tls);
}

static const struct transport tls_transport = {
	.start = tls_start,
	.flush = tls_flush,
	.fill = tls_fill,
	.out_pending = tls_out_pending,
	.in_buffered = tls_in_buffered,
	.close = tls_close,
	.server_name = tls_server_name,
};

/* ---- what a connection negotiated (doctor) ------------------------------ */

int rl_conn_tls_info(const struct rlock_conn *c, struct conn_tls_info *info)
{
	const ASN1_TIME *end;
	X509 *cert;
	int days = 0, secs = 0;

	memset(info, 0, sizeof(*info));
	if (c->tls == NULL || c->tls->ssl == NULL || !c->tls->handshaken)
		return 0;
	snprintf(info->protocol, sizeof(info->protocol), "%s",
		 ossl.SSL_get_version(c->tls->ssl));
	/* Without --insecure the handshake verified the chain and
	 * check_name the name, or the connection would not be open. */
	info->verified = !c->opts.tls->insecure;
	cert = ossl.SSL_get0_peer_certificate(c->tls->ssl);
	end = cert != NULL ? ossl.X509_get0_notAfter(cert) : NULL;
	if (end != NULL && ossl.ASN1_TIME_diff(&days, &secs, NULL, end) == 1) {
		/* Days and seconds share a sign: a few seconds past the
		 * end is expired too. */
		info->has_expiry = 1;
		info->days_left = days == 0 && secs < 0 ? -1 : days;
	}
	return 1;
}
