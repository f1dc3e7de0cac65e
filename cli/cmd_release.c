/*
 * cmd_release.c - rlock release: give up a lock held by a token, or with
 * --force whoever holds it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cmd_release(int argc, char **argv, struct cli *g)
{
	static const struct option longopts[] = {
		CLI_GLOBAL_LONG,
		{ "force", no_argument, NULL, OPT_FORCE },
		{ NULL, 0, NULL, 0 },
	};
	struct rlock_holder was;
	struct rlock *rl;
	const char *name, *token;
	char who[600];
	int c, rc, force = 0, ret;

	while ((c = getopt_long(argc, argv, "+:" CLI_GLOBAL_SHORT, longopts,
				NULL)) != -1) {
		if (cli_global_option(g, c, optarg))
			continue;
		if (c == OPT_FORCE)
			force = 1;
		else
			cli_bad_option(g, c, argv);
	}
	token = cli_name_token(g, argc, argv, &name, !force);
	if (force && token != NULL)
		cli_usage_error(g, "--force takes no TOKEN");
	cli_finish(g);
	rl = cli_open(g);
	if (force) {
		rc = rlock_force_release(rl, name, &was);
		if (rc == RLOCK_OK && g->verbose >= 0 && was.nholders > 1)
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
		rc = rlock_release(rl, name, token, NULL);
		/* A note of the release, if it has one, is said under -v. */
		if (rc == RLOCK_OK && g->verbose > 0 &&
		    rlock_errstr(rl)[0] != '\0')
			cli_warn(g, "%s", rlock_errstr(rl));
		else if (rc == RLOCK_OK && g->verbose > 0)
			cli_warn(g, "%s: released", name);
	}
	if (rc != RLOCK_OK && g->verbose >= 0)
		cli_warn(g, "%s", rlock_errstr(rl));
	ret = cli_exit_code(rc, EX_TEMPFAIL);
	rlock_free(rl);
	return ret;
}
