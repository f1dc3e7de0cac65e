/*
 * protocol.h - what the C side and the Lua scripts (lib/scripts/) share.
 * The numbers that mean the same on both sides of the boundary: the C
 * code uses these definitions, and the build writes their values into the
 * scripts (lib/scripts/luagen.c replaces @NAME@ in a script with the value
 * of NAME here), so each is written once; keep each value one token (a
 * number), which is what the generator reads.  And the scripts' answers,
 * as their decoders (lib/scripts/NAME.c) give them.
 */
#ifndef RLOCK_PROTOCOL_H
#define RLOCK_PROTOCOL_H

#include "rlock_int.h"

/*
 * The wait line (docs/design.md#the-wait-line): a waiter among the first
 * LINE_NEAR keeps its place by running the acquire script every
 * LINE_BEAT_MS, and loses it when not heard of for LINE_LEASE_MS; one
 * further back asks less often, in proportion to its place (at most
 * LINE_FAR_MAX times less), with a lease as much longer, so that keeping a
 * long line costs the server about the same per hand-off as a short one.  A
 * waiter that is woken has its lease cut back to LINE_LEASE_MS, so one
 * that vanished (its host, or its process killed) holds the line up for
 * at most LINE_LEASE_MS + LINE_BEAT_MS wherever it stood; a release that
 * handed it the lock (the baton) leaves the grant in its list, which the
 * next in line takes back once it waited LINE_BEAT_MS there.
 *
 * A waiter hears of its turn on its own list, P{NAME}:wake:ID, which it
 * pops (BLPOP) between its beats on its one connection (issue 46): "wake"
 * (try now), "granted\n..." (the baton: baton.lua), "superseded".  A
 * waiter is between two pops for the time of one request, unless stopped
 * past its place's lease: a message waits WAKE_TTL_MS for it, then goes
 * with the list.
 */
#define LINE_BEAT_MS 400
#define LINE_LEASE_MS 1500
#define LINE_NEAR 4
#define LINE_FAR_MAX 20			/* the longest interval, in beats */
#define WAKE_TTL_MS 6000

/* A place in line is scored by its arrival (µs) less its priority times
 * this (115 days): a higher priority comes first whatever the arrival,
 * and every score is exact in a double. */
#define PRIO_STEP_US 10000000000000

/*
 * A grant its holder asks for again (a waiter that a release handed the
 * lock to, the baton, which confirms it so; or a retry after a lost
 * reply) is given a new fence when it is BATON_REFENCE_MS old or more, on
 * the server's clock: it was held up (its server stopped before it
 * answered) long enough for a failover to have handed out a higher fence
 * elsewhere.  A failover takes longer than that: Sentinel's
 * down-after-milliseconds and Cluster's node timeout are seconds in
 * practice.
 */
#define BATON_REFENCE_MS 1000

/* A fence is a positive integer below this, 2^53 less 2^20: exact in a
 * double (Lua, JSON, shell arithmetic), and so is the one after it.  A
 * counter at or above it, or not digits, is one rlock did not write
 * (lib/scripts/fence_of.lua), and a grant whose fence is not below it is
 * refused.  The server's clock in µs reaches it in the year 2255. */
#define FENCE_LIMIT 9007199253692416

/* The history the scripts keep when the caller says nothing of it:
 * RLOCK_LOG_MAX_DEFAULT entries, RLOCK_LOG_DAYS_DEFAULT days (rlock.h). */
#define HISTORY_MAX 1000
#define HISTORY_TTL_MS 2592000000

/* ---- the scripts' answers -------------------------------------------- */

/*
 * Each script's answer is decoded in one place, lib/scripts/NAME.c beside
 * its argument builder, strictly, into a typed struct: a wrong type, a
 * wrong count or a number that does not parse in full and in range is
 * RLOCK_EPROTO, never a default.
 */

/* force.lua: {0, junk} when nothing was held, else the holder layout of
 * status ({1, 0, host, pid, user, command, since, fence, token prefix,
 * 0}), how many holders were removed and junk. */
struct force_reply {
	int held;			/* something was removed */
	long long holders;		/* how many, when held */
	long long junk;			/* keys of another type deleted */
};
/* Decode r into out, and the (first) holder removed into h when there was
 * one.  Returns RLOCK_OK or RLOCK_EPROTO. */
int rl_decode_force(const redisReply *r, struct force_reply *out,
		    struct rlock_holder *h);

/* extend.lua: 1 extended, 0 not held (held).  fence.lua: 1.  Each
 * returns RLOCK_OK or RLOCK_EPROTO. */
int rl_decode_extend(const redisReply *r, int *held);
int rl_decode_fence(const redisReply *r);

#endif /* RLOCK_PROTOCOL_H */
