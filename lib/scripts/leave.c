/*
 * leave.c - the leave script (leave.lua): its arguments.  Its answer, 1,
 * is not read: a waiter that cannot say it leaves loses its place when
 * its lease ends.
 */
#include <stdio.h>

#include "keys.h"
#include "request.h"

/* KEYS: the nine.  ARGV: "KIND:ID", wake-up prefix, token, the history's
 * length and ttl. */
void rl_req_leave(struct request *q, const struct lock_names *n,
		  const char *kind, const char *waiter, const char *token,
		  const struct history *h)
{
	rl_req_begin_all(q, RLOCK_SCRIPT_LEAVE, n);
	snprintf(q->member, sizeof(q->member), "%s:%s", kind, waiter);
	q->argv[q->argc++] = q->member;
	q->argv[q->argc++] = n->wake;
	q->argv[q->argc++] = token;
	rl_req_history(q, 0, h);
}
