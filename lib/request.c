/*
 * request.c - building a script's request: the one place that knows
 * each script's argument order (lib/scripts/NAME.c call these), for
 * lock.c and bench.c alike.  The Lua scripts are lib/scripts/NAME.lua;
 * the build turns them into rlock_scripts[], with their digests
 * (lib/scripts/luagen.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "protocol.h"
#include "request.h"

_Static_assert(HISTORY_MAX == RLOCK_LOG_MAX_DEFAULT &&
	       HISTORY_TTL_MS == RLOCK_LOG_DAYS_DEFAULT * 86400000LL,
	       "the scripts' default history is the library's");

void rl_req_begin(struct request *q, int script, int nkeys,
		  const struct lock_names *n)
{
	const char *keys[LOCK_NKEYS] = { n->key, n->meta, n->holders,
					 n->hmeta, n->line, n->lease, n->who,
					 n->fence, n->log };

	q->script = script;
	q->slot = n->slot;
	q->nkeys = nkeys;
	q->wargc = 0;
	for (q->argc = 0; q->argc < nkeys; q->argc++)
		q->argv[q->argc] = keys[q->argc];
}

/* The twelve keys of a lock, in the scripts' order (the comment at the
 * top), declared to the server: a cluster serves a script only the keys it
 * declared while their slot moves, and refuses names whose keys would
 * span slots (CROSSSLOT, rl_explain_wrongtype's neighbour). */
void rl_req_begin_all(struct request *q, int script, const struct lock_names *n)
{
	rl_req_begin(q, script, LOCK_NKEYS, n);
	/* The period's record is touched only with --once-per (bench's names
	 * have none). */
	rl_req_add_key(q, n->once != NULL ? n->once : n->key);
	rl_req_add_key(q, n->grant);
	rl_req_add_key(q, n->hold);
}

/* Keep the whole layout q holds (wargv) and begin the short one, the lock
 * key alone: for a server that turns out to need every key declared (a
 * cluster: rl_node_declares_all), the whole one goes instead. */
void rl_req_begin_short(struct request *q, int script, const struct lock_names *n)
{
	int whole_argc = q->argc;

	memcpy(q->wargv, q->argv, (size_t)whole_argc * sizeof(q->argv[0]));
	q->wnkeys = q->nkeys;
	rl_req_begin(q, script, 1, n);
	q->wargc = whole_argc;
}

const char *rl_req_num(struct request *q, int slot, long long v)
{
	q->num[slot][rlock_lltoa(q->num[slot], v)] = '\0';
	return q->num[slot];
}

void rl_req_history(struct request *q, int slot, const struct history *h)
{
	q->argv[q->argc++] = h != NULL && h->max > 0 ?
			     rl_req_num(q, slot, h->max) : "0";
	q->argv[q->argc++] = rl_req_num(q, slot + 1, h != NULL ? h->ttl_ms : 0);
}

void rl_req_add_key(struct request *q, const char *key)
{
	q->argv[q->argc++] = key;
	q->nkeys++;
}


void rl_req_command(struct request *q, int argc, const char *const *argv,
		    int slot)
{
	q->script = REQ_COMMAND;
	q->wargc = 0;
	q->slot = slot;
	q->nkeys = 0;
	for (q->argc = 0; q->argc < argc && q->argc < RLOCK_REQ_MAXARGS;
	     q->argc++)
		q->argv[q->argc] = argv[q->argc];
}

int rl_req_send(struct rlock_conn *c, const struct request *q, int use_eval,
		int whole)
{
	const struct rlock_script *s;
	const char *argv[3 + RLOCK_REQ_MAXARGS];
	const char *const *v = q->argv;
	char nk[24];
	int argc = 0, i, n = q->argc, nkeys = q->nkeys;

	if (q->script == REQ_COMMAND)
		return rl_conn_send(c, q->argc, q->argv, NULL);
	if (whole && q->wargc > 0) {
		v = q->wargv;
		n = q->wargc;
		nkeys = q->wnkeys;
	}
	s = &rlock_scripts[q->script];
	nk[rlock_utoa(nk, (unsigned)nkeys)] = '\0';
	argv[argc++] = use_eval ? "EVAL" : "EVALSHA";
	argv[argc++] = use_eval ? s->body : s->sha;
	argv[argc++] = nk;
	for (i = 0; i < n; i++)
		argv[argc++] = v[i];
	return rl_conn_send(c, argc, argv, NULL);
}

/* Append the text s to dst at *at, within size (the fields are bounded
 * by the callers: a checked host, user, note and label fit). */
void rl_req_put(char *dst, size_t size, size_t *at, const char *s)
{
	size_t n = strlen(s);

	if (*at + n >= size)
		n = size - 1 - *at;
	memcpy(dst + *at, s, n);
	*at += n;
	dst[*at] = '\0';
}

/* The token's first 8 characters, which the history names a grant by. */
void rl_req_put_prefix(char *dst, size_t size, size_t *at, const char *tok)
{
	char b[9];

	rlock_strlcpy(b, tok, sizeof(b));
	rl_req_put(dst, size, at, b);
}

void rl_req_put_num(char *dst, size_t size, size_t *at, long long v)
{
	char b[24];

	b[rlock_lltoa(b, v)] = '\0';
	rl_req_put(dst, size, at, b);
}

void rl_req_put_holder(struct request *q, const char *kind, long long waited,
		       const char *token, const struct acquirer *who)
{
	size_t at = 0, n = sizeof(q->info);

	rl_req_put(q->info, n, &at, kind);
	rl_req_put(q->info, n, &at, "\n");
	if (waited >= 0)
		rl_req_put_num(q->info, n, &at, waited);
	rl_req_put(q->info, n, &at, "\n");
	rl_req_put_prefix(q->info, n, &at, token);
	rl_req_put(q->info, n, &at, "\n");
	rl_req_put_num(q->info, n, &at, who->pid);
	rl_req_put(q->info, n, &at, "\n");
	rl_req_put(q->info, n, &at, who->host);
	rl_req_put(q->info, n, &at, "\n");
	rl_req_put(q->info, n, &at, who->user);
	rl_req_put(q->info, n, &at, "\n");
	rl_req_put(q->info, n, &at, who->note != NULL ? who->note : "");
	rl_req_put(q->info, n, &at, "\n");
	rl_req_put(q->info, n, &at, q->label);
}

/* Whether h is the history the scripts keep when told nothing. */
int rl_req_default_history(const struct history *h)
{
	return h != NULL && h->max == HISTORY_MAX &&
	       h->ttl_ms == HISTORY_TTL_MS;
}
