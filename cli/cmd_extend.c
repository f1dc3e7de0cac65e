/*
 * cmd_extend.c - rlock extend: push back the expiry of a lock held by a
 * token.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

int cmd_extend(int argc, char **argv, struct cli *g)
{
	static const struct option longopts[] = {
		CLI_GLOBAL_LONG,
		{ "ttl", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	struct rlock *rl;
	const char *name, *token;
	int64_t ttl = 30000;
	int c, rc, ret;

	while ((c = cli_getopt(argc, argv, CLI_GLOBAL_SHORT "t:",
			       longopts)) != -1) {
		if (cli_global_option(g, c, optarg))
			continue;
		if (c == 't')
			ttl = cli_duration(g, "--ttl", optarg, 1, 0);
		else
			cli_bad_option(g, c, argv);
	}
	token = cli_name_token(g, argc, argv, &name, 1);
	cli_finish(g);
	rl = cli_open(g);
	cli_with_lookup(rl, &name, token);
	rc = rlock_extend(rl, name, token, ttl, NULL);
	if (rc != RLOCK_OK && g->verbose >= 0)
		cli_warn(g, "%s", rlock_errstr(rl));
	ret = cli_exit_code(rc, EX_TEMPFAIL);
	rlock_free(rl);
	return ret;
}
