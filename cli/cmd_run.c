/*
 * cmd_run.c - rlock run: take a lock, run a command under it while a
 * renewal thread keeps the lease, forward signals, stop the command if the
 * lock is lost, release and exit with the command's status.
 *
 * Like tini, the supervising loop never does work in a signal handler:
 * the signals it cares about are blocked and read from a signalfd, next to
 * the pipe on which the renewal thread reports a loss.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"

/* A lock this process tree holds: an entry of RLOCK_HELD. */
struct hold {
	char kind[24];			/* "x", "s", a limit or "pK", as held */
	char token[RLOCK_TOKEN_LEN + 1];
	pid_t group;			/* the holder's command's group */
};

struct run {
	struct cli *g;
	const char *name;
	char key[RLOCK_KEY_MAX];
	struct rlock_acquire_opts ao;
	int conflict;
	const char *shell_cmd;
	char **argv;
	enum on_lost on_lost;
	int64_t kill_after_ms;
	int64_t max_time_ms;
	int reentrant;			/* an ancestor holds it: hold */
	struct hold hold;
	char kind[24];			/* "x", "s" or the limit, as asked */
	char me[48];			/* "PID:START" for RLOCK_HELD */
	int signal;			/* the signal that ended the command */
	struct cli_waitline line;	/* the live line while waiting */
	struct cli_progress progress;	/* or a line every --progress */
	char (*wkey)[RLOCK_KEY_MAX];	/* --with's keys (malloc'd: a run
					 * without it touches no page more) */
	long long wfence[RLOCK_WITH_MAX];	/* and fences */
};

/* Signals forwarded to the command.  WINCH is not in the wait set: its
 * default action is to be ignored, so it must not end a wait. */
static const int wait_signals[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM,
				    SIGUSR1, SIGUSR2 };

static void parse(struct run *r, int argc, char **argv)
{
	static const struct option longopts[] = {
		CLI_GLOBAL_LONG,
		CLI_LOCK_LONG,
		{ "command", required_argument, NULL, 'c' },
		{ "on-lost", required_argument, NULL, OPT_ON_LOST },
		{ "kill-after", required_argument, NULL, 'k' },
		{ "max-time", required_argument, NULL, OPT_MAX_TIME },
		{ "once-per", required_argument, NULL, OPT_ONCE_PER },
		{ NULL, 0, NULL, 0 },
	};
	struct cli *g = r->g;
	int c, have_name = 0, name_after_dashdash = 0;

	for (;;) {
		c = getopt_long(argc, argv,
				"+:" CLI_GLOBAL_SHORT CLI_LOCK_SHORT "c:k:",
				longopts, NULL);
		if (c == -1) {
			int dashdash = strcmp(argv[optind - 1], "--") == 0;

			/* NAME may come before the options, as in flock's
			 * "flock FILE -c CMD": take it and go on, unless a
			 * "--" before it ended the options. */
			if (have_name || cli_pool() != NULL ||
			    optind >= argc)
				break;
			r->name = argv[optind++];
			have_name = 1;
			if (dashdash) {
				name_after_dashdash = 1;
				if (optind < argc &&
				    strcmp(argv[optind], "--") == 0)
					optind++;
				break;
			}
			continue;
		}
		if (cli_global_option(g, c, optarg) ||
		    cli_lock_option(g, c, optarg, &r->ao, &r->conflict))
			continue;
		switch (c) {
		case 'c':
			r->shell_cmd = optarg;
			break;
		case OPT_ON_LOST:
			r->on_lost = cli_on_lost(g, optarg);
			break;
		case 'k':
			r->kill_after_ms = cli_duration(g, "--kill-after",
							optarg, 0, 1);
			break;
		case OPT_MAX_TIME:
			r->max_time_ms = cli_duration(g, "--max-time", optarg,
						      0, 0);
			break;
		case OPT_ONCE_PER:
			r->ao.once_per_ms = cli_duration(g, "--once-per",
							 optarg, 0, 0);
			if (r->ao.once_per_ms < 1000 ||
			    r->ao.once_per_ms > RLOCK_TTL_MAX_MS)
				cli_usage_error(g, "invalid --once-per '%s': "
						"must be between 1s and 30d",
						optarg);
			break;
		default:
			cli_bad_option(g, c, argv);
		}
	}
	/* --pool names the lock: the operands are the command. */
	if (have_name && cli_pool() != NULL)
		cli_usage_error(g, "give --pool NAME or a lock NAME, not both");
	if (cli_pool() != NULL) {
		r->name = cli_pool();
		have_name = 1;
	}
	if (!have_name)
		cli_usage_error(g, "missing lock NAME");
	/* "rlock run -w 30m -- ./report.sh": the "--" came before any
	 * NAME, so the command was taken as the NAME; what the user left
	 * out is the NAME, not the command. */
	if (r->shell_cmd == NULL && optind >= argc && name_after_dashdash)
		cli_usage_error(g, "missing lock NAME before '--': "
				"rlock run [OPTION]... NAME -- COMMAND");
	cli_check_name(g, r->name);
	cli_lock_check(g, &r->ao);
	cli_with_check(g, r->name, &r->ao);
	if (r->shell_cmd != NULL && optind < argc)
		cli_usage_error(g, "give COMMAND or -c STRING, not both");
	if (r->shell_cmd == NULL && optind >= argc)
		cli_usage_error(g, "missing COMMAND");
	r->argv = argv + optind;
}

/* ---- the child ------------------------------------------------------- */

/* The terminal we are in the foreground of, or -1. */
static int foreground_tty(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (isatty(fd) && tcgetpgrp(fd) == getpgrp())
			return fd;
	}
	return -1;
}

/* This process's id and start time (field 22 of /proc/PID/stat, clock
 * ticks since boot), "PID:START", into r->me; "" when unknown. */
static void set_me(struct run *r)
{
	static const int fields[] = { 22 };
	unsigned long long start;
	char *p = r->me;

	r->me[0] = '\0';
	if (cli_proc_stat(getpid(), fields, 1, &start) != 0)
		return;
	p += rlock_lltoa(p, (long long)getpid());
	*p++ = ':';
	p += rlock_utoa(p, start);
	*p = '\0';
}

/*
 * A pool's members (--pool): RLOCK_RESOURCE the first, RLOCK_RESOURCE_I
 * each (0..K-1), and each property KEY=VALUE as RLOCK_RESOURCE_I_KEY and,
 * the first's, RLOCK_RESOURCE_KEY, KEY in upper case (rlock_check_prop:
 * ASCII letters, digits and '_', not starting with a digit, so that no
 * name is another's).
 */
static void set_pool_env(struct rlock *rl)
{
	const struct rlock_member *m;
	size_t n = rlock_granted(rl, &m);
	char var[32 + RLOCK_PROP_KEY_MAX], val[RLOCK_PROPS_MAX + 1];

	if (n > 0)
		setenv("RLOCK_RESOURCE", m[0].name, 1);
	for (size_t i = 0; i < n; i++) {
		const char *p = m[i].props;

		snprintf(var, sizeof(var), "RLOCK_RESOURCE_%zu", i);
		setenv(var, m[i].name, 1);
		while (*p != '\0') {
			const char *eq = strchr(p, '=');
			const char *nl = strchr(p, '\n');
			size_t vlen = nl != NULL ? (size_t)(nl - eq - 1) :
				      strlen(eq + 1);
			int at = snprintf(var, sizeof(var),
					  "RLOCK_RESOURCE_%zu_", i);

			for (const char *k = p; k < eq; k++)
				var[at++] = (char)toupper((unsigned char)*k);
			var[at] = '\0';
			snprintf(val, sizeof(val), "%.*s", (int)vlen, eq + 1);
			setenv(var, val, 1);
			if (i == 0) {
				snprintf(var, sizeof(var), "RLOCK_RESOURCE_");
				at = 15;
				for (const char *k = p; k < eq; k++)
					var[at++] =
						(char)toupper((unsigned char)*k);
				var[at] = '\0';
				setenv(var, val, 1);
			}
			p = nl != NULL ? nl + 1 : eq + 1 + vlen;
		}
	}
}

/* --with: RLOCK_LOCKS, how many locks the run holds, and for each, i
 * from 0 (NAME) in the order given, RLOCK_NAME_i and RLOCK_FENCE_i. */
static void set_with_env(struct run *r, const struct rlock_lease *lease)
{
	char var[40], num[24];

	num[rlock_lltoa(num, (long long)r->ao.nwith + 1)] = '\0';
	setenv("RLOCK_LOCKS", num, 1);
	for (size_t i = 0; i <= r->ao.nwith; i++) {
		snprintf(var, sizeof(var), "RLOCK_NAME_%zu", i);
		setenv(var, i == 0 ? r->name : r->ao.with[i - 1], 1);
		snprintf(var, sizeof(var), "RLOCK_FENCE_%zu", i);
		num[rlock_lltoa(num, i == 0 ? lease->fence :
				r->wfence[i - 1])] = '\0';
		setenv(var, num, 1);
	}
}

static void set_child_env(struct run *r, struct rlock *rl,
			  const struct rlock_lease *lease)
{
	char num[24];
	const char *held = getenv("RLOCK_HELD");
	char *nh;
	size_t len;

	if (lease == NULL)
		return;
	setenv("RLOCK_NAME", r->name, 1);
	setenv("RLOCK_KEY", r->key, 1);
	setenv("RLOCK_TOKEN", lease->token, 1);
	num[rlock_lltoa(num, lease->fence)] = '\0';
	setenv("RLOCK_FENCE", num, 1);
	num[rlock_lltoa(num, lease->ttl_ms)] = '\0';
	setenv("RLOCK_TTL_MS", num, 1);
	/* A semaphore's slot; an outer lock's is not this one's. */
	if (lease->slot >= 0) {
		num[rlock_lltoa(num, lease->slot)] = '\0';
		setenv("RLOCK_SLOT", num, 1);
	} else {
		unsetenv("RLOCK_SLOT");
	}
	set_pool_env(rl);
	if (r->ao.nwith > 0)
		set_with_env(r, lease);
	/* One line per hold, "KEY\tKIND\tPID:START\tTOKEN": this process,
	 * which holds it, when it started (pid reuse), and the token, which
	 * a nested run asks its servers about (held_here).  Names have no
	 * control characters. */
	if (held == NULL)
		held = "";
	len = strlen(held) + strlen(r->key) + strlen(r->kind) + 96;
	if ((nh = malloc(len)) == NULL)
		return;
	rlock_join(nh, len, (const char *[]){ held, *held != '\0' ? "\n" : "",
		   r->key, "\t", r->kind, "\t", r->me, "\t", lease->token,
		   NULL });
	for (size_t i = 0; i < r->ao.nwith; i++) {
		char *more;

		len = strlen(nh) + strlen(r->wkey[i]) + strlen(r->kind) + 96;
		if ((more = malloc(len)) == NULL)
			break;
		rlock_join(more, len, (const char *[]){ nh, "\n", r->wkey[i],
			   "\t", r->kind, "\t", r->me, "\t", lease->token,
			   NULL });
		free(nh);
		nh = more;
	}
	setenv("RLOCK_HELD", nh, 1);
	free(nh);
}

/*
 * Whether pid, started at start, is a live ancestor of ours: the process
 * that took the hold, still running the command we descend from.  A daemon
 * that outlived it, or any process that merely inherited the variable
 * (a CI step exporting its environment to the next), gets no hold.
 * *group gets the process group of the holder's command (that of the
 * process just below the holder on our chain of parents): a nested run
 * starts its command there, so that the holder's stop on a loss, which
 * signals that group, reaches it too.
 */
static int live_ancestor(long long pid, long long start, pid_t *group)
{
	static const int fields[] = { 4, 5, 22 };
	unsigned long long v[3];
	pid_t p = getppid(), below = getpgrp();

	/* Up the chain of parents, at most 64 of them, to init. */
	for (int depth = 0; depth < 64 && p > 1; depth++) {
		if (cli_proc_stat(p, fields, 3, v) != 0)
			return 0;
		if (p == pid) {
			*group = below;
			return v[2] == (unsigned long long)start;
		}
		below = (pid_t)v[1];
		p = (pid_t)v[0];
	}
	return 0;
}

/* The next entry of RLOCK_HELD at *p (held_next) for key, held by a live
 * ancestor.  Returns 1 with h filled, 0 when there is none left. */
static int next_hold(const char **p, const char *key, struct hold *h)
{
	struct held_entry e;
	size_t klen = strlen(key);

	while (held_next(p, &e)) {
		if (e.keylen != klen || memcmp(e.key, key, klen) != 0 ||
		    !live_ancestor(e.pid, e.start, &h->group))
			continue;
		memcpy(h->kind, e.kind, sizeof(h->kind));
		memcpy(h->token, e.token, sizeof(h->token));
		return 1;
	}
	return 0;
}

/*
 * Whether this process tree holds lock name (its key): an entry of
 * RLOCK_HELD for the key, of a live ancestor, whose token holds the lock
 * on our servers.  The token is what names the lock exactly: the same
 * key on another server, in another db or under another prefix holds no
 * token of ours, and is taken as usual.  Returns 1 with h filled, 0, or
 * -1 when the servers could not tell (*rc, rlock_errstr).
 */
static int held_here(struct rlock *rl, const char *held, const char *name,
		     const char *key, struct hold *h, int *rc)
{
	const char *p = held;

	while (p != NULL && next_hold(&p, key, h)) {
		*rc = rlock_holds(rl, name, h->token,
				  strcmp(h->kind, "x") == 0 ? 'x' : 'h');
		if (*rc == RLOCK_OK)
			return 1;
		if (*rc != RLOCK_NOTOURS)
			return -1;
	}
	return 0;
}

/* Whether a hold of kind have stands for a run asking for kind want: an
 * exclusive hold for an exclusive or a shared run, any other for its own
 * kind. */
static int covers(const char *have, const char *want)
{
	return strcmp(have, want) == 0 ||
	       (strcmp(have, "x") == 0 && strcmp(want, "s") == 0);
}

static const char *kind_words(const char *k, char *buf, size_t len)
{
	if (strcmp(k, "s") == 0)
		snprintf(buf, len, "shared (-s)");
	else if (strcmp(k, "x") == 0)
		snprintf(buf, len, "exclusively");
	else if (k[0] == 'p')
		snprintf(buf, len, "as %s of its pool's members (--count %s)",
			 k + 1, k + 1);
	else
		snprintf(buf, len, "as a semaphore of %s (--limit %s)", k, k);
	return buf;
}

/*
 * --with: hand rl the set (NAME first), and look for it in RLOCK_HELD: a
 * tree that holds every lock of the set runs re-entrantly (held_here, on
 * each); one that holds only some would wait for its own ancestor, which
 * is refused.  Returns 0, 1 when the tree holds them all (r->hold: NAME's
 * hold), or an exit status after a message.
 */
static int with_setup(struct run *r, struct rlock *rl, const char *held)
{
	const char *names[RLOCK_WITH_MAX];
	size_t i, nheld = 0;
	struct hold h;
	int rc;

	names[0] = r->name;
	for (i = 0; i < r->ao.nwith; i++)
		names[i + 1] = r->ao.with[i];
	if (rlock_with(rl, names, r->ao.nwith + 1) != RLOCK_OK)
		cli_usage_error(r->g, "%s", rlock_errstr(rl));
	r->wkey = calloc(r->ao.nwith, sizeof(*r->wkey));
	if (r->wkey == NULL) {
		cli_warn(r->g, "cannot allocate: %s", strerror(errno));
		return EX_OSERR;
	}
	for (i = 0; i < r->ao.nwith; i++)
		rlock_strlcpy(r->wkey[i], rlock_key(rl, r->ao.with[i]),
			      sizeof(r->wkey[i]));
	if (held == NULL)
		return 0;
	for (i = 0; i <= r->ao.nwith; i++) {
		const char *k = i == 0 ? r->key : r->wkey[i - 1];

		switch (held_here(rl, held, names[i], k, &h, &rc)) {
		case 1:
			if (!covers(h.kind, "x"))
				break;
			if (i == 0)
				r->hold = h;
			nheld++;
			break;
		case -1:
			cli_warn(r->g, "%s: %s", names[i], rlock_errstr(rl));
			return cli_exit_code(rc, r->conflict);
		}
	}
	if (nheld == 0)
		return 0;
	if (nheld == r->ao.nwith + 1)
		return 1;
	cli_warn(r->g, "%s: this process tree holds %zu of the %zu locks "
		 "asked for; a run asking for them all inside that hold would "
		 "wait for its own ancestor", r->name, nheld,
		 r->ao.nwith + 1);
	return EX_USAGE;
}

/*
 * Start the command in its own process group (so that a loss can stop all
 * of it), in the terminal's foreground if we were; a nested run's, in the
 * group of the holder's command (r->hold.group), whose stop on a loss
 * must reach it (where that group cannot be joined, in a setsid'd tree,
 * it stays in ours).
 *
 * vfork, not fork: the child borrows our memory until its exec, so no page
 * table is copied and none of our pages is copied on write afterwards:
 * about 110 of the 420 µs a fork and exec of true(1) take here, on the
 * path from the grant to the command's start (bench/RESULTS-perf.md).
 * We are suspended until the exec succeeded or the child gave up, which
 * it tells through e (our memory).  The child calls only system calls
 * and execvp, which builds its paths on the stack; it writes nothing of
 * ours but e, and runs no handler of ours: we have none (signalfd), our
 * signals are blocked until the exec, and a signal it takes then has its
 * default action, as it would in the command.
 */
static pid_t spawn(struct run *r, const sigset_t *oldmask, int tty,
		   int *exec_errno)
{
	volatile int e = 0;
	char *sargv[4] = { NULL, (char *)"-c", (char *)r->shell_cmd, NULL };
	pid_t parent = getpid(), pid;

	if (r->shell_cmd != NULL) {
		sargv[0] = getenv("SHELL");
		if (sargv[0] == NULL || *sargv[0] == '\0' ||
		    access(sargv[0], X_OK) != 0)
			sargv[0] = (char *)"/bin/sh";
	}
	pid = vfork();
	if (pid == 0) {
		/* If rlock dies (SIGKILL), its renewals stop and the lease
		 * will run out: the command must not go on as if it held
		 * the lock.  Checked again after the call for the race. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(128 + SIGTERM);
		if (!r->reentrant)
			setpgid(0, 0);
		else if (r->hold.group > 0 && r->hold.group != getpgrp())
			setpgid(0, r->hold.group);
		/* SIGTTOU is blocked here (inherited), so this cannot stop
		 * us while we are not yet in the foreground. */
		if (tty >= 0)
			tcsetpgrp(tty, getpid());
		if (!r->g->pipe_ignored)
			signal(SIGPIPE, SIG_DFL);
		sigprocmask(SIG_SETMASK, oldmask, NULL);
		if (sargv[0] != NULL)
			execv(sargv[0], sargv);
		else
			execvp(r->argv[0], r->argv);
		e = errno;
		_exit(e == ENOENT ? EX_NOTFOUND : EX_NOEXEC);
	}
	*exec_errno = e;
	if (pid > 0 && !r->reentrant) {
		/* The child set its group and took the terminal before it
		 * ran the command; these only repeat that. */
		setpgid(pid, pid);
		if (tty >= 0)
			tcsetpgrp(tty, pid);
	}
	return pid;
}

/* ---- supervision ----------------------------------------------------- */

static int64_t min_deadline(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/*
 * The command was stopped from the terminal (Ctrl-Z): take the terminal
 * back and stop ourselves, so that the shell sees its job stopped; on
 * 'fg' give the terminal to the command again and continue it.  Our
 * renewals stop meanwhile, so a long stop loses the lock, as it should.
 */
static void suspend(int tty, pid_t pid)
{
	tcsetpgrp(tty, getpgrp());
	raise(SIGTSTP);
	tcsetpgrp(tty, pid);
	kill(-pid, SIGCONT);
}

/* Send sig to the command's whole process group. */
static void signal_group(pid_t pid, int sig)
{
	if (kill(-pid, sig) != 0)
		kill(pid, sig);
}

/* Reap every child that has changed state: ours, and the orphans of the
 * command that were handed to us as subreaper.  Returns 1 when the
 * command itself has ended (its status in *status). */
static int reap(pid_t pid, int tty, int *status)
{
	int st, done = 0;
	pid_t w;

	while ((w = waitpid(-1, &st, WNOHANG | WUNTRACED)) > 0) {
		if (w != pid)
			continue;
		if (WIFSTOPPED(st)) {
			if (tty >= 0)
				suspend(tty, pid);
			continue;
		}
		*status = st;
		done = 1;
	}
	return done;
}

/*
 * When to SIGKILL a command that was sent SIGTERM on a loss: after
 * --kill-after, but never later than the moment the server may give the
 * lock to another (the lease's end less the clock drift allowance), so
 * that a command ignoring SIGTERM is gone before a rival starts.
 */
static int64_t loss_kill_at(const struct run *r, const struct renewer *rn)
{
	int64_t at = rlock_mono_ms() + r->kill_after_ms, end;

	if (rn->result != RLOCK_LOST)
		return at;
	end = rn->lease.renewed_boot_ms + rn->lease.ttl_ms -
	      rlock_drift_ms(rn->lease.ttl_ms);
	end = rlock_mono_ms() + (end - rlock_boot_ms());
	return end < at ? end : at;
}

/*
 * After a loss, wait for the rest of the command's process group to end,
 * woken by SIGCHLD on the signalfd (as subreaper we are told of every
 * member's end), and SIGKILL what is left at kill_at; give up a second
 * after that.  Signals sent to us meanwhile still reach the command.
 */
static void drain_group(pid_t pid, int sfd, int64_t kill_at)
{
	struct signalfd_siginfo si;
	struct pollfd p = { .fd = sfd, .events = POLLIN };
	int64_t stop_at = INT64_MAX, now, until;
	int killed = 0;

	for (;;) {
		reap(pid, -1, &(int){ 0 });
		if (kill(-pid, 0) != 0)
			return;
		now = rlock_mono_ms();
		if (!killed && now >= kill_at) {
			kill(-pid, SIGKILL);
			killed = 1;
			stop_at = now + 1000;
		}
		if (now >= stop_at)
			return;
		until = killed ? stop_at : kill_at;
		/* A member reaped by a parent of its own tells us nothing:
		 * look again now and then. */
		if (poll(&p, 1, (int)min_deadline(until - now, 100)) > 0) {
			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo != SIGCHLD)
					kill(-pid, (int)si.ssi_signo);
			}
		}
	}
}

/*
 * The lease while the command runs.  Until its first renewal is due (a
 * third of the TTL) it needs no thread: the supervising loop watches the
 * connections the lock was taken on, and starts the renewal thread when a
 * renewal is due, or at once when the server closes one of them (a
 * restart, a crash, a failover).  The thread renews on those same
 * connections, which it has to itself until it is stopped.  A command
 * that ends sooner, a cron job's quick check or a short critical section,
 * costs no thread; no run opens a second connection.
 */
enum keep_state { KEEP_WATCH, KEEP_THREAD, KEEP_DONE };

struct keeper {
	struct rlock *rl;		/* the handle the lock was taken on */
	struct rlock_lease *lease;	/* as taken (and renewed on rl) */
	struct renewer *rn;		/* NULL: an ancestor holds the lock */
	enum keep_state state;
	int failed;			/* the thread could not start */
};

/* Start the renewal thread.  One that cannot start would leave the lease
 * to run out under the command: the command is killed, and run ends with
 * EX_OSERR. */
static void keeper_start(struct run *r, struct keeper *k, pid_t pid,
			 int at_once)
{
	if (renewer_start(k->rn, k->rl, r->name, k->lease, at_once) == 0) {
		k->state = KEEP_THREAD;
		return;
	}
	cli_warn(r->g, "cannot start the renewal thread: %s; command killed",
		 strerror(errno));
	k->state = KEEP_DONE;
	k->failed = 1;
	signal_group(pid, SIGKILL);
}

/*
 * Before a poll: the descriptors to watch into p (the thread's, or the
 * connections'), and *timeout (ms, -1 none) cut to when a renewal is due.
 * Starts the thread when one is due.  Returns how many of p it filled.
 */
static size_t keeper_fds(struct run *r, struct keeper *k, pid_t pid,
			 struct pollfd *p, int *timeout)
{
	int fds[RLOCK_MAX_SERVERS];
	int64_t due = 0;
	size_t n;

	if (k->rn == NULL)
		return 0;
	if (k->state == KEEP_WATCH && (due = rlock_renewal_in(k->lease)) <= 0)
		keeper_start(r, k, pid, 0);
	if (k->state == KEEP_THREAD) {
		p[0] = (struct pollfd){ .fd = renewer_fd(k->rn),
					.events = POLLIN };
		return 1;
	}
	if (k->state != KEEP_WATCH)
		return 0;
	/* poll counts on the monotonic clock, which stops during a
	 * suspend, and the lease's does not: look again every second. */
	due = min_deadline(due, 1000);
	if (*timeout < 0 || *timeout > due)
		*timeout = (int)due;
	n = rlock_watch_fds(k->rl, fds);
	for (size_t i = 0; i < n; i++)
		p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	return n;
}

/* After a poll: the thread's result when it has ended (a loss), else
 * RLOCK_OK; a connection the server closed starts the thread at once. */
static int keeper_check(struct run *r, struct keeper *k, pid_t pid,
			const struct pollfd *p, size_t n)
{
	if (k->state == KEEP_THREAD && n == 1 && p[0].revents != 0) {
		k->state = KEEP_DONE;
		return renewer_join(k->rn);
	}
	for (size_t i = 0; k->state == KEEP_WATCH && i < n; i++) {
		if (p[i].revents != 0 &&
		    rlock_watch_dropped(k->rl, i, p[i].revents))
			keeper_start(r, k, pid, 1);
	}
	return RLOCK_OK;
}

/*
 * A signal sent to us, to the command, once: a terminal's Ctrl-C reaches
 * the foreground group directly and never passes through here.  A second
 * INT or TERM after one was forwarded (*stops counts them) kills the
 * command's whole group at once instead, so that the lock is released
 * now: a CI's cancel (GitHub Actions sends SIGINT, SIGTERM 7.5s later,
 * SIGKILL 2.5s after that) or a user's second Ctrl-C to rlock must not
 * leave the lock to its lease.  The other signals are a daemon's reload
 * or a report: forwarded as sent, every time.
 */
static void forward(const struct run *r, pid_t pid, int sig, int *stops)
{
	if (sig == SIGCHLD)
		return;
	if ((sig == SIGINT || sig == SIGTERM) && (*stops)++ > 0) {
		if (*stops == 2 && r->g->verbose >= 0)
			cli_warn(r->g, "%s: second %s: killing the command",
				 r->name, sig == SIGINT ? "SIGINT" : "SIGTERM");
		signal_group(pid, SIGKILL);
		return;
	}
	kill(pid, sig);
}

/*
 * Wait for the child while forwarding signals, keeping the lease and
 * watching the --max-time deadline.  Returns the wait status; *lost tells
 * whether the renewal thread reported a loss.
 */
static int supervise(struct run *r, pid_t pid, int sfd, int tty,
		     struct keeper *k, int *lost)
{
	int64_t max_at = INT64_MAX, kill_at = INT64_MAX, now;
	int status = 0, stops = 0;
	struct signalfd_siginfo si;
	struct pollfd p[1 + RLOCK_MAX_SERVERS];
	char tb[32];

	*lost = 0;
	if (r->max_time_ms > 0)
		max_at = rlock_mono_ms() + r->max_time_ms;
	for (;;) {
		int64_t wake = min_deadline(max_at, kill_at);
		int timeout, res;
		size_t nk;

		now = rlock_mono_ms();
		if (now >= kill_at) {
			signal_group(pid, SIGKILL);
			kill_at = INT64_MAX;
			continue;
		}
		if (now >= max_at) {
			max_at = INT64_MAX;
			if (r->g->verbose >= 0)
				cli_warn(r->g, "%s: command ran longer than "
					 "--max-time %s; terminating it",
					 r->name, rlock_fmt_ms(r->max_time_ms,
							       tb, sizeof(tb)));
			signal_group(pid, SIGTERM);
			kill_at = min_deadline(kill_at,
					       now + r->kill_after_ms);
			continue;
		}
		timeout = wake == INT64_MAX ? -1 :
			(int)min_deadline(wake - now, 60000);
		p[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		nk = keeper_fds(r, k, pid, p + 1, &timeout);
		if (poll(p, 1 + nk, timeout) < 0 && errno != EINTR)
			break;
		res = keeper_check(r, k, pid, p + 1, nk);
		if (res == RLOCK_LOST || res == RLOCK_NOTOURS) {
			*lost = 1;
			if (r->on_lost == LOST_TERM) {
				signal_group(pid, SIGTERM);
				kill_at = min_deadline(kill_at,
						       loss_kill_at(r, k->rn));
			} else if (r->on_lost == LOST_KILL) {
				signal_group(pid, SIGKILL);
			}
		}
		while (read(sfd, &si, sizeof(si)) == sizeof(si))
			forward(r, pid, (int)si.ssi_signo, &stops);
		if (reap(pid, tty, &status))
			break;
	}
	/* After a loss, what is left of the group goes too. */
	if (*lost && r->on_lost != LOST_IGNORE)
		drain_group(pid, sfd, kill_at == INT64_MAX ?
			    loss_kill_at(r, k->rn) : kill_at);
	return status;
}

/* Die of sig as the shell expects, or exit 128 + sig. */
static void reraise(int sig)
{
	sigset_t s;

	signal(sig, SIG_DFL);
	sigemptyset(&s);
	sigaddset(&s, sig);
	sigprocmask(SIG_UNBLOCK, &s, NULL);
	raise(sig);
	exit(128 + sig);
}

/* Whether the n bytes at s are the start of a UTF-8 character cut short:
 * a lead byte and fewer continuation bytes than it announces. */
static int cut_short(const char *s, size_t n)
{
	unsigned char b = (unsigned char)s[0];
	size_t want = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 0;

	if (want == 0 || n >= want)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			return 0;
	}
	return 1;
}

/* The label as one line: control characters (a newline in a shell
 * command) as spaces, and a UTF-8 character cut by the 256 bytes dropped
 * whole.  Readers escape what they show; this keeps what we write tidy. */
static char *one_line(char *s)
{
	size_t n = strlen(s), i = 0, k;
	uint32_t c;

	while (i < n) {
		k = rlock_utf8_char(s + i, n - i, &c);
		if (k == 0 && cut_short(s + i, n - i)) {
			s[i] = '\0';
			break;
		}
		if (k == 1 && (c < 0x20 || c == 0x7f))
			s[i] = ' ';
		i += k > 0 ? k : 1;
	}
	return s;
}

/* The label: what status shows of us, cut at 256 bytes. */
static void make_label(struct run *r, char *label)
{
	size_t len = 0;

	if (r->ao.label != NULL)
		return;
	label[0] = '\0';
	if (r->shell_cmd != NULL) {
		rlock_strlcpy(label, r->shell_cmd, RLOCK_LABEL_MAX + 1);
	} else {
		for (size_t i = 0; r->argv[i] != NULL && len < RLOCK_LABEL_MAX;
		     i++) {
			if (i > 0)
				rlock_strlcat(label, " ", RLOCK_LABEL_MAX + 1);
			len = rlock_strlcat(label, r->argv[i],
					    RLOCK_LABEL_MAX + 1);
		}
	}
	r->ao.label = one_line(label);
}

/*
 * Take the lock, waiting as the options say; signals that would stop us
 * end the wait (they are read from sfd).  Returns -1 when held, else the
 * exit status (after a signal, we die of it as the shell expects).
 */
static int take(struct run *r, struct rlock *rl, int sfd,
		struct rlock_lease *lease)
{
	struct rlock_holder holder;
	int rc;

	r->ao.cancel_fd = sfd;
	/* The release that frees the lock grants it to us; we start only
	 * once the server confirmed it (rlock_acquire). */
	r->ao.baton = 1;
	cli_wait_setup(r->g, r->name, &r->ao, &r->line, &r->progress);
	rc = rlock_acquire(rl, r->name, &r->ao, lease, &holder);
	cli_wait_end(&r->line, &r->progress);
	if (rc == RLOCK_CANCELED) {
		struct signalfd_siginfo si;

		if (read(sfd, &si, sizeof(si)) == sizeof(si))
			reraise((int)si.ssi_signo);
		return 128 + SIGTERM;
	}
	if (rc != RLOCK_OK) {
		/* A set: the name of the lock whose holder is said. */
		cli_report_acquire(r->g, rlock_with_busy(rl) != NULL ?
				   rlock_with_busy(rl) : r->name, rc, rl,
				   &holder, r->ao.wait_ms);
		return cli_exit_code(rc, r->conflict);
	}
	for (size_t i = 0; i < r->ao.nwith; i++)
		r->wfence[i] = rlock_with_fence(rl, i + 1);
	if (r->g->verbose > 0) {
		char tb[32], sl[32] = "";

		if (lease->slot >= 0)
			snprintf(sl, sizeof(sl), ", slot %d", lease->slot);
		cli_warn(r->g, "%s: acquired (fence %lld%s, ttl %s)", r->name,
			 lease->fence, sl, rlock_fmt_ms(lease->ttl_ms, tb,
							sizeof(tb)));
	}
	cli_history_warn(r->g, rl);
	return -1;
}

/* A lost run is recorded in the history of each lock it held: --with,
 * every lock of the set, each with its own fence (rlock_record_lost of
 * the set's first name). */
static void record_lost(struct run *r, struct rlock *rl,
			const struct rlock_lease *lease, int code,
			const char *why, const struct rlock_outcome *how)
{
	rlock_record_lost(rl, r->name, lease, code, why, how);
}

/*
 * Give the lock up after the command ended.  lost: the renewal thread
 * reported a loss.  Returns the exit status, ret unless the release says
 * otherwise.
 */
static int release(struct run *r, struct rlock *rl, struct renewer *rn,
		   const struct rlock_lease *lease, int lost, int ret)
{
	struct rlock_outcome how = { ret, r->signal };
	int rc;

	if (lost) {
		cli_warn(r->g, "%s: lock lost: %s; %s", r->name, rn->err,
			 r->on_lost == LOST_IGNORE ?
			 "command not stopped (--on-lost ignore)" :
			 "command stopped");
		record_lost(r, rl, lease, rn->result, rn->err, &how);
		/* If only the replies were lost, the server may still hold
		 * our token: free it now rather than at its expiry.  The
		 * script deletes nothing but our own token. */
		rlock_release(rl, r->name, lease->token, NULL, &how);
		return EX_LOST;
	}
	rc = rlock_release(rl, r->name, lease->token, lease, &how);
	if (rc == RLOCK_NOTOURS) {
		cli_warn(r->g, "%s: lock lost before the command ended: "
			 "token no longer holds it", r->name);
		record_lost(r, rl, lease, RLOCK_LOST, "lease ran out before "
			    "release", &how);
		return EX_LOST;
	}
	if (rc != RLOCK_OK) {
		cli_warn(r->g, "%s: cannot release: %s", r->name,
			 rlock_errstr(rl));
	} else if (r->g->verbose > 0) {
		if (rlock_errstr(rl)[0] != '\0')
			cli_warn(r->g, "%s", rlock_errstr(rl));
		else
			cli_warn(r->g, "%s: released", r->name);
	}
	return ret;
}

/*
 * Start the command with the lease (NULL when an ancestor holds the lock)
 * in its environment and supervise it to its end.  Returns its exit
 * status, or -1 (with a message) when it could not be started; *lost
 * tells whether the renewal thread reported a loss.
 */
static int run_command(struct run *r, struct rlock *rl, int sfd,
		       const sigset_t *oldmask, struct renewer *rn,
		       struct rlock_lease *lease, int *lost)
{
	struct keeper k = { rl, lease, rn, KEEP_WATCH, 0 };
	int status, tty, exec_errno;
	pid_t pid;

	*lost = 0;
	set_child_env(r, rl, lease);
	/* Orphans of the command come to us, so that after a loss we can
	 * tell when the whole group is gone. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	tty = r->reentrant ? -1 : foreground_tty();
	/* The command first: what keeping the lease needs is then off the
	 * path from the grant to the command's start.  Then a cluster's map
	 * is learned while the node that granted the lock is surely up, for
	 * following its slot should it die.  supervise keeps the lease from
	 * there (a thread once a renewal is due, a third of the TTL on). */
	pid = spawn(r, oldmask, tty, &exec_errno);
	if (pid < 0) {
		cli_warn(r->g, "cannot fork: %s", strerror(errno));
		return -1;
	}
	if (rn != NULL)
		rlock_watch_open(rl, r->name, lease);
	if (exec_errno != 0)
		cli_warn(r->g, "cannot run '%s': %s",
			 r->shell_cmd != NULL ? "$SHELL" : r->argv[0],
			 strerror(exec_errno));
	status = supervise(r, pid, sfd, tty, &k, lost);
	if (tty >= 0)
		tcsetpgrp(tty, getpgrp());
	if (k.failed)
		return -1;
	r->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) :
		WEXITSTATUS(status);
}

/*
 * A nested run with --once-per in a period already done skips, as the
 * outermost run would have (its release, not ours, marks a period done).
 * Returns -1 to run, or the exit status after a message.
 */
static int nested_once(struct run *r, struct rlock *rl)
{
	struct rlock_holder h;
	char since[40], next[40];
	int rc;

	if (r->ao.once_per_ms == 0)
		return -1;
	rc = rlock_status(rl, r->name, &h, NULL);
	if (rc != RLOCK_OK) {
		cli_warn(r->g, "%s", rlock_errstr(rl));
		return cli_exit_code(rc, r->conflict);
	}
	if (!h.once.present || h.once.period_ms != r->ao.once_per_ms)
		return -1;
	if (r->g->verbose >= 0)
		cli_warn(r->g, "%s: done this period by %.64s@%.200s pid %lld "
			 "at %s; the next period starts %s", r->name,
			 h.once.user, h.once.host, h.once.pid,
			 rlock_fmt_utc(h.once.since_ms, since, sizeof(since)),
			 rlock_fmt_utc(h.once.until_ms, next, sizeof(next)));
	return r->conflict;
}

/*
 * Whether an ancestor holds the lock (RLOCK_HELD, confirmed by the
 * servers: held_here), in which case the run is re-entrant (r->reentrant,
 * r->hold).  Returns -1 to go on, or an exit status after a message:
 * asking for more than the tree's own hold would wait for that hold,
 * which waits for us.
 */
static int find_hold(struct run *r, struct rlock *rl, const char *held)
{
	char w1[64], w2[64];
	int rc;

	if (r->ao.nwith > 0) {
		switch ((rc = with_setup(r, rl, held))) {
		case 0:
			return -1;
		case 1:
			r->reentrant = 1;
			return nested_once(r, rl);
		}
		return rc;
	}
	if (held == NULL)
		return -1;
	switch (held_here(rl, held, r->name, r->key, &r->hold, &rc)) {
	case 0:
		return -1;
	case -1:
		cli_warn(r->g, "%s", rlock_errstr(rl));
		return cli_exit_code(rc, r->conflict);
	}
	if (!covers(r->hold.kind, r->kind)) {
		cli_warn(r->g, "%s: this process tree holds it %s; a run asking "
			 "for it %s inside that hold would wait for its own "
			 "ancestor", r->name,
			 kind_words(r->hold.kind, w1, sizeof(w1)),
			 kind_words(r->kind, w2, sizeof(w2)));
		return EX_USAGE;
	}
	r->reentrant = 1;
	return nested_once(r, rl);
}

/*
 * After a nested run's command: the hold it ran under must still stand.
 * The holder stopped the command if it lost the lock (its group is the
 * command's); the run then ends as a loss, as the holder does.  Returns
 * ret, or EX_LOST after a message.
 */
static int nested_end(struct run *r, struct rlock *rl, int ret)
{
	int rc = rlock_holds(rl, r->name, r->hold.token,
			     strcmp(r->hold.kind, "x") == 0 ? 'x' : 'h');

	if (rc == RLOCK_OK)
		return ret;
	if (rc == RLOCK_NOTOURS)
		cli_warn(r->g, "%s: lock lost: the hold of this process tree "
			 "ended while the command ran", r->name);
	else
		cli_warn(r->g, "%s: lock lost: cannot confirm the hold of this "
			 "process tree: %s", r->name, rlock_errstr(rl));
	return EX_LOST;
}

int cmd_run(int argc, char **argv, struct cli *g)
{
	struct run r;
	struct rlock *rl;
	struct rlock_lease lease;
	struct renewer rn;
	sigset_t waitset, runset, oldmask;
	char label[RLOCK_LABEL_MAX + 1], err[512];
	int sfd, rc, lost = 0, ret;
	size_t i;

	memset(&r, 0, sizeof(r));
	renewer_init(&rn);
	r.g = g;
	r.ao.ttl_ms = 30000;
	r.ao.wait_ms = -1;
	r.ao.cancel_fd = -1;
	r.conflict = EX_TEMPFAIL;
	r.kill_after_ms = 10000;
	parse(&r, argc, argv);
	cli_finish(g);
	rl = cli_open(g);
	if (rlock_check_acquire(rl, &r.ao) != RLOCK_OK)
		cli_usage_error(g, "%s", rlock_errstr(rl));
	rlock_strlcpy(r.key, rlock_key(rl, r.name), sizeof(r.key));
	rlock_kind(&r.ao, r.kind, sizeof(r.kind));
	if ((ret = find_hold(&r, rl, getenv("RLOCK_HELD"))) >= 0) {
		free(r.wkey);
		rlock_free(rl);
		return ret;
	}
	make_label(&r, label);

	/* Signals that would stop us end a wait; they are read from sfd.
	 * One we were started with ignored (SIGHUP under nohup, SIGINT in
	 * a script's background job) stays ignored, by us as by the command,
	 * which inherits that: blocked, it would be queued to sfd instead. */
	sigemptyset(&waitset);
	for (i = 0; i < sizeof(wait_signals) / sizeof(wait_signals[0]); i++) {
		struct sigaction sa;

		if (sigaction(wait_signals[i], NULL, &sa) == 0 &&
		    sa.sa_handler == SIG_IGN)
			continue;
		sigaddset(&waitset, wait_signals[i]);
	}
	if (sigprocmask(SIG_BLOCK, &waitset, &oldmask) != 0 ||
	    (sfd = signalfd(-1, &waitset, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		cli_warn(g, "cannot set up signals: %s", strerror(errno));
		free(r.wkey);
		rlock_free(rl);
		return EX_OSERR;
	}
	if (!r.reentrant) {
		rc = renewer_open(&rn, err, sizeof(err));
		if (rc != RLOCK_OK) {
			cli_warn(g, "%s", err);
			ret = cli_exit_code(rc, r.conflict);
			goto out;
		}
		/* Who we are, for RLOCK_HELD: read before the wait, off
		 * the path from a hand-off to the command. */
		set_me(&r);
		ret = take(&r, rl, sfd, &lease);
		if (ret >= 0)
			goto out;
	}

	/* From here on the command owns the terminal's signals; ours are
	 * read from sfd.  SIGTTOU is blocked across the hand-over of the
	 * terminal (tcsetpgrp from a background group would stop us). */
	runset = waitset;
	sigaddset(&runset, SIGWINCH);
	sigaddset(&runset, SIGCHLD);
	sigaddset(&runset, SIGTTOU);
	if (sigprocmask(SIG_BLOCK, &runset, NULL) != 0 ||
	    signalfd(sfd, &runset, 0) < 0) {
		cli_warn(g, "cannot set up signals: %s", strerror(errno));
		ret = EX_OSERR;
	} else {
		ret = run_command(&r, rl, sfd, &oldmask,
				  r.reentrant ? NULL : &rn,
				  r.reentrant ? NULL : &lease, &lost);
		if (ret < 0)
			ret = EX_OSERR;
		else if (r.reentrant)
			ret = nested_end(&r, rl, ret);
	}
	if (!r.reentrant) {
		/* A renewal thread (the command outlived a third of the TTL)
		 * renews on rl: it is stopped before the release, which
		 * holds the next in line up by a fifth of a millisecond here;
		 * a shorter command has none.  Its copy of the lease has the
		 * last renewal, for judging a release whose reply was lost. */
		renewer_stop(&rn);
		renewer_lease(&rn, &lease);
		ret = release(&r, rl, &rn, &lease, lost, ret);
	}
out:
	renewer_stop(&rn);
	free(r.wkey);
	rlock_free(rl);
	close(sfd);
	return ret;
}
