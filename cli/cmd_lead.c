/*
 * cmd_lead.c - rlock lead: a candidate that runs for leadership of a lock
 * for as long as it lives.  It waits in the lock's line; while it leads it
 * runs the command as run does (cli/child.c: its own process group, the
 * lease renewed, the group stopped before the lease can end when the lock
 * is lost) and then goes back in line; when the command ends, it releases
 * at once, so that the next candidate leads, and runs again as --restart
 * says.  A --leader-file and systemd's notify socket say who leads.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* --restart: whether a candidate whose command ended runs again. */
enum restart { RESTART_ALWAYS, RESTART_ON_FAILURE, RESTART_NEVER };

/* How a term ended. */
enum term_end { END_EXITED, END_LOST, END_STOPPED, END_FAILED, END_HEALTH };

/* What the signals that ended a --standby wait ask. */
enum { GO_ON, GO_STOP, GO_EXITED };

struct lead {
	struct cli *g;
	const char *name;
	char key[RLOCK_KEY_MAX];
	struct rlock_acquire_opts ao;
	struct cli_child c;		/* the command, and how it runs */
	enum restart restart;
	int64_t restart_delay_ms;
	int standby;			/* --standby: the command runs on */
	int promote;			/* its signals: --promote, --demote */
	const char *health;		/* --health, sh -c; NULL none */
	int64_t health_every_ms;
	int health_fails;		/* in a row, to step down */
	int failed_checks;		/* in a row, so far */
	int64_t health_at;		/* the next check, CLOCK_MONOTONIC */
	int64_t passed_at;		/* the last check that passed, or 0 */
	int unwell;			/* eventfd: a check failed in line */
	int stopping;			/* an INT or TERM ended the wait */
	int cancel;			/* epoll of cfd (or sfd) and unwell:
					 * what ends a wait, with --health */
	const char *on_promote;		/* hooks, sh -c; NULL none */
	const char *on_demote;
	int64_t hook_timeout_ms;
	const char *leader_file;
	int file_written;		/* by us, and not removed since */
	char me[48];			/* "PID:START" for RLOCK_HELD */
	char *held;			/* RLOCK_HELD as inherited, or NULL */
	int sfd;			/* every signal we take */
	int cfd;			/* INT and TERM only: they end a wait */
	sigset_t oldmask;		/* the command's signal mask */
	struct cli_notify notify;
	int ready;			/* READY=1 sent */
	char status[700];		/* the last STATUS= sent */
};

/* Signals we take: INT and TERM stop us, the others go to the command
 * while we lead (and are dropped while we wait: there is no command). */
static const int lead_signals[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM,
				    SIGUSR1, SIGUSR2, SIGWINCH, SIGCHLD,
				    SIGTTOU };

static enum restart parse_restart(const struct cli *g, const char *arg)
{
	if (strcmp(arg, "always") == 0)
		return RESTART_ALWAYS;
	if (strcmp(arg, "on-failure") == 0)
		return RESTART_ON_FAILURE;
	if (strcmp(arg, "never") == 0)
		return RESTART_NEVER;
	cli_usage_error(g, "invalid --restart '%s': always, on-failure or "
			"never", arg);
}

/* A signal by name ("USR1", "SIGUSR1") or number, for option opt; or
 * exit 64. */
static int parse_signal(const struct cli *g, const char *opt,
			const char *arg)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {
		{ "HUP", SIGHUP },   { "INT", SIGINT },     { "QUIT", SIGQUIT },
		{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 },   { "TERM", SIGTERM },
		{ "ALRM", SIGALRM }, { "WINCH", SIGWINCH }, { "CONT", SIGCONT },
	};
	const char *n = strncmp(arg, "SIG", 3) == 0 ? arg + 3 : arg;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(n, names[i].name) == 0)
			return names[i].sig;
	}
	if (*arg >= '1' && *arg <= '9' && strspn(arg, "0123456789") ==
	    strlen(arg) && strlen(arg) <= 2 && atoi(arg) <= SIGRTMAX)
		return atoi(arg);
	cli_usage_error(g, "invalid %s '%s': a signal such as USR1, HUP or "
			"a number", opt, arg);
}

static void parse(struct lead *ld, int argc, char **argv)
{
	static const struct option longopts[] = {
		CLI_GLOBAL_LONG,
		{ "ttl", required_argument, NULL, 't' },
		{ "priority", required_argument, NULL, OPT_PRIORITY },
		{ "label", required_argument, NULL, OPT_LABEL },
		{ "note", required_argument, NULL, OPT_NOTE },
		{ "wait-replicas", required_argument, NULL,
		  OPT_WAIT_REPLICAS },
		{ "kill-after", required_argument, NULL, 'k' },
		{ "restart", required_argument, NULL, OPT_RESTART },
		{ "restart-delay", required_argument, NULL,
		  OPT_RESTART_DELAY },
		{ "leader-file", required_argument, NULL, OPT_LEADER_FILE },
		{ "standby", no_argument, NULL, OPT_STANDBY },
		{ "promote", required_argument, NULL, OPT_PROMOTE },
		{ "demote", required_argument, NULL, OPT_DEMOTE },
		{ "health", required_argument, NULL, OPT_HEALTH },
		{ "health-every", required_argument, NULL, OPT_HEALTH_EVERY },
		{ "health-fails", required_argument, NULL, OPT_HEALTH_FAILS },
		{ "on-promote", required_argument, NULL, OPT_ON_PROMOTE },
		{ "on-demote", required_argument, NULL, OPT_ON_DEMOTE },
		{ "hook-timeout", required_argument, NULL, OPT_HOOK_TIMEOUT },
		{ "nonblock", no_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli *g = ld->g;
	int c, have_name = 0, name_after_dashdash = 0, unused;

	for (;;) {
		c = getopt_long(argc, argv, "+:" CLI_GLOBAL_SHORT "t:k:nw:",
				longopts, NULL);
		if (c == -1) {
			/* NAME, then the options may go on until the
			 * command or a "--", as with run. */
			if (have_name || optind >= argc)
				break;
			have_name = 1;
			if (!cli_name_operand(argc, argv, &ld->name,
					      &name_after_dashdash))
				break;
			continue;
		}
		if (cli_global_option(g, c, optarg))
			continue;
		switch (c) {
		case 't':
		case OPT_PRIORITY:
		case OPT_LABEL:
		case OPT_NOTE:
		case OPT_WAIT_REPLICAS:
			cli_lock_option(g, c, optarg, &ld->ao, &unused);
			break;
		case 'n':
		case 'w':
			cli_usage_error(g, "%s does not apply: a candidate "
					"waits in line until it leads",
					c == 'n' ? "-n" : "-w");
		case 'k':
			ld->c.kill_after_ms = cli_duration(g, "--kill-after",
							   optarg, 0, 1);
			break;
		case OPT_RESTART:
			ld->restart = parse_restart(g, optarg);
			break;
		case OPT_RESTART_DELAY:
			ld->restart_delay_ms = cli_duration(
				g, "--restart-delay", optarg, 0, 1);
			break;
		case OPT_STANDBY:
			ld->standby = 1;
			break;
		case OPT_PROMOTE:
			ld->promote = parse_signal(g, "--promote", optarg);
			break;
		case OPT_DEMOTE:
			ld->c.demote = parse_signal(g, "--demote", optarg);
			break;
		case OPT_HEALTH:
			ld->health = optarg;
			break;
		case OPT_HEALTH_EVERY:
			ld->health_every_ms = cli_duration(g, "--health-every",
							   optarg, 0, 0);
			break;
		case OPT_HEALTH_FAILS:
			ld->health_fails = cli_int(g, "--health-fails", optarg,
						   1, 1000);
			break;
		case OPT_ON_PROMOTE:
			ld->on_promote = optarg;
			break;
		case OPT_ON_DEMOTE:
			ld->on_demote = optarg;
			break;
		case OPT_HOOK_TIMEOUT:
			ld->hook_timeout_ms = cli_duration(g, "--hook-timeout",
							   optarg, 0, 0);
			break;
		case OPT_LEADER_FILE:
			if (*optarg == '\0')
				cli_usage_error(g, "invalid --leader-file '': "
						"empty path");
			ld->leader_file = optarg;
			break;
		default:
			cli_bad_option(g, c, argv);
		}
	}
	if (!have_name)
		cli_usage_error(g, "missing lock NAME");
	if (optind >= argc && name_after_dashdash)
		cli_usage_error(g, "missing lock NAME before '--': "
				"rlock lead [OPTION]... NAME -- COMMAND");
	cli_check_name(g, ld->name);
	cli_lock_check(g, &ld->ao);
	if (optind >= argc)
		cli_usage_error(g, "missing COMMAND");
	ld->c.argv = argv + optind;
	if (!ld->standby && (ld->promote != 0 || ld->c.demote != 0))
		cli_usage_error(g, "--promote and --demote need --standby");
	if (ld->standby) {
		if (ld->promote == 0)
			ld->promote = SIGUSR1;
		if (ld->c.demote == 0)
			ld->c.demote = SIGUSR2;
	}
}

static int pause_for(struct lead *ld, int64_t ms);

/* ---- who leads, told to systemd and in --leader-file ------------------ */

static void ready(struct lead *ld)
{
	if (!ld->ready)
		cli_notify(&ld->notify, "READY=1");
	ld->ready = 1;
}

/* Send STATUS=text, unless it is what was sent last. */
static void tell_status(struct lead *ld, const char *text)
{
	char msg[sizeof(ld->status) + 8];

	if (strcmp(ld->status, text) == 0)
		return;
	rlock_strlcpy(ld->status, text, sizeof(ld->status));
	snprintf(msg, sizeof(msg), "STATUS=%s", text);
	cli_notify(&ld->notify, msg);
}

/* WATCHDOG=1 when due. */
static int64_t watchdog(void *arg)
{
	struct lead *ld = arg;

	return cli_notify_watchdog(&ld->notify);
}

static int check_health(struct lead *ld);

/* The supervising loop's tick while leading: the watchdog, and --health
 * when due; --health-fails failures in a row step down.  Returns the ms
 * until it is due again. */
static int64_t tick(void *arg)
{
	struct lead *ld = arg;
	int64_t dog = watchdog(ld), next;

	if (ld->health == NULL)
		return dog;
	if (rlock_mono_ms() >= ld->health_at && check_health(ld) != 0 &&
	    ld->failed_checks >= ld->health_fails && ld->c.step_down == 0)
		ld->c.step_down = 1;
	next = ld->health_at - rlock_mono_ms();
	if (next < 0)
		next = 0;
	return dog >= 0 && dog < next ? dog : next;
}

/*
 * --health while in line, from the wait's callback, when due: a check that
 * fails ends the wait (unwell, a part of the wait's cancel_fd), and the
 * candidate leaves the line until it passes (health_gate), so that it is
 * never promoted while unwell.  The check's end (SIGCHLD) must not end a
 * --standby wait, whose cancel_fd takes every signal: it is taken here,
 * and raised again if the command itself has ended meanwhile.
 */
static void health_in_line(struct lead *ld)
{
	static const struct timespec zero = { 0, 0 };
	sigset_t chld;
	siginfo_t si;

	if (ld->health == NULL || rlock_mono_ms() < ld->health_at)
		return;
	if (check_health(ld) == -1)
		(void)eventfd_write(ld->unwell, 1);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	while (sigtimedwait(&chld, NULL, &zero) > 0)
		;
	memset(&si, 0, sizeof(si));
	if (ld->standby && ld->c.pid > 0 && !ld->c.exited &&
	    waitid(P_PID, (id_t)ld->c.pid, &si, WEXITED | WNOHANG |
		   WNOWAIT) == 0 && si.si_pid == ld->c.pid)
		raise(SIGCHLD);
}

/* Whether a check failed while we were in line (and so the wait ended);
 * it is forgotten once said. */
static int left_unwell(struct lead *ld)
{
	eventfd_t v;

	return ld->unwell >= 0 && eventfd_read(ld->unwell, &v) == 0 && v > 0;
}

/* An rlock_wait_cb: we are in line; who leads, for systemd; --health. */
static void standby(const struct rlock_holder *h, int64_t waited, void *arg)
{
	struct lead *ld = arg;
	char text[sizeof(ld->status)], user[CLI_VIS(64)], host[CLI_VIS(256)];

	(void)waited;
	health_in_line(ld);
	watchdog(ld);
	ready(ld);
	if (h->held)
		snprintf(text, sizeof(text), "standby: led by %s@%s pid %lld",
			 cli_vis(user, sizeof(user), h->user),
			 cli_vis(host, sizeof(host), h->host), h->pid);
	else
		snprintf(text, sizeof(text), "standby: in line");
	tell_status(ld, text);
}

/* ms since the epoch as "2026-12-03T08:12:01Z". */
static const char *iso_utc(long long ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, len, "%lld", ms);
	return buf;
}

/*
 * --leader-file: "KEY=VALUE" lines a shell can source (fence, since, host,
 * pid), written whole to a temporary file beside it and renamed over it,
 * so that a reader sees the old file or the new one, never a part.  A file
 * that cannot be written is said, and the term goes on: the fence is in
 * the command's environment too.
 */
static void leader_file_write(struct lead *ld, const struct rlock_lease *lease,
			      long long since_ms)
{
	char tmp[PATH_MAX], host[256], when[40], text[600];
	int fd, n, ok;

	if (ld->leader_file == NULL)
		return;
	if (gethostname(host, sizeof(host)) != 0)
		rlock_strlcpy(host, "unknown", sizeof(host));
	host[sizeof(host) - 1] = '\0';
	n = snprintf(text, sizeof(text),
		     "fence=%lld\nsince=%s\nsince_ms=%lld\nhost=%s\npid=%ld\n",
		     lease->fence, iso_utc(since_ms, when, sizeof(when)),
		     since_ms, host, (long)getpid());
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", ld->leader_file) >=
	    sizeof(tmp)) {
		cli_warn(ld->g, "%s: cannot write %s: path too long", ld->name,
			 ld->leader_file);
		return;
	}
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
		cli_warn(ld->g, "%s: cannot write %s: %s", ld->name,
			 ld->leader_file, strerror(errno));
		return;
	}
	ok = fchmod(fd, 0644) == 0 && write(fd, text, (size_t)n) == n;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, ld->leader_file) != 0) {
		cli_warn(ld->g, "%s: cannot write %s: %s", ld->name,
			 ld->leader_file, strerror(errno));
		unlink(tmp);
		return;
	}
	ld->file_written = 1;
}

static void leader_file_remove(struct lead *ld)
{
	if (!ld->file_written)
		return;
	ld->file_written = 0;
	if (unlink(ld->leader_file) != 0 && errno != ENOENT)
		cli_warn(ld->g, "%s: cannot remove %s: %s", ld->name,
			 ld->leader_file, strerror(errno));
}

/*
 * Run hook (--on-promote, --on-demote) with sh -c, in a process group of
 * its own, with the term's lease in its environment (set by the caller),
 * for at most limit_ms: then its group is killed.  It is waited for, so
 * that a demotion has finished before the lock is given up.  A hook that
 * fails or runs out of time is said, and the term goes on.  A --health
 * check (stoppable) is cut short by an INT or TERM, left unread for the
 * caller: a candidate told to stop does not wait for its check (-2).
 */
static int run_sh(struct lead *ld, const char *what, const char *hook,
		  int64_t limit_ms, int quiet, int stoppable)
{
	char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)hook, NULL };
	int64_t end = rlock_mono_ms() + (limit_ms > 0 ? limit_ms : 0);
	struct pollfd p = { .fd = stoppable ? ld->cfd : -1, .events = POLLIN };
	int status = 0, stop = 0;
	pid_t pid, w = 0;

	pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		sigprocmask(SIG_SETMASK, &ld->oldmask, NULL);
		execv(argv[0], argv);
		_exit(EX_NOEXEC);
	}
	if (pid < 0) {
		cli_warn(ld->g, "%s: %s: cannot fork: %s", ld->name, what,
			 strerror(errno));
		return -1;
	}
	setpgid(pid, pid);
	while ((w = waitpid(pid, &status, WNOHANG)) == 0 &&
	       rlock_mono_ms() < end && !stop)
		stop = poll(&p, 1, 5) > 0;
	if (w == 0) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		if (stop)
			return -2;
		if (!quiet)
			cli_warn(ld->g, "%s: %s killed: still running after "
				 "%lld ms", ld->name, what,
				 (long long)(limit_ms > 0 ? limit_ms : 0));
		return -1;
	}
	if (w > 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
		if (!quiet)
			cli_warn(ld->g, "%s: %s failed: %s %d", ld->name, what,
				 WIFSIGNALED(status) ? "signal" : "exit status",
				 WIFSIGNALED(status) ? WTERMSIG(status) :
				 WEXITSTATUS(status));
		return -1;
	}
	return 0;
}

static void run_hook(struct lead *ld, const char *what, const char *hook,
		     int64_t limit_ms)
{
	if (hook != NULL)
		(void)run_sh(ld, what, hook, limit_ms, 0, 0);
}

/* Run --health now: 0 when it passed (within --health-every), -1 when it
 * failed (the count of failures in a row is kept), -2 when an INT or TERM
 * cut it short. */
static int check_health(struct lead *ld)
{
	int rc = run_sh(ld, "--health", ld->health, ld->health_every_ms,
			ld->g->verbose <= 0, 1);

	ld->health_at = rlock_mono_ms() + ld->health_every_ms;
	if (rc == -2)
		return rc;	/* cut short by a stop: no verdict */
	if (rc == 0) {
		ld->failed_checks = 0;
		ld->passed_at = rlock_mono_ms();
	} else {
		ld->failed_checks++;
	}
	return rc;
}

/*
 * Before a candidate takes its place in line: --health must pass.  It is
 * run every --health-every until it does (a pass less than that ago is
 * taken as it is).  Returns 0, or 1 when an INT or TERM came meanwhile.
 */
static int health_gate(struct lead *ld)
{
	int said = 0, rc;

	if (ld->health == NULL || (ld->passed_at > 0 && ld->failed_checks == 0 &&
				   rlock_mono_ms() - ld->passed_at <
				   ld->health_every_ms))
		return 0;
	while ((rc = check_health(ld)) != 0) {
		if (rc == -2)
			return 1;
		if (!said && ld->g->verbose >= 0)
			cli_warn(ld->g, "%s: health check fails; out of line "
				 "until it passes", ld->name);
		said = 1;
		if (pause_for(ld, ld->health_every_ms))
			return 1;
	}
	if (said && ld->g->verbose >= 0)
		cli_warn(ld->g, "%s: health check passes; back in line",
			 ld->name);
	return 0;
}

/* How long a hook may run: --hook-timeout, and for a demotion no later
 * than the lease's end by our clock (less the drift allowance), for a
 * promotion a third of the TTL (the renewals wait for it). */
static int64_t hook_limit(const struct lead *ld, const struct rlock_lease *l,
			  int demote)
{
	int64_t left = demote ? l->renewed_boot_ms + rlock_lease_ttl(l) -
				       rlock_drift_ms(rlock_lease_ttl(l)) -
				       rlock_boot_ms() :
				l->ttl_ms / 3;

	/* A lease already over (the key deleted) leaves no time to keep
	 * the order in: the hook still runs, as long as --hook-timeout. */
	if (left <= 0 || left > ld->hook_timeout_ms)
		left = ld->hook_timeout_ms;
	return left;
}

/*
 * After a term that --health ended (the command stopped, or demoted and
 * running on), or a grant that came as a check failed in line (before:
 * "before its term began"): the lock given up, recorded as a step-down
 * with its reason, so that the next in line leads.  ret is the command's
 * exit status, < 0 when it runs on or never ran.
 */
static void step_down(struct lead *ld, struct rlock *rl,
		      const struct rlock_lease *lease, int ret,
		      const char *before)
{
	struct rlock_outcome how = { ret, ret >= 0 ? ld->c.signal : 0 };
	char why[96];
	int rc;

	if (before != NULL)
		snprintf(why, sizeof(why), "--health failed %s", before);
	else
		snprintf(why, sizeof(why), "--health failed %d times in a row",
			 ld->failed_checks);
	if (ld->g->verbose >= 0 && before != NULL)
		cli_warn(ld->g, "%s: stepped down: %s", ld->name, why);
	else if (ld->g->verbose >= 0)
		cli_warn(ld->g, "%s: stepped down: %s; command %s", ld->name,
			 why, ld->c.demote != 0 ? "demoted" : "stopped");
	rc = rlock_step_down(rl, ld->name, lease, why, &how);
	if (rc != RLOCK_OK && rc != RLOCK_NOTOURS)
		cli_warn(ld->g, "%s: cannot release: %s", ld->name,
			 rlock_errstr(rl));
	cli_history_warn(ld->g, rl);
}

/* The grant is confirmed: say so before the command starts. */
static void promoted(struct lead *ld, const struct rlock_lease *lease,
		     long long since_ms)
{
	char text[sizeof(ld->status)], when[40];

	leader_file_write(ld, lease, since_ms);
	ready(ld);
	/* --health: checked at once, then every --health-every. */
	ld->health_at = rlock_mono_ms();
	snprintf(text, sizeof(text), "leading (fence %lld) since %s",
		 lease->fence, iso_utc(since_ms, when, sizeof(when)));
	tell_status(ld, text);
	if (ld->g->verbose >= 0)
		cli_warn(ld->g, "%s: leading (fence %lld)", ld->name,
			 lease->fence);
}

/* The command has ended (or was stopped): the file goes before the lock. */
static void demoted(struct lead *ld)
{
	leader_file_remove(ld);
	tell_status(ld, "standby: in line");
}

/* ---- the campaign ------------------------------------------------------ */

/* Wait in line until we lead.  Returns RLOCK_OK with lease, RLOCK_CANCELED
 * (an INT or TERM: we have left the line), or an error after a message. */
static int stand(struct lead *ld, struct rlock *rl, struct rlock_lease *lease)
{
	struct rlock_holder holder;
	struct signalfd_siginfo si;
	int rc;

	if (ld->g->verbose > 0)
		cli_warn(ld->g, "%s: in line", ld->name);
again:
	rc = rlock_acquire(rl, ld->name, &ld->ao, lease, &holder);
	/* Handed over by the release and taken from the wake-up without
	 * asking (the baton), the grant has a short first lease: it is
	 * confirmed to the TTL before any promotion, whose hook may run
	 * longer than that.  Gone meanwhile (the key deleted): in line
	 * again. */
	if (rc == RLOCK_OK && lease->first_ms > 0) {
		rc = rlock_extend(rl, ld->name, lease->token, lease->ttl_ms,
				  lease);
		if (rc == RLOCK_NOTOURS)
			goto again;
	}
	if (rc == RLOCK_CANCELED) {
		/* --standby reads what ended the wait itself (sfd); else an
		 * INT or TERM did, or a failed --health check. */
		while (!ld->standby &&
		       read(ld->cfd, &si, sizeof(si)) == sizeof(si))
			ld->stopping = 1;
		return rc;
	}
	if (rc != RLOCK_OK)
		cli_report_acquire(ld->g, ld->name, rc, rl, &holder, -1);
	else
		cli_history_warn(ld->g, rl);
	return rc;
}

/* Sleep ms, or less if an INT or TERM comes.  Returns 1 when one came. */
static int pause_for(struct lead *ld, int64_t ms)
{
	struct pollfd p = { .fd = ld->cfd, .events = POLLIN };
	struct signalfd_siginfo si;
	int64_t end = rlock_mono_ms() + ms, now;

	while ((now = rlock_mono_ms()) < end) {
		int64_t left = end - now, dog = watchdog(ld);

		if (dog >= 0 && dog < left)
			left = dog;
		if (poll(&p, 1, left > 60000 ? 60000 : (int)left) > 0 &&
		    read(ld->cfd, &si, sizeof(si)) == sizeof(si))
			return 1;
	}
	return 0;
}

/* What came while we waited: an INT or TERM asks us to stop (returned);
 * the others were for a command there was not, and are dropped. */
static int stop_pending(struct lead *ld)
{
	struct signalfd_siginfo si;
	int stop = 0;

	while (read(ld->sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM)
			stop = (int)si.ssi_signo;
	}
	return stop;
}

/*
 * One term, from the confirmed grant to the lock given up: the command
 * runs under the lease and the lock is released (or was lost) once it has
 * ended.  *status is the command's exit status.  Returns how it ended.
 */
static enum term_end term(struct lead *ld, struct rlock *rl,
			  struct rlock_lease *lease, int *status)
{
	struct renewer rn;
	struct rlock_outcome how = { 0, 0 };
	char err[512];
	int lost = 0, ret;

	*status = 0;
	renewer_init(&rn);
	if (renewer_open(&rn, err, sizeof(err)) != RLOCK_OK) {
		cli_warn(ld->g, "%s", err);
		rlock_release(rl, ld->name, lease->token, lease, &how);
		*status = EX_OSERR;
		return END_FAILED;
	}
	if (stop_pending(ld) != 0) {
		renewer_stop(&rn);
		rlock_release(rl, ld->name, lease->token, lease, &how);
		return END_STOPPED;
	}
	promoted(ld, lease, cli_wall_ms());
	cli_child_env(ld->name, ld->key, "x", ld->me, ld->held, lease);
	run_hook(ld, "--on-promote", ld->on_promote, hook_limit(ld, lease, 0));
	ret = cli_child_run(&ld->c, rl, ld->sfd, &ld->oldmask, &rn, lease,
			    &lost);
	if (ret < 0)
		ret = EX_OSERR;
	*status = ret;
	/* The renewal thread gives the handle back, with the last renewal
	 * it confirmed, for judging a release whose reply was lost. */
	renewer_stop(&rn);
	renewer_lease(&rn, lease);
	run_hook(ld, "--on-demote", ld->on_demote, hook_limit(ld, lease, 1));
	demoted(ld);
	if (!lost && ld->c.step_down != 0 && ld->c.stopped == 0) {
		step_down(ld, rl, lease, ret, NULL);
		return END_HEALTH;
	}
	ret = cli_child_release(&ld->c, rl, &rn, lease, lost, ret);
	if (ld->c.stopped != 0)
		return END_STOPPED;
	if (lost || (ret == EX_LOST && *status != EX_LOST))
		return END_LOST;
	return END_EXITED;
}

/* --standby, out of a term: the signals that came, read from sfd: an INT
 * or TERM asks us to stop (GO_STOP), the end of the command (GO_EXITED,
 * *status its exit status) to run it again or not; the others go to the
 * command.  Returns GO_ON when nothing ends the wait. */
static int standby_signals(struct lead *ld, int *status)
{
	struct signalfd_siginfo si;
	int go = GO_ON;

	while (read(ld->sfd, &si, sizeof(si)) == sizeof(si)) {
		int sig = (int)si.ssi_signo;

		if (sig == SIGINT || sig == SIGTERM)
			go = GO_STOP;
		else if (sig != SIGCHLD)
			kill(ld->c.pid, sig);
	}
	if (go == GO_ON && (*status = cli_child_reaped(&ld->c)) >= 0)
		go = GO_EXITED;
	return go;
}

/* Whether process pid catches or ignores signal sig, or has ended (a
 * zombie): SigCgt, SigIgn and State of /proc/PID/status.  1 when it does
 * or cannot be told. */
static int catches(pid_t pid, int sig)
{
	char path[40], line[128];
	unsigned long long mask = 1ULL << (sig - 1), v;
	int ret = 0, seen = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if ((f = fopen(path, "re")) == NULL)
		return 1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "State:", 6) == 0 && strchr(line, 'Z'))
			ret = 1;
		if ((sscanf(line, "SigCgt: %llx", &v) == 1 ||
		     sscanf(line, "SigIgn: %llx", &v) == 1)) {
			seen++;
			if (v & mask)
				ret = 1;
		}
	}
	fclose(f);
	return ret || seen < 2;
}

/* Whether signal sig is still pending for process pid (ShdPnd, SigPnd of
 * /proc/PID/status): sent, not yet taken.  0 when it cannot be told. */
static int pending(pid_t pid, int sig)
{
	char path[40], line[128];
	unsigned long long mask = 1ULL << (sig - 1), v;
	int ret = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "State:", 6) == 0 && strchr(line, 'Z'))
			break;
		if ((sscanf(line, "ShdPnd: %llx", &v) == 1 ||
		     sscanf(line, "SigPnd: %llx", &v) == 1) && (v & mask))
			ret = 1;
	}
	fclose(f);
	return ret;
}

/*
 * After a demotion: wait until the command has taken the signal (it is no
 * longer pending) before the lock is given up and, at a stop, SIGTERM
 * follows it.  A signal still pending when a fatal one comes is lost
 * with the process: the kernel sets up both handlers at once and runs the
 * last first (bash then runs a TERM trap and never the USR2 one).  At
 * most a second, and never past the lease's end.
 */
static void demote_taken(struct lead *ld, const struct rlock_lease *lease)
{
	int64_t limit = hook_limit(ld, lease, 1);
	int64_t end = rlock_mono_ms() + (limit < 1000 ? limit : 1000);

	while (pending(ld->c.pid, ld->c.demote) && rlock_mono_ms() < end)
		poll(NULL, 0, 1);
}

/*
 * Promote the command: --promote, sent once it catches that signal (its
 * default action would end it: a command just started may not have set
 * its handler yet), or at most a quarter of the TTL after the grant, well
 * before a renewal is due.
 */
static void promote(struct lead *ld, const struct rlock_lease *lease)
{
	int64_t end = rlock_mono_ms() + lease->ttl_ms / 4;

	while (!catches(ld->c.pid, ld->promote) && rlock_mono_ms() < end)
		poll(NULL, 0, 5);
	kill(ld->c.pid, ld->promote);
}

/*
 * A --standby term: the command, running, is promoted (--promote) once the
 * grant is confirmed and demoted (--demote) as soon as the lease is lost or
 * we are told to stop, before the lease can end; then the lock is given
 * up.  *status is the command's exit status if it ended.  Returns how the
 * term ended.
 */
static enum term_end standby_term(struct lead *ld, struct rlock *rl,
				  struct rlock_lease *lease, int *status)
{
	struct renewer rn;
	struct rlock_outcome how = { 0, 0 };
	char err[512];
	int lost = 0, ret, go;

	*status = 0;
	renewer_init(&rn);
	if (renewer_open(&rn, err, sizeof(err)) != RLOCK_OK) {
		cli_warn(ld->g, "%s", err);
		rlock_release(rl, ld->name, lease->token, lease, &how);
		*status = EX_OSERR;
		return END_FAILED;
	}
	if ((go = standby_signals(ld, status)) != GO_ON) {
		renewer_stop(&rn);
		how.exit = *status;
		rlock_release(rl, ld->name, lease->token, lease, &how);
		return go == GO_STOP ? END_STOPPED : END_EXITED;
	}
	promoted(ld, lease, cli_wall_ms());
	promote(ld, lease);
	cli_child_env(ld->name, ld->key, "x", ld->me, ld->held, lease);
	run_hook(ld, "--on-promote", ld->on_promote, hook_limit(ld, lease, 0));
	ret = cli_child_watch(&ld->c, rl, ld->sfd, &rn, lease, &lost);
	if (ret < 0)
		ret = EX_OSERR;
	*status = ret;
	renewer_stop(&rn);
	renewer_lease(&rn, lease);
	/* The command was demoted (a loss, a stop) or has ended. */
	if (!ld->c.exited) {
		demote_taken(ld, lease);
		run_hook(ld, "--on-demote", ld->on_demote,
			 hook_limit(ld, lease, 1));
	}
	demoted(ld);
	if (!lost && ld->c.step_down != 0 && ld->c.stopped == 0 &&
	    !ld->c.exited) {
		step_down(ld, rl, lease, -1, NULL);
		return END_HEALTH;
	}
	ret = cli_child_release(&ld->c, rl, &rn, lease, lost, ret);
	if (ld->c.stopped != 0)
		return END_STOPPED;
	if (ld->c.exited)
		return END_EXITED;
	return END_LOST;
}

/* Run for leadership until told to stop, or until the command ended and
 * --restart says not to run again.  Returns the exit status. */
static int campaign(struct lead *ld, struct rlock *rl)
{
	struct rlock_lease lease;
	int64_t pause = 0, unavail = 1000;
	char tb[32];
	int rc, status, unwell;
	enum term_end end;

	for (;;) {
		if (pause > 0 && pause_for(ld, pause))
			return EX_OK;
		pause = 0;
		if (health_gate(ld))
			return EX_OK;
		/* --standby: the command runs from before we are in line. */
		if (ld->standby && (ld->c.pid <= 0 || ld->c.exited)) {
			/* Nothing of an earlier term's lease (the hooks'). */
			unsetenv("RLOCK_TOKEN");
			unsetenv("RLOCK_FENCE");
			unsetenv("RLOCK_TTL_MS");
			unsetenv("RLOCK_SLOT");
			if (ld->held != NULL)
				setenv("RLOCK_HELD", ld->held, 1);
			else
				unsetenv("RLOCK_HELD");
			setenv("RLOCK_NAME", ld->name, 1);
			setenv("RLOCK_KEY", ld->key, 1);
			if (cli_child_spawn(&ld->c, &ld->oldmask) < 0)
				return EX_OSERR;
		}
		rc = stand(ld, rl, &lease);
		unwell = left_unwell(ld);
		if (rc == RLOCK_CANCELED && !ld->standby && ld->stopping)
			return EX_OK;
		/* --health failed in line: out of it until it passes
		 * (health_gate); a grant that came meanwhile is given up at
		 * once, before any term. */
		if (rc == RLOCK_CANCELED && !ld->standby && unwell)
			continue;
		if (rc == RLOCK_OK && ld->failed_checks > 0) {
			step_down(ld, rl, &lease, -1, "before its term began");
			continue;
		}
		if (rc == RLOCK_CANCELED && ld->standby) {
			switch (standby_signals(ld, &status)) {
			case GO_STOP:
				return EX_OK;
			case GO_ON:
				continue;
			}
			end = END_EXITED;
			goto ended;
		}
		if (rc == RLOCK_CANCELED)
			return EX_OK;
		/* Servers that cannot be reached now may be back soon: a
		 * candidate keeps running, trying less often. */
		if (rc == RLOCK_EUNAVAIL) {
			tell_status(ld, "standby: servers unavailable");
			pause = unavail;
			unavail = unavail * 2 > 30000 ? 30000 : unavail * 2;
			continue;
		}
		if (rc != RLOCK_OK)
			return cli_exit_code(rc, EX_TEMPFAIL);
		unavail = 1000;
		end = ld->standby ? standby_term(ld, rl, &lease, &status) :
				    term(ld, rl, &lease, &status);
ended:
		switch (end) {
		case END_STOPPED:
			return EX_OK;
		case END_FAILED:
			return status;
		case END_LOST:
			if (ld->g->verbose >= 0)
				cli_warn(ld->g, "%s: back in line", ld->name);
			continue;
		case END_HEALTH:
			continue;
		case END_EXITED:
			break;
		}
		if (ld->restart == RESTART_NEVER ||
		    (ld->restart == RESTART_ON_FAILURE && status == 0)) {
			if (ld->g->verbose > 0)
				cli_warn(ld->g, "%s: command exited with "
					 "status %d; released", ld->name,
					 status);
			return status;
		}
		if (ld->g->verbose >= 0)
			cli_warn(ld->g, "%s: command exited with status %d; "
				 "released, back in line in %s", ld->name,
				 status, rlock_fmt_ms(ld->restart_delay_ms, tb,
						      sizeof(tb)));
		pause = ld->restart_delay_ms;
	}
}

/* Block the signals we take, and read them from two signalfds: sfd all
 * of them, cfd INT and TERM, which end a wait.  One we were started with
 * ignored stays ignored, by us as by the command.  Returns 0, or -1. */
static int signals_setup(struct lead *ld)
{
	sigset_t all, stop;

	sigemptyset(&all);
	sigemptyset(&stop);
	for (size_t i = 0; i < sizeof(lead_signals) / sizeof(lead_signals[0]);
	     i++) {
		struct sigaction sa;
		int s = lead_signals[i];

		if (s != SIGCHLD && s != SIGTTOU &&
		    sigaction(s, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			continue;
		sigaddset(&all, s);
		if (s == SIGINT || s == SIGTERM)
			sigaddset(&stop, s);
	}
	if (sigprocmask(SIG_BLOCK, &all, &ld->oldmask) != 0)
		return -1;
	ld->sfd = signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
	ld->cfd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK);
	return ld->sfd < 0 || ld->cfd < 0 ? -1 : 0;
}

/*
 * What ends a wait in line: an INT or TERM (cfd), under --standby any
 * signal (sfd: the command's end, one to forward); with --health also a
 * check that fails in line (unwell), the two joined in an epoll
 * descriptor, which is readable when one of them is.  The wait callback
 * runs the check.  Returns 0, or -1.
 */
static int health_setup(struct lead *ld)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd = ld->standby ? ld->sfd : ld->cfd;

	ld->ao.cancel_fd = fd;
	if (ld->health == NULL)
		return 0;
	ld->unwell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ld->cancel = epoll_create1(EPOLL_CLOEXEC);
	if (ld->unwell < 0 || ld->cancel < 0 ||
	    epoll_ctl(ld->cancel, EPOLL_CTL_ADD, fd, &ev) != 0 ||
	    epoll_ctl(ld->cancel, EPOLL_CTL_ADD, ld->unwell, &ev) != 0)
		return -1;
	ld->ao.cancel_fd = ld->cancel;
	ld->ao.wait_cb = standby;
	ld->ao.wait_arg = ld;
	if (ld->ao.wait_cb_ms == 0 || ld->ao.wait_cb_ms > ld->health_every_ms)
		ld->ao.wait_cb_ms = ld->health_every_ms;
	return 0;
}

int cmd_lead(int argc, char **argv, struct cli *g)
{
	struct lead ld;
	struct rlock *rl;
	char label[RLOCK_LABEL_MAX + 1];
	const char *held;
	int ret;

	memset(&ld, 0, sizeof(ld));
	ld.g = g;
	ld.sfd = ld.cfd = ld.unwell = ld.cancel = -1;
	ld.ao.ttl_ms = 30000;
	ld.ao.wait_ms = -1;
	ld.c.g = g;
	ld.c.lead = 1;
	ld.c.on_lost = LOST_TERM;
	ld.c.kill_after_ms = 10000;
	ld.restart = RESTART_ALWAYS;
	ld.restart_delay_ms = 1000;
	ld.hook_timeout_ms = 10000;
	ld.health_every_ms = 5000;
	ld.health_fails = 3;
	parse(&ld, argc, argv);
	ld.c.name = ld.name;
	cli_finish(g);
	rl = cli_open(g);
	if (rlock_check_acquire(rl, &ld.ao) != RLOCK_OK)
		cli_usage_error(g, "%s", rlock_errstr(rl));
	rlock_strlcpy(ld.key, rlock_key(rl, ld.name), sizeof(ld.key));
	/* What status and the history show of each term says it was a
	 * leader's. */
	ld.ao.label = cli_child_label(&ld.c, "lead: ", ld.ao.label, label);
	/* The release that frees the lock grants it to the head of the line
	 * (the next candidate); it leads only once the server confirmed it
	 * (rlock_acquire). */
	ld.ao.baton = 1;
	if ((held = getenv("RLOCK_HELD")) != NULL &&
	    (ld.held = strdup(held)) == NULL) {
		cli_warn(g, "cannot allocate: %s", strerror(errno));
		rlock_free(rl);
		return EX_OSERR;
	}
	cli_child_me(ld.me);
	cli_notify_open(&ld.notify);
	if (ld.notify.fd >= 0) {
		ld.ao.wait_cb = standby;
		ld.ao.wait_arg = &ld;
		/* Who leads, told again every 10s of a wait at most; the
		 * watchdog as often as it needs. */
		ld.ao.wait_cb_ms = 10000;
		if (ld.notify.watchdog_ms > 0 && ld.notify.watchdog_ms < 10000)
			ld.ao.wait_cb_ms = ld.notify.watchdog_ms;
	}
	if (ld.notify.fd >= 0 || ld.health != NULL) {
		ld.c.tick = tick;
		ld.c.tick_arg = &ld;
	}
	if (signals_setup(&ld) != 0 || health_setup(&ld) != 0) {
		cli_warn(g, "cannot set up signals: %s", strerror(errno));
		ret = EX_OSERR;
		goto out;
	}
	ret = campaign(&ld, rl);
	/* --standby: the command outlives no campaign (it was demoted and
	 * the lock given up first). */
	if (ld.standby && ld.c.pid > 0 && !ld.c.exited)
		cli_child_stop(&ld.c, ld.sfd);
	cli_notify(&ld.notify, "STOPPING=1");
out:
	leader_file_remove(&ld);
	cli_notify_close(&ld.notify);
	if (ld.sfd >= 0)
		close(ld.sfd);
	if (ld.cfd >= 0)
		close(ld.cfd);
	if (ld.unwell >= 0)
		close(ld.unwell);
	if (ld.cancel >= 0)
		close(ld.cancel);
	free(ld.held);
	rlock_free(rl);
	return ret;
}
