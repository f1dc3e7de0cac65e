/*
 * cmd_release.c - rlock release: give up a lock held by a token, or with
 * --force whoever holds it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

/*
 * Release token's lock.  An acquire --renew renewer keeping it is told
 * first (its mark removed), so that it takes the token's end for a
 * release, not a loss; a token that no longer holds the lock because that
 * renewer lost it is reported with when and why.
 */
static int release(const struct cli *g, struct rlock *rl, const char *name,
		   const char *token, const struct rlock_outcome *how,
		   int *said)
{
	char rec[700], when[64], mark[32];
	const char *reason;
	long long ms;
	int rc, marked;

	marked = lease_file_read(token, "renewing", mark, sizeof(mark)) == 0 &&
		 lease_file_remove(token, "renewing") == 0;
	rc = rlock_release(rl, name, token, NULL, how);
	if (marked && rc != RLOCK_OK && rc != RLOCK_NOTOURS)
		lease_file_write(token, "renewing", mark);
	if (rc != RLOCK_NOTOURS ||
	    lease_file_read(token, "lost", rec, sizeof(rec)) != 0)
		return rc;
	lease_file_remove(token, "lost");
	if (lease_lost_parse(rec, &ms, &reason) != 0)
		return rc;
	if (g->verbose >= 0) {
		time_t t = (time_t)(ms / 1000);
		struct tm tm;

		localtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", &tm);
		/* The reason came from a file in /tmp: cli_warn escapes
		 * it. */
		cli_warn(g, "%s: the lock was lost at %s: %s", name, when,
			 reason);
	}
	*said = 1;
	return rc;
}

int cmd_release(int argc, char **argv, struct cli *g)
{
	static const struct option longopts[] = {
		CLI_GLOBAL_LONG,
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "status", required_argument, NULL, OPT_STATUS },
		{ NULL, 0, NULL, 0 },
	};
	struct rlock_outcome how = { -1, 0 };
	struct rlock_holder was;
	struct rlock *rl;
	const char *name, *token;
	char who[600];
	int c, rc, force = 0, said = 0, ret;

	while ((c = cli_getopt(argc, argv, CLI_GLOBAL_SHORT, longopts)) != -1) {
		if (cli_global_option(g, c, optarg))
			continue;
		if (c == OPT_FORCE)
			force = 1;
		else if (c == OPT_STATUS)
			how.exit = cli_int(g, "--status", optarg, 0, 255);
		else
			cli_bad_option(g, c, argv);
	}
	token = cli_name_token(g, argc, argv, &name, !force);
	if (force && token != NULL)
		cli_usage_error(g, "--force takes no TOKEN");
	if (force && how.exit >= 0)
		cli_usage_error(g, "--status is for a holder's own release, "
				"not --force");
	cli_finish(g);
	rl = cli_open(g);
	if (force) {
		rc = rlock_force_release(rl, name, &was);
		if (rc == RLOCK_OK && g->verbose >= 0 && was.junk_keys > 0)
			cli_warn(g, "%s: removed %lld key%s of another type "
				 "(another client's data)", name,
				 was.junk_keys, was.junk_keys > 1 ? "s" : "");
		if (rc == RLOCK_OK && !was.held)
			;
		else if (rc == RLOCK_OK && g->verbose >= 0 && was.nholders > 1)
			cli_warn(g, "%s: removed %lld holders, the first %s",
				 name, was.nholders,
				 cli_holder(&was, who, sizeof(who)));
		else if (rc == RLOCK_OK && g->verbose >= 0)
			cli_warn(g, "%s: removed lock held by %s", name,
				 cli_holder(&was, who, sizeof(who)));
		if (rc == RLOCK_NOTOURS) {
			if (g->verbose >= 0)
				cli_warn(g, "%s: was not held", name);
			rc = RLOCK_OK;
		}
	} else {
		cli_with_lookup(rl, &name, token);
		rc = release(g, rl, name, token, &how, &said);
		/* A note of the release, if it has one, is said under -v. */
		if (rc == RLOCK_OK && g->verbose > 0 &&
		    rlock_errstr(rl)[0] != '\0')
			cli_warn(g, "%s", rlock_errstr(rl));
		else if (rc == RLOCK_OK && g->verbose > 0)
			cli_warn(g, "%s: released", name);
	}
	if (rc != RLOCK_OK && g->verbose >= 0 && !said)
		cli_warn(g, "%s", rlock_errstr(rl));
	ret = cli_exit_code(rc, EX_TEMPFAIL);
	rlock_free(rl);
	return ret;
}
