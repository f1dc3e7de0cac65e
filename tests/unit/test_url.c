/*
 * test_url.c - rl_url_parse: the four URL forms, their defaults, and a
 * long list of URLs that must be refused with the right reason rather
 * than half-parsed or truncated.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rlock_int.h"

/* Parse s, which must succeed; u is filled. */
static int ok(const char *s, struct rlock_url *u)
{
	const char *why = "not set";
	int rc;

	unit_context("url '%s'", s);
	rc = rl_url_parse(s, u, &why);
	CHECK_INT(rc, 0);
	if (rc != 0)
		printf("       why: %s\n", why ? why : "(null)");
	CHECK(why == NULL);
	return rc;
}

/* Parse s, which must fail with reason want, leaving u alone. */
static void bad(const char *s, const char *want)
{
	struct rlock_url u, before;
	const char *why = NULL;

	unit_context("url '%s'", s ? s : "(null)");
	memset(&u, 0x5a, sizeof(u));
	memcpy(&before, &u, sizeof(u));
	CHECK_INT(rl_url_parse(s, &u, &why), -1);
	CHECK_STR(why, want);
	CHECK(memcmp(&u, &before, sizeof(u)) == 0);
}

static char *repeat(char c, size_t n, const char *prefix, const char *suffix)
{
	size_t pl = strlen(prefix), sl = strlen(suffix);
	char *s = malloc(pl + n + sl + 1);

	if (s == NULL)
		abort();
	memcpy(s, prefix, pl);
	memset(s + pl, c, n);
	memcpy(s + pl + n, suffix, sl + 1);
	return s;
}

static void tcp(void)
{
	struct rlock_url u;

	if (ok("redis://127.0.0.1:6379", &u) == 0) {
		CHECK_INT(u.kind, RLOCK_URL_TCP);
		CHECK_INT(u.nhosts, 1);
		CHECK_STR(u.hosts[0].host, "127.0.0.1");
		CHECK_INT(u.hosts[0].port, 6379);
		CHECK_INT(u.db, 0);
		CHECK_STR(u.user, "");
		CHECK_STR(u.password, "");
		CHECK_INT(u.has_password, 0);
		CHECK_STR(u.path, "");
		CHECK_STR(u.master, "");
	}
	if (ok("redis://localhost", &u) == 0) {
		CHECK_STR(u.hosts[0].host, "localhost");
		CHECK_INT(u.hosts[0].port, 6379);
	}
	if (ok("redis://cache-01.prod_eu.example.com:7000/15", &u) == 0) {
		CHECK_STR(u.hosts[0].host, "cache-01.prod_eu.example.com");
		CHECK_INT(u.hosts[0].port, 7000);
		CHECK_INT(u.db, 15);
	}
	if (ok("redis://h:1", &u) == 0)
		CHECK_INT(u.hosts[0].port, 1);
	if (ok("redis://h:65535", &u) == 0)
		CHECK_INT(u.hosts[0].port, 65535);
	if (ok("redis://h:06379", &u) == 0)
		CHECK_INT(u.hosts[0].port, 6379);
	if (ok("redis://h/", &u) == 0)
		CHECK_INT(u.db, 0);
	if (ok("redis://h/0", &u) == 0)
		CHECK_INT(u.db, 0);
	if (ok("redis://h:6380/2147483647", &u) == 0)
		CHECK_INT(u.db, INT_MAX);
	if (ok("redis://h/007", &u) == 0)
		CHECK_INT(u.db, 7);
	if (ok("rediss://secure.example:6380/1", &u) == 0) {
		CHECK_INT(u.kind, RLOCK_URL_TLS);
		CHECK_STR(u.hosts[0].host, "secure.example");
		CHECK_INT(u.hosts[0].port, 6380);
		CHECK_INT(u.db, 1);
	}
	if (ok("rediss://h", &u) == 0)
		CHECK_INT(u.hosts[0].port, 6379);
	/* Schemes are case-insensitive; hosts are kept as written. */
	if (ok("REDIS://Host", &u) == 0) {
		CHECK_INT(u.kind, RLOCK_URL_TCP);
		CHECK_STR(u.hosts[0].host, "Host");
	}
	if (ok("RedisS://h", &u) == 0)
		CHECK_INT(u.kind, RLOCK_URL_TLS);
}

static void ipv6(void)
{
	struct rlock_url u;

	if (ok("redis://[::1]:6380", &u) == 0) {
		CHECK_STR(u.hosts[0].host, "::1");
		CHECK_INT(u.hosts[0].port, 6380);
	}
	if (ok("redis://[::1]", &u) == 0) {
		CHECK_STR(u.hosts[0].host, "::1");
		CHECK_INT(u.hosts[0].port, 6379);
	}
	if (ok("redis://[2001:db8::1]/2", &u) == 0) {
		CHECK_STR(u.hosts[0].host, "2001:db8::1");
		CHECK_INT(u.db, 2);
	}
	if (ok("redis://:pw@[::ffff:192.0.2.1]:7000", &u) == 0) {
		CHECK_STR(u.hosts[0].host, "::ffff:192.0.2.1");
		CHECK_INT(u.hosts[0].port, 7000);
		CHECK_STR(u.password, "pw");
	}
	/* RFC 6874 zone: "%25" in the URL, "%" for getaddrinfo. */
	if (ok("redis://[fe80::1%25eth0]:6379", &u) == 0)
		CHECK_STR(u.hosts[0].host, "fe80::1%eth0");

	bad("redis://::1", "IPv6 address must be in brackets");
	bad("redis://fe80::1:6379", "IPv6 address must be in brackets");
	bad("redis://h:1:2", "IPv6 address must be in brackets");
	bad("redis://[::1", "missing ']' in host");
	bad("redis://[::1:6379", "missing ']' in host");
	bad("redis://[]", "invalid IPv6 address");
	bad("redis://[]:6379", "invalid IPv6 address");
	bad("redis://[::g]", "invalid IPv6 address");
	bad("redis://[1.2.3.4]", "invalid IPv6 address");
	bad("redis://[localhost]", "invalid IPv6 address");
	bad("redis://[1:2:3:4:5:6:7:8:9]", "invalid IPv6 address");
	bad("redis://[0000:0000:0000:0000:0000:0000:0000:0000:0]",
	    "invalid IPv6 address");
	bad("redis://[::1]x", "invalid host");
	bad("redis://[::1]]", "invalid host");
	bad("redis://[::1]6379", "invalid host");
	bad("redis://[::1]:", "invalid port");
	bad("redis://[::1]:0", "invalid port");
	bad("redis://[::1]:65536", "invalid port");
	bad("redis://[::1]:x", "invalid port");
	bad("redis://[fe80::1%eth0]", "invalid IPv6 zone");
	bad("redis://[fe80::1%25]", "invalid IPv6 zone");
	bad("redis://[fe80::1%2]", "invalid IPv6 zone");
	bad("redis://[fe80::1%25e!h]", "invalid IPv6 zone");
	bad("redis://[fe80::1%25e%25]", "invalid IPv6 zone");
}

static void userinfo(void)
{
	struct rlock_url u;

	if (ok("redis://:secret@h", &u) == 0) {
		CHECK_STR(u.user, "");
		CHECK_STR(u.password, "secret");
		CHECK_INT(u.has_password, 1);
		CHECK_STR(u.hosts[0].host, "h");
	}
	if (ok("redis://alice:secret@h:7000/3", &u) == 0) {
		CHECK_STR(u.user, "alice");
		CHECK_STR(u.password, "secret");
		CHECK_INT(u.has_password, 1);
		CHECK_INT(u.hosts[0].port, 7000);
		CHECK_INT(u.db, 3);
	}
	if (ok("redis://alice@h", &u) == 0) {
		CHECK_STR(u.user, "alice");
		CHECK_INT(u.has_password, 0);
	}
	/* An explicit empty password is kept as given. */
	if (ok("redis://alice:@h", &u) == 0) {
		CHECK_STR(u.user, "alice");
		CHECK_STR(u.password, "");
		CHECK_INT(u.has_password, 1);
	}
	if (ok("redis://@h", &u) == 0) {
		CHECK_STR(u.user, "");
		CHECK_INT(u.has_password, 0);
	}
	/* Percent-decoding, upper and lower case hex. */
	if (ok("redis://:p%40ss%3Aw%2fo%25rd%23%3F@h", &u) == 0)
		CHECK_STR(u.password, "p@ss:w/o%rd#?");
	if (ok("redis://us%65r:pw@h", &u) == 0)
		CHECK_STR(u.user, "user");
	if (ok("redis://:a%20b@h", &u) == 0)
		CHECK_STR(u.password, "a b");
	if (ok("redis://:%C3%A9t%C3%A9@h", &u) == 0)
		CHECK_STR(u.password, "\xc3\xa9t\xc3\xa9");
	if (ok("redis://:%0a@h", &u) == 0)
		CHECK_STR(u.password, "\n");
	/* '+' is not a space outside HTML forms. */
	if (ok("redis://:a+b@h", &u) == 0)
		CHECK_STR(u.password, "a+b");
	/* The last '@' ends the user info, so a raw '@' in a password
	 * works, and a ':' in the password is part of it. */
	if (ok("redis://:p@ss@h", &u) == 0) {
		CHECK_STR(u.password, "p@ss");
		CHECK_STR(u.hosts[0].host, "h");
	}
	if (ok("redis://bob:a:b@h", &u) == 0) {
		CHECK_STR(u.user, "bob");
		CHECK_STR(u.password, "a:b");
	}

	bad("redis://:%@h", "bad percent-escape in password");
	bad("redis://:%4@h", "bad percent-escape in password");
	bad("redis://:abc%@h", "bad percent-escape in password");
	bad("redis://:abc%4@h", "bad percent-escape in password");
	bad("redis://:%zz@h", "bad percent-escape in password");
	bad("redis://:%4g@h", "bad percent-escape in password");
	bad("redis://:%g4@h", "bad percent-escape in password");
	bad("redis://:%-1@h", "bad percent-escape in password");
	bad("redis://:%00@h", "bad percent-escape in password");
	bad("redis://:a%00b@h", "bad percent-escape in password");
	bad("redis://%ZZ:pw@h", "bad percent-escape in user");
	bad("redis://us%@h", "bad percent-escape in user");
	bad("redis://%00@h", "bad percent-escape in user");
	/* An unencoded '/' in a password ends the host part early. */
	bad("redis://:pa/ss@h", "invalid db");
	bad("redis://user:pw@", "missing host");
	bad("redis://user:pw@:6379", "missing host");
	bad("redis://@", "missing host");
}

static void sentinel(void)
{
	struct rlock_url u;
	char buf[512];
	size_t i;

	if (ok("redis-sentinel://s1#mymaster", &u) == 0) {
		CHECK_INT(u.kind, RLOCK_URL_SENTINEL);
		CHECK_INT(u.tls, 0);
		CHECK_INT(u.nhosts, 1);
		CHECK_STR(u.hosts[0].host, "s1");
		CHECK_INT(u.hosts[0].port, 26379);
		CHECK_STR(u.master, "mymaster");
		CHECK_INT(u.db, 0);
	}
	if (ok("redis-sentinel://:pw@s1,s2:26380,[::1]:26381/3#mymaster",
	       &u) == 0) {
		CHECK_INT(u.nhosts, 3);
		CHECK_STR(u.hosts[0].host, "s1");
		CHECK_INT(u.hosts[0].port, 26379);
		CHECK_STR(u.hosts[1].host, "s2");
		CHECK_INT(u.hosts[1].port, 26380);
		CHECK_STR(u.hosts[2].host, "::1");
		CHECK_INT(u.hosts[2].port, 26381);
		CHECK_INT(u.db, 3);
		CHECK_STR(u.password, "pw");
		CHECK_STR(u.master, "mymaster");
	}
	if (ok("Redis-Sentinel://h#m-1.x", &u) == 0)
		CHECK_STR(u.master, "m-1.x");
	/* TLS to the sentinels and to the master they name. */
	if (ok("rediss-sentinel://u:p@s1:1,s2:2#m", &u) == 0) {
		CHECK_INT(u.kind, RLOCK_URL_SENTINEL);
		CHECK_INT(u.tls, 1);
		CHECK_INT(u.nhosts, 2);
		CHECK_STR(u.user, "u");
		CHECK_STR(u.master, "m");
	}
	if (ok("rediss://h", &u) == 0)
		CHECK_INT(u.tls, 1);
	if (ok("redis://h", &u) == 0)
		CHECK_INT(u.tls, 0);
	bad("rediss-sentinel://h", "missing master name");

	/* Exactly RLOCK_URL_MAX_HOSTS hosts fit; one more does not. */
	strcpy(buf, "redis-sentinel://h0");
	for (i = 1; i < RLOCK_URL_MAX_HOSTS; i++)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf),
			 ",h%zu:%zu", i, 30000 + i);
	strcat(buf, "#m");
	if (ok(buf, &u) == 0) {
		CHECK_INT(u.nhosts, RLOCK_URL_MAX_HOSTS);
		CHECK_STR(u.hosts[RLOCK_URL_MAX_HOSTS - 1].host, "h15");
		CHECK_INT(u.hosts[RLOCK_URL_MAX_HOSTS - 1].port, 30015);
	}
	buf[strlen(buf) - 2] = '\0';
	strcat(buf, ",h16#m");
	bad(buf, "too many sentinel hosts");

	bad("redis-sentinel://h", "missing master name");
	bad("redis-sentinel://h/0", "missing master name");
	bad("redis-sentinel://h#", "missing master name");
	bad("redis-sentinel://h/0#", "missing master name");
	bad("redis-sentinel://#m", "missing host");
	bad("redis-sentinel://h1,,h2#m", "missing host");
	bad("redis-sentinel://h1,#m", "missing host");
	bad("redis-sentinel://,h1#m", "missing host");
	bad("redis-sentinel://h1,:1#m", "missing host");
	bad("redis-sentinel://h#m#n", "invalid master name");
	bad("redis-sentinel://h:0#m", "invalid port");
	bad("redis-sentinel://h1,h2:99999#m", "invalid port");
	bad("redis-sentinel://h/x#m", "invalid db");
	bad("redis-sentinel://h?x#m", "unexpected query");
	bad("redis-sentinel://h1;h2#m", "invalid host");
}

static void unix_socket(void)
{
	struct rlock_url u;
	char *s;

	if (ok("unix:///tmp/redis.sock", &u) == 0) {
		CHECK_INT(u.kind, RLOCK_URL_UNIX);
		CHECK_STR(u.path, "/tmp/redis.sock");
		CHECK_INT(u.db, 0);
		CHECK_INT(u.nhosts, 1);
		CHECK_STR(u.hosts[0].host, "");
		CHECK_INT(u.has_password, 0);
	}
	if (ok("unix:///var/run/redis/redis.sock?db=3", &u) == 0) {
		CHECK_STR(u.path, "/var/run/redis/redis.sock");
		CHECK_INT(u.db, 3);
	}
	if (ok("UNIX:///s?db=2147483647", &u) == 0)
		CHECK_INT(u.db, INT_MAX);
	/* The path is percent-decoded: the only way to write a space. */
	if (ok("unix:///tmp/my%20dir/redis.sock", &u) == 0)
		CHECK_STR(u.path, "/tmp/my dir/redis.sock");

	/* sun_path holds 107 bytes and a NUL; hiredis would truncate. */
	s = repeat('a', 106, "unix:///", "");
	if (ok(s, &u) == 0)
		CHECK_INT(strlen(u.path), 107);
	free(s);
	s = repeat('a', 107, "unix:///", "");
	bad(s, "socket path too long");
	free(s);
	s = repeat('a', 600, "unix:///", "");
	bad(s, "socket path too long");
	free(s);

	bad("unix://", "missing socket path");
	bad("unix:///", "missing socket path");
	bad("unix://?db=1", "missing socket path");
	bad("unix://tmp/redis.sock", "socket path must be absolute");
	bad("unix://localhost/tmp/redis.sock", "socket path must be absolute");
	bad("unix://:pw@/tmp/redis.sock", "socket path must be absolute");
	bad("unix:/tmp/redis.sock", "unix socket URLs are unix:///path");
	bad("unix:tmp/redis.sock", "unix socket URLs are unix:///path");
	bad("unix:///tmp/s?db=", "invalid db");
	bad("unix:///tmp/s?db=x", "invalid db");
	bad("unix:///tmp/s?db=-1", "invalid db");
	bad("unix:///tmp/s?db=2147483648", "invalid db");
	bad("unix:///tmp/s?db=1&db=2", "invalid db");
	bad("unix:///tmp/s?db=1x", "invalid db");
	bad("unix:///tmp/s?", "unknown query parameter");
	bad("unix:///tmp/s?db", "unknown query parameter");
	bad("unix:///tmp/s?foo=1", "unknown query parameter");
	bad("unix:///tmp/s?DB=1", "unknown query parameter");
	bad("unix:///tmp/s?db=1&", "unknown query parameter");
	bad("unix:///tmp/s?db=1&password=x", "unknown query parameter");
	bad("unix:///tmp/s#x", "unexpected '#'");
	bad("unix:///tmp/%zz", "bad percent-escape in path");
	bad("unix:///tmp/a%00b", "bad percent-escape in path");
	bad("unix:///tmp/a%", "bad percent-escape in path");
}

static void refused(void)
{
	bad(NULL, "empty");
	bad("", "empty");

	bad("localhost:6379", "missing scheme");
	bad("127.0.0.1", "missing scheme");
	bad("redis:/h", "missing scheme");
	bad("redis:h", "missing scheme");
	bad("//h:6379", "missing scheme");

	bad("http://h", "unknown scheme");
	bad("tcp://h:6379", "unknown scheme");
	bad("redis+tls://h", "unknown scheme");
	bad("rediss2://h", "unknown scheme");
	bad("redis-cluster://h", "unknown scheme");
	bad("redis-sentinels://h#m", "unknown scheme");
	bad("sentinel://h#m", "unknown scheme");
	bad("://h", "unknown scheme");
	bad("redi://h", "unknown scheme");
	bad("unixx:///tmp/s", "unknown scheme");

	bad("redis://", "missing host");
	bad("redis://:6379", "missing host");
	bad("redis:///0", "missing host");
	bad("rediss://", "missing host");
	bad("redis://h:", "invalid port");
	bad("redis://h:0", "invalid port");
	bad("redis://h:65536", "invalid port");
	bad("redis://h:99999999999999999999999", "invalid port");
	bad("redis://h:-1", "invalid port");
	bad("redis://h:+1", "invalid port");
	bad("redis://h:6379x", "invalid port");
	bad("redis://h:0x10", "invalid port");
	bad("redis://h:\xef\xbc\x91", "invalid port");	/* fullwidth 1 */
	bad("redis://h:6379:", "IPv6 address must be in brackets");

	bad("redis://h/-1", "invalid db");
	bad("redis://h/+1", "invalid db");
	bad("redis://h/abc", "invalid db");
	bad("redis://h/1x", "invalid db");
	bad("redis://h/1.5", "invalid db");
	bad("redis://h/2147483648", "invalid db");
	bad("redis://h/99999999999999999999", "invalid db");
	bad("redis://h/0/", "invalid db");
	bad("redis://h//", "invalid db");
	bad("redis://h/0/1", "invalid db");

	bad("redis://h#x", "unexpected '#'");
	bad("redis://h#", "unexpected '#'");
	bad("rediss://h/0#m", "unexpected '#'");
	bad("redis://h?db=1", "unexpected query");
	bad("redis://h/0?x", "unexpected query");
	bad("redis://h?", "unexpected query");

	bad("redis://h1,h2", "invalid host");
	bad("redis://h!st", "invalid host");
	bad("redis://h%20", "invalid host");
	bad("redis://h\xc3\xa9", "invalid host");
	bad("redis://h;x", "invalid host");
	bad("redis://h[1]", "invalid host");

	bad(" redis://h", "contains a space or control character");
	bad("redis://h ", "contains a space or control character");
	bad("redis://h:63 79", "contains a space or control character");
	bad("redis://h\n", "contains a space or control character");
	bad("redis://h\r", "contains a space or control character");
	bad("redis://h\t", "contains a space or control character");
	bad("redis://h\x7f", "contains a space or control character");
	bad("redis://:pass word@h", "contains a space or control character");
	bad("unix:///tmp/my sock", "contains a space or control character");
}

/* Each field at its largest, and one byte over: refused, never cut. */
static void lengths(void)
{
	struct rlock_url u;
	char *s;

	s = repeat('h', 255, "redis://", ":1");
	if (ok(s, &u) == 0)
		CHECK_INT(strlen(u.hosts[0].host), 255);
	free(s);
	s = repeat('h', 256, "redis://", "");
	bad(s, "host too long");
	free(s);
	s = repeat('h', 10000, "redis-sentinel://a,", "#m");
	bad(s, "host too long");
	free(s);

	s = repeat('u', 255, "redis://", ":p@h");
	if (ok(s, &u) == 0)
		CHECK_INT(strlen(u.user), 255);
	free(s);
	s = repeat('u', 256, "redis://", ":p@h");
	bad(s, "user too long");
	free(s);

	s = repeat('p', 511, "redis://:", "@h");
	if (ok(s, &u) == 0)
		CHECK_INT(strlen(u.password), 511);
	free(s);
	s = repeat('p', 512, "redis://:", "@h");
	bad(s, "password too long");
	free(s);

	/* Length is judged after decoding: 511 escapes fit. */
	{
		/* Room for "redis://:", 512 escapes and "@h". */
		char *p = malloc(9 + 512 * 3 + 2 + 1);
		size_t i;

		if (p == NULL)
			abort();
		strcpy(p, "redis://:");
		for (i = 0; i < 511; i++)
			strcat(p, "%41");
		strcat(p, "@h");
		if (ok(p, &u) == 0) {
			CHECK_INT(strlen(u.password), 511);
			CHECK(u.password[0] == 'A' && u.password[510] == 'A');
		}
		p[strlen(p) - 2] = '\0';
		strcat(p, "%41@h");
		bad(p, "password too long");
		free(p);
	}

	s = repeat('m', 255, "redis-sentinel://h#", "");
	if (ok(s, &u) == 0)
		CHECK_INT(strlen(u.master), 255);
	free(s);
	s = repeat('m', 256, "redis-sentinel://h#", "");
	bad(s, "master name too long");
	free(s);
}

static void misc(void)
{
	struct rlock_url u;

	/* why may be NULL. */
	CHECK_INT(rl_url_parse("redis://h", &u, NULL), 0);
	CHECK_INT(rl_url_parse("nope", &u, NULL), -1);

	/* A success after a failure starts from a clean slate. */
	CHECK_INT(rl_url_parse("redis://alice:pw@a/3", &u, NULL), 0);
	CHECK_INT(rl_url_parse("redis://b", &u, NULL), 0);
	CHECK_STR(u.user, "");
	CHECK_STR(u.password, "");
	CHECK_INT(u.has_password, 0);
	CHECK_INT(u.db, 0);
	CHECK_STR(u.hosts[0].host, "b");
}

void test_url(void)
{
	tcp();
	ipv6();
	userinfo();
	sentinel();
	unix_socket();
	refused();
	lengths();
	misc();
	unit_context(NULL);
}
