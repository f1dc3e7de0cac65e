/*
 * log.c - the log script (log.lua): its arguments.  Its answer, 1
 * recorded, 0 refused or 2 the key holds another type, is counted by
 * rl_fan_tally.
 */
#include "keys.h"
#include "request.h"

/* KEYS: the log, the lock.  ARGV: the history's length and ttl, the field/value
 * pairs of the values given. */
void rl_req_log(struct request *q, const struct lock_names *n,
		const struct history *h, const char *run, const char *const *v)
{
	rl_req_begin(q, RLOCK_SCRIPT_LOG, 0, n);
	rl_req_add_key(q, n->log);
	rl_req_add_key(q, n->key);
	rl_req_history(q, 0, h);
	q->argv[q->argc++] = run != NULL ? run : "";
	for (int i = 0; i < EV_NFIELDS; i++) {
		if (v[i] == NULL || v[i][0] == '\0')
			continue;
		q->argv[q->argc++] = rl_ev_field[i];
		q->argv[q->argc++] = v[i];
	}
}
