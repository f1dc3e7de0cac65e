/*
 * fuzz_url.c - rl_url_parse (lib/url.c) on the input as a C string.
 *
 * Beyond not crashing: a refused URL leaves the caller's struct untouched
 * and gives a reason; an accepted one has every text field NUL-terminated
 * inside its array, ports in 1..65535, a non-negative db, host names of
 * the allowed characters or a valid IPv6 address, a socket path that fits
 * sun_path, and fields that fit the URL's kind.  Then the parsed URL is
 * written back out (everything percent-encoded that may be) and parsed
 * again, which must give the same struct.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <strings.h>
#include <sys/un.h>

#include "fuzz.h"
#include "rlock_int.h"

#define FILL 0x5a

static int terminated(const char *field, size_t size)
{
	return memchr(field, '\0', size) != NULL;
}

static int all_zero(const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		if (c[i] != 0)
			return 0;
	return 1;
}

/* A host as url.c stores it: a name or IPv4 address of [A-Za-z0-9._-],
 * or an IPv6 address with an optional "%zone". */
static int host_ok(const char *h)
{
	char addr[INET6_ADDRSTRLEN];
	struct in6_addr a6;
	const char *pct;
	size_t alen;

	if (h[0] == '\0')
		return 0;
	if (strchr(h, ':') == NULL)
		return strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
			      "VWXYZ0123456789-._") == strlen(h);
	pct = strchr(h, '%');
	alen = pct != NULL ? (size_t)(pct - h) : strlen(h);
	if (alen >= sizeof(addr))
		return 0;
	memcpy(addr, h, alen);
	addr[alen] = '\0';
	if (inet_pton(AF_INET6, addr, &a6) != 1)
		return 0;
	return pct == NULL ||
	       (pct[1] != '\0' &&
		strspn(pct + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS"
		       "TUVWXYZ0123456789-._~") == strlen(pct + 1));
}

struct out {
	char buf[16384];
	size_t n;
};

static void put(struct out *o, const char *s, size_t n)
{
	REQUIRE(o->n + n < sizeof(o->buf));
	memcpy(o->buf + o->n, s, n);
	o->n += n;
	o->buf[o->n] = '\0';
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* s with every byte but letters, digits and those in keep as %XX. */
static void put_pct(struct out *o, const char *s, const char *keep)
{
	char esc[4];

	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (isalnum(c) || (c != '\0' && strchr(keep, c) != NULL)) {
			put(o, s, 1);
		} else {
			snprintf(esc, sizeof(esc), "%%%02X", c);
			put(o, esc, 3);
		}
	}
}

static void put_int(struct out *o, int v)
{
	char num[16];

	snprintf(num, sizeof(num), "%d", v);
	puts_(o, num);
}

/* u as a URL that rl_url_parse must read back as u. */
static void write_url(const struct rlock_url *u, struct out *o)
{
	static const char *const scheme[] = {
		[RLOCK_URL_TCP] = "redis://",
		[RLOCK_URL_TLS] = "rediss://",
		[RLOCK_URL_UNIX] = "unix://",
		[RLOCK_URL_SENTINEL] = "redis-sentinel://",
	};

	o->n = 0;
	o->buf[0] = '\0';
	if (u->kind == RLOCK_URL_SENTINEL && u->tls)
		puts_(o, "rediss-sentinel://");
	else
		puts_(o, scheme[u->kind]);
	if (u->kind == RLOCK_URL_UNIX) {
		put_pct(o, u->path, "/");
		if (u->db != 0) {
			puts_(o, "?db=");
			put_int(o, u->db);
		}
		return;
	}
	if (u->user[0] != '\0' || u->has_password) {
		put_pct(o, u->user, "");
		if (u->has_password) {
			puts_(o, ":");
			put_pct(o, u->password, "");
		}
		puts_(o, "@");
	}
	for (size_t i = 0; i < u->nhosts; i++) {
		const char *h = u->hosts[i].host, *pct = strchr(h, '%');

		if (i > 0)
			puts_(o, ",");
		if (strchr(h, ':') == NULL) {
			puts_(o, h);
		} else {
			puts_(o, "[");
			if (pct != NULL) {
				put(o, h, (size_t)(pct - h));
				puts_(o, "%25");
				puts_(o, pct + 1);
			} else {
				puts_(o, h);
			}
			puts_(o, "]");
		}
		puts_(o, ":");
		put_int(o, u->hosts[i].port);
	}
	if (u->db != 0) {
		puts_(o, "/");
		put_int(o, u->db);
	}
	if (u->kind == RLOCK_URL_SENTINEL) {
		puts_(o, "#");
		puts_(o, u->master);
	}
}

static void check_accepted(const char *s, const struct rlock_url *u)
{
	const char *sep = strstr(s, "://");

	REQUIRE(sep != NULL);
	REQUIRE(u->kind == RLOCK_URL_TCP || u->kind == RLOCK_URL_TLS ||
		u->kind == RLOCK_URL_UNIX || u->kind == RLOCK_URL_SENTINEL);
	REQUIRE(u->tls == (strncasecmp(s, "rediss", 6) == 0));
	REQUIRE(u->has_password == 0 || u->has_password == 1);
	REQUIRE(terminated(u->user, sizeof(u->user)));
	REQUIRE(terminated(u->password, sizeof(u->password)));
	REQUIRE(terminated(u->path, sizeof(u->path)));
	REQUIRE(terminated(u->master, sizeof(u->master)));
	REQUIRE(u->has_password || u->password[0] == '\0');
	REQUIRE(u->db >= 0);
	REQUIRE(u->nhosts >= 1 && u->nhosts <= RLOCK_URL_MAX_HOSTS);

	if (u->kind == RLOCK_URL_UNIX) {
		REQUIRE(u->nhosts == 1);
		REQUIRE(u->path[0] == '/' && strlen(u->path) >= 2);
		REQUIRE(strlen(u->path) < sizeof(((struct sockaddr_un *)0)->sun_path));
		REQUIRE(u->user[0] == '\0' && !u->has_password);
		REQUIRE(u->master[0] == '\0');
		REQUIRE(all_zero(u->hosts, sizeof(u->hosts)));
		return;
	}
	REQUIRE(u->path[0] == '\0');
	REQUIRE(u->kind == RLOCK_URL_SENTINEL || u->nhosts == 1);
	REQUIRE((u->kind == RLOCK_URL_SENTINEL) == (u->master[0] != '\0'));
	for (const char *m = u->master; *m != '\0'; m++)
		REQUIRE((unsigned char)*m > 0x20 && *m != 0x7f && *m != '#');
	for (size_t i = 0; i < RLOCK_URL_MAX_HOSTS; i++) {
		if (i >= u->nhosts) {
			REQUIRE(all_zero(&u->hosts[i], sizeof(u->hosts[i])));
			continue;
		}
		REQUIRE(terminated(u->hosts[i].host, sizeof(u->hosts[i].host)));
		REQUIRE(host_ok(u->hosts[i].host));
		REQUIRE(u->hosts[i].port >= 1 && u->hosts[i].port <= 65535);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rlock_url u, before, again;
	static struct out o;
	char *s = fuzz_cstr(data, size);
	const char *why = "not set";
	int rc;

	memset(&u, FILL, sizeof(u));
	memcpy(&before, &u, sizeof(u));
	rc = rl_url_parse(s, &u, &why);
	REQUIRE(rc == 0 || rc == -1);
	if (rc != 0) {
		REQUIRE(why != NULL && why[0] != '\0');
		REQUIRE(memcmp(&u, &before, sizeof(u)) == 0);
		REQUIRE(rl_url_parse(s, &again, NULL) == -1);
		free(s);
		return 0;
	}
	REQUIRE(why == NULL);
	check_accepted(s, &u);

	/* What was read can be written, and reads back the same. */
	write_url(&u, &o);
	memset(&again, FILL, sizeof(again));
	why = NULL;
	rc = rl_url_parse(o.buf, &again, &why);
	if (rc != 0)
		fprintf(stderr, "rewritten as '%s': %s\n", o.buf, why);
	REQUIRE(rc == 0);
	REQUIRE(memcmp(&u, &again, sizeof(u)) == 0);
	free(s);
	return 0;
}
