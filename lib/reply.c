/*
 * reply.c - reading what the scripts answer: an array's numbers and
 * strings, and the holder and waiter records they return.  Another client
 * could have written any of it: a field that does not read is unknown,
 * and noted (rl_note_junk), never taken for 0.
 */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "reply.h"


int rl_elem_num(const redisReply *r, size_t i, long long min, long long max,
		long long *v)
{
	const redisReply *e;

	if (r->type != REDIS_REPLY_ARRAY || i >= r->elements)
		return -1;
	e = r->element[i];
	if (e->type == REDIS_REPLY_INTEGER && e->integer >= min &&
	    e->integer <= max) {
		*v = e->integer;
		return 0;
	}
	if (e->type == REDIS_REPLY_STRING)
		return rlock_parse_ll(e->str, e->len, min, max, v);
	return -1;
}

long long rl_elem_ll(const redisReply *r, size_t i)
{
	long long v;

	return rl_elem_num(r, i, LLONG_MIN, LLONG_MAX, &v) == 0 ? v : 0;
}

void rl_elem_str(const redisReply *r, size_t i, char *buf, size_t len)
{
	const redisReply *e;

	buf[0] = '\0';
	if (r->type != REDIS_REPLY_ARRAY || i >= r->elements)
		return;
	e = r->element[i];
	if (e->type == REDIS_REPLY_STRING || e->type == REDIS_REPLY_STATUS)
		snprintf(buf, len, "%.*s", (int)e->len, e->str);
}

/* Note in junk (when it holds nothing yet) that field what held the n
 * bytes at v, which rlock did not write: for one line of status (raw; the
 * cli escapes it where it is shown). */
void rl_note_junk(char *junk, size_t len, const char *what, const char *v,
		  size_t n)
{
	if (junk[0] != '\0')
		return;
	/* Raw: escaped where it is shown, as all text from others. */
	snprintf(junk, len, "%s '%.*s%s'", what, (int)(n > 40 ? 40 : n), v,
		 n > 40 ? "..." : "");
}

/* A number field of n bytes at v: empty is unknown (unk), else digits
 * within min..max, else junk (noted, unk). */
long long rl_num_field(const char *v, size_t n, long long min, long long max,
		       long long unk, const char *what, char *junk, size_t jlen)
{
	long long x;

	if (n == 0)
		return unk;
	if (rlock_parse_ll(v, n, min, max, &x) == 0)
		return x;
	rl_note_junk(junk, jlen, what, v, n);
	return unk;
}


int rl_parse_kind(const char *k, int *shared, int *limit)
{
	long long l;

	*shared = strcmp(k, "s") == 0;
	*limit = 1;
	/* A pool's (rl_pool_kind) is neither shared nor a semaphore. */
	if (*shared || strcmp(k, "x") == 0 || k[0] == '\0' || rl_pool_kind(k))
		return 0;
	if (rlock_parse_ll(k, strlen(k), 2, RLOCK_LIMIT_MAX, &l) != 0) {
		*limit = 0;
		return -1;
	}
	*limit = (int)l;
	return 0;
}

/* Point f[0..max-1] at the newline-separated fields of v (the last one
 * runs to the end, newlines and all).  Returns how many were found. */
static size_t split_fields(const char *v, const char **f, size_t max)
{
	size_t nf = 0;

	f[nf++] = v;
	for (const char *p = v; *p != '\0' && nf < max; p++) {
		if (*p == '\n')
			f[nf++] = p + 1;
	}
	return nf;
}

/* The length of field f, up to its newline. */
static size_t flen(const char *f)
{
	return strcspn(f, "\n");
}

/* Whether the field at f, up to its newline, is a priority: an integer
 * -100..100 (a waiter of an older rlock has no priority field). */
static int priority_at(const char *f, int *prio)
{
	long long v;

	if (rlock_parse_ll(f, flen(f), -100, 100, &v) != 0)
		return 0;
	*prio = (int)v;
	return 1;
}

void rl_parse_waiter(const char *v, long long now, struct rlock_waiter *w,
		     char *junk, size_t jlen)
{
	const char *f[7];
	char kind[24];
	long long since;
	size_t nf;

	memset(w, 0, sizeof(*w));
	if (v[0] == '\0')
		return;
	if ((nf = split_fields(v, f, 7)) < 6) {
		rl_note_junk(junk, jlen, "next in line", v, strlen(v));
		return;
	}
	w->present = 1;
	snprintf(kind, sizeof(kind), "%.*s", (int)strcspn(f[0], ":\n"), f[0]);
	if (rl_parse_kind(kind, &w->shared, &w->limit) != 0)
		rl_note_junk(junk, jlen, "waiter's kind", kind, strlen(kind));
	w->pool = rl_pool_kind(kind);
	since = rl_num_field(f[1], flen(f[1]), 0, FENCE_LIMIT, -1,
			     "waiter's arrival", junk, jlen);
	w->waited_ms = since >= 0 && now >= since ? now - since : 0;
	w->pid = rl_num_field(f[2], flen(f[2]), 1, INT_MAX, 0, "waiter's pid",
			      junk, jlen);
	snprintf(w->host, sizeof(w->host), "%.*s", (int)flen(f[3]), f[3]);
	snprintf(w->user, sizeof(w->user), "%.*s", (int)flen(f[4]), f[4]);
	if (nf == 7 && priority_at(f[5], &w->priority))
		snprintf(w->command, sizeof(w->command), "%s", f[6]);
	else
		snprintf(w->command, sizeof(w->command), "%s", f[5]);
}

/* Split a shared or semaphore holder's "fence\nsince\nhold_until\npid\n
 * host\nuser\nnote\ncommand" into h (a holder of an older rlock has no
 * note: seven fields); what does not decode is unknown, noted in
 * h->junk. */
void rl_parse_meta(const char *v, long long now, struct rlock_holder *h)
{
	const char *f[8];
	size_t nf = split_fields(v, f, 8);

	h->fence = -1;
	if (nf < 7) {
		if (v[0] != '\0')
			rl_note_junk(h->junk, sizeof(h->junk), "holder's record",
				     v, strlen(v));
		return;
	}
	h->fence = rl_num_field(f[0], flen(f[0]), 1, FENCE_LIMIT, -1, "fence",
				h->junk, sizeof(h->junk));
	h->since_ms = rl_num_field(f[1], flen(f[1]), 1, FENCE_LIMIT, 0, "since",
				   h->junk, sizeof(h->junk));
	h->age_ms = h->since_ms > 0 && now >= h->since_ms ?
		    now - h->since_ms : 0;
	h->pid = rl_num_field(f[3], flen(f[3]), 1, INT_MAX, 0, "pid", h->junk,
			      sizeof(h->junk));
	snprintf(h->host, sizeof(h->host), "%.*s", (int)flen(f[4]), f[4]);
	snprintf(h->user, sizeof(h->user), "%.*s", (int)flen(f[5]), f[5]);
	if (nf == 8)
		snprintf(h->note, sizeof(h->note), "%.*s", (int)flen(f[6]),
			 f[6]);
	snprintf(h->command, sizeof(h->command), "%s", f[nf - 1]);
}

int rl_reply_starts_with(const redisReply *r, const char *p)
{
	size_t n = strlen(p);

	return r->len >= n && memcmp(r->str, p, n) == 0;
}

int rl_reply_is_push(const redisReply *r, const char *kind, const char *chan)
{
	const redisReply *k, *c, *x;
	size_t kn = strlen(kind), cn = strlen(chan);

	if (r->type != REDIS_REPLY_ARRAY || r->elements != 3)
		return 0;
	k = r->element[0];
	c = r->element[1];
	x = r->element[2];
	return k->type == REDIS_REPLY_STRING && k->len == kn &&
	       memcmp(k->str, kind, kn) == 0 &&
	       c->type == REDIS_REPLY_STRING && c->len == cn &&
	       memcmp(c->str, chan, cn) == 0 &&
	       x->type == (strcmp(kind, "subscribe") == 0 ?
			   REDIS_REPLY_INTEGER : REDIS_REPLY_STRING);
}

/* ---- a pool's members, as a user gives them and the scripts keep them */

int rlock_check_member(const char *name, const char **why)
{
	size_t len;

	*why = NULL;
	if (name == NULL || name[0] == '\0') {
		*why = "empty";
		return RLOCK_EUSAGE;
	}
	len = strnlen(name, RLOCK_MEMBER_MAX + 1);
	if (len > RLOCK_MEMBER_MAX) {
		*why = "longer than 256 bytes";
		return RLOCK_EUSAGE;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c < 0x20 || c == 0x7f) {
			*why = "contains a control character";
			return RLOCK_EUSAGE;
		}
	}
	return RLOCK_OK;
}

int rlock_check_prop(const char *kv, const char **why)
{
	const char *eq = strchr(kv, '=');
	size_t klen;

	*why = NULL;
	if (eq == NULL) {
		*why = "not KEY=VALUE";
		return RLOCK_EUSAGE;
	}
	klen = (size_t)(eq - kv);
	if (klen == 0 || klen > RLOCK_PROP_KEY_MAX ||
	    isdigit((unsigned char)kv[0])) {
		*why = "its KEY must be 1 to 64 letters, digits and '_', not "
		       "starting with a digit";
		return RLOCK_EUSAGE;
	}
	for (size_t i = 0; i < klen; i++) {
		unsigned char c = (unsigned char)kv[i];

		if (!(isascii(c) && (isalnum(c) || c == '_'))) {
			*why = "its KEY must be 1 to 64 letters, digits and "
			       "'_', not starting with a digit";
			return RLOCK_EUSAGE;
		}
	}
	for (const char *p = eq + 1; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;

		if (c < 0x20 || c == 0x7f) {
			*why = "its VALUE contains a control character";
			return RLOCK_EUSAGE;
		}
	}
	if (strlen(kv) > RLOCK_PROPS_MAX) {
		*why = "longer than 4096 bytes";
		return RLOCK_EUSAGE;
	}
	return RLOCK_OK;
}

int rl_pool_kind(const char *k)
{
	long long c;

	if (k[0] != 'p')
		return 0;
	if (k[1] == '\0')
		return 1;
	if (rlock_parse_ll(k + 1, strlen(k + 1), 1, RLOCK_COUNT_MAX, &c) != 0)
		return 0;
	return (int)c;
}
