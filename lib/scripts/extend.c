/*
 * extend.c - the extend script (extend.lua): its arguments, and its
 * answer, 1 extended or 0 not held, decoded (rl_fan_tally counts the same
 * answers of several masters).
 */
#include "keys.h"
#include "request.h"

/* KEYS: lock, meta ('x'), or holders, hmeta ('h').  ARGV: token, ttl,
 * kind.  A ttl of 0 asks only whether token holds the lock ('' to the
 * script, which then writes nothing). */
void rl_req_extend(struct request *q, const struct lock_names *n,
		   const char *token, int64_t ttl_ms, int kind)
{
	rl_req_begin(q, RLOCK_SCRIPT_EXTEND, 0, n);
	q->nkeys = 2;
	q->argv[q->argc++] = kind == 'x' ? n->key : n->holders;
	q->argv[q->argc++] = kind == 'x' ? n->meta : n->hmeta;
	q->argv[q->argc++] = token;
	q->argv[q->argc++] = ttl_ms == 0 ? "" : rl_req_num(q, 0, ttl_ms);
	q->argv[q->argc++] = kind == 'x' ? "x" : "h";
}

int rl_decode_extend(const redisReply *r, int *held)
{
	if (r->type != REDIS_REPLY_INTEGER || r->integer < 0 || r->integer > 1)
		return RLOCK_EPROTO;
	*held = (int)r->integer;
	return RLOCK_OK;
}
