/*
 * cmd_acquire.c - rlock acquire: take a lock for a shell script and print
 * its token; with --renew, leave a small background renewer that keeps the
 * lease until release, until the calling process exits, or until the lock
 * is lost.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

enum format { FMT_TOKEN, FMT_JSON, FMT_ENV };

/* Print s single-quoted for sh. */
static void sh_quote(const char *s)
{
	putchar('\'');
	for (; *s != '\0'; s++) {
		if (*s == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*s);
	}
	putchar('\'');
}

/* A property's key as its variable's name has it: upper case. */
static void put_upper(const char *k, size_t n)
{
	for (size_t i = 0; i < n; i++)
		putchar(toupper((unsigned char)k[i]));
}

/* A pool's members as JSON: ',"resources":[{"name":...,"properties":
 * {KEY:VALUE...}}...]'. */
static void json_members(const struct rlock_member *m, size_t n)
{
	fputs(",\"resources\":[", stdout);
	for (size_t i = 0; i < n; i++) {
		fputs(i > 0 ? ",{\"name\":" : "{\"name\":", stdout);
		cli_json_str(stdout, m[i].name);
		fputs(",\"properties\":", stdout);
		cli_json_props(stdout, m[i].props);
		putchar('}');
	}
	putchar(']');
}

/* A pool's members as shell assignments, as run gives them. */
static void env_members(const struct rlock_member *m, size_t n)
{
	char buf[RLOCK_PROPS_MAX + 1];

	if (n > 0) {
		fputs("RLOCK_RESOURCE=", stdout);
		sh_quote(m[0].name);
		fputs("; export RLOCK_RESOURCE\n", stdout);
	}
	for (size_t i = 0; i < n; i++) {
		const char *p = m[i].props;

		printf("RLOCK_RESOURCE_%zu=", i);
		sh_quote(m[i].name);
		printf("; export RLOCK_RESOURCE_%zu\n", i);
		while (*p != '\0') {
			const char *eq = strchr(p, '='), *nl = strchr(p, '\n');
			size_t vl = nl != NULL ? (size_t)(nl - eq - 1) :
				    strlen(eq + 1);

			snprintf(buf, sizeof(buf), "%.*s", (int)vl, eq + 1);
			for (int first = i == 0; first >= 0; first--) {
				if (first)
					fputs("RLOCK_RESOURCE_", stdout);
				else
					printf("RLOCK_RESOURCE_%zu_", i);
				put_upper(p, (size_t)(eq - p));
				putchar('=');
				sh_quote(buf);
				fputs("; export ", stdout);
				if (first)
					fputs("RLOCK_RESOURCE_", stdout);
				else
					printf("RLOCK_RESOURCE_%zu_", i);
				put_upper(p, (size_t)(eq - p));
				putchar('\n');
			}
			p = nl != NULL ? nl + 1 : eq + 1 + vl;
		}
	}
}

/* more: the JSON object goes on (print_with). */
static void print_lease(enum format fmt, const char *name, const char *key,
			const struct rlock_lease *l, struct rlock *rl, int more)
{
	const struct rlock_member *m;
	size_t nm = rlock_granted(rl, &m);

	switch (fmt) {
	case FMT_TOKEN:
		printf("%s\n", l->token);
		break;
	case FMT_JSON:
		fputs("{\"name\":", stdout);
		cli_json_str(stdout, name);
		fputs(",\"key\":", stdout);
		cli_json_str(stdout, key);
		fputs(",\"token\":", stdout);
		cli_json_str(stdout, l->token);
		printf(",\"fence\":%lld", l->fence);
		/* A semaphore's slot; no member for other kinds. */
		if (l->slot >= 0)
			printf(",\"slot\":%d", l->slot);
		if (nm > 0)
			json_members(m, nm);
		printf(",\"ttl_ms\":%lld%s", (long long)l->ttl_ms,
		       more ? "" : "}\n");
		break;
	case FMT_ENV:
		fputs("RLOCK_NAME=", stdout);
		sh_quote(name);
		fputs("; export RLOCK_NAME\nRLOCK_KEY=", stdout);
		sh_quote(key);
		printf("; export RLOCK_KEY\nRLOCK_TOKEN='%s'; export RLOCK_TOKEN\n",
		       l->token);
		printf("RLOCK_FENCE='%lld'; export RLOCK_FENCE\n", l->fence);
		if (l->slot >= 0)
			printf("RLOCK_SLOT='%d'; export RLOCK_SLOT\n",
			       l->slot);
		printf("RLOCK_TTL_MS='%lld'; export RLOCK_TTL_MS\n",
		       (long long)l->ttl_ms);
		env_members(m, nm);
		break;
	}
}

/* --with: hand rl the set, NAME first (a usage error when it cannot). */
static void with_set(struct cli *g, struct rlock *rl, const char *name,
		     const struct rlock_acquire_opts *ao)
{
	const char *names[RLOCK_WITH_MAX];

	names[0] = name;
	for (size_t i = 0; i < ao->nwith; i++)
		names[i + 1] = ao->with[i];
	if (rlock_with(rl, names, ao->nwith + 1) != RLOCK_OK)
		cli_usage_error(g, "%s", rlock_errstr(rl));
}

/* --with: after the lease, every lock of the set and its fence: JSON,
 * "locks":[{"name":..,"fence":..},..] in the lease's object, and --format env,
 * RLOCK_LOCKS, RLOCK_NAME_i and RLOCK_FENCE_i as run exports them.  The
 * token alone is all release needs. */
static void print_with(enum format fmt, const struct rlock *rl,
		       const char *name, const struct rlock_acquire_opts *ao)
{
	for (size_t i = 0; i <= ao->nwith; i++) {
		const char *n = i == 0 ? name : ao->with[i - 1];
		long long f = rlock_with_fence(rl, i);

		if (fmt == FMT_JSON) {
			fputs(i == 0 ? ",\"locks\":[" : ",", stdout);
			fputs("{\"name\":", stdout);
			cli_json_str(stdout, n);
			printf(",\"fence\":%lld}", f);
		} else if (fmt == FMT_ENV) {
			if (i == 0)
				printf("RLOCK_LOCKS='%zu'; export RLOCK_LOCKS\n",
				       ao->nwith + 1);
			printf("RLOCK_NAME_%zu=", i);
			sh_quote(n);
			printf("; export RLOCK_NAME_%zu\n", i);
			printf("RLOCK_FENCE_%zu='%lld'; export RLOCK_FENCE_%zu\n",
			       i, f, i);
		}
	}
	if (fmt == FMT_JSON)
		fputs("]}\n", stdout);
}

/* ---- the process to follow ---------------------------------------------- */

/* Fields of /proc/PID/stat (1-based, as proc(5) numbers them) that a fork
 * copies and an exec makes anew (with address space randomisation):
 * startcode, endcode, startstack, arg_start, arg_end, env_start, env_end
 * (proc_stat). */
#define NLAYOUT 7

/* PID's parent and memory layout from /proc/PID/stat.  Returns 0, or -1
 * when it cannot be read (gone, or not ours to read). */
static int proc_stat(pid_t pid, pid_t *ppid, unsigned long long *layout)
{
	static const int fields[] = { 4, 26, 27, 28, 48, 49, 50, 51 };
	unsigned long long v[1 + NLAYOUT];

	if (cli_proc_stat(pid, fields, 1 + NLAYOUT, v) != 0)
		return -1;
	*ppid = (pid_t)v[0];
	memcpy(layout, v + 1, sizeof(v) - sizeof(v[0]));
	return 0;
}

/* Whether child, whose layout is a, is a forked copy of parent (layout b)
 * that never ran exec: the same memory layout and the same program file. */
static int forked_copy(pid_t child, const unsigned long long *a,
		       pid_t parent, const unsigned long long *b)
{
	char pa[64], pb[64];
	struct stat sa, sb;

	for (size_t i = 0; i < NLAYOUT; i++)
		if (a[i] == 0 || a[i] != b[i])
			return 0;
	snprintf(pa, sizeof(pa), "/proc/%d/exe", (int)child);
	snprintf(pb, sizeof(pb), "/proc/%d/exe", (int)parent);
	return stat(pa, &sa) == 0 && stat(pb, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/*
 * The process --renew follows when no --pid is given: the one that ran us,
 * passing over subshells.  bash runs $(...) in a forked copy of itself
 * when it has an ERR trap with set -E (and in bats), and that copy exits
 * as soon as we do; the script that will go on using the lock is the
 * shell it was forked from.  So go up while the process is a forked copy
 * of its parent, reading each one's stat once.
 */
static pid_t follow_pid(void)
{
	unsigned long long a[NLAYOUT], b[NLAYOUT];
	pid_t pid = getppid(), up, upup;

	if (pid <= 1 || proc_stat(pid, &up, a) != 0)
		return pid;
	while (up > 1 && proc_stat(up, &upup, b) == 0 &&
	       forked_copy(pid, a, up, b)) {
		pid = up;
		up = upup;
		memcpy(a, b, sizeof(a));
	}
	return pid;
}

/* ---- the background renewer --------------------------------------------- */

/* What the renewer tells acquire once it is ready, or why it cannot be. */
struct report {
	int rc;				/* RLOCK_OK: renewing */
	char msg[600];
};

/* Tell acquire and close the pipe. */
static void report(int fd, int rc, const char *msg)
{
	struct report rep;

	memset(&rep, 0, sizeof(rep));
	rep.rc = rc;
	snprintf(rep.msg, sizeof(rep.msg), "%s", msg);
	while (write(fd, &rep, sizeof(rep)) < 0 && errno == EINTR)
		;
	close(fd);
}

/*
 * The lock is lost (code rc, why): unless release gave it up (it removed
 * TOKEN.renewing, which marked says was written), say so to syslog, leave
 * TOKEN.lost for release to report, and do to the followed process what
 * --on-lost says.
 */
static void lost(const char *name, const struct rlock_lease *l, int rc,
		 const char *why, int pfd, enum on_lost on_lost, int marked)
{
	static const char *const done[] = {
		[LOST_TERM] = "; sent SIGTERM to the process it followed",
		[LOST_KILL] = "; sent SIGKILL to the process it followed",
		[LOST_IGNORE] = "",
	};
	char when[64], text[900], vname[CLI_VIS(RLOCK_NAME_MAX)];
	char vwhy[CLI_VIS(600)];
	struct timespec now;
	struct tm tm;

	if (marked && lease_file_remove(l->token, "renewing") != 0)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	localtime_r(&now.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", &tm);
	snprintf(text, sizeof(text), "%lld %s\n",
		 (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000, why);
	lease_file_write(l->token, "lost", text);
	if (on_lost != LOST_IGNORE)
		syscall(SYS_pidfd_send_signal, pfd,
			on_lost == LOST_KILL ? SIGKILL : SIGTERM, NULL, 0);
	/* Escaped: the name is the user's, the reason may quote a
	 * server's words, and a log reader shows what syslog kept. */
	openlog("rlock", LOG_PID, LOG_USER);
	syslog(LOG_WARNING, "%s: lock lost at %s: %s (%s)%s",
	       cli_vis(vname, sizeof(vname), name), when,
	       cli_vis(vwhy, sizeof(vwhy), why),
	       rc == RLOCK_NOTOURS ? "renewal refused" :
	       "lease ran out unconfirmed", done[on_lost]);
	closelog();
}

/*
 * The background renewer, in a child of acquire: detached from the
 * terminal and from the caller's pipes (a $(...) would otherwise wait for
 * it), it makes its own connection in the caller's directory (relative
 * certificate paths), confirms the lease on every server, and only then
 * tells acquire on fd that it is ready.  It then keeps the lease until pid
 * exits (then releases), or the lock is released or lost.
 */
static void renewer(struct cli *g, const char *name, struct rlock_lease *l,
		    pid_t pid, enum on_lost on_lost, int fd)
{
	struct rlock *rl;
	char err[600], me[32];
	int pfd, devnull, rc, marked = 0;

	if (setsid() < 0)
		_exit(EX_OSERR);
	/* Out of the way of 0, 1 and 2, which a caller may have closed. */
	if (fd < 3) {
		fd = fcntl(fd, F_DUPFD, 3);
		if (fd < 0)
			_exit(EX_OSERR);
	}
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		if (devnull > 2)
			close(devnull);
	}
	/* Whatever else the caller had open (a test harness's pipe, a
	 * lock file) must not be held open by a process that may outlive
	 * it by hours; acquire's connection is its own. */
	if (fd != 3) {
		dup2(fd, 3);
		fd = 3;
	}
	close_range(4, ~0U, 0);
	pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0) {
		snprintf(err, sizeof(err), "cannot follow process %d: %s",
			 (int)pid, strerror(errno));
		report(fd, RLOCK_ESYS, err);
		_exit(EX_OSERR);
	}
	rl = cli_try_open(g, &rc, err, sizeof(err));
	if (rl == NULL) {
		report(fd, rc, err);
		_exit(EX_UNAVAILABLE);
	}
	/* Locks taken together (--with) are kept together. */
	cli_with_lookup(rl, &name, l->token);
	rc = rlock_extend(rl, name, l->token, l->ttl_ms, l);
	if (rc == RLOCK_OK) {
		snprintf(me, sizeof(me), "%d\n", (int)getpid());
		marked = lease_file_write(l->token, "renewing", me) == 0;
		if (!marked && on_lost != LOST_IGNORE) {
			rc = RLOCK_ESYS;
			snprintf(err, sizeof(err), "--on-lost: cannot write "
				 "the renewer's mark for release: %s",
				 strerror(errno));
		}
	} else {
		snprintf(err, sizeof(err), "%s", rlock_errstr(rl));
	}
	report(fd, rc, rc == RLOCK_OK ? "" : err);
	if (rc != RLOCK_OK)
		_exit(cli_exit_code(rc, EX_TEMPFAIL));
	/* Keep no directory of the caller's busy for hours; "/" is there. */
	rc = chdir("/");
	(void)rc;
	lease_file_sweep();
	rc = rlock_keepalive(rl, name, l, pfd, 0);
	if (rc == RLOCK_OK) {
		/* The script died holding the lock: recorded as abandoned,
		 * never as a run that ended well. */
		struct rlock_outcome how = { -1, 0, 1 };

		rlock_release(rl, name, l->token, l, &how);
	} else {
		char why[800];

		snprintf(why, sizeof(why), "%s", rlock_errstr(rl));
		lost(name, l, rc, why, pfd, on_lost, marked);
		rlock_record_lost(rl, name, l, rc, why, NULL);
	}
	if (marked)
		lease_file_remove(l->token, "renewing");
	rlock_free(rl);
	close(pfd);
	_exit(rc == RLOCK_OK ? EX_OK : EX_LOST);
}

/*
 * Start the renewer and wait until it is ready.  Returns RLOCK_OK with
 * *child set, or a code with err set (the renewer has exited then).
 */
static int start_renewer(struct cli *g, const char *name,
			 struct rlock_lease *l, pid_t pid, enum on_lost on_lost,
			 pid_t *child, char *err, size_t errlen)
{
	struct report rep;
	ssize_t n;
	int p[2];

	if (pipe2(p, O_CLOEXEC) != 0) {
		snprintf(err, errlen, "cannot make a pipe: %s",
			 strerror(errno));
		return RLOCK_ESYS;
	}
	*child = fork();
	if (*child < 0) {
		snprintf(err, errlen, "cannot fork the renewer: %s",
			 strerror(errno));
		close(p[0]);
		close(p[1]);
		return RLOCK_ESYS;
	}
	if (*child == 0) {
		close(p[0]);
		renewer(g, name, l, pid, on_lost, p[1]);
	}
	close(p[1]);
	do
		n = read(p[0], &rep, sizeof(rep));
	while (n < 0 && errno == EINTR);
	close(p[0]);
	if (n != (ssize_t)sizeof(rep)) {
		snprintf(err, errlen, "the renewer exited before it was "
			 "ready");
		return RLOCK_ESYS;
	}
	rep.msg[sizeof(rep.msg) - 1] = '\0';
	snprintf(err, errlen, "%s", rep.msg);
	if (rep.rc != RLOCK_OK)
		waitpid(*child, NULL, 0);
	return rep.rc;
}

int cmd_acquire(int argc, char **argv, struct cli *g)
{
	static const struct option longopts[] = {
		CLI_GLOBAL_LONG,
		CLI_LOCK_LONG,
		{ "renew", no_argument, NULL, OPT_RENEW },
		{ "pid", required_argument, NULL, OPT_PID },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "on-lost", required_argument, NULL, OPT_ON_LOST },
		{ NULL, 0, NULL, 0 },
	};
	struct rlock_acquire_opts ao;
	struct rlock_lease lease;
	/* A grant given back because nobody got its token is no run that
	 * ended well: recorded as abandoned. */
	const struct rlock_outcome undone = { -1, 0, 1 };
	struct rlock_holder h;
	struct cli_waitline line = { NULL, 0 };
	struct cli_progress progress;
	struct rlock *rl;
	enum format fmt = FMT_TOKEN;
	enum on_lost on_lost = LOST_IGNORE;
	int c, rc, conflict = EX_TEMPFAIL, renew = 0, fmt_set = 0;
	int on_lost_set = 0;
	long long pid = 0;
	const char *name;
	char key[RLOCK_KEY_MAX];
	char err[600];
	pid_t child = 0;

	memset(&ao, 0, sizeof(ao));
	ao.ttl_ms = 30000;
	ao.wait_ms = -1;
	ao.cancel_fd = -1;
	while ((c = cli_getopt(argc, argv, CLI_GLOBAL_SHORT CLI_LOCK_SHORT,
			       longopts)) != -1) {
		if (cli_global_option(g, c, optarg) ||
		    cli_lock_option(g, c, optarg, &ao, &conflict))
			continue;
		switch (c) {
		case OPT_RENEW:
			renew = 1;
			break;
		case OPT_PID:
			if (rlock_parse_ll(optarg, strlen(optarg), 1, 4194304,
					   &pid) != 0)
				cli_usage_error(g, "invalid --pid '%s': not a "
						"process id", optarg);
			break;
		case OPT_ON_LOST:
			on_lost = cli_on_lost(g, optarg);
			on_lost_set = 1;
			break;
		case OPT_FORMAT:
			fmt_set = 1;
			if (strcmp(optarg, "token") == 0)
				fmt = FMT_TOKEN;
			else if (strcmp(optarg, "json") == 0)
				fmt = FMT_JSON;
			else if (strcmp(optarg, "env") == 0)
				fmt = FMT_ENV;
			else
				cli_usage_error(g, "invalid --format '%s': must "
						"be token, json or env", optarg);
			break;
		default:
			cli_bad_option(g, c, argv);
		}
	}
	if (g->json && !fmt_set)
		fmt = FMT_JSON;
	if (cli_pool() != NULL && optind < argc)
		cli_usage_error(g, "give --pool NAME or a lock NAME, not both");
	name = cli_pool() != NULL ? cli_pool() : cli_one_name(g, argc, argv);
	cli_lock_check(g, &ao);
	cli_with_check(g, name, &ao);
	if (pid != 0 && !renew)
		cli_usage_error(g, "--pid needs --renew");
	if (on_lost_set && !renew)
		cli_usage_error(g, "--on-lost needs --renew");
	/* The holder status shows is the calling script, not us. */
	if (pid == 0)
		pid = renew ? follow_pid() : getppid();
	if (renew && kill((pid_t)pid, 0) != 0 && errno == ESRCH)
		cli_usage_error(g, "invalid --pid '%lld': no such process",
				pid);
	cli_finish(g);
	rl = cli_open(g);
	if (rlock_check_acquire(rl, &ao) != RLOCK_OK)
		cli_usage_error(g, "%s", rlock_errstr(rl));
	if (ao.nwith > 0)
		with_set(g, rl, name, &ao);
	rlock_strlcpy(key, rlock_key(rl, name), sizeof(key));
	if (ao.label == NULL)
		ao.label = renew ? "rlock acquire --renew" : "rlock acquire";
	ao.pid = pid;
	cli_wait_setup(g, name, &ao, &line, &progress);
	rc = rlock_acquire(rl, name, &ao, &lease, &h);
	cli_wait_end(&line, &progress);
	if (rc != RLOCK_OK) {
		cli_report_acquire(g, rlock_with_busy(rl) != NULL ?
				   rlock_with_busy(rl) : name, rc, rl, &h,
				   ao.wait_ms);
		rlock_free(rl);
		return cli_exit_code(rc, conflict);
	}
	cli_history_warn(g, rl);
	/* The token is printed only once the renewer keeps the lease: one
	 * that cannot start leaves nobody holding a lock it cannot keep. */
	if (renew) {
		fflush(NULL);
		rc = start_renewer(g, name, &lease, (pid_t)pid, on_lost, &child,
				   err, sizeof(err));
		if (rc != RLOCK_OK) {
			rlock_release(rl, name, lease.token, &lease,
				      &undone);
			rlock_free(rl);
			if (g->verbose >= 0)
				cli_warn(g, "%s", err);
			return cli_exit_code(rc, conflict);
		}
	}
	print_lease(fmt, name, key, &lease, rl, ao.nwith > 0);
	if (ao.nwith > 0)
		print_with(fmt, rl, name, &ao);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		/* Nobody has the token (a reader that went away, a full
		 * disk): do not leave the lock behind. */
		int e = errno;

		if (child > 0) {
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			lease_file_remove(lease.token, "renewing");
		}
		rlock_release(rl, name, lease.token, &lease, &undone);
		rlock_free(rl);
		cli_warn(g, "%s: cannot write the token: %s; lock released",
			 name, strerror(e));
		return EX_OSERR;
	}
	rlock_free(rl);
	return EX_OK;
}
