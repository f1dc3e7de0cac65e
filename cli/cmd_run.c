/*
 * cmd_run.c - rlock run: take a lock, run a command under it while a
 * renewal thread keeps the lease, forward signals, stop the command if the
 * lock is lost, release and exit with the command's status.  The command's
 * start, supervision and release are cli/child.c's, which lead shares.
 */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
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
	struct cli_child c;		/* the command, and how it runs */
	int reentrant;			/* an ancestor holds it: hold */
	struct hold hold;
	char kind[24];			/* "x", "s" or the limit, as asked */
	char me[48];			/* "PID:START" for RLOCK_HELD */
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
			/* NAME may come before the options, as in flock's
			 * "flock FILE -c CMD": take it and go on, unless a
			 * "--" before it ended the options. */
			if (have_name || cli_pool() != NULL ||
			    optind >= argc)
				break;
			have_name = 1;
			if (!cli_name_operand(argc, argv, &r->name,
					      &name_after_dashdash))
				break;
			continue;
		}
		if (cli_global_option(g, c, optarg) ||
		    cli_lock_option(g, c, optarg, &r->ao, &r->conflict))
			continue;
		switch (c) {
		case 'c':
			r->c.shell_cmd = optarg;
			break;
		case OPT_ON_LOST:
			r->c.on_lost = cli_on_lost(g, optarg);
			break;
		case 'k':
			r->c.kill_after_ms = cli_duration(g, "--kill-after",
							optarg, 0, 1);
			break;
		case OPT_MAX_TIME:
			r->c.max_time_ms = cli_duration(g, "--max-time", optarg,
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
	if (r->c.shell_cmd == NULL && optind >= argc && name_after_dashdash)
		cli_usage_error(g, "missing lock NAME before '--': "
				"rlock run [OPTION]... NAME -- COMMAND");
	cli_check_name(g, r->name);
	cli_lock_check(g, &r->ao);
	cli_with_check(g, r->name, &r->ao);
	if (r->c.shell_cmd != NULL && optind < argc)
		cli_usage_error(g, "give COMMAND or -c STRING, not both");
	if (r->c.shell_cmd == NULL && optind >= argc)
		cli_usage_error(g, "missing COMMAND");
	r->c.argv = argv + optind;
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
	const char *held;
	char *nh;
	size_t len;

	if (lease == NULL)
		return;
	cli_child_env(r->name, r->key, r->kind, r->me, getenv("RLOCK_HELD"),
		      lease);
	set_pool_env(rl);
	if (r->ao.nwith > 0)
		set_with_env(r, lease);
	/* --with: RLOCK_HELD has a line for each lock of the set. */
	if (r->ao.nwith == 0 || (held = getenv("RLOCK_HELD")) == NULL ||
	    (nh = strdup(held)) == NULL)
		return;
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
	r.c.g = g;
	r.c.kill_after_ms = 10000;
	parse(&r, argc, argv);
	r.c.name = r.name;
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
	if (r.ao.label == NULL)
		r.ao.label = cli_child_label(&r.c, "", NULL, label);

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
		cli_child_me(r.me);
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
		if (!r.reentrant)
			set_child_env(&r, rl, &lease);
		r.c.nested = r.reentrant;
		r.c.group = r.hold.group;
		ret = cli_child_run(&r.c, rl, sfd, &oldmask,
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
		ret = cli_child_release(&r.c, rl, &rn, &lease, lost, ret);
	}
out:
	renewer_stop(&rn);
	free(r.wkey);
	rlock_free(rl);
	close(sfd);
	return ret;
}
