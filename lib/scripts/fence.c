/*
 * fence.c - the fence script (fence.lua), which raises a master's fence
 * counter: its arguments, and its answer decoded.
 */
#include "keys.h"
#include "request.h"

/* KEYS: the first eight.  ARGV: token, fence. */
void rl_req_fence(struct request *q, const struct lock_names *n,
		  const char *token, long long fence)
{
	rl_req_begin_all(q, RLOCK_SCRIPT_FENCE, n);
	q->argv[q->argc++] = token;
	q->argv[q->argc++] = rl_req_num(q, 0, fence);
}

int rl_decode_fence(const redisReply *r)
{
	return r->type == REDIS_REPLY_INTEGER && r->integer == 1 ? RLOCK_OK :
	       RLOCK_EPROTO;
}
