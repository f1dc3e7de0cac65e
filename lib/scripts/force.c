/*
 * force.c - the forced release script (force.lua): its arguments, and its
 * answer decoded.
 */
#include <limits.h>

#include "keys.h"
#include "reply.h"
#include "request.h"

/* KEYS: the first seven, the log.  ARGV: channel, wake-up prefix, who
 * forced it, the history's length and ttl. */
void rl_req_force(struct request *q, const struct lock_names *n,
		  const char *by, const struct history *h)
{
	rl_req_begin_all(q, RLOCK_SCRIPT_FORCE, n);
	q->argv[q->argc++] = n->chan;
	q->argv[q->argc++] = n->wake;
	q->argv[q->argc++] = by;
	rl_req_history(q, 0, h);
}

int rl_decode_force(const redisReply *r, struct force_reply *out,
		    struct rlock_holder *h)
{
	long long held;

	out->held = 0;
	out->holders = 0;
	out->junk = 0;
	if (rl_elem_num(r, 0, 0, 1, &held) != 0)
		return RLOCK_EPROTO;
	/* At most twelve keys of a lock can hold another type. */
	if (held == 0)
		return r->elements == 2 && rl_elem_num(r, 1, 0, 12, &out->junk) == 0 ?
		       RLOCK_OK : RLOCK_EPROTO;
	if (r->elements != 12 || rl_parse_holder(r, h) != 0 ||
	    rl_elem_num(r, 10, 1, LLONG_MAX, &out->holders) != 0 ||
	    rl_elem_num(r, 11, 0, 12, &out->junk) != 0)
		return RLOCK_EPROTO;
	out->held = 1;
	return RLOCK_OK;
}
