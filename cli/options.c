/*
 * options.c - reading a subcommand's options and operands: durations,
 * numbers, lock names, the lock options every kind shares, sets (--with)
 * and the global options; a bad one is a usage error (64).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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
		cli_add_url(g, arg);
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

int cli_name_operand(int argc, char **argv, const char **name,
		     int *after_dashdash)
{
	int dashdash = strcmp(argv[optind - 1], "--") == 0;

	*name = argv[optind++];
	if (!dashdash)
		return 1;
	*after_dashdash = 1;
	if (optind < argc && strcmp(argv[optind], "--") == 0)
		optind++;
	return 0;
}
