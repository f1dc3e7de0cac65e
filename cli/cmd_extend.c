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
	const char *name, *token = NULL;
	int64_t ttl = 30000;
	int c, rc, ret;

	while ((c = getopt_long(argc, argv, "+:" CLI_GLOBAL_SHORT "t:",
				longopts, NULL)) != -1) {
		if (cli_global_option(g, c, optarg))
			continue;
		if (c == 't')
			ttl = cli_duration(g, "--ttl", optarg, 1, 0);
		else
			cli_bad_option(g, c, argv);
	}
	if (optind >= argc)
		cli_usage_error(g, "missing lock NAME");
	name = argv[optind++];
	cli_check_name(g, name);
	if (optind < argc)
		token = argv[optind++];
	if (optind < argc)
		cli_usage_error(g, "too many arguments");
	if (token == NULL) {
		token = getenv("RLOCK_TOKEN");
		if (token == NULL || *token == '\0')
			cli_usage_error(g, "missing TOKEN (give it or set "
					"RLOCK_TOKEN)");
	}
	cli_finish(g);
	rl = cli_open(g);
	rc = rlock_extend(rl, name, token, ttl, NULL);
	if (rc != RLOCK_OK && g->verbose >= 0)
		cli_warn(g, "%s", rlock_errstr(rl));
	ret = cli_exit_code(rc, EX_TEMPFAIL);
	rlock_free(rl);
	return ret;
}
