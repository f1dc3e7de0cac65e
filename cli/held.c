/*
 * held.c - RLOCK_HELD, the locks a process tree holds (run's re-entrancy):
 * one entry a line, "KEY\tKIND\tPID:START\tTOKEN".  The variable is
 * inherited, so any process could have written it: each entry is decoded
 * strictly, and one that does not read so is skipped, never a hold.
 */
#include <limits.h>
#include <string.h>

#include "cli.h"

/* The fields of the n bytes at e, split at tabs into f (at most four);
 * returns how many, 5 for more than four. */
static size_t split(const char *e, size_t n, const char *f[4], size_t len[4])
{
	const char *end = e + n, *q = e;
	size_t nf = 0;

	for (;;) {
		const char *t = memchr(q, '\t', (size_t)(end - q));

		if (nf == 4)
			return 5;
		f[nf] = q;
		len[nf++] = (size_t)((t != NULL ? t : end) - q);
		if (t == NULL)
			return nf;
		q = t + 1;
	}
}

int held_next(const char **p, struct held_entry *h)
{
	while (*p != NULL && **p != '\0') {
		const char *e = *p, *nl = strchr(e, '\n'), *f[4], *colon;
		size_t n = nl != NULL ? (size_t)(nl - e) : strlen(e), len[4];

		*p = nl != NULL ? nl + 1 : NULL;
		if (split(e, n, f, len) != 4 || len[0] == 0 ||
		    len[0] >= RLOCK_KEY_MAX || len[1] == 0 ||
		    len[1] >= sizeof(h->kind) || len[3] != RLOCK_TOKEN_LEN ||
		    strspn(f[3], "0123456789abcdef") < RLOCK_TOKEN_LEN ||
		    (colon = memchr(f[2], ':', len[2])) == NULL ||
		    rlock_parse_ll(f[2], (size_t)(colon - f[2]), 2, INT_MAX,
				   &h->pid) != 0 ||
		    rlock_parse_ll(colon + 1, len[2] - (size_t)(colon - f[2]) - 1,
				   0, LLONG_MAX, &h->start) != 0)
			continue;
		h->key = f[0];
		h->keylen = len[0];
		memcpy(h->kind, f[1], len[1]);
		h->kind[len[1]] = '\0';
		memcpy(h->token, f[3], RLOCK_TOKEN_LEN);
		h->token[RLOCK_TOKEN_LEN] = '\0';
		return 1;
	}
	return 0;
}
