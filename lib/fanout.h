/*
 * fanout.h - one request to every server of a handle, and the quorum
 * (lib/fanout.c).
 */
#ifndef RLOCK_FANOUT_H
#define RLOCK_FANOUT_H

#include "handle.h"
#include "keys.h"
#include "node.h"
#include "request.h"

/* ---- fan-out: one request to every server, and the quorum --------------- */

/* One server's part in a fan-out. */
struct fan_slot {
	const struct request *req;	/* NULL: not in this fan-out */
	int state;
	int use_eval;			/* NOSCRIPT came back: send EVAL */
	int whole;			/* the whole layout (wargv) */
	int tries;
	int dropped;			/* sent again after a drop */
	int answered;			/* the last send got a reply */
	int redirects;			/* MOVED, ASK, new master */
	int skip;			/* replies to drop first (ASKING's) */
	int preset;			/* res set by the caller: not sent */
	int64_t retry_at;
	struct rlock_result res;
};

struct fan {
	struct fan_slot slot[RLOCK_MAX_SERVERS];
	size_t n;
	size_t resent;			/* requests sent again after a drop */
	int64_t extra_ms;		/* beyond the I/O timeout (WAIT) */
	int probe;			/* rl_identify_servers' own: answers of
					 * servers not yet identified count */
};

/* A fan-out of nothing yet over rl's servers; rl_fan_all or slot[i].req say
 * who gets what. */
void rl_fan_init(struct fan *f, const struct rlock *rl);

/* Send q to every server. */
void rl_fan_all(struct fan *f, const struct request *q);

/*
 * Send each slot's request at once and wait for every reply within the I/O
 * timeout (cut to rl->hard_deadline).  NOSCRIPT is answered with EVAL,
 * LOADING retried every 100ms, and a dropped connection reopened and the
 * request sent again (every script tolerates a repeat: acquire finds its
 * own token).  slot[i].res gets the reply or an error.
 */
void rl_fan_run(struct rlock *rl, struct fan *f);

/* Free the replies. */
void rl_fan_done(struct fan *f);

/* Count a quorum among integer replies, each 0..most (positive is yes;
 * anything else is an unexpected reply): RLOCK_OK, RLOCK_NOTOURS when too
 * many said no, or the first error.  *yes may be NULL. */
int rl_fan_tally(struct rlock *rl, struct fan *f, const char *what,
		 long long most, size_t *yes);

/* Copy the first error into rl->err and return its code; with several
 * servers, say how many of them failed. */
int rl_fan_first_error(struct rlock *rl, struct fan *f, size_t failed);

/* Mark slot i's reply as not what what should answer. */
void rl_fan_unexpected(struct fan *f, size_t i, const char *what);

/* Undo a grant that did not make a quorum: release token everywhere. */
void rl_fan_undo(struct rlock *rl, const struct lock_names *n, const char *token);

/* Whether n was identified on the connection its requests use now
 * (rl_identify_servers, lib/identity.c): without, it has no vote. */
int rl_node_identified(const struct rlock_node *n);

#endif
