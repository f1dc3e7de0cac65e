/*
 * info.c - the text of INFO and CLUSTER INFO, decoded strictly into a
 * bounded table of key:value fields, with typed getters that tell a field
 * that is absent from one that is present but does not read.  Doctor and
 * bench read every INFO field through here.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "doctor_int.h"
#include "rlock.h"

/* A key of printable ASCII, no space (Redis writes [a-z0-9_|]). */
static int key_ok(const char *k, size_t n)
{
	if (n == 0 || n > INFO_KEY_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)k[i];

		if (c <= 0x20 || c >= 0x7f)
			return 0;
	}
	return 1;
}

/* One line of n bytes (no '\n', a trailing '\r' already dropped). */
static void add_line(struct info *in, const char *l, size_t n)
{
	const char *colon;
	struct info_field *f;
	size_t klen;

	if (n == 0 || l[0] == '#')
		return;
	colon = memchr(l, ':', n);
	klen = colon != NULL ? (size_t)(colon - l) : 0;
	if (colon == NULL || !key_ok(l, klen)) {
		in->junk++;
		return;
	}
	if (in->n == INFO_FIELDS_MAX) {
		in->full = 1;
		return;
	}
	f = &in->f[in->n++];
	f->key = l;
	f->klen = klen;
	f->val = colon + 1;
	f->vlen = n - klen - 1;
	f->over = n > INFO_LINE_MAX;
	if (f->over)
		f->vlen = INFO_LINE_MAX - klen - 1;
}

void rl_info_parse(struct info *in, const char *text, size_t len)
{
	size_t i = 0;

	in->text = text;
	in->len = len;
	in->n = 0;
	in->junk = 0;
	in->full = 0;
	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t end = nl != NULL ? (size_t)(nl - text) : len;
		size_t n = end - i;

		if (n > 0 && text[end - 1] == '\r')
			n--;
		add_line(in, text + i, n);
		i = end + 1;
	}
}

/* The field called key, or NULL: *twice set when another line says it
 * too. */
static const struct info_field *find(const struct info *in, const char *key,
				     int *twice)
{
	const struct info_field *hit = NULL;
	size_t n = strlen(key);

	*twice = 0;
	for (size_t i = 0; i < in->n; i++) {
		const struct info_field *f = &in->f[i];

		if (f->klen != n || memcmp(f->key, key, n) != 0)
			continue;
		if (hit != NULL) {
			*twice = 1;
			break;
		}
		hit = f;
	}
	return hit;
}

int rl_info_get(const struct info *in, const char *key, const char **v,
		size_t *n)
{
	const struct info_field *f;
	int twice;

	*v = "";
	*n = 0;
	if (in == NULL)
		return INFO_ABSENT;
	f = find(in, key, &twice);
	if (f == NULL)
		/* Beyond the table it may yet be said. */
		return in->full ? INFO_BAD : INFO_ABSENT;
	*v = f->val;
	*n = f->vlen;
	return twice || f->over ? INFO_BAD : INFO_OK;
}

int rl_info_num(const struct info *in, const char *key, long long min,
		long long max, long long *v)
{
	const char *s;
	size_t n;
	int rc = rl_info_get(in, key, &s, &n);

	if (rc != INFO_OK)
		return rc;
	return rlock_parse_ll(s, n, min, max, v) == 0 ? INFO_OK : INFO_BAD;
}

int rl_info_text(const struct info *in, const char *key, char *buf, size_t len)
{
	const char *s;
	size_t n;
	int rc = rl_info_get(in, key, &s, &n);

	/* Raw: the cli escapes it where it is shown (once). */
	snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), s);
	return rc;
}

int rl_info_seconds(const struct info *in, const char *key, long long *us)
{
	const char *s, *dot;
	size_t n, fl;
	long long whole, frac = 0;
	int rc = rl_info_get(in, key, &s, &n);

	if (rc != INFO_OK)
		return rc;
	/* Whole seconds, then at most six decimals (Redis writes %ld.%06ld). */
	dot = memchr(s, '.', n);
	fl = dot != NULL ? n - (size_t)(dot - s) - 1 : 0;
	if (n == 0 || s[0] == '-' ||
	    rlock_parse_ll(s, dot != NULL ? (size_t)(dot - s) : n, 0,
			   LLONG_MAX / 1000000 - 1, &whole) != 0 ||
	    (dot != NULL && (fl == 0 || fl > 6 || dot[1] == '-' ||
			     rlock_parse_ll(dot + 1, fl, 0, 999999,
					    &frac) != 0)))
		return INFO_BAD;
	for (; fl < 6; fl++)
		frac *= 10;
	*us = whole * 1000000 + frac;
	return INFO_OK;
}

/* A state of 1..32 letters, digits and '_' (online, wait_bgsave, ...). */
static int state_ok(const char *s, size_t n)
{
	if (n == 0 || n > 32)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return 0;
	}
	return 1;
}

/* A replica's line: "ip=...,port=...,state=S,offset=...,lag=L" (2.8 and
 * later) or "ip,port,state" (2.6).  The state is required, the lag
 * optional (-1); an item said twice or a lag that does not read fails. */
static int decode_replica(const char *v, size_t n, struct info_replica *r)
{
	const char *state = NULL;
	size_t slen = 0, i = 0;
	int item = 0, lag_seen = 0, kv = memchr(v, '=', n) != NULL;

	r->online = 0;
	r->lag = -1;
	while (i <= n) {
		const char *p = v + i, *comma = memchr(p, ',', n - i);
		size_t len = comma != NULL ? (size_t)(comma - p) : n - i;
		const char *eq = memchr(p, '=', len);

		if (!kv && item == 2) {
			state = p;
			slen = len;
		} else if (kv && eq == NULL) {
			return -1;
		} else if (kv && eq - p == 5 && memcmp(p, "state", 5) == 0) {
			if (state != NULL)
				return -1;
			state = eq + 1;
			slen = len - 6;
		} else if (kv && eq - p == 3 && memcmp(p, "lag", 3) == 0) {
			if (lag_seen || rlock_parse_ll(eq + 1, len - 4, 0,
						       LLONG_MAX, &r->lag) != 0)
				return -1;
			lag_seen = 1;
		}
		item++;
		i += len + 1;
	}
	if (state == NULL || !state_ok(state, slen))
		return -1;
	r->online = slen == 6 && memcmp(state, "online", 6) == 0;
	return 0;
}

int rl_info_replica(const struct info *in, size_t *pos, struct info_replica *r)
{
	long long id;

	for (; in != NULL && *pos < in->n; (*pos)++) {
		const struct info_field *f = &in->f[*pos];

		if (f->klen <= 5 || memcmp(f->key, "slave", 5) != 0 ||
		    f->key[5] == '-' ||
		    rlock_parse_ll(f->key + 5, f->klen - 5, 0, INT_MAX,
				   &id) != 0)
			continue;
		(*pos)++;
		return !f->over && decode_replica(f->val, f->vlen, r) == 0 ?
		       INFO_OK : INFO_BAD;
	}
	return INFO_ABSENT;
}
