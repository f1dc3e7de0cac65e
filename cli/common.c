/*
 * common.c - option handling, messages and exit statuses shared by every
 * subcommand.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/*
 * A user who gave no server did not choose 127.0.0.1:6379 and may not know
 * it was tried: a failure to reach it says it was the default, and how to
 * name another ("cannot connect to 127.0.0.1:6379 (the default; set -u or
 * RLOCK_URL): Connection refused").  Whatever layer worded the failure.
 */
static void name_default(char *buf, size_t len)
{
	static const char what[] = "cannot connect to " CLI_DEFAULT_ADDR;
	static const char note[] = " (the default; set -u or RLOCK_URL)";
	char *at = strstr(buf, what);
	size_t tail;

	if (at == NULL)
		return;
	at += sizeof(what) - 1;
	if (*at != ':' || strlen(buf) + sizeof(note) > len)
		return;
	tail = strlen(at) + 1;
	memmove(at + sizeof(note) - 1, at, tail);
	memcpy(at, note, sizeof(note) - 1);
}

static void vwarn_cmd(const struct cli *g, const char *fmt, va_list ap)
{
	char buf[2048], vis[CLI_VIS(2048)];

	/* The one funnel of messages: a server's error text, a holder's
	 * host or command, a name another client wrote, all reach the
	 * terminal escaped.  rlock's own text is printable ASCII, which
	 * passes as it is. */
	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (g != NULL && g->default_url)
		name_default(buf, sizeof(buf));
	cli_vis(vis, sizeof(vis), buf);
	/* One write, so that lines of concurrent processes do not mix. */
	if (g != NULL && g->cmd != NULL)
		fprintf(stderr, "rlock: %s: %s\n", g->cmd, vis);
	else
		fprintf(stderr, "rlock: %s\n", vis);
}

void cli_warn(const struct cli *g, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn_cmd(g, fmt, ap);
	va_end(ap);
}

void cli_usage_error(const struct cli *g, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn_cmd(g, fmt, ap);
	va_end(ap);
	if (g->cmd != NULL)
		fprintf(stderr, "Try 'rlock %s --help'.\n", g->cmd);
	else
		fprintf(stderr, "Try 'rlock --help'.\n");
	exit(EX_USAGE);
}

void cli_bad_option(struct cli *g, int c, char **argv)
{
	const char *opt = argv[optind - 1], *near;
	char buf[64];
	int len;

	/* A long option is named as it was written, without "=value";
	 * a short one by its letter, which may sit in a cluster ("-nx"). */
	if (strncmp(opt, "--", 2) == 0) {
		len = (int)strcspn(opt, "=");
		if (c == ':')
			cli_usage_error(g, "option '%.*s' requires a value",
					len, opt);
		if (optopt != 0 && opt[len] == '=')
			cli_usage_error(g, "option '%.*s' takes no value", len,
					opt);
		near = cli_nearest_option(g->cmd, opt, (size_t)len, buf,
					  sizeof(buf));
		if (near != NULL)
			cli_usage_error(g, "unknown option '%.*s'; did you "
					"mean '%s'?", len, opt, near);
		cli_usage_error(g, "unknown option '%.*s'", len, opt);
	}
	if (c == ':')
		cli_usage_error(g, "option '-%c' requires a value", optopt);
	cli_usage_error(g, "unknown option '-%c'", optopt);
}

int cli_getopt(int argc, char **argv, const char *shortopts,
	       const struct option *longopts)
{
	/* How many operands have been seen, kept in argv[1..seen]: a slot
	 * getopt has passed and never reads again, as "-" mode does not
	 * permute.  The k-th operand's own slot is k or later, so none is
	 * overwritten before it is read. */
	static int seen;
	char opts[128];
	int c;

	if (optind == 0)
		seen = 0;
	snprintf(opts, sizeof(opts), "-:%s", shortopts);
	while ((c = getopt_long(argc, argv, opts, longopts, NULL)) == 1)
		argv[1 + seen++] = optarg;
	if (c == -1) {
		/* Those seen go just before the ones after "--", which
		 * getopt left at argv[optind..]. */
		memmove(argv + optind - seen, argv + 1,
			(size_t)seen * sizeof(*argv));
		optind -= seen;
		seen = 0;
	}
	return c;
}

enum on_lost cli_on_lost(const struct cli *g, const char *arg)
{
	if (strcmp(arg, "term") == 0)
		return LOST_TERM;
	if (strcmp(arg, "kill") == 0)
		return LOST_KILL;
	if (strcmp(arg, "ignore") == 0)
		return LOST_IGNORE;
	cli_usage_error(g, "invalid --on-lost '%s': must be term, kill or "
			"ignore", arg);
}

int64_t cli_duration(const struct cli *g, const char *opt, const char *arg,
		     int ttl, int zero)
{
	int64_t ms;

	if (rlock_parse_duration(arg, &ms) != 0)
		cli_usage_error(g, "invalid %s '%s': not a duration (e.g. 500ms, "
				"30s, 1.5m, 1h30m, 2d)", opt, arg);
	if (ttl && (ms < RLOCK_TTL_MIN_MS || ms > RLOCK_TTL_MAX_MS))
		cli_usage_error(g, "invalid %s '%s': must be between 10ms "
				"and 30d", opt, arg);
	if (!zero && ms == 0)
		cli_usage_error(g, "invalid %s '%s': must be more than zero",
				opt, arg);
	return ms;
}

void cli_check_name(const struct cli *g, const char *name)
{
	const char *why;

	if (rlock_check_name(name, &why) != RLOCK_OK)
		cli_usage_error(g, "invalid lock name: %s", why);
}

static void add_url(struct cli *g, const char *u)
{
	if (g->nurls == CLI_MAX_URLS)
		cli_usage_error(g, "too many servers (at most %d)",
				CLI_MAX_URLS);
	g->urls[g->nurls++] = u;
}

/* A whole number min..max written in digits only, or a usage error. */
int cli_int(const struct cli *g, const char *opt, const char *arg, long min,
	    long max)
{
	long long v;

	/* The one integer parser: digits, a '-' only for a negative one. */
	if (rlock_parse_ll(arg, strlen(arg), min, max, &v) != 0)
		cli_usage_error(g, "invalid %s '%s': must be %ld..%ld", opt,
				arg, min, max);
	return (int)v;
}

static void check_note(const struct cli *g, const char *what,
		       const char *note)
{
	const char *why;

	if (rlock_check_note(note, &why) != RLOCK_OK)
		cli_usage_error(g, "invalid %s: %s", what, why);
}

/* The last of -s and -x given ('s', 'x'), 0 none: flock's letters, where
 * the last one counts; either with --limit N > 1 is a contradiction. */
static char kind_letter;
/* --pool NAME and --count K as given (0: not given). */
static const char *pool_name;
static int count_given, limit_given;

const char *cli_pool(void)
{
	return pool_name;
}

/* The names given with --with, in order (ao->with points here). */
static const char *with_names[RLOCK_WITH_MAX];

int cli_lock_option(const struct cli *g, int c, const char *arg,
		    struct rlock_acquire_opts *ao, int *conflict)
{
	switch (c) {
	case 's':
	case 'x':
		ao->shared = c == 's';
		kind_letter = (char)c;
		return 1;
	case 'l':
		ao->limit = cli_int(g, "--limit", arg, 1, RLOCK_LIMIT_MAX);
		limit_given = 1;
		return 1;
	case OPT_POOL:
		cli_check_name(g, arg);
		pool_name = arg;
		return 1;
	case OPT_COUNT:
		count_given = cli_int(g, "--count", arg, 1, RLOCK_COUNT_MAX);
		return 1;
	case 't':
		ao->ttl_ms = cli_duration(g, "--ttl", arg, 1, 0);
		return 1;
	case 'n':
		ao->wait_ms = 0;
		return 1;
	case 'w':
		ao->wait_ms = cli_duration(g, "--timeout", arg, 0, 1);
		return 1;
	case 'E':
		*conflict = cli_int(g, "--conflict-exit-code", arg, 0, 255);
		return 1;
	case OPT_MIN_HOLD:
		ao->min_hold_ms = cli_duration(g, "--min-hold", arg, 0, 1);
		/* A hold is kept by the lease, which is at most 30 days. */
		if (ao->min_hold_ms > RLOCK_TTL_MAX_MS)
			cli_usage_error(g, "invalid --min-hold '%s': must be "
					"at most 30d", arg);
		return 1;
	case OPT_LABEL:
		ao->label = arg;
		return 1;
	case OPT_WAIT_REPLICAS:
		ao->wait_replicas = cli_int(g, "--wait-replicas", arg, 0,
					    1000);
		return 1;
	case OPT_NOTE:
		check_note(g, "--note", arg);
		ao->note = arg;
		return 1;
	case OPT_PROGRESS:
		/* Kept where the wait reads how often to call back; see
		 * cli_wait_setup. */
		ao->wait_cb_ms = cli_duration(g, "--progress", arg, 0, 0);
		if (ao->wait_cb_ms < 1000 || ao->wait_cb_ms > RLOCK_TTL_MAX_MS)
			cli_usage_error(g, "invalid --progress '%s': must be "
					"between 1s and 30d", arg);
		return 1;
	case OPT_SUPERSEDE:
		ao->supersede = 1;
		return 1;
	case OPT_PRIORITY:
		ao->priority = cli_int(g, "--priority", arg, -100, 100);
		return 1;
	case OPT_WITH:
		if (*arg == '\0')
			cli_usage_error(g, "invalid --with '': empty lock "
					"name");
		cli_check_name(g, arg);
		if (ao->nwith + 1 >= RLOCK_WITH_MAX)
			cli_usage_error(g, "too many --with: at most %d locks "
					"at once", RLOCK_WITH_MAX);
		for (size_t i = 0; i < ao->nwith; i++) {
			if (strcmp(with_names[i], arg) == 0)
				cli_usage_error(g, "invalid --with '%s': named "
						"twice", arg);
		}
		with_names[ao->nwith++] = arg;
		ao->with = with_names;
		return 1;
	}
	return 0;
}

const char *cli_with_text(const char *name,
			  const struct rlock_acquire_opts *ao)
{
	static char buf[512];
	size_t at = 0;

	for (size_t i = 0; i <= ao->nwith && at + 1 < sizeof(buf); i++) {
		snprintf(buf + at, sizeof(buf) - at, "%s%s", i > 0 ? ", " : "",
			 i == 0 ? name : ao->with[i - 1]);
		at = strlen(buf);
	}
	return buf;
}

void cli_with_lookup(struct rlock *rl, const char **name, const char *token)
{
	static struct rlock_with w;

	/* Best effort: a server that refuses the read (an ACL without the
	 * record's key) leaves the lock alone to the plain verb. */
	if (token == NULL || rlock_with_read(rl, *name, &w) != RLOCK_OK ||
	    w.n == 0 || strcmp(w.token, token) != 0)
		return;
	if (rlock_with_adopt(rl, &w) == RLOCK_OK)
		*name = w.name[0];
}

void cli_with_check(const struct cli *g, const char *name,
		    const struct rlock_acquire_opts *ao)
{
	const char *bad = NULL;

	for (size_t i = 0; i < ao->nwith; i++) {
		if (strcmp(ao->with[i], name) == 0)
			cli_usage_error(g, "invalid --with '%s': it is the "
					"lock NAME", name);
	}
	if (ao->nwith == 0)
		return;
	if (pool_name != NULL)
		bad = "--pool";
	else if (ao->shared)
		bad = "--shared";
	else if (ao->limit > 1)
		bad = "--limit";
	else if (ao->once_per_ms > 0)
		bad = "--once-per";
	else if (ao->supersede)
		bad = "--supersede";
	else if (ao->priority != 0)
		bad = "--priority";
	else if (ao->min_hold_ms > 0)
		bad = "--min-hold";
	else if (ao->wait_replicas > 0)
		bad = "--wait-replicas";
	if (bad != NULL)
		cli_usage_error(g, "--with cannot be combined with %s: it "
				"takes exclusive locks only", bad);
}

void cli_lock_check(const struct cli *g, struct rlock_acquire_opts *ao)
{
	const char *v = getenv("RLOCK_NOTE");

	if (ao->note == NULL && v != NULL && *v != '\0') {
		check_note(g, "RLOCK_NOTE", v);
		ao->note = v;
	}
	if (kind_letter != 0 && ao->limit > 1)
		cli_usage_error(g, "--%s and --limit %d cannot be combined: a "
				"semaphore's holders are neither shared nor "
				"exclusive", kind_letter == 's' ? "shared" :
				"exclusive", ao->limit);
	if (count_given && pool_name == NULL)
		cli_usage_error(g, "--count needs --pool");
	if (pool_name != NULL && (limit_given || kind_letter == 's'))
		cli_usage_error(g, "--pool cannot be combined with %s: a "
				"pool's holders take its members",
				limit_given ? "--limit" : "--shared");
	if (pool_name != NULL)
		ao->count = count_given ? count_given : 1;
}

int cli_global_option(struct cli *g, int c, const char *arg)
{
	switch (c) {
	case 'u':
		add_url(g, arg);
		return 1;
	case OPT_PREFIX:
		g->prefix = arg;
		return 1;
	case OPT_CONNECT_TIMEOUT:
		g->connect_timeout_ms = cli_duration(g, "--connect-timeout",
						     arg, 0, 0);
		return 1;
	case OPT_IO_TIMEOUT:
		g->io_timeout_ms = cli_duration(g, "--io-timeout", arg, 0, 0);
		return 1;
	case OPT_PASSWORD_FILE:
		g->password_file = arg;
		return 1;
	case OPT_CACERT:
		g->cacert = arg;
		return 1;
	case OPT_CACERTDIR:
		g->cacertdir = arg;
		return 1;
	case OPT_CERT:
		g->cert = arg;
		return 1;
	case OPT_KEY:
		g->key = arg;
		return 1;
	case OPT_SNI:
		if (*arg == '\0')
			cli_usage_error(g, "invalid --sni '': must be a name");
		g->sni = arg;
		return 1;
	case OPT_INSECURE:
		g->insecure = 1;
		return 1;
	case OPT_SENTINEL_USER:
		if (*arg == '\0')
			cli_usage_error(g, "invalid --sentinel-user '': must "
					"be a name");
		g->sentinel_user = arg;
		return 1;
	case OPT_SENTINEL_PASSWORD_FILE:
		g->sentinel_password_file = arg;
		return 1;
	case 'v':
		g->verbose = 1;
		return 1;
	case 'q':
		g->verbose = -1;
		return 1;
	case OPT_JSON:
		g->json = 1;
		return 1;
	case OPT_NO_LOG:
		g->no_log = 1;
		return 1;
	case 'h':
		cli_help(g);
	case 'V':
		cli_print_version();
		exit(cli_flush_stdout(g) == 0 ? EX_OK : EX_OSERR);
	}
	return 0;
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
			add_url(g, start);
			start = p + 1;
		}
		p++;
	}
	add_url(g, start);
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
			add_url(g, "redis://" CLI_DEFAULT_ADDR);
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

int cli_exit_code(int rc, int conflict)
{
	switch (rc) {
	case RLOCK_OK:
		return EX_OK;
	case RLOCK_BUSY:
		return conflict;
	case RLOCK_NOTOURS:
	case RLOCK_LOST:
		return EX_LOST;
	case RLOCK_EUSAGE:
		return EX_USAGE;
	case RLOCK_EUNAVAIL:
		return EX_UNAVAILABLE;
	case RLOCK_ESYS:
		return EX_OSERR;
	case RLOCK_ENOPERM:
		return EX_NOPERM;
	default:
		return EX_SOFTWARE;
	}
}

const char *cli_holder(const struct rlock_holder *h, char *buf, size_t len)
{
	if (h->host[0] == '\0' && h->pid == 0)
		snprintf(buf, len, "another client (no rlock metadata)");
	else if (h->command[0] != '\0')
		snprintf(buf, len, "%s pid %lld (%s)", h->host, h->pid,
			 h->command);
	else
		snprintf(buf, len, "%s pid %lld", h->host, h->pid);
	return buf;
}

int cli_flush_stdout(const struct cli *g)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_warn(g, "write error: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int cli_live_ok(const struct cli *g)
{
	return g->verbose >= 0 && isatty(STDERR_FILENO) &&
	       getenv("NO_COLOR") == NULL;
}

/* " and N more" after the first of several holders, else "". */
static const char *more(const struct rlock_holder *h, char *buf, size_t len)
{
	buf[0] = '\0';
	if (h->nholders > 1)
		snprintf(buf, len, " and %lld more", h->nholders - 1);
	return buf;
}

void cli_wait_line(const struct rlock_holder *h, int64_t waited, void *arg)
{
	struct cli_waitline *l = arg;
	char who[600], a[32], w[32], place[64] = "", mb[64];
	char vname[CLI_VIS(RLOCK_NAME_MAX)], vwho[CLI_VIS(sizeof(who))];

	/* The words of the progress line in a log ("0 ahead"), so that a
	 * terminal and a CI log say a place in line alike. */
	if (h->place >= 0)
		snprintf(place, sizeof(place), "; %lld ahead", h->place);
	/* Whole seconds: the line is redrawn once a second. */
	rlock_fmt_ms(waited / 1000 * 1000, w, sizeof(w));
	if (h->unreachable != NULL)
		fprintf(stderr, "\rrlock: waiting for %s: trying again: %s; "
			"waited %s\033[K",
			cli_vis(vname, sizeof(vname), l->name),
			cli_vis(vwho, sizeof(vwho), h->unreachable), w);
	else if (!h->held)
		fprintf(stderr, "\rrlock: waiting for %s: being handed to "
			"the next in line; waited %s%s\033[K",
			cli_vis(vname, sizeof(vname), l->name), w,
			place);
	else
		fprintf(stderr, "\rrlock: waiting for %s: held by %s%s for "
			"%s; waited %s%s\033[K",
			cli_vis(vname, sizeof(vname), l->name),
			cli_vis(vwho, sizeof(vwho),
				cli_holder(h, who, sizeof(who))),
			more(h, mb, sizeof(mb)),
			rlock_fmt_ms(h->age_ms > 0 ? h->age_ms / 1000 * 1000 :
				     0, a, sizeof(a)), w, place);
	l->shown = 1;
}

void cli_wait_line_end(struct cli_waitline *l)
{
	if (l->shown)
		fputs("\r\033[K", stderr);
	l->shown = 0;
}

void cli_report_acquire(const struct cli *g, const char *name, int rc,
			struct rlock *rl, const struct rlock_holder *h,
			int64_t wait_ms)
{
	char who[600], tb[32], mb[64];

	/* Superseded, or the period done: an answer, as busy is. */
	if (rc == RLOCK_BUSY && h->skip != 0 && g->verbose < 0)
		return;
	/* Busy with nobody holding it: a quorum granted, too late. */
	if (rc != RLOCK_BUSY || !h->held || h->skip != 0)
		cli_warn(g, "%s", rlock_errstr(rl));
	else if (g->verbose < 0)
		return; /* -q: a busy lock is an answer, not a fault */
	else if (wait_ms > 0)
		cli_warn(g, "%s: timed out after %s; held by %s%s", name,
			 rlock_fmt_ms(wait_ms, tb, sizeof(tb)),
			 cli_holder(h, who, sizeof(who)), more(h, mb, sizeof(mb)));
	else
		cli_warn(g, "%s: held by %s%s", name,
			 cli_holder(h, who, sizeof(who)), more(h, mb, sizeof(mb)));
}

void cli_history_warn(const struct cli *g, const struct rlock *rl)
{
	const char *why = rlock_history_refused(rl);

	/* An ACL that leaves out the history is a choice, said with -v;
	 * another client's data at its key is a fault, said unless -q. */
	if (why != NULL && (g->verbose > 0 ||
			    (g->verbose == 0 && rlock_history_junk(rl))))
		cli_warn(g, "warning: %s", why);
	/* A master that answered but could not be identified had no vote:
	 * the lock stands on the others, and the user should know. */
	if ((why = rlock_unidentified(rl)) != NULL && g->verbose >= 0)
		cli_warn(g, "warning: %s", why);
}

const char *cli_one_name(const struct cli *g, int argc, char **argv)
{
	if (optind >= argc)
		cli_usage_error(g, "missing lock NAME");
	if (argc - optind > 1)
		cli_usage_error(g, "too many arguments");
	cli_check_name(g, argv[optind]);
	return argv[optind];
}

const char *cli_name_token(const struct cli *g, int argc, char **argv,
			   const char **name, int need_token)
{
	const char *token = NULL;

	if (optind >= argc)
		cli_usage_error(g, "missing lock NAME");
	*name = argv[optind++];
	cli_check_name(g, *name);
	if (optind < argc)
		token = argv[optind++];
	if (optind < argc)
		cli_usage_error(g, "too many arguments");
	if (token == NULL && need_token) {
		token = getenv("RLOCK_TOKEN");
		if (token == NULL || *token == '\0')
			cli_usage_error(g, "missing TOKEN (give it or set "
					"RLOCK_TOKEN)");
	}
	return token;
}

long long cli_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cli_proc_stat(pid_t pid, const int *fields, size_t nf,
		  unsigned long long *v)
{
	char path[64], num[24], buf[2048], *p, *end;
	ssize_t n;
	int fd, field;
	size_t k = 0;

	/* No printf: run reads its own stat on its way to the command
	 * (RLOCK_HELD), and printf's pages would cost it 100 KiB of peak
	 * RSS (bench/RESULTS-perf.md). */
	num[rlock_lltoa(num, (long long)pid)] = '\0';
	if (rlock_join(path, sizeof(path),
		       (const char *[]){ "/proc/", num, "/stat", NULL }) < 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* The command name (field 2) is in parentheses and may hold
	 * anything, parentheses too: the fields start after the last ')'. */
	p = strrchr(buf, ')');
	if (p == NULL)
		return -1;
	p++;
	for (field = 3; k < nf && *p != '\0'; field++) {
		while (*p == ' ')
			p++;
		end = p + strcspn(p, " \n");
		if (field == fields[k]) {
			long long x;

			if (rlock_parse_ll(p, (size_t)(end - p), 0, LLONG_MAX,
					   &x) != 0)
				return -1;
			v[k++] = (unsigned long long)x;
		}
		p = end;
	}
	return k == nf ? 0 : -1;
}
