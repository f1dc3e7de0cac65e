/*
 * main.c - rlock's entry point: global options, then one subcommand from
 * the table below.  Help is generated from the same table.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/*
 * Each option's line here is the one source of its name, its argument and
 * its one-line help: tests/docs.bats holds the man pages' option lists and
 * the zsh and fish completions' descriptions to it, word for word.  One
 * line each, the text from column 34: "  -x, --long ARG" or "      --long".
 */
#define LOCK_OPTS                                                          \
	"  -t, --ttl DUR                  lease length (default 30s)\n"       \
	"  -n, --nonblock                 fail at once if the lock is held\n"  \
	"  -w, --timeout DUR              wait at most DUR (-w 0 is -n; default: forever)\n" \
	"  -E, --conflict-exit-code N     exit status when not acquired (default 75)\n" \
	"  -s, --shared                   a shared lock: any number of shared holders\n" \
	"  -x, --exclusive                an exclusive lock: one holder (the default)\n" \
	"  -l, --limit N                  a semaphore: up to N holders at once\n" \
	"      --min-hold DUR             keep the lock at least DUR after taking it\n" \
	"      --label TEXT               what status shows as the holder's command\n" \
	"      --note TEXT                a note for status and the history\n" \
	"      --wait-replicas N          wait until N replicas have the lock\n" \
	"      --priority N               -100..100, higher served first (default 0)\n" \
	"      --progress DUR             print a line every DUR of a wait (default 30s)\n" \
	"      --pool NAME                take free members of pool NAME\n"    \
	"      --count K                  with --pool: take K members (default 1)\n" \
	"      --supersede                newest wins: replace the --supersede waiter\n" \
	"      --with NAME                take lock NAME too: all of them or none\n"

const struct cmd cli_cmds[] = {
	{ "run", cmd_run, "run a command while holding a lock",
	  "Usage: rlock run [options] NAME [--] COMMAND [ARG...]\n"
	  "       rlock run [options] NAME -c 'SHELL COMMAND'\n"
	  "       rlock run [options] --pool POOL [--count K] [--] COMMAND [ARG...]\n"
	  "\n"
	  "Take lock NAME (or K free members of POOL), run COMMAND while renewing the\n"
	  "lease, release the lock when COMMAND ends and exit with its status.\n"
	  "\n"
	  "Options:\n" LOCK_OPTS
	  "  -c, --command STRING           run STRING with $SHELL -c (or /bin/sh -c)\n"
	  "      --on-lost term|kill|ignore  what a lost lock does to COMMAND (default term)\n"
	  "  -k, --kill-after DUR           SIGKILL this long after SIGTERM (default 10s)\n"
	  "      --max-time DUR             terminate COMMAND if it runs longer\n"
	  "      --once-per DUR             at most one run that exits 0 per period DUR\n" },
	{ "lead", cmd_lead, "run a command on one candidate at a time, forever",
	  "Usage: rlock lead [options] NAME [--] COMMAND [ARG...]\n"
	  "\n"
	  "Run for leadership of lock NAME until stopped: wait in its line, run COMMAND\n"
	  "while leading (as run does), stop it and go back in line if the lock is lost;\n"
	  "when COMMAND ends, release at once and run again as --restart says.  INT or\n"
	  "TERM leaves the line, or stops COMMAND and hands the lead on; exits 0.\n"
	  "\n"
	  "Options:\n"
	  "  -t, --ttl DUR                  lease length (default 30s)\n"
	  "      --priority N               -100..100, higher served first (default 0)\n"
	  "      --label TEXT               what status shows as the holder's command\n"
	  "      --note TEXT                a note for status and the history\n"
	  "      --wait-replicas N          wait until N replicas have the lock\n"
	  "  -k, --kill-after DUR           SIGKILL this long after SIGTERM (default 10s)\n"
	  "      --restart always|on-failure|never  run again after COMMAND ends (default always)\n"
	  "      --restart-delay DUR        wait DUR before running again (default 1s)\n"
	  "      --leader-file PATH         say fence, since, host and pid in PATH while leading\n"
	  "      --standby                  start COMMAND at once everywhere; signal who leads\n"
	  "      --promote SIG              with --standby: sent when leading (default USR1)\n"
	  "      --demote SIG               with --standby: sent when no longer (default USR2)\n"
	  "      --on-promote CMD           run CMD with sh -c once leading\n"
	  "      --on-demote CMD            run CMD with sh -c when no longer, before the release\n"
	  "      --hook-timeout DUR         kill a hook still running after DUR (default 10s)\n"
	  "      --health CMD               run for leadership only while sh -c CMD passes\n"
	  "      --health-every DUR         run --health this often (default 5s)\n"
	  "      --health-fails N           step down after N failures in a row (default 3)\n" },
	{ "acquire", cmd_acquire, "take a lock and print its token",
	  "Usage: rlock acquire [options] NAME\n"
	  "       rlock acquire [options] --pool POOL [--count K]\n"
	  "\n"
	  "Take lock NAME (or K free members of POOL) and print its token for a later\n"
	  "'rlock release' (with POOL as NAME).\n"
	  "\n"
	  "Options:\n" LOCK_OPTS
	  "      --renew                    renew in the background until released\n"
	  "      --pid PID                  with --renew: release when PID exits\n"
	  "      --on-lost term|kill|ignore  with --renew: what a loss does (default ignore)\n"
	  "      --format token|json|env    what to print (default token; env is for eval)\n" },
	{ "release", cmd_release, "give up a lock held by a token",
	  "Usage: rlock release [options] NAME [TOKEN]\n"
	  "\n"
	  "Release lock NAME if TOKEN (default: $RLOCK_TOKEN) holds it.\n"
	  "\n"
	  "Options:\n"
	  "      --force                    remove the lock whoever holds it\n"
	  "      --status N                 record N (0..255) as how the work ended\n" },
	{ "extend", cmd_extend, "push back the expiry of a held lock",
	  "Usage: rlock extend [options] NAME [TOKEN]\n"
	  "\n"
	  "Extend lock NAME held by TOKEN (default: $RLOCK_TOKEN) to TTL from now.\n"
	  "\n"
	  "Options:\n"
	  "  -t, --ttl DUR                  new lease length from now (default 30s)\n" },
	{ "status", cmd_status, "show who holds locks",
	  "Usage: rlock status [options] [NAME...]\n"
	  "\n"
	  "Show held locks under the prefix, or the named ones.  Exits 1 if a named\n"
	  "lock is free.\n"
	  "\n"
	  "Options:\n"
	  "      --json                     the locks as one JSON document\n" },
	{ "log", cmd_log, "show what happened to a lock",
	  "Usage: rlock log [options] NAME\n"
	  "\n"
	  "Show the history of lock NAME, oldest first: who acquired and released it,\n"
	  "how each run ended, who gave up waiting, who forced it, when it was lost.\n"
	  "Exits 1 when there is none.\n"
	  "\n"
	  "Options:\n"
	  "  -n, --lines N                  the last N events (default 20)\n"
	  "      --since DUR                only events of the last DUR\n"
	  "  -f, --follow                   then print new events until interrupted\n" },
	{ "last", cmd_last, "show the last run of locks, or check it is recent",
	  "Usage: rlock last [options] NAME...\n"
	  "\n"
	  "Show how the last run of each lock ended: where, when, how long, exit status.\n"
	  "With --max-age, a monitoring check: silent and 0 when each lock had a\n"
	  "successful run that ended within DUR, else 1 and a line per stale lock.\n"
	  "\n"
	  "Options:\n"
	  "      --max-age DUR              exit 1 unless each lock succeeded within DUR\n"
	  "      --prometheus               print node_exporter textfile metrics\n" },
	{ "pool", cmd_pool, "define a pool's members, or list who holds each",
	  "Usage: rlock pool [options] NAME [add MEMBER [KEY=VALUE...] | rm MEMBER]\n"
	  "\n"
	  "List the members of pool NAME, their properties and who holds each; add a\n"
	  "member (or set its properties again), or remove one (its holder keeps it\n"
	  "until it releases it).  'rlock run --pool NAME [--count K]' takes K free\n"
	  "members and gives the command RLOCK_RESOURCE (the first), RLOCK_RESOURCE_0\n"
	  "to _K-1, and each property KEY=VALUE as RLOCK_RESOURCE_KEY (the first's) and\n"
	  "RLOCK_RESOURCE_0_KEY..., KEY upper-cased: letters, digits and '_', not\n"
	  "starting with a digit.\n"
	  "\n"
	  "Options:\n"
	  "      --json                     the members as one JSON document\n" },
	{ "bench", cmd_bench, "measure lock throughput, latency and exclusion",
	  "Usage: rlock bench [options]\n"
	  "\n"
	  "Drive C clients from one process through acquire, hold and release cycles\n"
	  "on K lock names of their own (K = C: no contention; K = 1: all contend),\n"
	  "after a PING baseline with the same clients.  Report cycles/s, latency\n"
	  "percentiles, hand-off, how evenly the clients had turns, errors and\n"
	  "violations of mutual exclusion (exit 70 if there was any).\n"
	  "\n"
	  "Options:\n"
	  "  -c, --clients C                concurrent clients (default 50)\n"
	  "  -k, --keys K                   lock names, 1..C (default C)\n"
	  "  -n, --cycles N                 run N cycles in all\n"
	  "  -d, --duration DUR             or run for DUR (default 5s)\n"
	  "  -t, --ttl DUR                  lease length of each acquire (default 10s)\n"
	  "      --hold DUR                 time held per cycle (default 0)\n"
	  "      --gap DUR                  pause before each next acquire (default 0)\n"
	  "  -l, --limit N                  semaphores of N places instead of locks\n"
	  "  -s, --shared                   shared locks instead of exclusive ones\n"
	  "      --no-ping                  skip the PING baseline\n" },
	{ "doctor", cmd_doctor, "check that the servers can keep locks safe",
	  "Usage: rlock doctor [options] [NAME]\n"
	  "\n"
	  "Check every server of the URL(s): reach (connect, TLS, authentication, round\n"
	  "trip), the server (version, mode, role, memory), rights (a real acquire,\n"
	  "extend, wake-up and release of a probe lock that leaves no key behind, SCAN,\n"
	  "PUBSUB) and the safety of its configuration from INFO (eviction, persistence,\n"
	  "replication).  One line per check: ok, note, warn or fail, with the fix.\n"
	  "With NAME the probe lock is NAME.doctor-..., in NAME's cluster slot, so the\n"
	  "ACL key patterns and the master NAME uses are what is tested; NAME's own lock\n"
	  "is not touched.  Exits 0 when nothing warns, 1 when a check warns, 69 when a\n"
	  "server is unreachable, refuses the password, is a replica, is out of memory\n"
	  "or cannot run Lua scripts, 77 when its ACL refuses what rlock needs.\n"
	  "\n"
	  "Options:\n"
	  "      --json                     the checks as one JSON array\n" },
	{ "help", cmd_help, "show help for a command",
	  "Usage: rlock help [COMMAND]\n"
	  "\n"
	  "Show the help of COMMAND, or of rlock.\n" },
	{ NULL, NULL, NULL, NULL },
};

static const char global_opts[] =
	"Global options:\n"
	"  -u, --url URL                  Redis server (repeatable; default $RLOCK_URL)\n"
	"      --prefix PREFIX            key prefix (default $RLOCK_PREFIX or rlock:)\n"
	"      --connect-timeout DUR      connection timeout (default 2s)\n"
	"      --io-timeout DUR           timeout of each request (default 2s)\n"
	"      --password-file FILE       read the password from FILE\n"
	"      --cacert FILE              CA certificates for rediss://\n"
	"      --cacertdir DIR            directory of hashed CA certificates (c_rehash)\n"
	"      --cert FILE                client certificate for mutual TLS\n"
	"      --key FILE                 the client certificate's private key\n"
	"      --sni NAME                 server name to verify instead of the URL's host\n"
	"      --insecure                 do not verify the server's certificate nor name\n"
	"      --sentinel-user NAME       user for the sentinels\n"
	"      --sentinel-password-file FILE  the sentinels' password (not the master's)\n"
	"  -v, --verbose                  more diagnostics\n"
	"  -q, --quiet                    fewer diagnostics\n"
	"      --json                     machine-readable output\n"
	"      --no-log                   record nothing in the locks' history\n"
	"  -h, --help                     show this help\n"
	"  -V, --version                  show the version\n";

/* ---- options as the help names them ------------------------------------ */

/*
 * The help is the one list of each subcommand's options that the user
 * reads (tests/docs.bats holds the completions and the man page to it), so
 * misplaced and mistyped options are looked up in it: every line that
 * starts "  -x, --long" or "      --long" names its options.
 */
static int each_option(const char *text, const char *opt,
		       void (*fn)(const char *o, size_t n, void *arg),
		       void *arg)
{
	const char *p = text;

	while (p != NULL && *p != '\0') {
		const char *q = p, *end = strchr(p, '\n');

		if (strncmp(q, "  -", 3) == 0 || strncmp(q, "      --", 8) == 0) {
			for (;;) {
				size_t n;

				while (*q == ' ')
					q++;
				if (*q != '-')
					break;
				n = strcspn(q, " ,\n");
				if (opt != NULL && strlen(opt) == n &&
				    strncmp(opt, q, n) == 0)
					return 1;
				if (fn != NULL)
					fn(q, n, arg);
				q += n;
				if (*q != ',')
					break;
				q++;
			}
		}
		p = end != NULL ? end + 1 : NULL;
	}
	return 0;
}

static const struct cmd *find_cmd(const char *name)
{
	const struct cmd *c;

	for (c = cli_cmds; name != NULL && c->name != NULL; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

int cli_has_option(const char *cmd, const char *opt)
{
	const struct cmd *c = find_cmd(cmd);

	return each_option(global_opts, opt, NULL, NULL) ||
	       (c != NULL && each_option(c->usage, opt, NULL, NULL));
}

/* The optimal string alignment distance of a and b (an edit is an insert,
 * a delete, a change or two neighbours swapped), at most 64 long each. */
static size_t distance(const char *a, size_t na, const char *b, size_t nb)
{
	size_t d[65][65], i, j, v;

	if (na > 64 || nb > 64)
		return (size_t)-1;
	for (i = 0; i <= na; i++)
		d[i][0] = i;
	for (j = 0; j <= nb; j++)
		d[0][j] = j;
	for (i = 1; i <= na; i++) {
		for (j = 1; j <= nb; j++) {
			v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[na][nb];
}

struct nearest {
	const char *typed;
	size_t ntyped;
	const char *best;
	size_t nbest, dist;
};

static void consider(const char *o, size_t n, void *arg)
{
	struct nearest *near = arg;
	size_t d;

	if (n < 3 || o[1] != '-')
		return;		/* only long options: letters are too near */
	d = distance(near->typed, near->ntyped, o, n);
	if (d < near->dist) {
		near->best = o;
		near->nbest = n;
		near->dist = d;
	}
}

const char *cli_nearest_option(const char *cmd, const char *opt, size_t n,
			       char *buf, size_t len)
{
	const struct cmd *c = find_cmd(cmd);
	struct nearest near = { opt, n, NULL, 0, (size_t)-1 };

	each_option(global_opts, NULL, consider, &near);
	if (c != NULL)
		each_option(c->usage, NULL, consider, &near);
	/* Only a near miss: one edit in a short name, two in a longer
	 * one; a guess further off would mislead. */
	if (near.best == NULL || near.dist == 0 ||
	    near.dist > (n - 2 <= 5 ? 1 : 2))
		return NULL;
	snprintf(buf, len, "%.*s", (int)near.nbest, near.best);
	return buf;
}

/*
 * An option that getopt did not know before the subcommand's name, but
 * that subcommand does ("rlock -w 5s run x"): say where it belongs,
 * with the words that came between it and the name moved there.
 */
static void misplaced_option(struct cli *g, int ch, int argc, char **argv)
{
	const struct cmd *c = NULL;
	char opt[128], moved[256] = "";
	int i, at, k;
	size_t used = 0;

	for (i = optind; i < argc && strcmp(argv[i], "--") != 0; i++)
		if ((c = find_cmd(argv[i])) != NULL)
			break;
	if (c == NULL || ch != '?')
		return;
	at = i;
	/* The word that held the option: getopt moved past it, unless it
	 * stopped inside a cluster of letters ("-nw"). */
	k = optind - 1;
	if (optopt != 0 && optind < at && argv[optind][0] == '-' &&
	    strchr(argv[optind] + 1, optopt) != NULL)
		k = optind;
	if (k < 1 || k >= at)
		return;
	if (strncmp(argv[k], "--", 2) == 0)
		snprintf(opt, sizeof(opt), "%.*s", (int)strcspn(argv[k], "="),
			 argv[k]);
	else if (optopt != 0)
		snprintf(opt, sizeof(opt), "-%c", optopt);
	else
		return;
	if (!cli_has_option(c->name, opt))
		return;
	for (i = k; i < at && used < sizeof(moved); i++)
		used += (size_t)snprintf(moved + used, sizeof(moved) - used,
					 " %s", argv[i]);
	g->cmd = c->name;	/* its help is the one to read */
	cli_usage_error(g, "option '%s' belongs after the subcommand: "
			"rlock %s%s ...", opt, c->name, moved);
}

static void usage(void)
{
	const struct cmd *c;

	printf("Usage: rlock [global options] COMMAND [options] [ARG...]\n"
	       "\n"
	       "Run a command while holding a lock in Redis: flock(1) for a fleet.\n"
	       "\n"
	       "Commands:\n");
	for (c = cli_cmds; c->name != NULL; c++)
		printf("  %-30s %s\n", c->name, c->summary);
	printf("\n%s", global_opts);
	printf("\n"
	       "Environment:\n"
	       "  RLOCK_URL, REDIS_URL, RLOCK_PREFIX, REDISCLI_AUTH, RLOCK_CACERT, RLOCK_CERT,\n"
	       "  RLOCK_CERT_KEY, RLOCK_SENTINEL_USER, RLOCK_SENTINEL_PASSWORD, RLOCK_VERBOSE,\n"
	       "  RLOCK_NOTE, RLOCK_LOG, RLOCK_LOG_MAX, RLOCK_LOG_DAYS, NO_COLOR\n"
	       "\n"
	       "Exit status:\n"
	       "  0 success   1 status: a lock is free; doctor: a check warns;\n"
	       "              log: no history; last --max-age: a lock is stale\n"
	       "  N, 128+N the command's status\n"
	       "  64 usage   69 Redis unavailable   70 internal error   71 system error\n"
	       "  75 not acquired   76 lock lost / not ours   77 refused by the server's ACL\n"
	       "  126, 127 cannot run command\n"
	       "\n"
	       "See rlock(1).\n");
}

void cli_help(const struct cli *g)
{
	const struct cmd *c;

	for (c = cli_cmds; c->name != NULL; c++) {
		if (g->cmd != NULL && strcmp(c->name, g->cmd) == 0) {
			/* Each command has its page, man/rlock-CMD.1; help's is
			 * rlock(1). */
			if (c->fn == cmd_help)
				printf("%s\n%s\nSee rlock(1).\n", c->usage,
				       global_opts);
			else
				printf("%s\n%s\nSee rlock-%s(1).\n", c->usage,
				       global_opts, c->name);
			exit(cli_flush_stdout(g) == 0 ? EX_OK : EX_OSERR);
		}
	}
	usage();
	exit(cli_flush_stdout(g) == 0 ? EX_OK : EX_OSERR);
}

int cmd_help(int argc, char **argv, struct cli *g)
{
	static const struct option longopts[] = { CLI_GLOBAL_LONG,
						  { NULL, 0, NULL, 0 } };
	const struct cmd *c;
	int ch;

	while ((ch = cli_getopt(argc, argv, CLI_GLOBAL_SHORT, longopts)) != -1) {
		if (!cli_global_option(g, ch, optarg))
			cli_bad_option(g, ch, argv);
	}
	if (optind >= argc) {
		g->cmd = NULL;
		cli_help(g);
	}
	if (argc - optind > 1)
		cli_usage_error(g, "too many arguments");
	for (c = cli_cmds; c->name != NULL; c++) {
		if (strcmp(c->name, argv[optind]) == 0) {
			g->cmd = c->name;
			cli_help(g);
		}
	}
	g->cmd = NULL;
	cli_usage_error(g, "unknown command '%s'", argv[optind]);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = { CLI_GLOBAL_LONG,
						  { NULL, 0, NULL, 0 } };
	struct cli g;
	const struct cmd *c;
	int ch;

	/* A caller may start us with standard input, output or error
	 * closed.  Keep those numbers taken, or our first socket would
	 * become standard output and a token be written to the server:
	 * read-only /dev/null, where a write fails as on a closed
	 * descriptor, and close-on-exec, so that a command run gets them
	 * closed as they were given. */
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF &&
		    open("/dev/null", O_RDONLY | O_CLOEXEC) < 0)
			return EX_OSERR;
	memset(&g, 0, sizeof(g));
	/* A reader that went away must not kill us with a lock or a
	 * renewer behind (acquire's token into a closed pipe): a write to
	 * it fails with EPIPE instead, which each subcommand reports (71)
	 * after giving up what it holds.  run gives its command the
	 * disposition we were given. */
	g.pipe_ignored = signal(SIGPIPE, SIG_IGN) == SIG_IGN;
	g.connect_timeout_ms = -1;
	g.io_timeout_ms = -1;
	g.verbose = -2;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "+:" CLI_GLOBAL_SHORT, longopts,
				 NULL)) != -1) {
		if (ch == 'h') {
			usage();
			return cli_flush_stdout(&g) == 0 ? EX_OK : EX_OSERR;
		}
		if (!cli_global_option(&g, ch, optarg)) {
			misplaced_option(&g, ch, argc, argv);
			cli_bad_option(&g, ch, argv);
		}
	}
	if (optind >= argc)
		cli_usage_error(&g, "missing COMMAND");
	for (c = cli_cmds; c->name != NULL; c++) {
		if (strcmp(c->name, argv[optind]) == 0) {
			g.cmd = c->name;
			/* Each subcommand parses from its own name on. */
			argc -= optind;
			argv += optind;
			optind = 0;
			ch = c->fn(argc, argv, &g);
			free(g.env_urls);
			explicit_bzero(g.password, sizeof(g.password));
			return ch;
		}
	}
	cli_usage_error(&g, "unknown command '%s'", argv[optind]);
}
