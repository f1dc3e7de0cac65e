/*
 * cmd_pool.c - rlock pool: define a pool's members and list them with who
 * holds each (issue 35).  run and acquire take members with --pool.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The KEY=VALUE operands as the member's properties, one a line; two keys
 * that give one variable (url, URL) are refused. */
static char *join_props(const struct cli *g, char **kv, int n)
{
	size_t len = 1;
	char *out, *p;
	const char *why;

	for (int i = 0; i < n; i++) {
		if (rlock_check_prop(kv[i], &why) != RLOCK_OK)
			cli_usage_error(g, "invalid property '%s': %s", kv[i],
					why);
		len += strlen(kv[i]) + 1;
		for (int j = 0; j < i; j++) {
			size_t a = strcspn(kv[i], "="), b = strcspn(kv[j], "=");

			if (a == b && strncasecmp(kv[i], kv[j], a) == 0)
				cli_usage_error(g, "invalid property '%s': its "
						"KEY is given twice (keys are "
						"upper-cased for variables)",
						kv[i]);
		}
	}
	if (len > RLOCK_PROPS_MAX)
		cli_usage_error(g, "properties longer than 4096 bytes");
	if ((out = malloc(len)) == NULL)
		cli_usage_error(g, "out of memory");
	p = out;
	for (int i = 0; i < n; i++)
		p += sprintf(p, "%s%s", i > 0 ? "\n" : "", kv[i]);
	*p = '\0';
	return out;
}

/* A member's properties on one line, "k=v k=v", escaped. */
static const char *props_line(const char *props, char *buf, size_t len)
{
	char flat[RLOCK_PROPS_MAX + 1];

	snprintf(flat, sizeof(flat), "%s", props);
	for (char *p = flat; *p != '\0'; p++)
		if (*p == '\n')
			*p = ' ';
	return cli_vis(buf, len, flat);
}

static void print_table(const struct rlock_member *m, size_t n)
{
	char who[400], vwho[CLI_VIS(400)], name[CLI_VIS(RLOCK_MEMBER_MAX)];
	char props[CLI_VIS(RLOCK_PROPS_MAX)];

	printf("%-20s %-8s %-32s %s\n", "MEMBER", "STATE", "HOLDER",
	       "PROPERTIES");
	for (size_t i = 0; i < n; i++) {
		const struct rlock_member *x = &m[i];

		cli_vis(name, sizeof(name), x->name);
		if (x->held)
			snprintf(who, sizeof(who), "%s@%s:%lld (%s)",
				 x->holder.user, x->holder.host,
				 x->holder.pid, x->holder.token_prefix);
		else
			snprintf(who, sizeof(who), "-");
		cli_vis(vwho, sizeof(vwho), who);
		printf("%-*s %-8s %-*s %s\n", cli_cols(name, 20), name,
		       x->removed ? "removed" : x->held ? "held" : "free",
		       cli_cols(vwho, 32), vwho,
		       props_line(x->props, props, sizeof(props)));
	}
}

static void print_json(const char *pool, const char *key,
		       const struct rlock_member *m, size_t n)
{
	fputs("{\"pool\":", stdout);
	cli_json_str(stdout, pool);
	fputs(",\"key\":", stdout);
	cli_json_str(stdout, key);
	fputs(",\"members\":[", stdout);
	for (size_t i = 0; i < n; i++) {
		const struct rlock_member *x = &m[i];

		fputs(i > 0 ? ",{\"name\":" : "{\"name\":", stdout);
		cli_json_str(stdout, x->name);
		fputs(",\"properties\":", stdout);
		cli_json_props(stdout, x->props);
		printf(",\"removed\":%s,\"holder\":",
		       x->removed ? "true" : "false");
		if (!x->held) {
			fputs("null}", stdout);
			continue;
		}
		fputs("{\"token_prefix\":", stdout);
		cli_json_str(stdout, x->holder.token_prefix);
		fputs(",\"host\":", stdout);
		cli_json_str(stdout, x->holder.host);
		printf(",\"pid\":%lld,\"user\":", x->holder.pid);
		cli_json_str(stdout, x->holder.user);
		fputs(",\"command\":", stdout);
		cli_json_str(stdout, x->holder.command);
		printf(",\"fence\":%lld,\"since_ms\":%lld}}", x->holder.fence,
		       x->holder.since_ms);
	}
	fputs("]}\n", stdout);
}

int cmd_pool(int argc, char **argv, struct cli *g)
{
	static const struct option longopts[] = {
		CLI_GLOBAL_LONG,
		{ NULL, 0, NULL, 0 },
	};
	struct rlock_member *list = NULL;
	struct rlock_holder h;
	struct rlock *rl;
	const char *pool, *what = NULL, *member = NULL, *why;
	char *props = NULL, who[600], key[RLOCK_KEY_MAX];
	size_t n = 0;
	int c, rc, added = 0, removed = 0, ret;

	while ((c = cli_getopt(argc, argv, CLI_GLOBAL_SHORT, longopts)) != -1) {
		if (!cli_global_option(g, c, optarg))
			cli_bad_option(g, c, argv);
	}
	if (optind >= argc)
		cli_usage_error(g, "missing pool NAME");
	pool = argv[optind++];
	cli_check_name(g, pool);
	if (optind < argc) {
		what = argv[optind++];
		if (strcmp(what, "add") != 0 && strcmp(what, "rm") != 0)
			cli_usage_error(g, "unknown pool command '%s': add or "
					"rm", what);
		if (optind >= argc)
			cli_usage_error(g, "missing MEMBER");
		member = argv[optind++];
		if (rlock_check_member(member, &why) != RLOCK_OK)
			cli_usage_error(g, "invalid member name: %s", why);
		if (strcmp(what, "rm") == 0 && optind < argc)
			cli_usage_error(g, "too many arguments");
		props = join_props(g, argv + optind, argc - optind);
	}
	cli_finish(g);
	rl = cli_open(g);
	rlock_strlcpy(key, rlock_key(rl, pool), sizeof(key));
	if (what == NULL) {
		rc = rlock_pool_list(rl, pool, &list, &n);
		if (rc == RLOCK_OK && g->json)
			print_json(pool, key, list, n);
		else if (rc == RLOCK_OK)
			print_table(list, n);
		free(list);
	} else if (strcmp(what, "add") == 0) {
		rc = rlock_pool_add(rl, pool, member, props, &added);
		if (rc == RLOCK_OK && g->verbose > 0)
			cli_warn(g, "%s: %s %s", pool, member, added ?
				 "added" : "updated");
	} else {
		rc = rlock_pool_rm(rl, pool, member, &removed, &h);
		if (rc == RLOCK_OK && !removed && g->verbose >= 0)
			cli_warn(g, "%s: %s was not a member", pool, member);
		if (rc == RLOCK_OK && h.held && g->verbose >= 0)
			cli_warn(g, "%s: %s stays with its holder %s until it "
				 "is released", pool, member,
				 cli_holder(&h, who, sizeof(who)));
	}
	free(props);
	if (rc != RLOCK_OK && g->verbose >= 0)
		cli_warn(g, "%s", rlock_errstr(rl));
	if (rc == RLOCK_OK && (fflush(stdout) != 0 || ferror(stdout))) {
		cli_warn(g, "cannot write: %s", "standard output");
		rc = RLOCK_ESYS;
	}
	ret = cli_exit_code(rc, EX_TEMPFAIL);
	rlock_free(rl);
	return ret;
}
