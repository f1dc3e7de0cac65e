/*
 * release.c - the release script (release.lua): its arguments, in its two
 * layouts.  Its answer, 1 released, 2 left to expire at --min-hold's end,
 * 3 released with the wake-up refused, 0 not held, is counted by
 * rl_fan_tally.
 */
#include <string.h>

#include "keys.h"
#include "request.h"

/*
 * A release that ended well (no signal, exit 0 or not known), not
 * announced (with one server, waiters listen on channels of their own),
 * with the history's defaults and no --once-per has the short layout
 * (lib/scripts/release.lua) too: KEYS the lock key, ARGV token and its
 * history entry "TOKEN8\nEXIT\n" (no signal).  Any other, and any to a
 * server that needs every key declared, has the whole layout.
 */
void rl_req_release(struct request *q, const struct lock_names *n,
		    const char *token, const struct history *h,
		    const struct rlock_outcome *how, int64_t once_ms,
		    int announce)
{
	const char *sig = how != NULL && how->abandoned ? "abandoned" :
			  how != NULL && how->signal > 0 ?
			  rlock_signame(how->signal, q->num[1],
					sizeof(q->num[1])) : "";
	long long ex = how != NULL ? how->exit : -1;
	size_t at = 0;

	/* The whole layout: the twelve keys; token, channel, wake-up prefix,
	 * exit, signal, the history's length and ttl (and the period). */
	rl_req_begin_all(q, RLOCK_SCRIPT_RELEASE, n);
	q->argv[q->argc++] = token;
	q->argv[q->argc++] = announce ? n->chan : "";
	q->argv[q->argc++] = n->wake;
	q->argv[q->argc++] = ex >= 0 ? rl_req_num(q, 0, ex) : "";
	q->argv[q->argc++] = sig;
	rl_req_history(q, 2, h);
	if (once_ms > 0)
		q->argv[q->argc++] = rl_req_num(q, 4, once_ms);
	q->wargc = 0;
	if (announce || sig[0] != '\0' || ex > 0 || once_ms > 0 ||
	    !rl_req_default_history(h) || n->multislot)
		return;
	rl_req_begin_short(q, RLOCK_SCRIPT_RELEASE, n);
	q->argv[q->argc++] = token;
	rl_req_put_prefix(q->info, sizeof(q->info), &at, token);
	rl_req_put(q->info, sizeof(q->info), &at, "\n");
	if (ex >= 0)
		rl_req_put_num(q->info, sizeof(q->info), &at, ex);
	rl_req_put(q->info, sizeof(q->info), &at, "\n");
	q->argv[q->argc++] = q->info;
}
