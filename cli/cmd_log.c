/*
 * cmd_log.c - what happened to a lock: rlock log (its history, or a live
 * view of it with --follow) and rlock last (its last run, as a monitoring
 * check or Prometheus metrics).  The events are formatted here for status
 * too.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

#define LOG_DEFAULT 20
#define LOG_MOST 100000
#define FOLLOW_MS 250

/* ---- formatting events -------------------------------------------------- */

/* A number, or null when not known (< 0). */
static void json_num(FILE *f, const char *key, long long v)
{
	if (v >= 0)
		fprintf(f, ",\"%s\":%lld", key, v);
	else
		fprintf(f, ",\"%s\":null", key);
}

void cli_event_json(FILE *f, const struct rlock_event *e, int servers)
{
	fputs("{\"event\":", f);
	cli_json_str(f, e->event);
	fprintf(f, ",\"time_ms\":%lld,\"id\":", e->time_ms);
	cli_json_str(f, e->id);
	fputs(",\"host\":", f);
	cli_json_str(f, e->host);
	fputs(",\"user\":", f);
	cli_json_str(f, e->user);
	json_num(f, "pid", e->pid);
	fputs(",\"kind\":", f);
	cli_json_str(f, e->kind);
	json_num(f, "fence", e->fence);
	json_num(f, "slot", e->slot);
	/* A pool holder's members, one a line: an array, null none. */
	if (e->members[0] != '\0') {
		fputs(",\"members\":", f);
		cli_json_lines(f, e->members);
	} else {
		fputs(",\"members\":null", f);
	}
	fputs(",\"token\":", f);
	cli_json_str(f, e->token);
	json_num(f, "waited_ms", e->waited_ms);
	json_num(f, "held_ms", e->held_ms);
	json_num(f, "exit", e->exit);
	cli_json_opt(f, "signal", e->signal);
	cli_json_opt(f, "reason", e->reason);
	fputs(",\"command\":", f);
	cli_json_str(f, e->command);
	cli_json_opt(f, "note", e->note);
	/* A grant of several locks (--with): the others, in order. */
	if (e->with[0] != '\0') {
		const char *p = e->with;

		fputs(",\"with\":[", f);
		for (;;) {
			const char *nl = strchr(p, '\n');
			char one[RLOCK_NAME_MAX + 1];
			size_t len = nl != NULL ? (size_t)(nl - p) : strlen(p);

			snprintf(one, sizeof(one), "%.*s", (int)len, p);
			cli_json_str(f, one);
			if (nl == NULL)
				break;
			fputc(',', f);
			p = nl + 1;
		}
		fputc(']', f);
	}
	/* A field another client wrote that does not decode: its value is
	 * null above, and this says which and what it held. */
	if (e->trimmed)
		fputs(",\"trimmed\":true", f);
	if (e->junk[0] != '\0') {
		fputs(",\"unreadable\":", f);
		cli_json_str(f, e->junk);
	}
	if (servers > 1)
		fprintf(f, ",\"servers\":%d", e->servers);
	fputs("}", f);
}

/* How a run ended: "exit 0", "exit 143 (SIGTERM)", "released" (status not
 * known), "lost (why)", "stepped down (why)"; with the time held.  Escaped for a terminal. */
const char *cli_event_outcome(const struct rlock_event *e, char *buf,
			      size_t len)
{
	char held[32], how[400], line[600];

	if (strcmp(e->event, "lost") == 0 && e->reason[0] == '\0')
		snprintf(how, sizeof(how), "lost");
	else if (strcmp(e->event, "lost") == 0)
		snprintf(how, sizeof(how), "lost (%s)", e->reason);
	else if (strcmp(e->event, "stepped-down") == 0 && e->reason[0] != '\0')
		snprintf(how, sizeof(how), "stepped down (%s)", e->reason);
	else if (strcmp(e->event, "stepped-down") == 0)
		snprintf(how, sizeof(how), "stepped down");
	else if (e->trimmed)
		snprintf(how, sizeof(how), "ended well (its history entry has "
			 "been trimmed)");
	else if (strcmp(e->event, "abandoned") == 0)
		snprintf(how, sizeof(how), "abandoned (the process that held "
			 "it ended without releasing)");
	else if (strncmp(e->junk, "exit ", 5) == 0)
		snprintf(how, sizeof(how), "released, exit status unreadable "
			 "(%s)", e->junk);
	else if (e->exit >= 0 && e->signal[0] != '\0')
		snprintf(how, sizeof(how), "exit %d (SIG%s)", e->exit,
			 e->signal);
	else if (e->exit >= 0)
		snprintf(how, sizeof(how), "exit %d", e->exit);
	else
		snprintf(how, sizeof(how), "released, exit status not "
			 "recorded");
	/* Another field another client wrote that does not read is said
	 * too: a signal that does not is why exit 0 is no success. */
	if (e->junk[0] != '\0' && strncmp(e->junk, "exit ", 5) != 0) {
		size_t n = strlen(how);

		snprintf(how + n, sizeof(how) - n, " [unreadable: %s]",
			 e->junk);
	}
	if (e->held_ms >= 0)
		snprintf(line, sizeof(line), "%s after %s", how,
			 rlock_fmt_ms(e->held_ms, held, sizeof(held)));
	else
		snprintf(line, sizeof(line), "%s", how);
	return cli_vis(buf, len, line);
}

/* "2h ago on web3 (root pid 5522)", escaped for a terminal. */
const char *cli_event_when(const struct rlock_event *e, char *buf,
			   size_t len)
{
	char ago[32];
	long long d = cli_wall_ms() - e->time_ms;
	char who[128] = "", line[600];

	/* An entry written by another client may lack the user or pid. */
	if (e->user[0] != '\0' && e->pid >= 0)
		snprintf(who, sizeof(who), " (%s pid %lld)", e->user, e->pid);
	else if (e->user[0] != '\0')
		snprintf(who, sizeof(who), " (%s)", e->user);
	else if (e->pid >= 0)
		snprintf(who, sizeof(who), " (pid %lld)", e->pid);
	/* Where is in the entry, which trimming took: only when is left. */
	if (e->trimmed)
		snprintf(line, sizeof(line), "%s ago",
			 rlock_fmt_ms(d > 0 ? d : 0, ago, sizeof(ago)));
	else
		snprintf(line, sizeof(line), "%s ago on %s%s",
			 rlock_fmt_ms(d > 0 ? d : 0, ago, sizeof(ago)),
			 e->host[0] != '\0' ? e->host : "an unknown host", who);
	return cli_vis(buf, len, line);
}

/* One event for people: local time, event, who, and what is known; the
 * line escaped whole (rlock's own words in it are printable ASCII). */
static void print_event(FILE *f, const struct rlock_event *e, int servers)
{
	char when[32], who[400], d[32], line[2048], vis[CLI_VIS(2048)];
	time_t t = (time_t)(e->time_ms / 1000);
	struct tm tm;
	size_t n;

	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	if (e->pid >= 0)
		snprintf(who, sizeof(who), "%s@%s pid %lld", e->user, e->host,
			 e->pid);
	else
		snprintf(who, sizeof(who), "%s@%s", e->user, e->host);
	n = (size_t)snprintf(line, sizeof(line), "%s  %-8s  %s", when,
			     e->event, who);
#define ADD(...)                                                          \
	do {                                                              \
		if (n < sizeof(line))                                     \
			n += (size_t)snprintf(line + n, sizeof(line) - n, \
					      __VA_ARGS__);               \
	} while (0)
	if (e->fence >= 0)
		ADD("  fence %lld", e->fence);
	if (e->slot >= 0)
		ADD("  slot %lld", e->slot);
	if (e->members[0] != '\0') {
		ADD("  members ");
		for (const char *p = e->members; *p != '\0'; p++)
			ADD("%c", *p == '\n' ? ',' : *p);
	}
	if (e->waited_ms >= 0)
		ADD("  waited %s", rlock_fmt_ms(e->waited_ms, d, sizeof(d)));
	if (e->held_ms >= 0)
		ADD("  held %s", rlock_fmt_ms(e->held_ms, d, sizeof(d)));
	if (e->exit >= 0)
		ADD("  exit %d", e->exit);
	else if (strcmp(e->event, "released") == 0)
		ADD("  exit ?");
	if (e->junk[0] != '\0')
		ADD("  [unreadable: %s]", e->junk);
	if (e->signal[0] != '\0')
		ADD("  signal %s", e->signal);
	if (e->reason[0] != '\0')
		ADD("  (%s)", e->reason);
	if (e->command[0] != '\0')
		ADD("  %s", e->command);
	if (e->note[0] != '\0')
		ADD("  note: %s", e->note);
	if (e->with[0] != '\0') {
		char ws[2 * sizeof(e->with)];
		size_t k = 0;

		for (const char *p = e->with; *p != '\0'; p++) {
			if (*p == '\n')
				ws[k++] = ',', ws[k++] = ' ';
			else
				ws[k++] = *p;
		}
		ws[k] = '\0';
		ADD("  with %s", ws);
	}
	if (servers > 1 && e->servers < servers)
		ADD("  [recorded by %d of %d servers]", e->servers, servers);
#undef ADD
	fprintf(f, "%s\n", cli_vis(vis, sizeof(vis), line));
}

static void show_events(const struct cli *g, const struct rlock_event *ev,
			size_t n, int servers)
{
	for (size_t i = 0; i < n; i++) {
		if (g->json) {
			cli_event_json(stdout, &ev[i], servers);
			putchar('\n');
		} else {
			print_event(stdout, &ev[i], servers);
		}
	}
}

/* ---- rlock log -------------------------------------------------------- */

static volatile sig_atomic_t stop_following;

static void on_stop(int sig)
{
	(void)sig;
	stop_following = 1;
}

/* Print what is recorded after cur until SIGINT or SIGTERM; a server that
 * cannot be reached for a while (a restart, a failover) is asked again. */
static int follow(struct cli *g, struct rlock *rl, const char *name,
		  struct rlock_log_cursor *cur)
{
	struct sigaction sa;
	struct rlock_event *ev;
	size_t n;
	int rc, said = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	while (!stop_following) {
		struct timespec ts = { 0, FOLLOW_MS * 1000000L };

		nanosleep(&ts, NULL);
		if (stop_following)
			break;
		rc = rlock_log_follow(rl, name, cur, &ev, &n);
		if (rc == RLOCK_EUNAVAIL) {
			if (!said && g->verbose > 0)
				cli_warn(g, "%s (trying again)",
					 rlock_errstr(rl));
			said = 1;
			continue;
		}
		if (rc != RLOCK_OK) {
			cli_warn(g, "%s", rlock_errstr(rl));
			return cli_exit_code(rc, EX_TEMPFAIL);
		}
		said = 0;
		show_events(g, ev, n, (int)rlock_nservers(rl));
		free(ev);
		if (cli_flush_stdout(g) != 0)
			return EX_OSERR;
	}
	return EX_OK;
}

int cmd_log(int argc, char **argv, struct cli *g)
{
	static const struct option longopts[] = {
		CLI_GLOBAL_LONG,
		{ "lines", required_argument, NULL, 'n' },
		{ "since", required_argument, NULL, OPT_SINCE },
		{ "follow", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	struct rlock_log_cursor cur;
	struct rlock_event *ev;
	struct rlock *rl;
	const char *name;
	long long since = 0;
	size_t n, max = LOG_DEFAULT;
	int c, rc, follow_on = 0, ret;

	while ((c = cli_getopt(argc, argv, CLI_GLOBAL_SHORT "n:f",
			       longopts)) != -1) {
		if (cli_global_option(g, c, optarg))
			continue;
		switch (c) {
		case 'n':
			max = (size_t)cli_int(g, "-n", optarg, 1, LOG_MOST);
			break;
		case OPT_SINCE:
			since = cli_wall_ms() - cli_duration(g, "--since", optarg,
							 0, 0);
			break;
		case 'f':
			follow_on = 1;
			break;
		default:
			cli_bad_option(g, c, argv);
		}
	}
	name = cli_one_name(g, argc, argv);
	cli_finish(g);
	rl = cli_open(g);
	rc = rlock_log(rl, name, max, since > 0 ? since : 0, &ev, &n, &cur);
	if (rc != RLOCK_OK) {
		cli_warn(g, "%s", rlock_errstr(rl));
		rlock_free(rl);
		return cli_exit_code(rc, EX_TEMPFAIL);
	}
	show_events(g, ev, n, (int)rlock_nservers(rl));
	free(ev);
	if (cli_flush_stdout(g) != 0) {
		rlock_free(rl);
		return EX_OSERR;
	}
	if (follow_on) {
		ret = follow(g, rl, name, &cur);
	} else if (n == 0) {
		if (g->verbose >= 0)
			cli_warn(g, "%s: no history", name);
		ret = EX_FREE;
	} else {
		ret = EX_OK;
	}
	rlock_free(rl);
	return ret;
}

/* ---- rlock last ------------------------------------------------------- */

struct last {
	const char *name;
	struct rlock_event run, ok;
	int has_run, has_ok;
	struct rlock_holder leader;	/* who leads it (rlock lead) */
	int has_leader;
};

/* Whether holder h is a candidate of rlock lead in its term: an exclusive
 * holder whose command is marked so (cmd_lead.c's label). */
static int is_leader(const struct rlock_holder *h)
{
	return h->held && !h->shared && !h->pool && h->limit <= 1 &&
	       strncmp(h->command, "lead: ", 6) == 0;
}

/* "root@web3 pid 5522 (fence 17...) since 2026-12-03 10:06:37, 3m ago",
 * escaped for a terminal. */
static const char *leader_text(const struct rlock_holder *h, char *buf,
			       size_t len)
{
	char line[700], when[32], ago[32], fence[40] = "";
	time_t t = (time_t)(h->since_ms / 1000);
	struct tm tm;
	size_t n;

	if (h->fence > 0)
		snprintf(fence, sizeof(fence), " (fence %lld)", h->fence);
	n = (size_t)snprintf(line, sizeof(line), "%s@%s pid %lld%s", h->user,
			     h->host, h->pid, fence);
	if (h->since_ms > 0 && n < sizeof(line)) {
		localtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		snprintf(line + n, sizeof(line) - n, " since %s, %s ago", when,
			 rlock_fmt_ms(h->age_ms > 0 ? h->age_ms : 0, ago,
				      sizeof(ago)));
	}
	return cli_vis(buf, len, line);
}

/* Whether l has no success that ended within max_age of now. */
static int stale(const struct last *l, int64_t max_age, long long now)
{
	return !l->has_ok || now - l->ok.time_ms > max_age;
}

static void print_last(const struct last *l, int64_t max_age, long long now)
{
	char when[CLI_VIS(600)], how[CLI_VIS(600)], okwhen[CLI_VIS(600)];
	char age[32], name[CLI_VIS(RLOCK_NAME_MAX)];

	cli_vis(name, sizeof(name), l->name);
	if (max_age < 0) {
		char who[CLI_VIS(700)];

		if (l->has_leader)
			printf("%s: led by %s\n", name,
			       leader_text(&l->leader, who, sizeof(who)));
		if (!l->has_run)
			printf("%s: never ran\n", name);
		else
			printf("%s: last run ended %s: %s\n", name,
			       cli_event_when(&l->run, when, sizeof(when)),
			       cli_event_outcome(&l->run, how, sizeof(how)));
		return;
	}
	if (!stale(l, max_age, now))
		return;
	printf("%s: no successful run within %s: last success %s; ", name,
	       rlock_fmt_ms(max_age, age, sizeof(age)), l->has_ok ?
	       cli_event_when(&l->ok, okwhen, sizeof(okwhen)) : "never");
	if (l->has_run)
		printf("last run %s: %s\n",
		       cli_event_when(&l->run, when, sizeof(when)),
		       cli_event_outcome(&l->run, how, sizeof(how)));
	else
		printf("never ran\n");
}

static void json_last(const struct last *l, int64_t max_age, long long now,
		      int servers)
{
	fputs("{\"lock\":", stdout);
	cli_json_str(stdout, l->name);
	fputs(",\"last\":", stdout);
	if (l->has_run)
		cli_event_json(stdout, &l->run, servers);
	else
		fputs("null", stdout);
	fputs(",\"last_success\":", stdout);
	if (l->has_ok)
		cli_event_json(stdout, &l->ok, servers);
	else
		fputs("null", stdout);
	if (max_age >= 0)
		printf(",\"stale\":%s", stale(l, max_age, now) ? "true" :
		       "false");
	/* Who leads, only while a candidate of rlock lead does (as stale
	 * is there only with --max-age). */
	if (l->has_leader) {
		const struct rlock_holder *h = &l->leader;

		fputs(",\"leader\":{\"host\":", stdout);
		cli_json_str(stdout, h->host);
		fputs(",\"user\":", stdout);
		cli_json_str(stdout, h->user);
		printf(",\"pid\":%lld", h->pid);
		json_num(stdout, "fence", h->fence > 0 ? h->fence : -1);
		json_num(stdout, "since_ms", h->since_ms > 0 ? h->since_ms : -1);
		fputs(",\"command\":", stdout);
		cli_json_str(stdout, h->command);
		fputs("}", stdout);
	}
	fputs("}\n", stdout);
}

/* A lock name as a Prometheus label value. */
static void prom_label(const char *name)
{
	fputs("{lock=", stdout);
	cli_prom_str(stdout, name);
	fputs("}", stdout);
}

enum { M_SUCCESS, M_RUN, M_EXIT, M_DURATION, M_COUNT };

static const char *const metric[M_COUNT][2] = {
	{ "rlock_last_success_timestamp_seconds", "When the last successful "
	  "run of the lock ended (exit status 0), in seconds since the "
	  "epoch." },
	{ "rlock_last_run_timestamp_seconds", "When the last run of the lock "
	  "ended, in seconds since the epoch." },
	{ "rlock_last_run_exit_code", "The exit status of the last run of the "
	  "lock (76: the lock was lost)." },
	{ "rlock_last_run_duration_seconds", "How long the last run of the "
	  "lock held it, in seconds." },
};

/* The value of metric m for l; 0 when l has no sample of it. */
static int prom_value(const struct last *l, int m, double *v)
{
	switch (m) {
	case M_SUCCESS:
		*v = (double)l->ok.time_ms / 1000.0;
		return l->has_ok;
	case M_RUN:
		*v = (double)l->run.time_ms / 1000.0;
		return l->has_run;
	case M_EXIT:
		/* A lost run is what rlock run exits with then, whatever
		 * its command did after it was stopped. */
		if (l->has_run && strcmp(l->run.event, "lost") == 0)
			*v = EX_LOST;
		else if (l->has_run && l->run.exit >= 0)
			*v = l->run.exit;
		else
			return 0;
		return 1;
	case M_DURATION:
		*v = (double)l->run.held_ms / 1000.0;
		return l->has_run && l->run.held_ms >= 0;
	}
	return 0;
}

/* Who leads each lock, while one does (no sample otherwise, as for a
 * lock that never ran): an info gauge (1) with its host, user and pid as
 * labels, the start of its term and its fence. */
static void prom_leaders(const struct last *all, size_t n)
{
	char pid[24];

	printf("# HELP rlock_leader_info Who leads the lock (value 1): the "
	       "host, user and pid of its rlock lead.\n"
	       "# TYPE rlock_leader_info gauge\n");
	for (size_t i = 0; i < n; i++) {
		const struct rlock_holder *h = &all[i].leader;

		if (!all[i].has_leader)
			continue;
		fputs("rlock_leader_info{lock=", stdout);
		cli_prom_str(stdout, all[i].name);
		fputs(",host=", stdout);
		cli_prom_str(stdout, h->host);
		fputs(",user=", stdout);
		cli_prom_str(stdout, h->user);
		snprintf(pid, sizeof(pid), "%lld", h->pid);
		fputs(",pid=", stdout);
		cli_prom_str(stdout, pid);
		fputs("} 1\n", stdout);
	}
	printf("# HELP rlock_leader_since_seconds When the leader's term "
	       "began, in seconds since the epoch.\n"
	       "# TYPE rlock_leader_since_seconds gauge\n");
	for (size_t i = 0; i < n; i++) {
		if (!all[i].has_leader || all[i].leader.since_ms <= 0)
			continue;
		fputs("rlock_leader_since_seconds", stdout);
		prom_label(all[i].name);
		printf(" %.3f\n", (double)all[i].leader.since_ms / 1000.0);
	}
	printf("# HELP rlock_leader_fence The fence of the leader's term.\n"
	       "# TYPE rlock_leader_fence gauge\n");
	for (size_t i = 0; i < n; i++) {
		if (!all[i].has_leader || all[i].leader.fence <= 0)
			continue;
		fputs("rlock_leader_fence", stdout);
		prom_label(all[i].name);
		printf(" %lld\n", all[i].leader.fence);
	}
}

/* The node_exporter textfile collector's format. */
static void print_prometheus(const struct last *all, size_t n)
{
	for (int m = 0; m < M_COUNT; m++) {
		printf("# HELP %s %s\n# TYPE %s gauge\n", metric[m][0],
		       metric[m][1], metric[m][0]);
		for (size_t i = 0; i < n; i++) {
			double v;

			if (!prom_value(&all[i], m, &v))
				continue;
			fputs(metric[m][0], stdout);
			prom_label(all[i].name);
			printf(m == M_EXIT ? " %.0f\n" : " %.3f\n", v);
		}
	}	prom_leaders(all, n);
}

int cmd_last(int argc, char **argv, struct cli *g)
{
	static const struct option longopts[] = {
		CLI_GLOBAL_LONG,
		{ "max-age", required_argument, NULL, OPT_MAX_AGE },
		{ "prometheus", no_argument, NULL, OPT_PROMETHEUS },
		{ NULL, 0, NULL, 0 },
	};
	struct last *all;
	struct rlock *rl;
	int64_t max_age = -1;
	long long now;
	size_t n, i;
	int c, rc = RLOCK_OK, prometheus = 0, any_stale = 0, ret;

	while ((c = cli_getopt(argc, argv, CLI_GLOBAL_SHORT, longopts)) != -1) {
		if (cli_global_option(g, c, optarg))
			continue;
		if (c == OPT_MAX_AGE)
			max_age = cli_duration(g, "--max-age", optarg, 0, 0);
		else if (c == OPT_PROMETHEUS)
			prometheus = 1;
		else
			cli_bad_option(g, c, argv);
	}
	if (optind >= argc)
		cli_usage_error(g, "missing lock NAME");
	if (prometheus && g->json)
		cli_usage_error(g, "--prometheus and --json cannot be "
				"combined");
	for (i = (size_t)optind; i < (size_t)argc; i++)
		cli_check_name(g, argv[i]);
	cli_finish(g);
	n = (size_t)(argc - optind);
	all = calloc(n, sizeof(*all));
	if (all == NULL) {
		cli_warn(g, "out of memory");
		return EX_OSERR;
	}
	rl = cli_open(g);
	for (i = 0; i < n && rc == RLOCK_OK; i++) {
		all[i].name = argv[optind + (int)i];
		rc = rlock_last(rl, all[i].name, &all[i].run, &all[i].has_run,
				&all[i].ok, &all[i].has_ok);
		/* A record another client wrote, never a success: said
		 * once, escaped with the rest of the line. */
		if (rc == RLOCK_OK && rlock_last_junk(rl) != NULL &&
		    g->verbose >= 0)
			cli_warn(g, "%s: %s", all[i].name, rlock_last_junk(rl));
		/* Who leads it now, when a candidate of rlock lead holds
		 * it. */
		if (rc == RLOCK_OK)
			rc = rlock_status(rl, all[i].name, &all[i].leader,
					  NULL);
		all[i].has_leader = rc == RLOCK_OK &&
				    is_leader(&all[i].leader);
	}
	if (rc != RLOCK_OK) {
		cli_warn(g, "%s", rlock_errstr(rl));
		ret = cli_exit_code(rc, EX_TEMPFAIL);
		goto out;
	}
	now = cli_wall_ms();
	if (prometheus)
		print_prometheus(all, n);
	for (i = 0; i < n; i++) {
		if (max_age >= 0 && stale(&all[i], max_age, now))
			any_stale = 1;
		if (g->json)
			json_last(&all[i], max_age, now,
				  (int)rlock_nservers(rl));
		else if (!prometheus)
			print_last(&all[i], max_age, now);
	}
	ret = cli_flush_stdout(g) != 0 ? EX_OSERR : any_stale ? EX_FREE :
	      EX_OK;
out:
	free(all);
	rlock_free(rl);
	return ret;
}
