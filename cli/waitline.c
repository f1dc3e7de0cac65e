/*
 * waitline.c - the live line of a wait on a terminal: who holds the lock,
 * for how long, the place in line, redrawn about once a second (a log
 * gets progress.c's lines instead).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"

int cli_live_ok(const struct cli *g)
{
	return g->verbose >= 0 && isatty(STDERR_FILENO) &&
	       getenv("NO_COLOR") == NULL;
}

void cli_wait_line(const struct rlock_holder *h, int64_t waited, void *arg)
{
	struct cli_waitline *l = arg;
	char who[600], a[32], w[32], place[64] = "", mb[64];
	char vname[CLI_VIS(RLOCK_NAME_MAX)], vwho[CLI_VIS(sizeof(who))];

	/* The words of the progress line in a log ("0 ahead"), so that a
	 * terminal and a CI log say a place in line alike. */
	if (h->place >= 0)
		snprintf(place, sizeof(place), "; %lld ahead", h->place);
	/* Whole seconds: the line is redrawn once a second. */
	rlock_fmt_ms(waited / 1000 * 1000, w, sizeof(w));
	if (h->unreachable != NULL)
		fprintf(stderr, "\rrlock: waiting for %s: trying again: %s; "
			"waited %s\033[K",
			cli_vis(vname, sizeof(vname), l->name),
			cli_vis(vwho, sizeof(vwho), h->unreachable), w);
	else if (!h->held)
		fprintf(stderr, "\rrlock: waiting for %s: being handed to "
			"the next in line; waited %s%s\033[K",
			cli_vis(vname, sizeof(vname), l->name), w,
			place);
	else
		fprintf(stderr, "\rrlock: waiting for %s: held by %s%s for "
			"%s; waited %s%s\033[K",
			cli_vis(vname, sizeof(vname), l->name),
			cli_vis(vwho, sizeof(vwho),
				cli_holder(h, who, sizeof(who))),
			cli_more_holders(h, mb, sizeof(mb)),
			rlock_fmt_ms(h->age_ms > 0 ? h->age_ms / 1000 * 1000 :
				     0, a, sizeof(a)), w, place);
	l->shown = 1;
}

void cli_wait_line_end(struct cli_waitline *l)
{
	if (l->shown)
		fputs("\r\033[K", stderr);
	l->shown = 0;
}
