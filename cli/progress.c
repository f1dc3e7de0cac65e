/*
 * progress.c - a wait that explains itself where no live line can be drawn
 * (a CI log, a file): one line every --progress DUR, saying what we wait
 * for, who holds it and for how long, how many are ahead, how long we have
 * waited, and what the lock's own history says a hold takes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The history entries read for the estimate: a hold is two (its grant and
 * its release), and waiters that gave up add theirs. */
#define HISTORY_READ 200

static int cmp_ms(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

/*
 * The median length of the last CLI_PROGRESS_HOLDS completed holds of the
 * lock (released, abandoned or lost, with a known length), into p, from
 * the history: read once, at the first line, and kept.  A history that
 * cannot be read (an ACL that leaves it out, none kept) gives none.
 */
static void estimate(struct cli_progress *p)
{
	struct rlock_event *ev = NULL;
	long long held[CLI_PROGRESS_HOLDS];
	size_t n = 0, k = 0;

	p->estimated = 1;
	if (p->side == NULL ||
	    rlock_log(p->side, p->name, HISTORY_READ, 0, &ev, &n, NULL) !=
	    RLOCK_OK) {
		free(ev);
		return;
	}
	for (size_t i = n; i-- > 0 && k < CLI_PROGRESS_HOLDS;) {
		const struct rlock_event *e = &ev[i];

		if (e->held_ms >= 0 && (strcmp(e->event, "released") == 0 ||
					strcmp(e->event, "abandoned") == 0 ||
					strcmp(e->event, "lost") == 0 ||
					strcmp(e->event, "stepped-down") == 0))
			held[k++] = e->held_ms;
	}
	free(ev);
	if (k == 0)
		return;
	qsort(held, k, sizeof(held[0]), cmp_ms);
	p->holds = (int)k;
	p->median_ms = k % 2 == 1 ? held[k / 2] :
		(held[k / 2 - 1] + held[k / 2]) / 2;
}

/* ms as whole seconds (floor), "0s" below one. */
static const char *secs(long long ms, char *buf, size_t len)
{
	if (ms < 1000)
		snprintf(buf, len, "0s");
	else
		rlock_fmt_ms(ms / 1000 * 1000, buf, len);
	return buf;
}

/* "held 4m10s by ci@runner-3 (pid 812, note "...") and 2 more" into buf,
 * as it is (cli_warn escapes it). */
static const char *held_by(const struct rlock_holder *h, char *buf,
			   size_t len)
{
	char age[32], note[RLOCK_NOTE_MAX + 16] = "", more[48] = "";

	if (!h->held) {
		snprintf(buf, len, "being handed to the next in line");
		return buf;
	}
	if (h->nholders > 1)
		snprintf(more, sizeof(more), " and %lld more",
			 h->nholders - 1);
	if (h->host[0] == '\0' && h->pid == 0) {
		snprintf(buf, len, "held by another client (no rlock "
			 "metadata)%s", more);
		return buf;
	}
	if (h->note[0] != '\0')
		snprintf(note, sizeof(note), ", note \"%s\"", h->note);
	if (h->since_ms > 0)
		snprintf(buf, len, "held %s by %s@%s (pid %lld%s)%s",
			 secs(h->age_ms, age, sizeof(age)), h->user, h->host,
			 h->pid, note, more);
	else
		snprintf(buf, len, "held by %s@%s (pid %lld%s)%s", h->user,
			 h->host, h->pid, note, more);
	return buf;
}

/*
 * An rlock_wait_cb: every p->every_ms of the wait, one line through
 * cli_warn.  Who holds the lock comes from a status read on a handle of
 * our own (the waiting one is inside rlock_acquire; and the busy answer
 * carries no note), falling back to the busy answer when that read fails;
 * the place in line is the busy answer's.
 */
void cli_progress_line(const struct rlock_holder *h, int64_t waited,
		       void *arg)
{
	struct cli_progress *p = arg;
	struct rlock_holder st;
	const struct rlock_holder *who = h;
	char w[32], by[1200], ahead[32], est[64], m[32];
	char err[512];
	int rc;

	/* The wait calls us at its first busy answer, then every_ms after
	 * each call: the first line after every_ms of waiting. */
	if (waited < p->every_ms)
		return;
	if (h->unreachable != NULL) {
		/* No side read either: it would wait for the same
		 * servers. */
		cli_warn(p->g, "waiting %s for %s: trying again: %s",
			 secs(waited, w, sizeof(w)), p->label, h->unreachable);
		return;
	}
	if (p->side == NULL && !p->side_failed) {
		p->side = cli_try_open(p->g, &rc, err, sizeof(err));
		p->side_failed = p->side == NULL;
	}
	if (!p->estimated)
		estimate(p);
	/* The holder of the first lock held (--with: of the set). */
	for (size_t i = 0; p->side != NULL && i <= p->nwith; i++) {
		memset(&st, 0, sizeof(st));
		if (rlock_status(p->side, i == 0 ? p->name : p->with[i - 1],
				 &st, NULL) == RLOCK_OK && st.held) {
			who = &st;
			break;
		}
	}
	if (h->place >= 0)
		snprintf(ahead, sizeof(ahead), "%lld ahead", h->place);
	else
		snprintf(ahead, sizeof(ahead), "no line");
	if (p->holds > 0)
		snprintf(est, sizeof(est), "estimate %s (median of %d hold%s)",
			 p->median_ms >= 1000 ?
			 rlock_fmt_ms((p->median_ms + 500) / 1000 * 1000, m,
				      sizeof(m)) :
			 rlock_fmt_ms(p->median_ms, m, sizeof(m)),
			 p->holds, p->holds == 1 ? "" : "s");
	else
		snprintf(est, sizeof(est), "no estimate");
	cli_warn(p->g, "waiting %s for %s: %s, %s, %s",
		 secs(waited, w, sizeof(w)), p->label,
		 held_by(who, by, sizeof(by)), ahead, est);
}

void cli_wait_setup(struct cli *g, const char *name,
		    struct rlock_acquire_opts *ao, struct cli_waitline *line,
		    struct cli_progress *p)
{
	memset(p, 0, sizeof(*p));
	line->name = ao->nwith > 0 ? cli_with_text(name, ao) : name;
	line->shown = 0;
	if (cli_live_ok(g)) {
		ao->wait_cb = cli_wait_line;
		ao->wait_arg = line;
		ao->wait_cb_ms = 0;
		return;
	}
	if (g->verbose < 0) {
		ao->wait_cb_ms = 0;
		return;
	}
	p->g = g;
	/* --with: the line names them all; the first one's holder, when it
	 * is held, and history stand for the set's. */
	p->name = name;
	p->label = ao->nwith > 0 ? line->name : name;
	p->with = ao->with;
	p->nwith = ao->nwith;
	p->every_ms = ao->wait_cb_ms > 0 ? ao->wait_cb_ms :
		CLI_PROGRESS_DEFAULT_MS;
	ao->wait_cb = cli_progress_line;
	ao->wait_arg = p;
	ao->wait_cb_ms = p->every_ms;
}

void cli_wait_end(struct cli_waitline *line, struct cli_progress *p)
{
	cli_wait_line_end(line);
	rlock_free(p->side);
	p->side = NULL;
}
