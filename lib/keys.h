/*
 * keys.h - a lock's key names and their cluster slot, and the fields of a
 * history entry (lib/keys.c): the layout the scripts and readers share.
 */
#ifndef RLOCK_KEYS_H
#define RLOCK_KEYS_H

#include <stddef.h>

#include "rlock.h"

/* ---- key names (one place for docs/design.md#the-keys) ---------------- */

#define KEY_META ":owner"
#define KEY_FENCE ":fence"
#define KEY_CHANNEL ":released"
#define KEY_HOLDERS ":holders"
#define KEY_HMETA ":holders:meta"
#define KEY_LINE ":line"
#define KEY_LEASE ":line:lease"
#define KEY_WHO ":line:who"
#define KEY_WAKE ":wake:"		/* + a waiter's id: its wake-up list
					 * (one server), popped */
#define KEY_LOG ":log"
#define KEY_ONCE ":once"		/* the period done, for --once-per */
#define KEY_GRANT ":grant"		/* an exclusive grant's record */
#define KEY_HOLD ":hold"		/* --min-hold's end, while it lasts */
#define KEY_WITH ":with"		/* the set held with it (--with) */
#define KEY_LAST ":log:last"		/* the last runs (the scripts name
					 * it from the log's key) */
#define KEY_LOG_COPY ":log:c"		/* a new history's copy, renamed
					 * back over it in the same script
					 * (shrink.lua, which names it from
					 * the log's key) */


#define CLUSTER_SLOTS 16384
#define LINE_ID_LEN 16			/* hex digits of a waiter's id */

/* The names of one lock, for the argument builders, and the cluster slot
 * they share (rl_key_slot of key, computed once).  wake is the prefix of the
 * waiters' channels. */
struct lock_names {
	const char *key, *meta, *fence, *holders, *hmeta, *line, *lease,
		   *who, *chan, *wake, *log, *once, *last, *grant, *hold;
	int slot;
	int multislot;			/* its keys span slots (an empty
					 * hash tag): declare them all */
};

/* The names of one lock with room for them (13 KB: one per call, not
 * one per bench name). */
struct lock_keys {
	char key[RLOCK_KEY_MAX];
	char meta[RLOCK_KEY_MAX + 16], fence[RLOCK_KEY_MAX + 16];
	char holders[RLOCK_KEY_MAX + 16], hmeta[RLOCK_KEY_MAX + 16];
	char line[RLOCK_KEY_MAX + 16], lease[RLOCK_KEY_MAX + 16];
	char who[RLOCK_KEY_MAX + 16], chan[RLOCK_KEY_MAX + 16];
	char wake[RLOCK_KEY_MAX + 16], log[RLOCK_KEY_MAX + 16];
	char once[RLOCK_KEY_MAX + 16], last[RLOCK_KEY_MAX + 16];
	char grant[RLOCK_KEY_MAX + 16], hold[RLOCK_KEY_MAX + 16];
	struct lock_names v;		/* the above, for the builders */
};

/* Fill k with the names of lock name under prefix (a checked name and a
 * bounded prefix always fit). */
void rl_lock_keys_init(struct lock_keys *k, const char *prefix,
		       const char *name);

/* The number of keys of a lock, in the order the scripts take them (each
 * the first few it needs): key, meta, holders, hmeta, line, lease, who,
 * fence, log. */
#define LOCK_NKEYS 9

/* Write "prefix{name}suffix" into buf.  Returns its length, or -1 (and
 * an empty buf) when it does not fit. */
int rl_lock_key(char *buf, size_t len, const char *prefix, const char *name,
		const char *suffix);


/* The cluster slot of a key: CRC16 of its hash tag ({...}), or of the
 * whole key when it has none or an empty one. */
int rl_key_slot(const char *key, size_t len);

/* The fields of a history entry, in the order an entry has them; each
 * entry has only those it knows a value for.  A release has since (the
 * grant's time), not held: the time held is the entry's time less since. */
enum {
	EV_EVENT, EV_HOST, EV_USER, EV_PID, EV_KIND, EV_FENCE, EV_TOKEN,
	EV_WAITED, EV_SINCE, EV_HELD, EV_EXIT, EV_SIGNAL, EV_REASON,
	EV_COMMAND, EV_NOTE, EV_SLOT, EV_MEMBERS, EV_NFIELDS
};
extern const char *const rl_ev_field[EV_NFIELDS];

#endif
