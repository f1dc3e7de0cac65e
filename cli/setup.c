/*
 * setup.c - from the options and the environment to a handle: the
 * servers' URLs, the password, TLS, the history's bounds, then the
 * handle opened.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"

void cli_add_url(struct cli *g, const char *u)
{
	if (g->nurls == CLI_MAX_URLS)
		cli_usage_error(g, "too many servers (at most %d)",
				CLI_MAX_URLS);
	g->urls[g->nurls++] = u;
}

/* Read a password from a file into buf (1024 bytes): the first line,
 * without its newline. */
static void read_password(struct cli *g, const char *path, char *buf)
{
	size_t n;
	FILE *f = fopen(path, "re");

	if (f == NULL) {
		cli_warn(g, "cannot read password file %s: %s", path,
			 strerror(errno));
		exit(EX_USAGE);
	}
	n = fread(buf, 1, 1023, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
}

/* Whether s starts with "scheme://" (RFC 3986: a letter, then letters,
 * digits, '+', '-' or '.'). */
static int starts_url(const char *s)
{
	size_t i = 0;

	if (!isalpha((unsigned char)s[0]))
		return 0;
	while (isalnum((unsigned char)s[i]) || strchr("+-.", s[i]) != NULL)
		i++;
	return s[i] != '\0' && strncmp(s + i, "://", 3) == 0;
}

/* Split RLOCK_URL into URLs: a comma separates two only where a scheme
 * follows it, so that a sentinel URL keeps its own list of hosts. */
static void split_urls(struct cli *g, char *v)
{
	char *start = v, *p = v;

	while ((p = strchr(p, ',')) != NULL) {
		if (starts_url(p + 1)) {
			*p = '\0';
			cli_add_url(g, start);
			start = p + 1;
		}
		p++;
	}
	cli_add_url(g, start);
}

/* A TLS file must be readable: say which option named it, now, rather
 * than as a handshake failure later. */
static void check_readable(const struct cli *g, const char *opt,
			   const char *path, int dir)
{
	int fd;

	if (path == NULL)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC | (dir ? O_DIRECTORY : 0));
	if (fd < 0) {
		cli_warn(g, "cannot read %s %s: %s", opt, path,
			 strerror(errno));
		exit(EX_USAGE);
	}
	close(fd);
}

static int uses_tls(const struct cli *g)
{
	for (size_t i = 0; i < g->nurls; i++) {
		if (strncasecmp(g->urls[i], "rediss://", 9) == 0 ||
		    strncasecmp(g->urls[i], "rediss-sentinel://", 18) == 0)
			return 1;
	}
	return 0;
}

/* The TLS options from the environment where the command line gave none;
 * checked only when a URL asks for TLS, so that a variable set for one
 * server does not break commands against another. */
static void finish_tls(struct cli *g)
{
	const char *v;

	if (g->cacert == NULL && (v = getenv("RLOCK_CACERT")) != NULL &&
	    *v != '\0')
		g->cacert = v;
	if (g->cert == NULL && (v = getenv("RLOCK_CERT")) != NULL &&
	    *v != '\0')
		g->cert = v;
	/* Not RLOCK_KEY: run gives its command that name for the lock's
	 * key, and a nested rlock would read it as a file. */
	if (g->key == NULL && (v = getenv("RLOCK_CERT_KEY")) != NULL &&
	    *v != '\0')
		g->key = v;
	if (!uses_tls(g))
		return;
	if (g->key != NULL && g->cert == NULL)
		cli_usage_error(g, "--key needs --cert");
	check_readable(g, "--cacert", g->cacert, 0);
	check_readable(g, "--cacertdir", g->cacertdir, 1);
	check_readable(g, "--cert", g->cert, 0);
	check_readable(g, "--key", g->key, 0);
}

/* A whole number min..max from the environment, or a usage error. */
static long env_number(const struct cli *g, const char *var, long min,
		       long max)
{
	const char *v = getenv(var);

	return v == NULL || *v == '\0' ? 0 : cli_int(g, var, v, min, max);
}

/* The history's settings from the environment. */
static void finish_log(struct cli *g)
{
	const char *v = getenv("RLOCK_LOG");

	if (v != NULL && *v != '\0') {
		if (strcmp(v, "off") == 0)
			g->no_log = 1;
		else if (strcmp(v, "on") != 0)
			cli_usage_error(g, "invalid RLOCK_LOG '%s': must be "
					"on or off", v);
	}
	g->log_max = env_number(g, "RLOCK_LOG_MAX", 1, 1000000);
	g->log_days = (int)env_number(g, "RLOCK_LOG_DAYS", 1, 3650);
}

void cli_finish(struct cli *g)
{
	const char *v;

	if (g->nurls == 0) {
		v = getenv("RLOCK_URL");
		if (v == NULL || *v == '\0')
			v = getenv("REDIS_URL");
		if (v != NULL && *v != '\0') {
			g->env_urls = strdup(v);
			if (g->env_urls == NULL) {
				cli_warn(g, "out of memory");
				exit(EX_OSERR);
			}
			split_urls(g, g->env_urls);
		}
		if (g->nurls == 0) {
			cli_add_url(g, "redis://" CLI_DEFAULT_ADDR);
			g->default_url = 1;
		}
	}
	finish_tls(g);
	if (g->prefix == NULL) {
		v = getenv("RLOCK_PREFIX");
		g->prefix = v != NULL && *v != '\0' ? v : "rlock:";
	}
	/* Once, though run opens a second handle for its renewal thread. */
	if (g->password_file != NULL) {
		read_password(g, g->password_file, g->password);
		g->has_password = 1;
	} else if ((v = getenv("REDISCLI_AUTH")) != NULL && *v != '\0') {
		snprintf(g->password, sizeof(g->password), "%s", v);
		g->has_password = 1;
	}
	if (g->sentinel_password_file != NULL) {
		read_password(g, g->sentinel_password_file,
			      g->sentinel_password);
		g->has_sentinel_password = 1;
	} else if ((v = getenv("RLOCK_SENTINEL_PASSWORD")) != NULL &&
		   *v != '\0') {
		snprintf(g->sentinel_password, sizeof(g->sentinel_password),
			 "%s", v);
		g->has_sentinel_password = 1;
	}
	if (g->sentinel_user == NULL &&
	    (v = getenv("RLOCK_SENTINEL_USER")) != NULL && *v != '\0')
		g->sentinel_user = v;
	if (g->verbose == -2) {
		v = getenv("RLOCK_VERBOSE");
		g->verbose = v != NULL && strcmp(v, "1") == 0 ? 1 : 0;
	}
	finish_log(g);
}

struct rlock *cli_try_open(struct cli *g, int *rc, char *err, size_t errlen)
{
	struct rlock_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.urls = g->urls;
	cfg.nurls = g->nurls;
	cfg.prefix = g->prefix;
	cfg.connect_timeout_ms = g->connect_timeout_ms;
	cfg.io_timeout_ms = g->io_timeout_ms;
	cfg.password = g->has_password ? g->password : NULL;
	cfg.tls_cacert = g->cacert;
	cfg.tls_cacertdir = g->cacertdir;
	cfg.tls_cert = g->cert;
	cfg.tls_key = g->key;
	cfg.tls_sni = g->sni;
	cfg.tls_insecure = g->insecure;
	cfg.sentinel_user = g->sentinel_user;
	cfg.sentinel_password = g->has_sentinel_password ?
		g->sentinel_password : NULL;
	cfg.no_log = g->no_log;
	cfg.log_max = g->log_max;
	cfg.log_days = g->log_days;
	if (g->insecure && g->verbose > 0 && uses_tls(g) && !g->warned_insecure) {
		cli_warn(g, "warning: --insecure: the server's certificate is "
			 "not verified");
		g->warned_insecure = 1;
	}
	return rlock_new(&cfg, rc, err, errlen);
}

struct rlock *cli_open(struct cli *g)
{
	struct rlock *rl;
	char err[512];
	int rc;

	rl = cli_try_open(g, &rc, err, sizeof(err));
	if (rl == NULL && rc == RLOCK_EUSAGE)
		cli_usage_error(g, "%s", err);
	if (rl == NULL) {
		cli_warn(g, "%s", err);
		exit(cli_exit_code(rc, EX_TEMPFAIL));
	}
	return rl;
}
