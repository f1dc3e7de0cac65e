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
		if (k->value_kind == RLOCK_VALUE_NUMBER)
			fputs(k->value, stdout);
		else if (k->value_kind == RLOCK_VALUE_STRING)
			cli_json_str(stdout, k->value);
		else
			fputs("null", stdout);
		if (k->product[0] != '\0') {
			fputs(",\"product\":", stdout);
			cli_json_str(stdout, k->product);
		}
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
		if (cut == 0)
			cut = room;	/* one long word: break it */
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
		char msg[sizeof(k->message)];

		if (strcmp(k->server, last) != 0)
			printf("%s%s\n", i ? "\n" : "", k->server);
		last = k->server;
		count[k->level]++;
		printf("  %s%-5s%s %-12s ",
		       colour ? level_colour[k->level] : "",
		       level_name[k->level], colour ? "\033[0m" : "", k->check);
		snprintf(msg, sizeof(msg), "%s", k->message);
		print_wrapped(cli_printable(msg));
	}
	printf("\n%d ok, %d note%s, %d warning%s, %d failure%s\n", count[0],
	       count[1], count[1] == 1 ? "" : "s", count[2],
	       count[2] == 1 ? "" : "s", count[3], count[3] == 1 ? "" : "s");
}

/* The worst finding as an exit status: what stops rlock first. */
static int doctor_status(const struct rlock_doctor *d)
{
	int unavail = 0, noperm = 0, other = 0, warn = 0;

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
		else
			other = 1;
	}
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
