/*
 * messages.c - what rlock says on stderr, and the exit status a library
 * code becomes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/*
 * A user who gave no server did not choose 127.0.0.1:6379 and may not know
 * it was tried: a failure to reach it says it was the default, and how to
 * name another ("cannot connect to 127.0.0.1:6379 (the default; set -u or
 * RLOCK_URL): Connection refused").  Whatever layer worded the failure.
 */
static void name_default(char *buf, size_t len)
{
	static const char what[] = "cannot connect to " CLI_DEFAULT_ADDR;
	static const char note[] = " (the default; set -u or RLOCK_URL)";
	char *at = strstr(buf, what);
	size_t tail;

	if (at == NULL)
		return;
	at += sizeof(what) - 1;
	if (*at != ':' || strlen(buf) + sizeof(note) > len)
		return;
	tail = strlen(at) + 1;
	memmove(at + sizeof(note) - 1, at, tail);
	memcpy(at, note, sizeof(note) - 1);
}

static void vwarn_cmd(const struct cli *g, const char *fmt, va_list ap)
{
	char buf[2048], vis[CLI_VIS(2048)];

	/* The one funnel of messages: a server's error text, a holder's
	 * host or command, a name another client wrote, all reach the
	 * terminal escaped.  rlock's own text is printable ASCII, which
	 * passes as it is. */
	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (g != NULL && g->default_url)
		name_default(buf, sizeof(buf));
	cli_vis(vis, sizeof(vis), buf);
	/* One write, so that lines of concurrent processes do not mix. */
	if (g != NULL && g->cmd != NULL)
		fprintf(stderr, "rlock: %s: %s\n", g->cmd, vis);
	else
		fprintf(stderr, "rlock: %s\n", vis);
}

void cli_warn(const struct cli *g, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn_cmd(g, fmt, ap);
	va_end(ap);
}

void cli_usage_error(const struct cli *g, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn_cmd(g, fmt, ap);
	va_end(ap);
	if (g->cmd != NULL)
		fprintf(stderr, "Try 'rlock %s --help'.\n", g->cmd);
	else
		fprintf(stderr, "Try 'rlock --help'.\n");
	exit(EX_USAGE);
}

int cli_exit_code(int rc, int conflict)
{
	switch (rc) {
	case RLOCK_OK:
		return EX_OK;
	case RLOCK_BUSY:
		return conflict;
	case RLOCK_NOTOURS:
	case RLOCK_LOST:
		return EX_LOST;
	case RLOCK_EUSAGE:
		return EX_USAGE;
	case RLOCK_EUNAVAIL:
		return EX_UNAVAILABLE;
	case RLOCK_ESYS:
		return EX_OSERR;
	case RLOCK_ENOPERM:
		return EX_NOPERM;
	default:
		return EX_SOFTWARE;
	}
}

const char *cli_holder(const struct rlock_holder *h, char *buf, size_t len)
{
	if (h->host[0] == '\0' && h->pid == 0)
		snprintf(buf, len, "another client (no rlock metadata)");
	else if (h->command[0] != '\0')
		snprintf(buf, len, "%s pid %lld (%s)", h->host, h->pid,
			 h->command);
	else
		snprintf(buf, len, "%s pid %lld", h->host, h->pid);
	return buf;
}

int cli_flush_stdout(const struct cli *g)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_warn(g, "write error: %s", strerror(errno));
		return -1;
	}
	return 0;
}

const char *cli_more_holders(const struct rlock_holder *h, char *buf,
			     size_t len)
{
	buf[0] = '\0';
	if (h->nholders > 1)
		snprintf(buf, len, " and %lld more", h->nholders - 1);
	return buf;
}

void cli_report_acquire(const struct cli *g, const char *name, int rc,
			struct rlock *rl, const struct rlock_holder *h,
			int64_t wait_ms)
{
	char who[600], tb[32], mb[64];

	/* Superseded, or the period done: an answer, as busy is. */
	if (rc == RLOCK_BUSY && h->skip != 0 && g->verbose < 0)
		return;
	/* Busy with nobody holding it: a quorum granted, too late. */
	if (rc != RLOCK_BUSY || !h->held || h->skip != 0)
		cli_warn(g, "%s", rlock_errstr(rl));
	else if (g->verbose < 0)
		return; /* -q: a busy lock is an answer, not a fault */
	else if (wait_ms > 0)
		cli_warn(g, "%s: timed out after %s; held by %s%s", name,
			 rlock_fmt_ms(wait_ms, tb, sizeof(tb)),
			 cli_holder(h, who, sizeof(who)), cli_more_holders(h, mb, sizeof(mb)));
	else
		cli_warn(g, "%s: held by %s%s", name,
			 cli_holder(h, who, sizeof(who)), cli_more_holders(h, mb, sizeof(mb)));
}

void cli_history_warn(const struct cli *g, const struct rlock *rl)
{
	const char *why = rlock_history_refused(rl);

	/* An ACL that leaves out the history is a choice, said with -v;
	 * another client's data at its key is a fault, said unless -q. */
	if (why != NULL && (g->verbose > 0 ||
			    (g->verbose == 0 && rlock_history_junk(rl))))
		cli_warn(g, "warning: %s", why);
	/* A master that answered but could not be identified had no vote:
	 * the lock stands on the others, and the user should know. */
	if ((why = rlock_unidentified(rl)) != NULL && g->verbose >= 0)
		cli_warn(g, "warning: %s", why);
}
