/*
 * url.c - parse the server URLs given with --url, RLOCK_URL or REDIS_URL:
 *
 *   redis://[user[:pass]@]host[:port][/db]
 *   rediss://[user[:pass]@]host[:port][/db]
 *   unix:///path/to/redis.sock[?db=N]
 *   redis-sentinel://[user[:pass]@]host[:port][,host[:port]...][/db]#master
 *   rediss-sentinel://...	(TLS to the sentinels and the master)
 *
 * A URL that does not fit is refused with a reason; no field is ever cut
 * short to fit its buffer, because a truncated host or password would
 * connect somewhere else or fail in a confusing way much later.
 */
#include <arpa/inet.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "rlock_int.h"

#define PORT_DEFAULT 6379
#define PORT_SENTINEL 26379

/* The longest socket path connect(2) can take, terminator included. */
#define SUN_PATH_SIZE sizeof(((struct sockaddr_un *)0)->sun_path)

struct scheme {
	const char *name;
	enum rlock_url_kind kind;
	int tls;
};

static const struct scheme schemes[] = {
	{ "redis", RLOCK_URL_TCP, 0 },
	{ "rediss", RLOCK_URL_TLS, 1 },
	{ "unix", RLOCK_URL_UNIX, 0 },
	{ "redis-sentinel", RLOCK_URL_SENTINEL, 0 },
	{ "rediss-sentinel", RLOCK_URL_SENTINEL, 1 },
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_alnum(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Copy n bytes and terminate.  Returns -1 instead of truncating. */
static int copy_field(char *dst, size_t dstsz, const char *src, size_t n)
{
	if (n >= dstsz)
		return -1;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return 0;
}

/*
 * Percent-decode n bytes of src into dst.  Returns 0, -1 for a malformed
 * escape or an escaped NUL (it would end the C string early and silently
 * shorten a password), or -2 when the result does not fit.
 */
static int pct_decode(char *dst, size_t dstsz, const char *src, size_t n)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		char c = src[i];

		if (c == '%') {
			int hi, lo;

			if (n - i < 3)
				return -1;
			hi = hexval(src[i + 1]);
			lo = hexval(src[i + 2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return -1;
			c = (char)(hi << 4 | lo);
			i += 2;
		}
		if (o + 1 >= dstsz)
			return -2;
		dst[o++] = c;
	}
	if (dstsz == 0)
		return -2;
	dst[o] = '\0';
	return 0;
}

/* Digits only, 1..65535.  Leading zeros are harmless and allowed. */
static int parse_port(const char *s, size_t n, int *port)
{
	long v = 0;
	size_t i;

	if (n == 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
		if (v > 65535)
			return -1;
	}
	if (v == 0)
		return -1;
	*port = (int)v;
	return 0;
}

/* Digits only, 0..INT_MAX: SELECT takes a signed 32-bit index. */
static int parse_db(const char *s, size_t n, int *db)
{
	long long v = 0;
	size_t i;

	if (n == 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
		if (v > INT_MAX)
			return -1;
	}
	*db = (int)v;
	return 0;
}

/*
 * The inside of "[...]": an IPv6 address, optionally with a zone written
 * "%25eth0" as RFC 6874 asks.  inet_pton is the judge of the address so
 * that a typo fails here and not as a DNS lookup of garbage.  The host is
 * stored without brackets and with the zone as "%eth0", the form
 * getaddrinfo understands.
 */
static int parse_ipv6(const char *s, size_t n, char *host, size_t hostsz,
		      const char **why)
{
	char addr[INET6_ADDRSTRLEN];
	struct in6_addr a6;
	const char *pct = memchr(s, '%', n);
	size_t alen = pct != NULL ? (size_t)(pct - s) : n;
	size_t i;

	if (copy_field(addr, sizeof(addr), s, alen) < 0 ||
	    inet_pton(AF_INET6, addr, &a6) != 1) {
		*why = "invalid IPv6 address";
		return -1;
	}
	if (pct == NULL) {
		if (copy_field(host, hostsz, s, n) < 0) {
			*why = "host too long";
			return -1;
		}
		return 0;
	}
	if (n - alen < 4 || strncmp(pct, "%25", 3) != 0) {
		*why = "invalid IPv6 zone";
		return -1;
	}
	for (i = alen + 3; i < n; i++) {
		if (!is_alnum(s[i]) && strchr("-._~", s[i]) == NULL) {
			*why = "invalid IPv6 zone";
			return -1;
		}
	}
	/* "addr" + "%" + zone: two bytes shorter than what was given. */
	if (n - 2 >= hostsz) {
		*why = "host too long";
		return -1;
	}
	memcpy(host, s, alen);
	host[alen] = '%';
	memcpy(host + alen + 1, s + alen + 3, n - alen - 3);
	host[n - 2] = '\0';
	return 0;
}

/* One "host[:port]" or "[v6]:port" of n bytes at s. */
static int parse_hostport(const char *s, size_t n, char *host, size_t hostsz,
			  int *port, int defport, const char **why)
{
	const char *colon;
	size_t i, hlen;

	*port = defport;
	if (n == 0) {
		*why = "missing host";
		return -1;
	}
	if (s[0] == '[') {
		const char *close = memchr(s, ']', n);
		size_t after;

		if (close == NULL) {
			*why = "missing ']' in host";
			return -1;
		}
		if (parse_ipv6(s + 1, (size_t)(close - s - 1), host, hostsz,
			       why) < 0)
			return -1;
		after = n - (size_t)(close - s) - 1;
		if (after == 0)
			return 0;
		if (close[1] != ':') {
			*why = "invalid host";
			return -1;
		}
		if (parse_port(close + 2, after - 1, port) < 0) {
			*why = "invalid port";
			return -1;
		}
		return 0;
	}

	colon = memchr(s, ':', n);
	hlen = colon != NULL ? (size_t)(colon - s) : n;
	if (colon != NULL && memchr(colon + 1, ':', n - hlen - 1) != NULL) {
		*why = "IPv6 address must be in brackets";
		return -1;
	}
	if (hlen == 0) {
		*why = "missing host";
		return -1;
	}
	/*
	 * Letters, digits, '-', '.' and '_' cover host names and IPv4
	 * addresses; anything else (a stray ',' or '@', an unencoded space)
	 * is a mistake in the URL, better reported than looked up.
	 */
	for (i = 0; i < hlen; i++) {
		if (!is_alnum(s[i]) && strchr("-._", s[i]) == NULL) {
			*why = "invalid host";
			return -1;
		}
	}
	if (copy_field(host, hostsz, s, hlen) < 0) {
		*why = "host too long";
		return -1;
	}
	if (colon != NULL && parse_port(colon + 1, n - hlen - 1, port) < 0) {
		*why = "invalid port";
		return -1;
	}
	return 0;
}

/* "user[:pass]" of n bytes at s, percent-decoded into u. */
static int parse_userinfo(const char *s, size_t n, struct rlock_url *u,
			  const char **why)
{
	const char *colon = memchr(s, ':', n);
	size_t ulen = colon != NULL ? (size_t)(colon - s) : n;
	int rc;

	rc = pct_decode(u->user, sizeof(u->user), s, ulen);
	if (rc < 0) {
		*why = rc == -1 ? "bad percent-escape in user" :
				  "user too long";
		return -1;
	}
	if (colon == NULL)
		return 0;
	/* "user:@host" asks for an empty password: keep the flag so the
	 * transport can send AUTH exactly as written. */
	rc = pct_decode(u->password, sizeof(u->password), colon + 1,
			n - ulen - 1);
	if (rc < 0) {
		*why = rc == -1 ? "bad percent-escape in password" :
				  "password too long";
		return -1;
	}
	u->has_password = 1;
	return 0;
}

/* Everything after "scheme://" for redis, rediss and redis-sentinel. */
static int parse_net(const char *s, struct rlock_url *u, const char **why)
{
	const char *end = s + strlen(s);
	const char *hash = strchr(s, '#');
	const char *slash, *at, *hosts, *hend, *p;
	int defport = u->kind == RLOCK_URL_SENTINEL ? PORT_SENTINEL :
						      PORT_DEFAULT;

	if (u->kind == RLOCK_URL_SENTINEL) {
		if (hash == NULL || hash[1] == '\0') {
			*why = "missing master name";
			return -1;
		}
		if (strchr(hash + 1, '#') != NULL) {
			*why = "invalid master name";
			return -1;
		}
		if (copy_field(u->master, sizeof(u->master), hash + 1,
			       (size_t)(end - hash - 1)) < 0) {
			*why = "master name too long";
			return -1;
		}
		end = hash;
	} else if (hash != NULL) {
		*why = "unexpected '#'";
		return -1;
	}
	if (memchr(s, '?', (size_t)(end - s)) != NULL) {
		*why = "unexpected query";
		return -1;
	}

	/* The authority ends at the first '/'; the rest is the db. */
	slash = memchr(s, '/', (size_t)(end - s));
	hend = slash != NULL ? slash : end;
	if (slash != NULL && slash + 1 < end &&
	    parse_db(slash + 1, (size_t)(end - slash - 1), &u->db) < 0) {
		*why = "invalid db";
		return -1;
	}

	/*
	 * The last '@' ends the user info, so an unencoded '@' in a password
	 * still works; a host can never contain one.
	 */
	at = memrchr(s, '@', (size_t)(hend - s));
	hosts = s;
	if (at != NULL) {
		if (parse_userinfo(s, (size_t)(at - s), u, why) < 0)
			return -1;
		hosts = at + 1;
	}

	/* Only sentinel URLs list several hosts; elsewhere a ',' is just an
	 * invalid character in the one host. */
	p = hosts;
	for (;;) {
		const char *comma = NULL;
		const char *stop;

		if (u->kind == RLOCK_URL_SENTINEL)
			comma = memchr(p, ',', (size_t)(hend - p));
		stop = comma != NULL ? comma : hend;
		if (u->nhosts == RLOCK_URL_MAX_HOSTS) {
			*why = "too many sentinel hosts";
			return -1;
		}
		if (parse_hostport(p, (size_t)(stop - p),
				   u->hosts[u->nhosts].host,
				   sizeof(u->hosts[u->nhosts].host),
				   &u->hosts[u->nhosts].port, defport,
				   why) < 0)
			return -1;
		u->nhosts++;
		if (comma == NULL)
			break;
		p = comma + 1;
	}
	return 0;
}

/* Everything after "unix://": an absolute path and an optional ?db=N. */
static int parse_unix(const char *s, struct rlock_url *u, const char **why)
{
	const char *q = strchr(s, '?');
	size_t plen = q != NULL ? (size_t)(q - s) : strlen(s);
	int seen_db = 0, rc;

	if (strchr(s, '#') != NULL) {
		*why = "unexpected '#'";
		return -1;
	}
	if (plen == 0 || (plen == 1 && s[0] == '/')) {
		*why = "missing socket path";
		return -1;
	}
	if (s[0] != '/') {
		*why = "socket path must be absolute";
		return -1;
	}
	/*
	 * connect(2) takes at most sizeof(sun_path) bytes with the NUL; say
	 * so here, as a URL error, rather than at connect time (or worse,
	 * through a strncpy that connects to a truncated name).
	 */
	rc = pct_decode(u->path, sizeof(u->path), s, plen);
	if (rc == -1) {
		*why = "bad percent-escape in path";
		return -1;
	}
	if (rc == -2 || strlen(u->path) >= SUN_PATH_SIZE) {
		*why = "socket path too long";
		return -1;
	}

	while (q != NULL) {
		const char *param = q + 1;
		const char *amp = strchr(param, '&');
		size_t n = amp != NULL ? (size_t)(amp - param) : strlen(param);

		if (n < 3 || strncmp(param, "db=", 3) != 0) {
			*why = "unknown query parameter";
			return -1;
		}
		/* A second db= is as wrong as a bad one. */
		if (seen_db || parse_db(param + 3, n - 3, &u->db) < 0) {
			*why = "invalid db";
			return -1;
		}
		seen_db = 1;
		q = amp;
	}

	/* One endpoint, like a plain redis:// URL; it has no host or port. */
	u->nhosts = 1;
	return 0;
}

int rl_url_parse(const char *s, struct rlock_url *u, const char **why)
{
	struct rlock_url tmp;
	const char *reason = NULL, *sep, *p;
	size_t i, slen;
	int found = 0;

	/* Work on a copy so that *u is untouched when the URL is refused. */
	memset(&tmp, 0, sizeof(tmp));
	if (s == NULL || s[0] == '\0') {
		reason = "empty";
		goto out;
	}
	/*
	 * A space or control byte in a URL is a quoting mistake (or a
	 * newline from a file); the parts that may hold any byte take it
	 * percent-encoded.
	 */
	for (p = s; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;

		if (c <= 0x20 || c == 0x7f) {
			reason = "contains a space or control character";
			goto out;
		}
	}

	sep = strstr(s, "://");
	if (sep == NULL) {
		reason = strncasecmp(s, "unix:", 5) == 0 ?
				 "unix socket URLs are unix:///path" :
				 "missing scheme";
		goto out;
	}
	/* Schemes are case-insensitive (RFC 3986 section 3.1). */
	slen = (size_t)(sep - s);
	for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		if (strlen(schemes[i].name) == slen &&
		    strncasecmp(s, schemes[i].name, slen) == 0) {
			tmp.kind = schemes[i].kind;
			tmp.tls = schemes[i].tls;
			found = 1;
			break;
		}
	}
	if (!found) {
		reason = "unknown scheme";
		goto out;
	}

	if (tmp.kind == RLOCK_URL_UNIX) {
		if (parse_unix(sep + 3, &tmp, &reason) < 0)
			goto out;
	} else if (parse_net(sep + 3, &tmp, &reason) < 0) {
		goto out;
	}
	*u = tmp;
	reason = NULL;
out:
	if (why != NULL)
		*why = reason;
	return reason == NULL ? 0 : -1;
}
