/*
 * cmd_doctor.c - rlock doctor: print the library's checks as a table that
 * fits 80 columns (grouped by server, the message wrapped under itself) or
 * as a JSON list, and exit with the worst finding: 69 or 77 when rlock
 * cannot work, 1 when a check warns, 0 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rlock_doctor.h"

#define WIDTH 80
#define INDENT 21		/* "  LEVEL CHECK        " */

static const char *const level_name[] = { "ok", "note", "warn", "fail" };
static const char *const level_colour[] = { "\033[32m", "\033[36m",
					    "\033[33m", "\033[1;31m" };

/* Whether s is a JSON number (RFC 8259), so that it may go out bare; a
 * value the library calls a number but is not one goes out as a string. */
static int json_number(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0') {
		s++;
	} else if (*s >= '1' && *s <= '9') {
		while (*s >= '0' && *s <= '9')
			s++;
	} else {
		return 0;
	}
	if (*s == '.') {
		if (*++s < '0' || *s > '9')
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'e' || *s == 'E') {
		if (*++s == '+' || *s == '-')
			s++;
		if (*s < '0' || *s > '9')
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

static void print_json(const struct rlock_doctor *d)
{
	putchar('[');
	for (size_t i = 0; i < d->n; i++) {
		const struct rlock_check *k = &d->check[i];

		fputs(i ? ",{\"check\":" : "{\"check\":", stdout);
		cli_json_str(stdout, k->check);
		fputs(",\"server\":", stdout);
		cli_json_str(stdout, k->server);
		fputs(",\"level\":", stdout);
		cli_json_str(stdout, level_name[k->level]);
		fputs(",\"message\":", stdout);
		cli_json_str(stdout, k->message);
		fputs(",\"value\":", stdout);
		if (k->value_kind == RLOCK_VALUE_NUMBER &&
		    json_number(k->value))
			fputs(k->value, stdout);
		else if (k->value_kind != RLOCK_VALUE_NULL)
			cli_json_str(stdout, k->value);
		else
			fputs("null", stdout);
		if (k->product[0] != '\0') {
			fputs(",\"product\":", stdout);
			cli_json_str(stdout, k->product);
		}
		/* The failover check's numbers: {"window_ms": 3000, ...},
		 * an unknown as null. */
		for (size_t f = 0; f < k->nfigure; f++) {
			const struct rlock_figure *g = &k->figure[f];

			fputs(f ? "," : ",\"figures\":{", stdout);
			cli_json_str(stdout, g->name);
			if (g->known)
				printf(":%lld", g->v);
			else
				fputs(":null", stdout);
		}
		if (k->nfigure > 0)
			putchar('}');
		putchar('}');
	}
	puts("]");
}

/* Write msg from column INDENT, wrapped at spaces before WIDTH. */
static void print_wrapped(const char *msg)
{
	size_t room = WIDTH - INDENT, len = strlen(msg);

	while (len > room) {
		size_t cut = room;

		while (cut > 0 && msg[cut] != ' ')
			cut--;
		if (cut == 0) {
			/* One long word: break it, between characters. */
			cut = room;
			while (cut > 1 && ((unsigned char)msg[cut] & 0xc0) ==
			       0x80)
				cut--;
		}
		printf("%.*s\n%*s", (int)cut, msg, INDENT, "");
		msg += cut;
		len -= cut;
		while (*msg == ' ') {
			msg++;
			len--;
		}
	}
	printf("%s\n", msg);
}

static void print_table(const struct rlock_doctor *d, int colour)
{
	int count[4] = { 0 };
	const char *last = "";

	for (size_t i = 0; i < d->n; i++) {
		const struct rlock_check *k = &d->check[i];
		char msg[CLI_VIS(sizeof(k->message))];
		char server[CLI_VIS(sizeof(k->server))];
		char check[CLI_VIS(sizeof(k->check))];

		/* The messages quote the servers' INFO, errors and names. */
		if (strcmp(k->server, last) != 0)
			printf("%s%s\n", i ? "\n" : "",
			       cli_vis(server, sizeof(server), k->server));
		last = k->server;
		count[k->level]++;
		cli_vis(check, sizeof(check), k->check);
		printf("  %s%-5s%s %-*s ",
		       colour ? level_colour[k->level] : "",
		       level_name[k->level], colour ? "\033[0m" : "",
		       cli_cols(check, 12), check);
		print_wrapped(cli_vis(msg, sizeof(msg), k->message));
	}
	printf("\n%d ok, %d note%s, %d warning%s, %d failure%s\n", count[0],
	       count[1], count[1] == 1 ? "" : "s", count[2],
	       count[2] == 1 ? "" : "s", count[3], count[3] == 1 ? "" : "s");
}

/* The worst finding as an exit status: what stops rlock first. */
static int doctor_status(const struct rlock_doctor *d)
{
	int unavail = 0, noperm = 0, usage = 0, other = 0, warn = 0;

	for (size_t i = 0; i < d->n; i++) {
		const struct rlock_check *k = &d->check[i];

		if (k->level == RLOCK_CHECK_WARN)
			warn = 1;
		if (k->level != RLOCK_CHECK_FAIL)
			continue;
		if (k->code == RLOCK_EUNAVAIL)
			unavail = 1;
		else if (k->code == RLOCK_ENOPERM)
			noperm = 1;
		else if (k->code == RLOCK_EUSAGE)
			usage = 1;
		else
			other = 1;
	}
	/* Two URLs of one server: run refuses them with the same status. */
	if (usage)
		return EX_USAGE;
	if (unavail)
		return EX_UNAVAILABLE;
	if (noperm)
		return EX_NOPERM;
	if (other)
		return EX_SOFTWARE;
	return warn ? EX_FREE : EX_OK;
}

int cmd_doctor(int argc, char **argv, struct cli *g)
{
	static const struct option longopts[] = { CLI_GLOBAL_LONG,
						  { NULL, 0, NULL, 0 } };
	struct rlock_doctor d;
	const char *name = NULL;
	struct rlock *rl;
	int c, rc;

	while ((c = cli_getopt(argc, argv, CLI_GLOBAL_SHORT, longopts)) != -1) {
		if (!cli_global_option(g, c, optarg))
			cli_bad_option(g, c, argv);
	}
	if (optind < argc)
		name = argv[optind++];
	if (optind < argc)
		cli_usage_error(g, "too many arguments");
	if (name != NULL)
		cli_check_name(g, name);
	cli_finish(g);
	rl = cli_open(g);
	rc = rlock_doctor_run(rl, name, &d);
	if (rc == RLOCK_EUSAGE)
		cli_usage_error(g, "%s", rlock_errstr(rl));
	if (rc != RLOCK_OK) {
		cli_warn(g, "%s", rlock_errstr(rl));
		rlock_free(rl);
		return cli_exit_code(rc, EX_TEMPFAIL);
	}
	if (g->json)
		print_json(&d);
	else
		print_table(&d, isatty(STDOUT_FILENO) &&
			    getenv("NO_COLOR") == NULL);
	rc = doctor_status(&d);
	rlock_doctor_free(&d);
	rlock_free(rl);
	if (cli_flush_stdout(g) != 0)
		return EX_OSERR;
	return rc;
}
