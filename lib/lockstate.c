/*
 * lockstate.c - reading a lock's state: status (who holds it, who waits,
 * its last run) and list (every lock under the prefix).  The history is
 * read in history.c, written by the scripts (lib/scripts/); the lock
 * operations are in lock.c.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fanout.h"
#include "handle.h"
#include "identity.h"
#include "keys.h"
#include "node.h"
#include "reply.h"
#include "request.h"

/* ---- status and list ------------------------------------------------ */

/* The I/O deadline of one request from now, cut to the hard deadline. */
static int64_t bound_io(const struct rlock *rl)
{
	int64_t d = rlock_mono_ms() + rl->copts.io_timeout_ms;

	return rl->hard_deadline > 0 && d > rl->hard_deadline ?
		rl->hard_deadline : d;
}

/* What server i said of the lock, for status's per-server view. */
static void fill_view(struct rlock *rl, struct fan *f, size_t i,
		      struct rlock_view *v)
{
	const struct rlock_result *res = &f->slot[i].res;

	memset(v, 0, sizeof(*v));
	snprintf(v->addr, sizeof(v->addr), "%s", rl_node_addr(&rl->node[i]));
	if (res->rc != RLOCK_OK) {
		v->state = RLOCK_VIEW_ERROR;
		snprintf(v->error, sizeof(v->error), "%s", res->err);
		return;
	}
	rl_parse_holder(res->r, &v->holder);
	v->state = v->holder.held ? RLOCK_VIEW_HELD : RLOCK_VIEW_FREE;
}

/* The most subscribers of the release channel on any server, or -1 when
 * none would say (an ACL user without PUBSUB): unknown, not zero. */
static long long count_waiters(struct rlock *rl, const struct lock_keys *n)
{
	const char *argv[3] = { "PUBSUB", "NUMSUB", n->chan };
	struct request q;
	struct fan f;
	long long most = -1;

	/* Waiters wait on the master that owns the lock's slot. */
	rl_req_command(&q, 3, argv, n->v.slot);
	rl_fan_init(&f, rl);
	rl_fan_all(&f, &q);
	rl_fan_run(rl, &f);
	for (size_t i = 0; i < f.n; i++) {
		const redisReply *r = f.slot[i].res.r;
		long long v;

		/* {channel, count}: a count that does not read is no count
		 * (unknown stays -1), never 0. */
		if (f.slot[i].res.rc == RLOCK_OK &&
		    r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
		    rl_elem_num(r, 1, 0, LLONG_MAX, &v) == 0 && v > most)
			most = v;
	}
	rl_fan_done(&f);
	return most;
}

/* The last run a server's status answer names (parse_status checked its
 * shape), kept when it is the newest so far. */
static void status_last(struct rlock *rl, const redisReply *r)
{
	struct rlock_event ev, grant;

	if (r->element[16]->elements == 0 ||
	    rl_decode_entry(r->element[16], &ev) != 0)
		return;
	if (r->element[17]->elements != 0 &&
	    rl_decode_entry(r->element[17], &grant) == 0)
		rl_history_join_grant(&ev, &grant);
	if (!rl->has_last || ev.time_ms > rl->last.time_ms) {
		rl->last = ev;
		rl->has_last = 1;
	}
}

int rlock_status_last(const struct rlock *rl, const struct rlock_event **e)
{
	*e = &rl->last;
	return rl->has_last;
}

int rlock_status(struct rlock *rl, const char *name, struct rlock_holder *out,
		 struct rlock_view *each)
{
	struct rlock_holder h[RLOCK_MAX_SERVERS];
	struct request q;
	struct fan f;
	struct lock_keys n;
	size_t i, fail = 0, ok = 0;
	long long fence = -1;
	int rc;

	rc = rl_make_names(rl, name, &n);
	if (rc != RLOCK_OK)
		return rc;
	memset(out, 0, sizeof(*out));
	free(rl->holders);
	rl->holders = NULL;
	rl->nholders = 0;
	rl->has_last = 0;
	if ((rc = rl_identify_servers(rl)) != RLOCK_OK)
		return rc;
	rl_req_status(&q, &n.v);
	rl_fan_ask(rl, &f, &q);
	for (i = 0; i < f.n; i++) {
		if (f.slot[i].res.rc == RLOCK_OK &&
		    rl_decode_status(f.slot[i].res.r, &h[i], rl->nnode == 1 ?
				     &rl->holders : NULL, &rl->nholders) != 0)
			rl_fan_unexpected(&f, i, "status");
		if (f.slot[i].res.rc == RLOCK_OK)
			status_last(rl, f.slot[i].res.r);
		if (each != NULL)
			fill_view(rl, &f, i, &each[i]);
		if (f.slot[i].res.rc != RLOCK_OK) {
			fail++;
			continue;
		}
		ok++;
		if (h[i].fence > fence)
			fence = h[i].fence;
	}
	if (ok < rl->quorum) {
		rc = rl_fan_first_error(rl, &f, fail);
		rl_fan_done(&f);
		return rc;
	}
	/* Held when one token holds it on a quorum; shown is that holder
	 * as the server with the highest fence knows it. */
	for (i = 0; i < f.n; i++) {
		size_t same = 0;

		if (f.slot[i].res.rc != RLOCK_OK || !h[i].held)
			continue;
		for (size_t j = 0; j < f.n; j++) {
			if (f.slot[j].res.rc == RLOCK_OK && h[j].held &&
			    strcmp(h[j].token_prefix, h[i].token_prefix) == 0)
				same++;
		}
		if (same >= rl->quorum && (!out->held || h[i].fence > out->fence))
			*out = h[i];
	}
	rl_fan_done(&f);
	/* The script looks for the last run's grant among 50 entries. */
	if (rl->has_last)
		rl_history_join_older(rl, &n, &rl->last);
	if (!out->held) {
		/* The line of the one server (several keep none). */
		struct rlock_waiter next = { 0 };
		struct rlock_once once = { 0 };
		long long waiters = 0;
		char junk[sizeof(out->junk)];

		if (rl->nnode == 1) {
			waiters = h[0].waiters;
			next = h[0].next;
			once = h[0].once;
		}
		/* What did not decode stays said, held or free. */
		memcpy(junk, rl->nnode == 1 ? h[0].junk : out->junk,
		       sizeof(junk));
		memset(out, 0, sizeof(*out));
		memcpy(out->junk, junk, sizeof(junk));
		out->ttl_ms = -2;
		out->fence = fence;
		out->limit = 1;
		out->waiters = waiters;
		out->next = next;
		out->once = once;
	}
	out->place = -1;
	/* Several masters keep no line: their waiters listen on the release
	 * channel. */
	if (rl->nnode > 1)
		out->waiters = count_waiters(rl, &n);
	return RLOCK_OK;
}

size_t rlock_status_holders(const struct rlock *rl,
			    const struct rlock_holder **list)
{
	*list = rl->holders;
	return rl->nholders;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* SCAN's bounds: pages per pass on one server (COUNT 1000 each: ten
 * million keys), and names in all.  A server that answers past them (a
 * cursor that never comes back to 0) is not one to list. */
#define SCAN_PAGES 10000
#define SCAN_NAMES 1000000

/* What one listing gathers: lock names, and keys under the prefix that are
 * not locks ("KEY\tWHY", raw). */
struct scan {
	char **names, **junk;
	size_t nnames, cap, njunk, jcap;
};

static int push(char ***v, size_t *n, size_t *cap, char *s)
{
	if (s == NULL)
		return RLOCK_ESYS;
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		char **nv = realloc(*v, nc * sizeof(*nv));

		if (nv == NULL) {
			free(s);
			return RLOCK_ESYS;
		}
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = s;
	return RLOCK_OK;
}

/* A key under the prefix that is not a lock, and why. */
static int push_junk(struct scan *sc, const char *key, size_t len,
		     const char *why)
{
	char *j;

	/* Raw (a NUL ends it): escaped where it is shown. */
	if (asprintf(&j, "%.*s\t%s", (int)(len > RLOCK_KEY_MAX ?
					     RLOCK_KEY_MAX : len), key,
		     why) < 0)
		return RLOCK_ESYS;
	return push(&sc->junk, &sc->njunk, &sc->jcap, j);
}

/* A SCAN cursor: 1 to 20 digits (an unsigned 64-bit number). */
static int cursor_ok(const redisReply *c)
{
	if (c->type != REDIS_REPLY_STRING || c->len == 0 || c->len > 20)
		return 0;
	for (size_t i = 0; i < c->len; i++)
		if (c->str[i] < '0' || c->str[i] > '9')
			return 0;
	return 1;
}

/* The keys in one SCAN reply: lock names (between the braces of
 * prefix{NAME}suffix) into sc->names, keys whose name is no lock name
 * into sc->junk; with all set (a pass of any type), every key, as
 * "KEY" for the caller to compare.  Returns RLOCK_OK, RLOCK_EPROTO for a
 * reply of the wrong shape or RLOCK_ESYS. */
static int take_names(const redisReply *r, size_t plen, size_t slen,
		      char cursor[32], struct scan *sc, char ***all,
		      size_t *nall, size_t *acap)
{
	const redisReply *keys;
	int rc = RLOCK_OK;

	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    !cursor_ok(r->element[0]) ||
	    r->element[1]->type != REDIS_REPLY_ARRAY)
		return RLOCK_EPROTO;
	memcpy(cursor, r->element[0]->str, r->element[0]->len);
	cursor[r->element[0]->len] = '\0';
	keys = r->element[1];
	for (size_t k = 0; k < keys->elements && rc == RLOCK_OK; k++) {
		const redisReply *e = keys->element[k];
		const char *why = NULL;
		char *nm;

		if (e->type != REDIS_REPLY_STRING)
			return RLOCK_EPROTO;
		if (e->len < plen + slen + 2)
			continue;
		if (all != NULL) {
			/* A name with a NUL byte was said by the pass of
			 * strings, or holds another type: not looked at. */
			if (*nall >= SCAN_NAMES)
				return RLOCK_EPROTO;
			if (memchr(e->str, '\0', e->len) == NULL)
				rc = push(all, nall, acap,
					  strndup(e->str, e->len));
			continue;
		}
		if (memchr(e->str, '\0', e->len) != NULL)
			why = "not a lock name: a NUL byte";
		else if (sc->nnames >= SCAN_NAMES)
			return RLOCK_EPROTO;
		/* prefix{NAME}suffix: the name between the braces. */
		nm = strndup(e->str + plen + 1, e->len - plen - slen - 2);
		if (nm == NULL)
			return RLOCK_ESYS;
		if (why == NULL && rlock_check_name(nm, &why) != RLOCK_OK) {
			char text[64];

			free(nm);
			snprintf(text, sizeof(text), "not a lock name: %s", why);
			rc = push_junk(sc, e->str, e->len, text);
			continue;
		}
		if (why != NULL) {
			free(nm);
			rc = push_junk(sc, e->str, e->len, why);
			continue;
		}
		rc = push(&sc->names, &sc->nnames, &sc->cap, nm);
	}
	return rc;
}

int rl_decode_scan(const redisReply *r, size_t plen, char cursor[32],
		   size_t *nnames, size_t *njunk)
{
	struct scan sc = { 0 };
	int rc = take_names(r, plen, 0, cursor, &sc, NULL, NULL, NULL);

	*nnames = sc.nnames;
	*njunk = sc.njunk;
	for (size_t i = 0; i < sc.nnames; i++) {
		if (rlock_check_name(sc.names[i], NULL) != RLOCK_OK)
			abort();
		free(sc.names[i]);
	}
	for (size_t i = 0; i < sc.njunk; i++)
		free(sc.junk[i]);
	free(sc.names);
	free(sc.junk);
	return rc;
}

/* One SCAN over pattern for keys of type (NULL: any, into *all); slen:
 * the suffix after the name's closing brace. */
static int scan_pass(struct rlock *rl, struct rlock_conn *c,
		     const char *pattern, const char *type, size_t slen,
		     struct scan *sc, char ***all, size_t *nall, size_t *acap,
		     char *err, size_t errlen)
{
	char cursor[32] = "0";
	size_t plen = strlen(rl->prefix), pages = 0;
	int rc;

	do {
		/* Only keys of the type: a key of another type under the
		 * prefix is not a lock (Redis 6 and later). */
		const char *argv[8] = { "SCAN", cursor, "MATCH", pattern,
					"COUNT", "1000", "TYPE", type };
		redisReply *r = NULL;
		struct rlock_result res;

		if (++pages > SCAN_PAGES) {
			snprintf(err, errlen, "%s: SCAN did not end after %d "
				 "pages (cursor %s): not listed",
				 rl_conn_addr(c), SCAN_PAGES, cursor);
			return RLOCK_EPROTO;
		}
		rc = rl_conn_call(c, bound_io(rl), -1, type != NULL ? 8 : 6, argv,
				  NULL, &r);
		if (rc != RLOCK_OK) {
			snprintf(err, errlen, "%s", rl_conn_errstr(c));
			return rc;
		}
		if (r->type == REDIS_REPLY_ERROR) {
			memset(&res, 0, sizeof(res));
			rl_classify_error(r, c, "SCAN", &res);
			snprintf(err, errlen, "%s", res.err);
			freeReplyObject(r);
			return res.rc;
		}
		rc = take_names(r, plen, slen, cursor, sc, all, nall, acap);
		freeReplyObject(r);
		if (rc == RLOCK_EPROTO)
			snprintf(err, errlen, "%s: unexpected reply to SCAN "
				 "(or more than %d names)", rl_conn_addr(c),
				 SCAN_NAMES);
		else if (rc != RLOCK_OK)
			snprintf(err, errlen, "out of memory");
	} while (rc == RLOCK_OK && strcmp(cursor, "0") != 0);
	return rc;
}

/*
 * Keys named like a lock, prefix{NAME}, that do not hold the string a lock
 * is: all of them (any type) less the strings found, each confirmed with
 * TYPE (a key may have come or gone between the passes), at most
 * SCAN_TYPES of them.
 */
#define SCAN_TYPES 1000
static int other_types(struct rlock *rl, struct rlock_conn *c,
		       const char *pattern, struct scan *sc, size_t first,
		       char *err, size_t errlen)
{
	char **all = NULL;
	size_t nall = 0, acap = 0, plen = strlen(rl->prefix);
	int rc;

	rc = scan_pass(rl, c, pattern, NULL, 0, sc, &all, &nall, &acap, err,
		       errlen);
	if (sc->nnames - first > 1)
		qsort(sc->names + first, sc->nnames - first,
		      sizeof(*sc->names), cmp_str);
	for (size_t i = 0, asked = 0; i < nall && rc == RLOCK_OK; i++) {
		const char *argv[2] = { "TYPE", all[i] };
		size_t len = strlen(all[i]);
		char *nm = strndup(all[i] + plen + 1, len - plen - 2);
		redisReply *r = NULL;
		char why[64];
		int named;

		if (nm == NULL) {
			rc = RLOCK_ESYS;
			break;
		}
		named = rlock_check_name(nm, NULL) == RLOCK_OK &&
			memchr(all[i], '\0', len) == NULL;
		if (named && sc->nnames > first &&
		    bsearch(&nm, sc->names + first, sc->nnames - first,
			    sizeof(*sc->names), cmp_str) != NULL) {
			free(nm);
			continue;
		}
		free(nm);
		if (asked++ >= SCAN_TYPES ||
		    rl_conn_call(c, bound_io(rl), -1, 2, argv, NULL, &r) !=
		    RLOCK_OK)
			continue;
		/* A string here is a lock that came since, or a name the
		 * first pass said is none. */
		if (r->type == REDIS_REPLY_STATUS && r->len <= 32 &&
		    strcmp(r->str, "none") != 0 &&
		    strcmp(r->str, "string") != 0) {
			snprintf(why, sizeof(why), "%s, a %s", named ?
				 "not a lock's string" : "not a lock name",
				 r->str);
			rc = push_junk(sc, all[i], len, why);
		}
		freeReplyObject(r);
	}
	for (size_t i = 0; i < nall; i++)
		free(all[i]);
	free(all);
	return rc;
}

/* SCAN one server for the locks under pattern, into sc.  Returns
 * RLOCK_OK, or an error with the reason in err. */
static int scan_server(struct rlock *rl, struct rlock_conn *c,
		       const char *pattern, struct scan *sc, char *err,
		       size_t errlen)
{
	char pat[sizeof(rl->prefix) * 2 + 24];
	size_t first = sc->nnames;
	int rc;

	/* An exclusive lock's key, and the holders of a shared lock or a
	 * semaphore; then what is named like a lock but is not one. */
	rc = scan_pass(rl, c, pattern, "string", 0, sc, NULL, NULL, NULL, err,
		       errlen);
	if (rc == RLOCK_OK)
		rc = other_types(rl, c, pattern, sc, first, err, errlen);
	snprintf(pat, sizeof(pat), "%s%s", pattern, KEY_HOLDERS);
	if (rc == RLOCK_OK)
		rc = scan_pass(rl, c, pat, "zset", strlen(KEY_HOLDERS), sc,
			       NULL, NULL, NULL, err, errlen);
	return rc;
}

/* Every lock on server i: on each master of a cluster. */
static int scan_node(struct rlock *rl, size_t i, const char *pattern,
		     struct scan *sc, char *err, size_t errlen)
{
	struct rlock_node *n = &rl->node[i];
	size_t masters[NODE_MAX_PEERS];
	int nm, rc = RLOCK_OK;

	nm = rl_node_masters(n, rl->hard_deadline, masters, NODE_MAX_PEERS);
	if (nm < 0) {
		snprintf(err, errlen, "%s", rl_node_errstr(n));
		return RLOCK_EUNAVAIL;
	}
	for (int k = 0; k < nm && rc == RLOCK_OK; k++)
		rc = scan_server(rl, n->peer[masters[k]]->cmd, pattern, sc,
				 err, errlen);
	return rc;
}

/* Each of v[0..n) once, in order, to cb; stops when it says so. */
static void each_once(char **v, size_t n, const char *why,
		      int (*cb)(const char *, const char *, void *),
		      void *arg)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_str);
	for (size_t i = 0; i < n; i++) {
		char *tab = why != NULL ? strchr(v[i], '\t') : NULL;

		if (i > 0 && strcmp(v[i], v[i - 1]) == 0)
			continue;
		if (tab != NULL)
			*tab = '\0';
		if (cb(v[i], tab != NULL ? tab + 1 : NULL, arg) != 0)
			break;
		if (tab != NULL)
			*tab = '\t';
	}
}

int rlock_list(struct rlock *rl,
	       int (*cb)(const char *name, const char *junk, void *arg),
	       void *arg)
{
	char pattern[sizeof(rl->prefix) * 2 + 8], err[sizeof(rl->err)];
	struct scan sc = { 0 };
	size_t i, j = 0, failed = 0;
	int rc = RLOCK_OK;

	/* The prefix is literal: escape the glob characters SCAN knows. */
	for (i = 0; rl->prefix[i] != '\0'; i++) {
		if (strchr("*?[]\\", rl->prefix[i]) != NULL)
			pattern[j++] = '\\';
		pattern[j++] = rl->prefix[i];
	}
	memcpy(pattern + j, "{*}", 4);
	/* A lock held by a quorum is on a majority: with the others up, a
	 * server that fails hides none of them. */
	for (i = 0; i < rl->nnode && rc == RLOCK_OK; i++) {
		int r = scan_node(rl, i, pattern, &sc, err, sizeof(err));

		if (r == RLOCK_ESYS || r == RLOCK_EPROTO) {
			rl_set_error(rl->err, sizeof(rl->err), "%s", err);
			rc = r;
		} else if (r != RLOCK_OK && ++failed > rl->nnode - rl->quorum) {
			if (rl->nnode == 1)
				rl_set_error(rl->err, sizeof(rl->err), "%s",
					     err);
			else
				rl_set_error(rl->err, sizeof(rl->err),
					     "no quorum: %zu of %zu servers "
					     "failed (%s)", failed, rl->nnode,
					     err);
			rc = rl->nnode == 1 ? r : RLOCK_EUNAVAIL;
		}
	}
	/* SCAN may return a key twice, and N servers N times. */
	if (rc == RLOCK_OK) {
		each_once(sc.names, sc.nnames, NULL, cb, arg);
		each_once(sc.junk, sc.njunk, "", cb, arg);
	}
	for (i = 0; i < sc.nnames; i++)
		free(sc.names[i]);
	for (i = 0; i < sc.njunk; i++)
		free(sc.junk[i]);
	free(sc.names);
	free(sc.junk);
	return rc;
}
