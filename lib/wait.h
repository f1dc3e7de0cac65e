/*
 * wait.h - the one wait loop, for every kind of hold (lib/wait.c).
 *
 * A single lock, a shared hold, a semaphore's place, a pool's members and
 * a set of locks (--with) all wait the same way: try, and when told
 * "held", listen for a wake-up, keep the place in line, back off through
 * a failover, confirm a slow grant, call the progress callback, until -w
 * ends.  What differs per kind is below the loop, in a struct hold_kind:
 * how one try is asked and read, how a grant is given back, which
 * channels its wake-ups come on, and what is done when the wait ends
 * without the lock.
 */
#ifndef RLOCK_WAIT_H
#define RLOCK_WAIT_H

#include <stdint.h>

#include "rlock.h"

/* How long a wait without end (no -w) retries a failover seen under way
 * (a replica named master, READONLY, a cluster slot down) before any
 * server answered it: far above what a failover takes, so that one never
 * ends such a wait, but not for ever, so that sentinels that always name
 * a replica are reported (69).  A bounded wait retries within its own
 * time, and no wait (-n) within the I/O timeout. */
#define FAILOVER_GRACE_MS 60000

/* A grant through Sentinel whose try took this long or longer is checked
 * with the sentinels before it is kept: a master frozen past a failover
 * grants, as it thaws, what was asked of it before (a failover takes at
 * least down-after-milliseconds, far above this). */
#define CONFIRM_MS 250

/*
 * How long a waiter told "held" waits before it asks again (ms), unless
 * woken first: in line, every LINE_BEAT_MS (further back, less often:
 * see LINE_NEAR) to keep its place, and the next in line also when the
 * holder's lease (pttl) runs out, for a holder that died never releases;
 * not in line, when the lease runs out, or every second without a channel
 * to hear releases on.  rnd (0..999)
 * spreads waiters so that they do not all arrive at once.
 */
int64_t rl_line_wait_ms(long long pttl, long long place, int in_line,
			int subscribed, unsigned rnd);

/* A try's code: granted where the replicas do not follow (--wait-replicas:
 * a master not yet demoted after a failover, or a new one whose replicas
 * are still syncing); within a wait, asked again. */
#define UNREPLICATED 101

/* What one try says besides its code. */
struct hold_try {
	int joined;		/* took a place in line: the first, or
				 * again at the end after losing it */
	int in_line;		/* holds a place after the try */
	int undid;		/* gave grants back (several masters) */
	long long ttl_ms;	/* the holder's lease left, -1 unknown */
	long long place;	/* the place in line, -1 none */
};

/* One kind of hold, as the loop asks it (self: the kind's own state). */
struct hold_kind {
	/* One try.  waited_ms: 0 on the first; details: ask who holds it;
	 * listening: the wake-up channels are subscribed (take a place).
	 * Returns RLOCK_OK with *lease set, RLOCK_BUSY with *h and *t
	 * set, UNREPLICATED, or an error with rl->err set. */
	int (*attempt)(struct rlock *rl, void *self, int64_t waited_ms,
		       int details, int listening, struct rlock_lease *lease,
		       struct rlock_holder *h, struct hold_try *t);
	/* Give back the grant of the last try (a replaced master's). */
	void (*undo)(struct rlock *rl, void *self);
	/* Before the first listen: where its wake-ups come (up to
	 * RLOCK_WITH_MAX), and their cluster slot: on one server, the
	 * waiter's own lists, popped; on several masters, the release
	 * channels, subscribed to.  Returns RLOCK_OK or an error with
	 * rl->err set. */
	int (*channels)(struct rlock *rl, void *self, const char **chan,
			size_t *nchan, int *slot);
	/* A wake-up popped from its list said "granted\n..." (the baton,
	 * lib/scripts/baton.lua): make *lease of it without asking, as a
	 * reply from a key only a client that may delete the lock can
	 * write (RLOCK_OK), or RLOCK_BUSY to ask as usual.  NULL: ask. */
	int (*popped)(struct rlock *rl, void *self, const char *msg,
		      size_t len, struct rlock_lease *lease);
	/* The wait ended without the lock (rc): leave the line when
	 * in_line, say why when nothing did yet, record it. */
	void (*end)(struct rlock *rl, void *self, int rc, int in_line,
		    const struct rlock_holder *h, int64_t waited_ms);
};

/* Wait for name's hold of kind k under o's options (-w, the callbacks,
 * cancel_fd).  Returns RLOCK_OK with *lease, or why not. */
int rl_hold_wait(struct rlock *rl, const char *name,
		 const struct rlock_acquire_opts *o, const struct hold_kind *k,
		 void *self, struct rlock_lease *lease,
		 struct rlock_holder *holder);

/* Until a message on rl's subscriptions, a sentinel's +switch-master,
 * cancel_fd, or wake (monotonic ms).  RLOCK_OK or RLOCK_CANCELED. */
int rl_wait_release(struct rlock *rl, int64_t wake, int cancel_fd);
/* Close rl's subscribed connections. */
void rl_unsubscribe(struct rlock *rl);

#endif
