/*
 * child.c - a command under a lease, for run and lead: start it in its own
 * process group with the lock in its environment, keep the lease while it
 * runs (the renewal thread, cli/renewer.c), forward signals, stop the
 * whole group before the lease can end when the lock is lost, and give the
 * lock up when it has ended.
 *
 * Like tini, the supervising loop never does work in a signal handler:
 * the signals it cares about are blocked and read from a signalfd, next to
 * the pipe on which the renewal thread reports a loss.
 */
#include <errno.h>
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

/* The terminal we are in the foreground of, or -1. */
static int foreground_tty(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (isatty(fd) && tcgetpgrp(fd) == getpgrp())
			return fd;
	}
	return -1;
}

void cli_child_me(char *me)
{
	static const int fields[] = { 22 };
	unsigned long long start;
	char *p = me;

	me[0] = '\0';
	if (cli_proc_stat(getpid(), fields, 1, &start) != 0)
		return;
	p += rlock_lltoa(p, (long long)getpid());
	*p++ = ':';
	p += rlock_utoa(p, start);
	*p = '\0';
}

/*
 * Start the command in its own process group (so that a loss can stop all
 * of it), in the terminal's foreground if we were; a nested run's, in the
 * group of the holder's command (c->group), whose stop on a loss
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
static pid_t spawn(struct cli_child *c, const sigset_t *oldmask, int tty,
		   int *exec_errno)
{
	volatile int e = 0;
	char *sargv[4] = { NULL, (char *)"-c", (char *)c->shell_cmd, NULL };
	pid_t parent = getpid(), pid;

	if (c->shell_cmd != NULL) {
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
		if (!c->nested)
			setpgid(0, 0);
		else if (c->group > 0 && c->group != getpgrp())
			setpgid(0, c->group);
		/* SIGTTOU is blocked here (inherited), so this cannot stop
		 * us while we are not yet in the foreground. */
		if (tty >= 0)
			tcsetpgrp(tty, getpid());
		if (!c->g->pipe_ignored)
			signal(SIGPIPE, SIG_DFL);
		sigprocmask(SIG_SETMASK, oldmask, NULL);
		if (sargv[0] != NULL)
			execv(sargv[0], sargv);
		else
			execvp(c->argv[0], c->argv);
		e = errno;
		_exit(e == ENOENT ? EX_NOTFOUND : EX_NOEXEC);
	}
	*exec_errno = e;
	if (pid > 0 && !c->nested) {
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
static int64_t loss_kill_at(const struct cli_child *c, const struct renewer *rn)
{
	int64_t at = rlock_mono_ms() + c->kill_after_ms, end;

	if (rn->result != RLOCK_LOST)
		return at;
	end = rn->lease.renewed_boot_ms + rlock_lease_ttl(&rn->lease) -
	      rlock_drift_ms(rlock_lease_ttl(&rn->lease));
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
static void keeper_start(struct cli_child *c, struct keeper *k, pid_t pid,
			 int at_once)
{
	if (renewer_start(k->rn, k->rl, c->name, k->lease, at_once) == 0) {
		k->state = KEEP_THREAD;
		return;
	}
	cli_warn(c->g, "cannot start the renewal thread: %s; command killed",
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
static size_t keeper_fds(struct cli_child *c, struct keeper *k, pid_t pid,
			 struct pollfd *p, int *timeout)
{
	int fds[RLOCK_MAX_SERVERS];
	int64_t due = 0;
	size_t n;

	if (k->rn == NULL)
		return 0;
	if (k->state == KEEP_WATCH && (due = rlock_renewal_in(k->lease)) <= 0)
		keeper_start(c, k, pid, 0);
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
static int keeper_check(struct cli_child *c, struct keeper *k, pid_t pid,
			const struct pollfd *p, size_t n)
{
	if (k->state == KEEP_THREAD && n == 1 && p[0].revents != 0) {
		k->state = KEEP_DONE;
		return renewer_join(k->rn);
	}
	for (size_t i = 0; k->state == KEEP_WATCH && i < n; i++) {
		if (p[i].revents != 0 &&
		    rlock_watch_dropped(k->rl, i, p[i].revents))
			keeper_start(c, k, pid, 1);
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
static void forward(struct cli_child *c, pid_t pid, int sig, int *stops,
		    int64_t *kill_at)
{
	if (sig == SIGCHLD)
		return;
	/* lead: the first INT or TERM is ours, to stop the command and hand
	 * the lead on; it is stopped as on a loss, SIGTERM to its group and
	 * SIGKILL --kill-after later. */
	if (c->lead && (sig == SIGINT || sig == SIGTERM) && *stops == 0) {
		(*stops)++;
		c->stopped = sig;
		/* --standby: demoted, and the caller releases before it
		 * stops the command. */
		if (c->demote != 0) {
			kill(pid, c->demote);
			return;
		}
		signal_group(pid, SIGTERM);
		*kill_at = min_deadline(*kill_at,
					rlock_mono_ms() + c->kill_after_ms);
		return;
	}
	if ((sig == SIGINT || sig == SIGTERM) && (*stops)++ > 0) {
		if (*stops == 2 && c->g->verbose >= 0)
			cli_warn(c->g, "%s: second %s: killing the command",
				 c->name, sig == SIGINT ? "SIGINT" : "SIGTERM");
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
static int supervise(struct cli_child *c, pid_t pid, int sfd, int tty,
		     struct keeper *k, int *lost)
{
	int64_t max_at = INT64_MAX, kill_at = INT64_MAX, now;
	int status = 0, stops = 0;
	struct signalfd_siginfo si;
	struct pollfd p[1 + RLOCK_MAX_SERVERS];
	char tb[32];

	*lost = 0;
	if (c->max_time_ms > 0)
		max_at = rlock_mono_ms() + c->max_time_ms;
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
			if (c->g->verbose >= 0)
				cli_warn(c->g, "%s: command ran longer than "
					 "--max-time %s; terminating it",
					 c->name, rlock_fmt_ms(c->max_time_ms,
							       tb, sizeof(tb)));
			signal_group(pid, SIGTERM);
			kill_at = min_deadline(kill_at,
					       now + c->kill_after_ms);
			continue;
		}
		timeout = wake == INT64_MAX ? -1 :
			(int)min_deadline(wake - now, 60000);
		p[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		nk = keeper_fds(c, k, pid, p + 1, &timeout);
		if (c->tick != NULL) {
			int64_t t = c->tick(c->tick_arg);

			if (t >= 0 && (timeout < 0 || t < timeout))
				timeout = (int)t;
			/* lead --health: the term ends as at a stop
			 * signal, but the candidate runs again. */
			if (c->step_down == 1) {
				c->step_down = 2;
				if (c->demote != 0) {
					kill(pid, c->demote);
					return 0;
				}
				signal_group(pid, SIGTERM);
				kill_at = min_deadline(kill_at, rlock_mono_ms() +
						       c->kill_after_ms);
			}
		}
		if (poll(p, 1 + nk, timeout) < 0 && errno != EINTR)
			break;
		res = keeper_check(c, k, pid, p + 1, nk);
		if ((res == RLOCK_LOST || res == RLOCK_NOTOURS) &&
		    c->demote != 0) {
			/* --standby: demoted before the lease can end; the
			 * command runs on. */
			*lost = 1;
			kill(pid, c->demote);
			return 0;
		}
		if (res == RLOCK_LOST || res == RLOCK_NOTOURS) {
			*lost = 1;
			if (c->on_lost == LOST_TERM) {
				signal_group(pid, SIGTERM);
				kill_at = min_deadline(kill_at,
						       loss_kill_at(c, k->rn));
			} else if (c->on_lost == LOST_KILL) {
				signal_group(pid, SIGKILL);
			}
		}
		while (read(sfd, &si, sizeof(si)) == sizeof(si))
			forward(c, pid, (int)si.ssi_signo, &stops,
				&kill_at);
		if (reap(pid, tty, &status)) {
			c->exited = 1;
			break;
		}
		if (c->stopped != 0 && c->demote != 0)
			return 0;
	}
	/* After a loss, what is left of the group goes too; and, under
	 * lead, after any end: a leader's daemon may have left children
	 * that must not outlive its term. */
	if (*lost && c->on_lost != LOST_IGNORE) {
		drain_group(pid, sfd, kill_at == INT64_MAX ?
			    loss_kill_at(c, k->rn) : kill_at);
	} else if (c->lead && kill(-pid, 0) == 0) {
		signal_group(pid, SIGTERM);
		drain_group(pid, sfd, kill_at == INT64_MAX ?
			    rlock_mono_ms() + c->kill_after_ms : kill_at);
	}
	return status;
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

const char *cli_child_label(const struct cli_child *c, const char *prefix,
			    const char *text, char *label)
{
	size_t len = rlock_strlcpy(label, prefix, RLOCK_LABEL_MAX + 1);

	if (text != NULL) {
		rlock_strlcat(label, text, RLOCK_LABEL_MAX + 1);
	} else if (c->shell_cmd != NULL) {
		rlock_strlcat(label, c->shell_cmd, RLOCK_LABEL_MAX + 1);
	} else {
		for (size_t i = 0; c->argv[i] != NULL && len < RLOCK_LABEL_MAX;
		     i++) {
			if (i > 0)
				rlock_strlcat(label, " ", RLOCK_LABEL_MAX + 1);
			len = rlock_strlcat(label, c->argv[i],
					    RLOCK_LABEL_MAX + 1);
		}
	}
	return one_line(label);
}

int cli_child_release(const struct cli_child *c, struct rlock *rl,
		      const struct renewer *rn, const struct rlock_lease *lease,
		      int lost, int ret)
{
	struct rlock_outcome how = { ret, c->signal };
	int rc;

	if (lost) {
		cli_warn(c->g, "%s: lock lost: %s; %s", c->name, rn->err,
			 c->demote != 0 ? "command demoted" :
			 c->on_lost == LOST_IGNORE ?
			 "command not stopped (--on-lost ignore)" :
			 "command stopped");
		/* --with: recorded for every lock of the set, each with
		 * its own fence (the handle knows the set). */
		rlock_record_lost(rl, c->name, lease, rn->result, rn->err,
				  &how);
		/* If only the replies were lost, the server may still hold
		 * our token: free it now rather than at its expiry.  The
		 * script deletes nothing but our own token. */
		rlock_release(rl, c->name, lease->token, NULL, &how);
		return EX_LOST;
	}
	rc = rlock_release(rl, c->name, lease->token, lease, &how);
	if (rc == RLOCK_NOTOURS) {
		cli_warn(c->g, "%s: lock lost before the command ended: "
			 "token no longer holds it", c->name);
		rlock_record_lost(rl, c->name, lease, RLOCK_LOST,
				  "lease ran out before release", &how);
		return EX_LOST;
	}
	if (rc != RLOCK_OK) {
		cli_warn(c->g, "%s: cannot release: %s", c->name,
			 rlock_errstr(rl));
	} else if (c->g->verbose > 0) {
		if (rlock_errstr(rl)[0] != '\0')
			cli_warn(c->g, "%s", rlock_errstr(rl));
		else
			cli_warn(c->g, "%s: released", c->name);
	}
	return ret;
}

pid_t cli_child_spawn(struct cli_child *c, const sigset_t *oldmask)
{
	int exec_errno;

	c->exited = 0;
	c->signal = 0;
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	c->pid = spawn(c, oldmask, -1, &exec_errno);
	if (c->pid < 0)
		cli_warn(c->g, "cannot fork: %s", strerror(errno));
	else if (exec_errno != 0)
		cli_warn(c->g, "cannot run '%s': %s",
			 c->shell_cmd != NULL ? "$SHELL" : c->argv[0],
			 strerror(exec_errno));
	return c->pid;
}

/* The exit status of a wait status, as a shell says it. */
static int exit_status(struct cli_child *c, int status)
{
	c->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) :
		WEXITSTATUS(status);
}

int cli_child_watch(struct cli_child *c, struct rlock *rl, int sfd,
		    struct renewer *rn, struct rlock_lease *lease, int *lost)
{
	struct keeper k = { rl, lease, rn, KEEP_WATCH, 0 };
	int status;

	*lost = 0;
	c->stopped = 0;
	c->step_down = 0;
	rlock_watch_open(rl, c->name, lease);
	status = supervise(c, c->pid, sfd, -1, &k, lost);
	if (k.failed) {
		c->exited = 1;
		return -1;
	}
	return c->exited ? exit_status(c, status) : 0;
}

int cli_child_reaped(struct cli_child *c)
{
	int status;

	if (c->exited || !reap(c->pid, -1, &status))
		return -1;
	c->exited = 1;
	return exit_status(c, status);
}

int cli_child_stop(struct cli_child *c, int sfd)
{
	int status = 0;

	if (!c->exited) {
		signal_group(c->pid, SIGTERM);
		drain_group(c->pid, sfd, rlock_mono_ms() + c->kill_after_ms);
		/* drain_group reaped it unless it outlived the SIGKILL. */
		if (waitpid(c->pid, &status, WNOHANG) <= 0)
			status = 0;
		c->exited = 1;
	}
	return exit_status(c, status);
}

int cli_child_run(struct cli_child *c, struct rlock *rl, int sfd,
		  const sigset_t *oldmask, struct renewer *rn,
		  struct rlock_lease *lease, int *lost)
{
	struct keeper k = { rl, lease, rn, KEEP_WATCH, 0 };
	int status, tty, exec_errno;
	pid_t pid;

	*lost = 0;
	c->stopped = 0;
	c->step_down = 0;
	c->signal = 0;
	/* Orphans of the command come to us, so that after a loss we can
	 * tell when the whole group is gone. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* A leader's command stays out of the terminal's foreground: a
	 * Ctrl-C there is for rlock, which hands the lead on. */
	tty = c->nested || c->lead ? -1 : foreground_tty();
	/* The command first: what keeping the lease needs is then off the
	 * path from the grant to the command's start.  Then a cluster's map
	 * is learned while the node that granted the lock is surely up, for
	 * following its slot should it die.  supervise keeps the lease from
	 * there (a thread once a renewal is due, a third of the TTL on). */
	pid = spawn(c, oldmask, tty, &exec_errno);
	if (pid < 0) {
		cli_warn(c->g, "cannot fork: %s", strerror(errno));
		return -1;
	}
	if (rn != NULL)
		rlock_watch_open(rl, c->name, lease);
	if (exec_errno != 0)
		cli_warn(c->g, "cannot run '%s': %s",
			 c->shell_cmd != NULL ? "$SHELL" : c->argv[0],
			 strerror(exec_errno));
	status = supervise(c, pid, sfd, tty, &k, lost);
	if (tty >= 0)
		tcsetpgrp(tty, getpgrp());
	if (k.failed)
		return -1;
	c->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) :
		WEXITSTATUS(status);
}

void cli_child_env(const char *name, const char *key, const char *kind,
		   const char *me, const char *held,
		   const struct rlock_lease *lease)
{
	char num[24];
	char *nh;
	size_t len;

	setenv("RLOCK_NAME", name, 1);
	setenv("RLOCK_KEY", key, 1);
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
	/* One line per hold, "KEY\tKIND\tPID:START\tTOKEN": this process,
	 * which holds it, when it started (pid reuse), and the token, which
	 * a nested run asks its servers about (held_here).  Names have no
	 * control characters. */
	if (held == NULL)
		held = "";
	len = strlen(held) + strlen(key) + strlen(kind) + 96;
	if ((nh = malloc(len)) == NULL)
		return;
	rlock_join(nh, len, (const char *[]){ held, *held != '\0' ? "\n" : "",
		   key, "\t", kind, "\t", me, "\t", lease->token, NULL });
	setenv("RLOCK_HELD", nh, 1);
	free(nh);
}
