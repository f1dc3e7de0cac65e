/*
 * cmd_bench.c - rlock bench: drive many clients through acquire, hold and
 * release cycles against one server and report rate, latency, hand-off,
 * errors and any breach of mutual exclusion (exit 70 if there was one).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli.h"
#include "rlock_bench.h"

#define MAX_CLIENTS 100000

enum {
	OPT_HOLD = 1000,
	OPT_NO_PING,
	OPT_GAP,
	OPT_LIMIT,
};

struct bench_args {
	long long clients;
	long long keys;			/* 0: clients */
	long long cycles;		/* 0: duration */
	int64_t duration_ms;
	int64_t ttl_ms;
	int64_t hold_ms;
	int64_t gap_ms;
	long long limit;		/* semaphore places; 0: exclusive */
	int shared;
	int ping;
	int progress;			/* live line on stderr */
};

static long long parse_count(const struct cli *g, const char *opt,
			     const char *arg, long long max)
{
	long long v;

	if (arg[0] == '\0' || strspn(arg, "0123456789") != strlen(arg))
		cli_usage_error(g, "invalid %s '%s': not a number", opt, arg);
	if (rlock_parse_ll(arg, strlen(arg), 1, max, &v) != 0)
		cli_usage_error(g, "invalid %s '%s': must be 1..%lld", opt, arg,
				max);
	return v;
}

/* Enough descriptors for every connection: raise the soft limit as far as
 * the hard one allows, or say what is missing. */
static void raise_nofile(const struct cli *g, long long need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if ((long long)rl.rlim_cur >= need)
		return;
	if (rl.rlim_max == RLIM_INFINITY || (long long)rl.rlim_max >= need)
		rl.rlim_cur = (rlim_t)need;
	else
		rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && (long long)rl.rlim_cur < need)
		cli_usage_error(g, "%lld descriptors needed, the limit is %llu "
				"(ulimit -n)", need,
				(unsigned long long)rl.rlim_cur);
}

/* The live line on a terminal: what has been done of how much. */
static void progress(const struct rlock_bench_result *r, void *arg)
{
	const struct bench_args *a = arg;
	char of[64] = "";

	if (r->phase == RLOCK_BENCH_PING) {
		fprintf(stderr, "\rrlock: bench: PING %.1fs: %lld round trips "
			"(%.0f/s)\033[K", r->ping_elapsed_s, r->pings,
			r->pings_per_s);
	} else if (r->phase == RLOCK_BENCH_LOCK) {
		if (a->cycles > 0)
			snprintf(of, sizeof(of), " of %lld", a->cycles);
		else
			snprintf(of, sizeof(of), "/%.1fs",
				 (double)a->duration_ms / 1000);
		fprintf(stderr, "\rrlock: bench: %.1fs%s: %lld%s cycles "
			"(%.0f/s), %lld errors, %lld violations\033[K",
			r->elapsed_s, a->cycles > 0 ? "" : of, r->cycles,
			a->cycles > 0 ? of : "", r->cycles_per_s, r->errors,
			r->violations);
	}
	fflush(stderr);
}

/* ---- output ------------------------------------------------------------ */

static void json_latency(const char *name, const struct rlock_bench_latency *l,
			 int first)
{
	printf("%s\"%s\":{\"count\":%lld,\"p50\":%.1f,\"p90\":%.1f,"
	       "\"p99\":%.1f,\"p999\":%.1f,\"max\":%.1f,\"mean\":%.1f}",
	       first ? "" : ",", name, l->count, l->p50_us, l->p90_us,
	       l->p99_us, l->p999_us, l->max_us, l->mean_us);
}

static void print_json(const struct bench_args *a,
		       const struct rlock_bench_result *r)
{
	int i;

	fputs("{\"server\":", stdout);
	cli_json_str(stdout, r->server);
	printf(",\"clients\":%d,\"keys\":%d,\"ttl_ms\":%lld,\"hold_ms\":%lld,"
	       "\"gap_ms\":%lld,", r->clients, r->keys, (long long)a->ttl_ms,
	       (long long)a->hold_ms, (long long)a->gap_ms);
	if (a->cycles > 0)
		printf("\"mode\":\"cycles\",\"target_cycles\":%lld,"
		       "\"duration_ms\":null,", a->cycles);
	else
		printf("\"mode\":\"duration\",\"target_cycles\":null,"
		       "\"duration_ms\":%lld,", (long long)a->duration_ms);
	printf("\"setup_ms\":%lld,\"cycles\":%lld,\"elapsed_s\":%.3f,"
	       "\"cycles_per_s\":%.1f,", (long long)r->setup_ms, r->cycles,
	       r->elapsed_s, r->cycles_per_s);
	if (a->ping)
		printf("\"ping\":{\"round_trips\":%lld,\"elapsed_s\":%.3f,"
		       "\"per_s\":%.1f},\"efficiency\":%.4f,", r->pings,
		       r->ping_elapsed_s, r->pings_per_s, r->efficiency);
	else
		fputs("\"ping\":null,\"efficiency\":null,", stdout);
	printf("\"attempts\":%lld,\"busy\":%lld,\"wakeups\":%lld,"
	       "\"timer_wakeups\":%lld,\"batons\":%lld,\"reacquired\":%lld,"
	       "\"abandoned\":%lld,\"noscript\":%lld,", r->attempts, r->busy,
	       r->wakeups, r->timer_wakeups, r->batons, r->reacquired,
	       r->abandoned, r->noscript);
	fputs("\"latency_us\":{", stdout);
	json_latency("acquire", &r->acquire, 1);
	json_latency("release", &r->release, 0);
	json_latency("wait", &r->wait, 0);
	json_latency("handoff", &r->handoff, 0);
	if (a->ping)
		json_latency("ping", &r->ping, 0);
	else
		fputs(",\"ping\":null", stdout);
	printf("},\"longest_wait_us\":%.1f,", r->longest_wait_us);
	printf("\"kind\":\"%s\",", a->shared ? "shared" : a->limit > 1 ?
	       "semaphore" : "exclusive");
	if (a->limit > 1)
		printf("\"limit\":%lld,", a->limit);
	else
		fputs("\"limit\":null,", stdout);
	printf("\"turns\":{\"min\":%lld,\"max\":%lld,\"none\":%lld,"
	       "\"fairness\":%.4f},\"requeued\":%lld,", r->turns_min,
	       r->turns_max, r->starved, r->fairness, r->requeued);
	printf("\"errors\":{\"total\":%lld", r->errors);
	for (i = 0; i < RLOCK_BENCH_NERR; i++)
		printf(",\"%s\":%lld", rlock_bench_error_name(i),
		       r->error_kind[i]);
	printf("},\"violations\":{\"total\":%lld,\"overlap\":%lld,"
	       "\"not_ours\":%lld,\"fence\":%lld},", r->violations,
	       r->overlaps, r->not_ours, r->fence_regressions);
	printf("\"cpu_s\":{\"bench\":%.3f,\"server\":", r->cpu_s);
	if (r->server_cpu_s >= 0)
		printf("%.3f}", r->server_cpu_s);
	else
		fputs("null}", stdout);
	printf(",\"canceled\":%s}\n", r->canceled ? "true" : "false");
}

/* A latency for people: microseconds below 10ms, milliseconds above. */
static const char *fmt_us(double us, char *buf, size_t len)
{
	if (us < 1000)
		snprintf(buf, len, "%.0fus", us);
	else if (us < 10000)
		snprintf(buf, len, "%.2fms", us / 1000);
	else if (us < 1e6)
		snprintf(buf, len, "%.1fms", us / 1000);
	else
		snprintf(buf, len, "%.2fs", us / 1e6);
	return buf;
}

static void human_latency(const char *name, const struct rlock_bench_latency *l)
{
	char a[5][24];

	if (l->count == 0) {
		printf("  %-10s %9s\n", name, "-");
		return;
	}
	printf("  %-10s %9s %9s %9s %9s %9s  (%lld)\n", name,
	       fmt_us(l->p50_us, a[0], sizeof(a[0])),
	       fmt_us(l->p90_us, a[1], sizeof(a[1])),
	       fmt_us(l->p99_us, a[2], sizeof(a[2])),
	       fmt_us(l->p999_us, a[3], sizeof(a[3])),
	       fmt_us(l->max_us, a[4], sizeof(a[4])), l->count);
}

static void print_human(const struct bench_args *a,
			const struct rlock_bench_result *r)
{
	char t1[32], t2[32], t3[32], server[CLI_VIS(sizeof(r->server))];
	int i, any = 0;

	printf("rlock bench: %s, %d clients, %d lock%s (%s), ttl %s, hold %s, ",
	       cli_vis(server, sizeof(server), r->server), r->clients,
	       r->keys, r->keys == 1 ? "" : "s",
	       r->keys == r->clients ? "no contention" :
	       r->keys == 1 ? "all contend" : "some contend",
	       rlock_fmt_ms(a->ttl_ms, t1, sizeof(t1)),
	       a->hold_ms > 0 ? rlock_fmt_ms(a->hold_ms, t2, sizeof(t2)) : "0");
	if (a->gap_ms > 0)
		printf("gap %s, ", rlock_fmt_ms(a->gap_ms, t2, sizeof(t2)));
	if (a->shared)
		printf("shared, ");
	else if (a->limit > 1)
		printf("semaphore of %lld, ", a->limit);
	if (a->cycles > 0)
		printf("%lld cycles\n", a->cycles);
	else
		printf("%s\n", rlock_fmt_ms(a->duration_ms, t3, sizeof(t3)));
	printf("  cycles       %lld in %.2fs = %.0f cycles/s%s\n", r->cycles,
	       r->elapsed_s, r->cycles_per_s,
	       r->canceled ? " (canceled)" : "");
	if (a->ping)
		printf("  PING         %lld in %.2fs = %.0f round trips/s; "
		       "efficiency %.0f%% (cycles/s / (PING/s / 2))\n",
		       r->pings, r->ping_elapsed_s, r->pings_per_s,
		       r->efficiency * 100);
	printf("  acquire      %lld attempts, %lld told held, %lld woken "
	       "(%lld handed the lock), %lld by timer\n", r->attempts, r->busy,
	       r->wakeups, r->batons, r->timer_wakeups);
	printf("  latency          p50       p90       p99     p99.9       "
	       "max  (count)\n");
	human_latency("acquire", &r->acquire);
	human_latency("release", &r->release);
	human_latency("wait", &r->wait);
	human_latency("hand-off", &r->handoff);
	if (a->ping)
		human_latency("PING", &r->ping);
	printf("  hand-offs    %lld to a waiter, %lld re-taken by the releaser\n",
	       r->handoff.count, r->reacquired);
	printf("  turns        %lld to %lld cycles per client, %lld with "
	       "none; fairness %.3f (Jain's index, 1 = even)\n",
	       r->turns_min, r->turns_max, r->starved, r->fairness);
	if (r->requeued > 0)
		printf("  line         %lld places lost and taken again\n",
		       r->requeued);
	printf("  longest wait %s", fmt_us(r->longest_wait_us, t1, sizeof(t1)));
	if (r->abandoned > 0)
		printf(" (%lld waits cut short by the end of the run)",
		       r->abandoned);
	printf("\n");
	printf("  errors       %lld", r->errors);
	for (i = 0; i < RLOCK_BENCH_NERR; i++) {
		if (r->error_kind[i] == 0)
			continue;
		printf("%s%s %lld", any++ ? ", " : " (",
		       rlock_bench_error_name(i), r->error_kind[i]);
	}
	printf("%s\n", any ? ")" : "");
	printf("  violations   %lld", r->violations);
	if (r->violations > 0)
		printf(" (overlap %lld, not ours %lld, fence %lld)",
		       r->overlaps, r->not_ours, r->fence_regressions);
	printf("\n  cpu          bench %.2fs", r->cpu_s);
	/* INFO refused (an ACL user without +info): not a failure. */
	if (r->server_cpu_s >= 0)
		printf(", server %.2fs", r->server_cpu_s);
	else
		printf(", server unknown");
	printf(" (setup %lldms)\n", (long long)r->setup_ms);
}

/* ---- the command ----------------------------------------------------------- */

static void parse(int argc, char **argv, struct cli *g, struct bench_args *a)
{
	static const struct option longopts[] = {
		CLI_GLOBAL_LONG,
		{ "clients", required_argument, NULL, 'c' },
		{ "keys", required_argument, NULL, 'k' },
		{ "cycles", required_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, 'd' },
		{ "ttl", required_argument, NULL, 't' },
		{ "hold", required_argument, NULL, OPT_HOLD },
		{ "gap", required_argument, NULL, OPT_GAP },
		{ "no-ping", no_argument, NULL, OPT_NO_PING },
		{ "limit", required_argument, NULL, 'l' },
		{ "shared", no_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(a, 0, sizeof(*a));
	a->clients = 50;
	a->duration_ms = 5000;
	a->ttl_ms = 10000;
	a->ping = 1;
	while ((c = cli_getopt(argc, argv, CLI_GLOBAL_SHORT "c:k:n:d:t:l:s",
			       longopts)) != -1) {
		switch (c) {
		case 'c':
			a->clients = parse_count(g, "--clients", optarg,
						 MAX_CLIENTS);
			break;
		case 'k':
			a->keys = parse_count(g, "--keys", optarg, MAX_CLIENTS);
			break;
		case 'n':
			a->cycles = parse_count(g, "--cycles", optarg,
						LLONG_MAX / 4);
			break;
		case 'd':
			a->duration_ms = cli_duration(g, "--duration", optarg,
						      0, 0);
			a->cycles = -1;	/* given: beats an earlier -n */
			break;
		case 't':
			a->ttl_ms = cli_duration(g, "--ttl", optarg, 1, 0);
			break;
		case OPT_HOLD:
			a->hold_ms = cli_duration(g, "--hold", optarg, 0, 1);
			break;
		case OPT_GAP:
			a->gap_ms = cli_duration(g, "--gap", optarg, 0, 1);
			break;
		case OPT_NO_PING:
			a->ping = 0;
			break;
		case 'l':
			a->limit = parse_count(g, "--limit", optarg, 100000);
			break;
		case 's':
			a->shared = 1;
			break;
		default:
			if (!cli_global_option(g, c, optarg))
				cli_bad_option(g, c, argv);
		}
	}
	if (optind < argc)
		cli_usage_error(g, "unexpected argument '%s'", argv[optind]);
	if (a->cycles < 0)
		a->cycles = 0;
	if (a->keys > a->clients)
		cli_usage_error(g, "invalid --keys '%lld': must not exceed "
				"--clients (%lld)", a->keys, a->clients);
	if (a->keys == 0)
		a->keys = a->clients;
	if (a->shared && a->limit > 1)
		cli_usage_error(g, "--shared and --limit %lld cannot be "
				"combined: a semaphore's holders are neither "
				"shared nor exclusive", a->limit);
	if (a->hold_ms >= a->ttl_ms)
		cli_usage_error(g, "invalid --hold: must be shorter than --ttl "
				"(bench does not renew)");
}

int cmd_bench(int argc, char **argv, struct cli *g)
{
	struct rlock_bench_opts o;
	struct rlock_bench_result r;
	struct bench_args a;
	struct rlock *rl;
	sigset_t sigs;
	int sfd, rc, signo = 0;
	const char *nc;

	parse(argc, argv, g, &a);
	cli_finish(g);
	if (g->nurls != 1)
		cli_usage_error(g, "bench drives one server: give one --url");
	raise_nofile(g, a.clients * (a.keys < a.clients ? 2 : 1) + 32);
	rl = cli_open(g);

	/* Ctrl-C ends the run early but still releases and reports. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);

	nc = getenv("NO_COLOR");
	a.progress = isatty(STDERR_FILENO) && g->verbose >= 0 &&
		     (nc == NULL || *nc == '\0');
	memset(&o, 0, sizeof(o));
	o.clients = (int)a.clients;
	o.keys = (int)a.keys;
	o.cycles = a.cycles;
	o.duration_ms = a.duration_ms;
	o.ttl_ms = a.ttl_ms;
	o.hold_ms = a.hold_ms;
	o.gap_ms = a.gap_ms;
	o.limit = (int)a.limit;
	o.shared = a.shared;
	if (a.ping) {
		/* Long enough for a steady rate, short next to the run. */
		if (a.cycles > 0)
			o.ping_count = a.cycles * 2 > a.clients * 4 ?
				a.cycles * 2 : a.clients * 4;
		else
			o.ping_ms = a.duration_ms < 1000 ? a.duration_ms : 1000;
	}
	o.cancel_fd = sfd;
	o.progress = a.progress ? progress : NULL;
	o.progress_arg = &a;
	rc = rlock_bench(rl, &o, &r);
	if (a.progress)
		fputs("\r\033[K", stderr);
	if (sfd >= 0) {
		struct signalfd_siginfo si;

		if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			signo = (int)si.ssi_signo;
		close(sfd);
	}
	if (rc != RLOCK_OK) {
		cli_warn(g, "%s", rlock_errstr(rl));
		rlock_free(rl);
		return cli_exit_code(rc, EX_SOFTWARE);
	}
	rlock_free(rl);
	if (g->json)
		print_json(&a, &r);
	else
		print_human(&a, &r);
	if (cli_flush_stdout(g) != 0)
		return EX_OSERR;
	if (r.violations > 0) {
		cli_warn(g, "mutual exclusion violated %lld time%s",
			 r.violations, r.violations == 1 ? "" : "s");
		return EX_SOFTWARE;
	}
	if (r.canceled && signo > 0)
		return 128 + signo;
	return EX_OK;
}
