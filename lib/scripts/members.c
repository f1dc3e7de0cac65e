/*
 * members.c - the members script (members.lua): its arguments, and the
 * strict decoder of a pool's members as a grant and the script give them.
 */
#include <stdio.h>
#include <string.h>

#include "keys.h"
#include "reply.h"
#include "request.h"

/* KEYS: the twelve.  ARGV: what, member, properties, wake-up prefix. */
void rl_req_members(struct request *q, const struct lock_names *n,
		    const char *what, const char *member, const char *props)
{
	rl_req_begin_all(q, RLOCK_SCRIPT_MEMBERS, n);
	q->argv[q->argc++] = what;
	q->argv[q->argc++] = member != NULL ? member : "";
	q->argv[q->argc++] = props != NULL ? props : "";
	q->argv[q->argc++] = n->wake;
}

int rl_props_ok(const char *v, size_t n)
{
	char kv[RLOCK_PROP_KEY_MAX + RLOCK_PROPS_MAX + 2];
	const char *why, *end = v + n;

	if (n > RLOCK_PROPS_MAX || memchr(v, '\0', n) != NULL)
		return 0;
	while (v < end) {
		const char *nl = memchr(v, '\n', (size_t)(end - v));
		size_t len = nl != NULL ? (size_t)(nl - v) : (size_t)(end - v);

		memcpy(kv, v, len);
		kv[len] = '\0';
		if (rlock_check_prop(kv, &why) != RLOCK_OK)
			return 0;
		v += len + (nl != NULL);
		/* A last line ends the text: "a=1\n" has a line after it. */
		if (nl != NULL && v == end)
			return 0;
	}
	return 1;
}

int rl_decode_members(const redisReply *r, struct rlock_member *out,
		      size_t max, const char **why)
{
	size_t n;

	if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0 ||
	    r->elements / 2 > max) {
		*why = "not a list of members";
		return -1;
	}
	n = r->elements / 2;
	for (size_t i = 0; i < n; i++) {
		const redisReply *m = r->element[2 * i];
		const redisReply *p = r->element[2 * i + 1];
		const char *w;

		if (m->type != REDIS_REPLY_STRING ||
		    p->type != REDIS_REPLY_STRING ||
		    m->len > RLOCK_MEMBER_MAX || memchr(m->str, '\0', m->len)) {
			*why = "a member's name";
			return -1;
		}
		memset(&out[i], 0, sizeof(out[i]));
		memcpy(out[i].name, m->str, m->len);
		if (rlock_check_member(out[i].name, &w) != RLOCK_OK) {
			*why = "a member's name";
			return -1;
		}
		if (!rl_props_ok(p->str, p->len)) {
			*why = "a member's properties";
			return -1;
		}
		memcpy(out[i].props, p->str, p->len);
	}
	return (int)n;
}
