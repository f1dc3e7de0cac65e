/*
 * cmd_acquire.c - rlock acquire: take a lock for a shell script and print
 * its token; with --renew, leave a small background renewer that keeps the
 * lease until release, until the calling process exits, or until the lock
 * is lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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

static void print_lease(enum format fmt, const char *name, const char *key,
			const struct rlock_lease *l)
{
	switch (fmt) {
	case FMT_TOKEN:
		printf("%s\n", l->token);
		break;
	case FMT_JSON:
		fputs("{\"name\":", stdout);
		cli_json_str(stdout, name);
		fputs(",\"key\":", stdout);
		cli_json_str(stdout, key);
		printf(",\"token\":\"%s\",\"fence\":%lld,\"ttl_ms\":%lld}\n",
		       l->token, l->fence, (long long)l->ttl_ms);
		break;
	case FMT_ENV:
		fputs("RLOCK_NAME=", stdout);
		sh_quote(name);
		fputs("; export RLOCK_NAME\nRLOCK_KEY=", stdout);
		sh_quote(key);
		printf("; export RLOCK_KEY\nRLOCK_TOKEN='%s'; export RLOCK_TOKEN\n",
		       l->token);
		printf("RLOCK_FENCE='%lld'; export RLOCK_FENCE\n", l->fence);
		printf("RLOCK_TTL_MS='%lld'; export RLOCK_TTL_MS\n",
		       (long long)l->ttl_ms);
		break;
	}
}

/*
 * The background renewer: detached from the terminal and from the
 * caller's pipes (a $(...) would otherwise wait for it), it keeps the
 * lease until pid exits (then releases), or the lock is released or lost.
 */
static void renewer(struct cli *g, const char *name, struct rlock_lease *l,
		    pid_t pid)
{
	struct rlock *rl;
	int pfd, devnull, rc;

	if (setsid() < 0)
		_exit(EX_OSERR);
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
	 * it by hours. */
	close_range(3, ~0U, 0);
	if (chdir("/") != 0)
		_exit(EX_OSERR);
	pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0)
		_exit(EX_OSERR);
	rl = cli_open(g);
	rc = rlock_keepalive(rl, name, l, pfd);
	if (rc == RLOCK_OK)
		rlock_release(rl, name, l->token, l);
	rlock_free(rl);
	close(pfd);
	_exit(rc == RLOCK_OK ? EX_OK : EX_LOST);
}

int cmd_acquire(int argc, char **argv, struct cli *g)
{
	static const struct option longopts[] = {
		CLI_GLOBAL_LONG,
		CLI_LOCK_LONG,
		{ "renew", no_argument, NULL, OPT_RENEW },
		{ "pid", required_argument, NULL, OPT_PID },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ NULL, 0, NULL, 0 },
	};
	struct rlock_acquire_opts ao;
	struct rlock_lease lease;
	struct rlock_holder h;
	struct cli_waitline line = { NULL, 0 };
	struct rlock *rl;
	enum format fmt = FMT_TOKEN;
	int c, rc, conflict = EX_TEMPFAIL, renew = 0, fmt_set = 0;
	long long pid = 0;
	const char *name;
	char key[RLOCK_KEY_MAX];
	char *end;
	pid_t child;

	memset(&ao, 0, sizeof(ao));
	ao.ttl_ms = 30000;
	ao.wait_ms = -1;
	ao.cancel_fd = -1;
	while ((c = getopt_long(argc, argv, "+:" CLI_GLOBAL_SHORT CLI_LOCK_SHORT,
				longopts, NULL)) != -1) {
		if (cli_global_option(g, c, optarg) ||
		    cli_lock_option(g, c, optarg, &ao, &conflict))
			continue;
		switch (c) {
		case OPT_RENEW:
			renew = 1;
			break;
		case OPT_PID:
			errno = 0;
			pid = strtoll(optarg, &end, 10);
			if (errno != 0 || *optarg == '\0' || *end != '\0' ||
			    pid <= 0 || pid > 4194304)
				cli_usage_error(g, "invalid --pid '%s': not a "
						"process id", optarg);
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
	if (optind >= argc)
		cli_usage_error(g, "missing lock NAME");
	if (argc - optind > 1)
		cli_usage_error(g, "too many arguments");
	name = argv[optind];
	cli_check_name(g, name);
	cli_lock_check(g, &ao);
	if (pid != 0 && !renew)
		cli_usage_error(g, "--pid needs --renew");
	/* The holder status shows is the calling script, not us. */
	if (pid == 0)
		pid = getppid();
	if (renew && kill((pid_t)pid, 0) != 0 && errno == ESRCH)
		cli_usage_error(g, "invalid --pid '%lld': no such process",
				pid);
	cli_finish(g);
	rl = cli_open(g);
	snprintf(key, sizeof(key), "%s", rlock_key(rl, name));
	if (ao.label == NULL)
		ao.label = renew ? "rlock acquire --renew" : "rlock acquire";
	ao.pid = pid;
	line.name = name;
	if (cli_live_ok(g)) {
		ao.wait_cb = cli_wait_line;
		ao.wait_arg = &line;
	}
	rc = rlock_acquire(rl, name, &ao, &lease, &h);
	cli_wait_line_end(&line);
	if (rc != RLOCK_OK) {
		cli_report_acquire(g, name, rc, rl, &h, ao.wait_ms);
		rlock_free(rl);
		return cli_exit_code(rc, conflict);
	}
	print_lease(fmt, name, key, &lease);
	if (cli_flush_stdout(g) != 0) {
		/* Nobody has the token: do not leave the lock behind. */
		rlock_release(rl, name, lease.token, &lease);
		rlock_free(rl);
		return EX_OSERR;
	}
	rlock_free(rl);
	if (!renew)
		return EX_OK;
	child = fork();
	if (child < 0) {
		cli_warn(g, "cannot fork the renewer: %s", strerror(errno));
		return EX_OSERR;
	}
	if (child == 0)
		renewer(g, name, &lease, (pid_t)pid);
	return EX_OK;
}
