/*
 * cmd_status.c - rlock status: who holds which lock.  A predicate like
 * test(1) when names are given: 0 when all are held, 1 when one is free.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

struct status {
	struct cli *g;
	struct rlock *rl;
	struct rlock_view view[CLI_MAX_URLS];	/* each server's, this lock */
	FILE *out;			/* the answer, written out once whole */
	char *buf;
	size_t len;
	int rows;
	int any_free;
	int rc;
	/* Listing: keys under the prefix that are not locks (another
	 * client's data), counted; the first few named. */
	long long njunk;
	char junk[600];
};

static void print_json_views(const struct status *s)
{
	fputs(",\"servers\":[", s->out);
	for (size_t i = 0; i < rlock_nservers(s->rl); i++) {
		const struct rlock_view *v = &s->view[i];
		const struct rlock_holder *h = &v->holder;

		fputs(i ? ",{\"addr\":" : "{\"addr\":", s->out);
		cli_json_str(s->out, v->addr);
		if (v->state == RLOCK_VIEW_HELD) {
			fputs(",\"held\":true,\"token_prefix\":", s->out);
			cli_json_str(s->out, h->token_prefix);
			if (h->host[0] != '\0') {
				fputs(",\"host\":", s->out);
				cli_json_str(s->out, h->host);
				fprintf(s->out, ",\"pid\":%lld", h->pid);
			} else {
				fputs(",\"host\":null,\"pid\":null", s->out);
			}
			fprintf(s->out, ",\"ttl_ms\":%lld,\"error\":null}",
				h->ttl_ms);
		} else if (v->state == RLOCK_VIEW_FREE) {
			fputs(",\"held\":false,\"token_prefix\":null,"
			      "\"host\":null,\"pid\":null,\"ttl_ms\":null,"
			      "\"error\":null}", s->out);
		} else {
			fputs(",\"held\":null,\"token_prefix\":null,"
			      "\"host\":null,\"pid\":null,\"ttl_ms\":null,"
			      "\"error\":", s->out);
			cli_json_str(s->out, v->error);
			fputs("}", s->out);
		}
	}
	fputs("]", s->out);
}

/* With several servers (Redlock), one line per server under the lock's
 * row: what each one says. */
static void print_views(const struct status *s)
{
	char ttl[32], who[600], vwho[CLI_VIS(sizeof(who))];
	char addr[CLI_VIS(sizeof(s->view[0].addr))];
	char tp[CLI_VIS(sizeof(s->view[0].holder.token_prefix))];
	char err[CLI_VIS(sizeof(s->view[0].error))];

	if (rlock_nservers(s->rl) < 2)
		return;
	for (size_t i = 0; i < rlock_nservers(s->rl); i++) {
		const struct rlock_view *v = &s->view[i];
		const struct rlock_holder *h = &v->holder;

		cli_vis(addr, sizeof(addr), v->addr);
		if (v->state == RLOCK_VIEW_HELD) {
			snprintf(who, sizeof(who), "%s@%s:%lld", h->user,
				 h->host, h->pid);
			fprintf(s->out, "  %-*s %-6s ttl %s  %s %s\n",
				cli_cols(addr, 22), addr, "held",
				h->ttl_ms >= 0 ? rlock_fmt_ms(h->ttl_ms, ttl,
							      sizeof(ttl)) :
				"none",
				cli_vis(tp, sizeof(tp), h->token_prefix),
				cli_vis(vwho, sizeof(vwho), who));
		} else if (v->state == RLOCK_VIEW_FREE) {
			fprintf(s->out, "  %-*s %s\n", cli_cols(addr, 22), addr,
				"free");
		} else {
			fprintf(s->out, "  %-*s %-6s %s\n", cli_cols(addr, 22),
				addr, "error",
				cli_vis(err, sizeof(err), v->error));
		}
	}
}

static const char *kind_name(const struct rlock_holder *h)
{
	/* limit 0: a kind another client wrote (h->junk says which). */
	return h->pool ? "pool" : h->shared ? "shared" :
	       h->limit > 1 ? "semaphore" :
	       h->limit == 0 ? "unknown" : "exclusive";
}

/* ',"host":…,"pid":…,"user":…,"command":…' of a holder or waiter; all
 * null for a key without rlock's metadata (another client's SET NX). */
static void json_who(FILE *f, const char *host, long long pid,
		     const char *user, const char *command)
{
	if (host[0] == '\0') {
		fputs(",\"host\":null,\"pid\":null,\"user\":null,"
		      "\"command\":null", f);
		return;
	}
	fputs(",\"host\":", f);
	cli_json_str(f, host);
	fprintf(f, ",\"pid\":%lld,\"user\":", pid);
	cli_json_str(f, user);
	fputs(",\"command\":", f);
	cli_json_str(f, command);
}

/* ',"since_ms":…,"age_ms":…', null when the key has no metadata. */
static void json_since(FILE *f, const struct rlock_holder *h)
{
	if (h->since_ms > 0)
		fprintf(f, ",\"since_ms\":%lld,\"age_ms\":%lld", h->since_ms,
			h->age_ms);
	else
		fputs(",\"since_ms\":null,\"age_ms\":null", f);
}

/* One holder as JSON; list: one of the list of holders, whose slot is
 * known (a semaphore's, null when it has none). */
static void json_holder(FILE *f, const struct rlock_holder *h, int list)
{
	fputs("{\"token_prefix\":", f);
	cli_json_str(f, h->token_prefix);
	json_who(f, h->host, h->pid, h->user, h->command);
	fprintf(f, ",\"fence\":%lld", h->fence);
	if (list && h->slot >= 0)
		fprintf(f, ",\"slot\":%d", h->slot);
	else
		fputs(",\"slot\":null", f);
	/* A pool holder's members, one a line. */
	if (list && h->pool) {
		fputs(",\"members\":", f);
		cli_json_lines(f, h->members);
	} else {
		fputs(",\"members\":null", f);
	}
	json_since(f, h);
	fprintf(f, ",\"ttl_ms\":%lld}", h->ttl_ms);
}

/* The kind held, every holder and the wait line, as JSON members. */
static void json_kind_line(const struct status *s,
			   const struct rlock_holder *h)
{
	const struct rlock_holder *list;
	size_t n = rlock_status_holders(s->rl, &list);

	fputs(",\"kind\":", s->out);
	if (h->held)
		cli_json_str(s->out, kind_name(h));
	else
		fputs("null", s->out);
	if (h->held && h->limit > 1)
		fprintf(s->out, ",\"limit\":%d", h->limit);
	else
		fputs(",\"limit\":null", s->out);
	fputs(",\"holders\":[", s->out);
	if (h->held && n == 0)
		json_holder(s->out, h, 0);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			fputc(',', s->out);
		json_holder(s->out, &list[i], 1);
	}
	fputs("],\"next\":", s->out);
	if (h->next.present) {
		const struct rlock_waiter *w = &h->next;

		fputs("{\"kind\":", s->out);
		cli_json_str(s->out, w->shared ? "shared" : w->limit > 1 ?
			     "semaphore" : "exclusive");
		json_who(s->out, w->host, w->pid, w->user, w->command);
		fprintf(s->out, ",\"waited_ms\":%lld,\"priority\":%d}",
			w->waited_ms, w->priority);
	} else {
		fputs("null", s->out);
	}
}

/* ',"once":…': the period done (--once-per), null none. */
static void json_once(FILE *f, const struct rlock_once *o)
{
	if (!o->present) {
		fputs(",\"once\":null", f);
		return;
	}
	fputs(",\"once\":{", f);
	fputs("\"host\":", f);
	cli_json_str(f, o->host);
	fputs(",\"user\":", f);
	cli_json_str(f, o->user);
	fprintf(f, ",\"pid\":%lld,\"fence\":%lld,\"since_ms\":%lld,"
		"\"done_ms\":%lld,\"next_ms\":%lld,\"period_ms\":%lld}", o->pid,
		o->fence, o->since_ms, o->done_ms, o->until_ms, o->period_ms);
}

/* The set an exclusive holder of name holds it with (--with), from the
 * set's record while it is the holder's: its token starts with the
 * holder's prefix.  Returns how many names w has (0: none, or it cannot
 * be read: only shown). */
static size_t held_with(struct status *s, const char *name,
			const struct rlock_holder *h, struct rlock_with *w)
{
	if (!h->held || h->shared || h->limit > 1 || rlock_nservers(s->rl) != 1 ||
	    rlock_with_read(s->rl, name, w) != RLOCK_OK || w->n == 0 ||
	    strncmp(w->token, h->token_prefix, 8) != 0)
		return 0;
	return w->n;
}

static void print_json(struct status *s, const char *name,
		       const struct rlock_holder *h)
{
	static struct rlock_with w;
	size_t nw = held_with(s, name, h, &w);

	const struct rlock_event *last;

	fputs(s->rows++ ? ",{" : "{", s->out);
	fputs("\"name\":", s->out);
	cli_json_str(s->out, name);
	fputs(",\"key\":", s->out);
	cli_json_str(s->out, rlock_key(s->rl, name));
	if (h->held) {
		fputs(",\"held\":true,\"token_prefix\":", s->out);
		cli_json_str(s->out, h->token_prefix);
		json_who(s->out, h->host, h->pid, h->user, h->command);
		fprintf(s->out, ",\"fence\":%lld", h->fence);
		json_since(s->out, h);
		fprintf(s->out, ",\"ttl_ms\":%lld,\"waiters\":", h->ttl_ms);
	} else {
		fprintf(s->out, ",\"held\":false,\"token_prefix\":null,\"host\":null,"
		       "\"pid\":null,\"user\":null,\"command\":null,"
		       "\"fence\":%lld,\"since_ms\":null,\"age_ms\":null,"
		       "\"ttl_ms\":null,\"waiters\":", h->fence);
	}
	/* null: the server refused PUBSUB, so the count is unknown. */
	if (h->waiters >= 0)
		fprintf(s->out, "%lld", h->waiters);
	else
		fputs("null", s->out);
	json_kind_line(s, h);
	cli_json_opt(s->out, "note", h->held ? h->note : NULL);
	/* --with: the other locks held with this one, null none. */
	fputs(",\"with\":", s->out);
	for (size_t i = 0, k = 0; i < nw; i++) {
		if (strcmp(w.name[i], name) == 0)
			continue;
		fputs(k++ == 0 ? "[" : ",", s->out);
		cli_json_str(s->out, w.name[i]);
	}
	fputs(nw > 0 ? "]" : "null", s->out);
	json_once(s->out, &h->once);
	fputs(",\"last\":", s->out);
	if (rlock_status_last(s->rl, &last))
		cli_event_json(s->out, last, (int)rlock_nservers(s->rl));
	else
		fputs("null", s->out);
	print_json_views(s);
	fputs("}", s->out);
}

/*
 * When a hold began, in local time as rlock log shows it, and as ps(1)
 * shows a start: the time of day when it began today, else the day
 * ("Dec02"), else the year; "-" when the key has no metadata.
 */
static const char *fmt_since(long long ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000), now = (time_t)(cli_wall_ms() / 1000);
	struct tm tm, today;
	const char *f = "%Y";

	if (ms <= 0 || localtime_r(&t, &tm) == NULL ||
	    localtime_r(&now, &today) == NULL) {
		snprintf(buf, len, "-");
		return buf;
	}
	if (tm.tm_year == today.tm_year && tm.tm_yday == today.tm_yday)
		f = "%H:%M:%S";
	else if (tm.tm_year == today.tm_year)
		f = "%b%d";
	if (strftime(buf, len, f, &tm) == 0)
		snprintf(buf, len, "-");
	return buf;
}

/* Under a lock's row: the holders of a shared lock or a semaphore, and
 * the next in line. */
static void print_more(const struct status *s, const struct rlock_holder *h)
{
	const struct rlock_holder *list;
	size_t n = rlock_status_holders(s->rl, &list);
	char who[400], ttl[32], age[32], since[32], vwho[CLI_VIS(sizeof(who))];
	char cmd[CLI_VIS(RLOCK_LABEL_MAX)], note[CLI_VIS(RLOCK_NOTE_MAX)];
	char tp[CLI_VIS(sizeof(h->token_prefix))];
	char slot[CLI_VIS(RLOCK_MEMBERS_MAX) + 16];
	char mem[CLI_VIS(RLOCK_MEMBERS_MAX)];

	if (h->held && h->limit > 1)
		fprintf(s->out, "  semaphore: %lld of %d places held\n",
			h->nholders, h->limit);
	else if (h->held && h->pool)
		fprintf(s->out, "  pool: %lld holder%s (rlock pool NAME lists "
			"its members)\n", h->nholders,
			h->nholders == 1 ? "" : "s");
	else if (h->held && h->shared)
		fprintf(s->out, "  shared: %lld holder%s\n", h->nholders,
			h->nholders == 1 ? "" : "s");
	for (size_t i = 0; i < n; i++) {
		const struct rlock_holder *x = &list[i];

		snprintf(who, sizeof(who), "%s@%s:%lld", x->user, x->host,
			 x->pid);
		cli_vis(tp, sizeof(tp), x->token_prefix);
		cli_vis(vwho, sizeof(vwho), who);
		/* A semaphore's holders by slot ('-': none, an older
		 * rlock's grant, or not rlock's). */
		slot[0] = '\0';
		if (h->limit > 1 && x->slot >= 0)
			snprintf(slot, sizeof(slot), "slot %-5d ", x->slot);
		else if (h->limit > 1)
			snprintf(slot, sizeof(slot), "slot %-5s ", "-");
		if (h->pool) {
			char ms[RLOCK_MEMBERS_MAX + 1];

			snprintf(ms, sizeof(ms), "%s", x->members);
			for (char *p = ms; *p != '\0'; p++)
				if (*p == '\n')
					*p = ',';
			cli_vis(mem, sizeof(mem), ms);
			snprintf(slot, sizeof(slot), "members %s ", mem);
		}
		fprintf(s->out, "    %-*s %sfence %-16lld age %-7s since %-8s "
			"ttl %-7s %-*s %s\n", cli_cols(tp, 8), tp, slot,
			x->fence, rlock_fmt_ms(x->age_ms, age, sizeof(age)),
			fmt_since(x->since_ms, since, sizeof(since)),
			rlock_fmt_ms(x->ttl_ms, ttl, sizeof(ttl)),
			cli_cols(vwho, 24), vwho,
			cli_vis(cmd, sizeof(cmd), x->command));
	}
	if (h->held && h->note[0] != '\0')
		fprintf(s->out, "  note: %s\n",
			cli_vis(note, sizeof(note), h->note));
	if (h->next.present) {
		const struct rlock_waiter *w = &h->next;
		char prio[32] = "";

		snprintf(who, sizeof(who), "%s@%s:%lld", w->user, w->host,
			 w->pid);
		if (w->priority != 0)
			snprintf(prio, sizeof(prio), ", priority %d",
				 w->priority);
		fprintf(s->out, "  next: %s%s, waiting %s%s  %s\n",
			cli_vis(vwho, sizeof(vwho), who),
			w->shared ? " (shared)" : "",
			rlock_fmt_ms(w->waited_ms, age, sizeof(age)), prio,
			cli_vis(cmd, sizeof(cmd), w->command));
	}
	if (h->once.present) {
		const struct rlock_once *o = &h->once;
		char at[40], next[40];

		snprintf(who, sizeof(who), "%s@%s pid %lld", o->user, o->host,
			 o->pid);
		fprintf(s->out, "  done this period: %s at %s, next period "
			"%s\n", cli_vis(vwho, sizeof(vwho), who),
			rlock_fmt_utc(o->since_ms, at, sizeof(at)),
			rlock_fmt_utc(o->until_ms, next, sizeof(next)));
	}
}

/* A free lock's last run, after its row (and its servers' lines): "last:
 * 2h ago on web3, exit 0 after 12s". */
static void print_last(const struct status *s, const struct rlock_holder *h)
{
	const struct rlock_event *last;
	char ago[32], host[CLI_VIS(sizeof(last->host))], how[CLI_VIS(600)];
	long long d;

	if (h->held || !rlock_status_last(s->rl, &last))
		return;
	d = cli_wall_ms() - last->time_ms;
	fprintf(s->out, "  last: %s ago on %s, %s\n",
		rlock_fmt_ms(d > 0 ? d : 0, ago, sizeof(ago)),
		cli_vis(host, sizeof(host), last->host),
		cli_event_outcome(last, how, sizeof(how)));
}

/* Under a held lock's row: "  with: cache, queue", the other locks its
 * holder holds with it (--with). */
static void print_with(struct status *s, const char *name,
		       const struct rlock_holder *h)
{
	static struct rlock_with w;
	char vn[CLI_VIS(RLOCK_NAME_MAX)];
	size_t nw = held_with(s, name, h, &w), k = 0;

	if (nw == 0)
		return;
	fputs("  with:", s->out);
	for (size_t i = 0; i < nw; i++) {
		if (strcmp(w.name[i], name) == 0)
			continue;
		fprintf(s->out, "%s %s", k++ > 0 ? "," : "",
			cli_vis(vn, sizeof(vn), w.name[i]));
	}
	fputs("\n", s->out);
}

static void print_row(struct status *s, const char *name,
		      const struct rlock_holder *h)
{
	char age[32], since[32], ttl[32], holder[400], w[24];
	char vname[CLI_VIS(RLOCK_NAME_MAX)], vholder[CLI_VIS(sizeof(holder))];
	char cmd[CLI_VIS(RLOCK_LABEL_MAX)];

	/* A name listed by SCAN is another client's text too. */
	cli_vis(vname, sizeof(vname), name);
	if (s->rows++ == 0)
		fprintf(s->out, "%-20s %-5s %16s %8s %8s %8s %7s  %-24s %s\n",
			"NAME", "STATE", "FENCE", "AGE", "SINCE", "TTL",
			"WAITERS", "HOLDER", "COMMAND");
	/* "?": the server refused PUBSUB, so the count is unknown. */
	if (h->waiters >= 0)
		snprintf(w, sizeof(w), "%lld", h->waiters);
	else
		snprintf(w, sizeof(w), "?");
	if (!h->held) {
		fprintf(s->out, "%-*s %-5s %16lld %8s %8s %8s %7s  %-24s %s\n",
			cli_cols(vname, 20), vname, "free", h->fence, "-", "-",
			"-", w, "-", "-");
		print_more(s, h);
		print_views(s);
		print_last(s, h);
		return;
	}
	if (h->host[0] != '\0')
		snprintf(holder, sizeof(holder), "%s@%s:%lld", h->user,
			 h->host, h->pid);
	else
		snprintf(holder, sizeof(holder), "?");
	cli_vis(vholder, sizeof(vholder), holder);
	fprintf(s->out, "%-*s %-5s %16lld %8s %8s %8s %7s  %-*s %s\n",
		cli_cols(vname, 20), vname, "held", h->fence,
		h->since_ms > 0 ? rlock_fmt_ms(h->age_ms, age, sizeof(age)) :
		"-", fmt_since(h->since_ms, since, sizeof(since)),
		h->ttl_ms >= 0 ? rlock_fmt_ms(h->ttl_ms, ttl, sizeof(ttl)) :
		"none", w, cli_cols(vholder, 24), vholder,
		cli_vis(cmd, sizeof(cmd), h->command));
	print_with(s, name, h);
	print_more(s, h);
	print_views(s);
}

/* A field of the lock's keys that rlock did not write: shown as unknown,
 * and said. */
static void junk_warn(const struct status *s, const char *name,
		      const struct rlock_holder *h)
{
	if (h->junk[0] != '\0' && s->g->verbose >= 0)
		cli_warn(s->g, "%s: %s is not what rlock writes (another "
			 "client's data): shown as unknown", name, h->junk);
}

static int show(const char *name, void *arg)
{
	struct status *s = arg;
	struct rlock_holder h;
	int rc;

	rc = rlock_status(s->rl, name, &h, s->view);
	if (rc != RLOCK_OK) {
		s->rc = rc;
		return 1;
	}
	junk_warn(s, name, &h);
	if (!h.held)
		s->any_free = 1;
	if (s->g->json)
		print_json(s, name, &h);
	else
		print_row(s, name, &h);
	return 0;
}

/* A key that is not a lock, counted; named while there is room. */
static void count_junk(struct status *s, const char *key)
{
	size_t len = strlen(s->junk);

	if (s->njunk++ < 5 && len + strlen(key) + 3 < sizeof(s->junk))
		snprintf(s->junk + len, sizeof(s->junk) - len, "%s%s",
			 len > 0 ? ", " : "", key);
}

/* Listing: a lock may be released between SCAN and the look-up; only
 * held ones are shown.  A key that is not a lock (junk: why), or a lock
 * whose keys hold what rlock did not write, is counted, never the end of
 * the list. */
static int show_held(const char *name, const char *junk, void *arg)
{
	struct status *s = arg;
	struct rlock_holder h;
	int rc;

	if (junk != NULL) {
		char key[1100];

		snprintf(key, sizeof(key), "%s (%s)", name, junk);
		count_junk(s, key);
		return 0;
	}
	rc = rlock_status(s->rl, name, &h, s->view);
	if (rc == RLOCK_EPROTO) {
		char key[1400];

		snprintf(key, sizeof(key), "%s (%s)", name,
			 rlock_errstr(s->rl));
		count_junk(s, key);
		return 0;
	}
	if (rc != RLOCK_OK) {
		s->rc = rc;
		return 1;
	}
	if (!h.held)
		return 0;
	junk_warn(s, name, &h);
	if (s->g->json)
		print_json(s, name, &h);
	else
		print_row(s, name, &h);
	return 0;
}

int cmd_status(int argc, char **argv, struct cli *g)
{
	static const struct option longopts[] = { CLI_GLOBAL_LONG,
						  { NULL, 0, NULL, 0 } };
	struct status s;
	int c, i, rc;

	while ((c = cli_getopt(argc, argv, CLI_GLOBAL_SHORT, longopts)) != -1) {
		if (!cli_global_option(g, c, optarg))
			cli_bad_option(g, c, argv);
	}
	for (i = optind; i < argc; i++)
		cli_check_name(g, argv[i]);
	cli_finish(g);
	memset(&s, 0, sizeof(s));
	s.g = g;
	s.rl = cli_open(g);
	/* The answer is gathered first: a failure half-way must leave no
	 * half table or broken JSON on stdout. */
	s.out = open_memstream(&s.buf, &s.len);
	if (s.out == NULL) {
		cli_warn(g, "out of memory");
		rlock_free(s.rl);
		return EX_OSERR;
	}
	if (g->json)
		fputs("{\"locks\":[", s.out);
	if (optind < argc) {
		for (i = optind; i < argc && s.rc == RLOCK_OK; i++)
			show(argv[i], &s);
		rc = s.rc;
	} else {
		rc = rlock_list(s.rl, show_held, &s);
		if (rc == RLOCK_OK)
			rc = s.rc;
	}
	if (g->json)
		fputs("]}\n", s.out);
	fclose(s.out);
	if (rc != RLOCK_OK) {
		cli_warn(g, "%s", rlock_errstr(s.rl));
		free(s.buf);
		rlock_free(s.rl);
		return cli_exit_code(rc, EX_TEMPFAIL);
	}
	fwrite(s.buf, 1, s.len, stdout);
	free(s.buf);
	if (s.njunk > 0 && g->verbose >= 0)
		cli_warn(g, "%lld key%s under '%s' %s not lock%s: %s%s",
			 s.njunk, s.njunk > 1 ? "s" : "", g->prefix,
			 s.njunk > 1 ? "are" : "is", s.njunk > 1 ? "s" : "",
			 s.junk, s.njunk > 5 ? ", ..." : "");
	if (!g->json && s.rows == 0 && optind >= argc && g->verbose >= 0)
		cli_warn(g, "no locks held under '%s'", g->prefix);
	rlock_free(s.rl);
	if (cli_flush_stdout(g) != 0)
		return EX_OSERR;
	return s.any_free ? EX_FREE : EX_OK;
}
