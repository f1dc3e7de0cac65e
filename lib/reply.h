/*
 * reply.h - reading the scripts' and servers' replies strictly
 * (lib/reply.c, and the decoders of lib/scripts/NAME.c).
 */
#ifndef RLOCK_REPLY_H
#define RLOCK_REPLY_H

#include "rlock_int.h"
#include "protocol.h"

/* ---- reading replies (lib/reply.c) ---- */

/* Whether r's text (an error or status) starts with p. */
int rl_reply_starts_with(const redisReply *r, const char *p);
/* Whether r is {kind, chan, x} of exactly the channel chan: "subscribe"
 * with a count, or "message" with its payload. */
int rl_reply_is_push(const redisReply *r, const char *kind, const char *chan);

/* Element i of array r as a number in min..max: an integer reply, or a
 * string that rlock_parse_ll reads in full.  Returns 0 with *v set, or
 * -1 for anything else (absent, another type, junk, out of range). */
int rl_elem_num(const redisReply *r, size_t i, long long min, long long max,
		long long *v);
/*
 * What a server says of where another is (node.c), each strict: a host
 * of 1..255 printable bytes ("" for the one asked), a port 1..65535, and
 * slots lo..hi within the cluster's (-1 where none are named).  From an
 * error "MOVED 3999 host:port" (or ASK) of len bytes; from one range of
 * CLUSTER SLOTS, [lo, hi, [host, port, id...], replicas...]; from SENTINEL
 * GET-MASTER-ADDR-BY-NAME, [host, port].  Each returns 0 with *to filled,
 * or -1.
 */
struct peer_addr {
	char host[256];
	int port;
	int lo, hi;
};
int rl_decode_redirect(const char *s, size_t len, struct peer_addr *to);
int rl_decode_slot_range(const redisReply *e, struct peer_addr *to);
int rl_decode_master_addr(const redisReply *r, struct peer_addr *to);

/* The acquire script's replies (lock.c), each strict: a grant, {1,
 * fence[, recorded[, slot]]}: returns 0 with a fence in 1..2^53-1,
 * recorded 1, 0 or -1 (not asked) and, when slot is not NULL, a
 * semaphore's slot in 0..RLOCK_LIMIT_MAX-1 (-1 none), else -1.  A busy answer, {0, pttl, place,
 * waiting, holders, joined, kind} and perhaps the holder's details, into
 * h: returns 0 or -1.  The fence of a baton's wake-up message (a
 * subscriber's array) whose grant the history refused, else 0: a hint. */
int rl_decode_grant(const redisReply *r, long long *fence, int *recorded,
		    int *slot);
/* A stream id "MS-SEQ" (each below 2^63).  Returns 0, or -1. */
int rl_decode_id(const char *s, size_t n, long long *ms,
		 unsigned long long *seq);
/* A history entry, [id, [field, value, ...]], into ev: 0, 1 for one with
 * no event (passed over), -1 for anything else (not a stream's reply).
 * Fields rlock did not write are unknown, marked in ev->bad. */
int rl_decode_entry(const redisReply *e, struct rlock_event *ev);
/* The last success of the record of the last runs, its history entry's
 * id "MS-SEQ", into ev: a release that ended well, whose details are in
 * that entry (ev->trimmed until it is found).  Returns 0, or -1. */
int rl_decode_ok(const char *s, size_t n, struct rlock_event *ev);
/*
 * One server's answer to XREVRANGE LOG ID - COUNT 1, the newest entry of
 * the history at or before id, the ID the record of the last success
 * names: OKREC_ENTRY, the history holds id and it is a success as
 * rlock_event_ok judges it (into ev); OKREC_TRIMMED, the history holds
 * nothing at or before id (it starts after it, or is empty); OKREC_FAILED,
 * id's entry is no success (or no event of rlock's); OKREC_NONE, the
 * history holds no entry id (the answer is one before it).  Returns one
 * of them, or -1 for a reply of another shape.
 */
enum { OKREC_ENTRY, OKREC_TRIMMED, OKREC_FAILED, OKREC_NONE };
int rl_decode_ok_check(const redisReply *r, const char *id,
		       struct rlock_event *ev);
/* TIME's answer, [seconds, microseconds], as ms since the epoch (within
 * what a fence allows).  Returns 0, or -1 for anything else. */
int rl_decode_time(const redisReply *r, long long *ms);
/* One SCAN reply of lock keys, prefix{NAME} (plen: the prefix's
 * length), as a listing reads it: the cursor (1 to 20 digits) into cursor,
 * how many lock names and how many keys that are none.  Returns RLOCK_OK,
 * RLOCK_EPROTO for a reply of the wrong shape or RLOCK_ESYS.  Every name
 * it keeps is a lock name (it aborts otherwise: for the fuzz target). */
int rl_decode_scan(const redisReply *r, size_t plen, char cursor[32],
		   size_t *nnames, size_t *njunk);
/* The status script's answer (status.lua) into h and, when list is not
 * NULL, its holders into *list (malloc'd, *nlist of them).  Returns 0, or
 * -1 for a reply of the wrong shape; values other clients wrote are
 * unknown, noted in h->junk. */
int rl_decode_status(const redisReply *r, struct rlock_holder *h,
		     struct rlock_holder **list, size_t *nlist);
/* A run of the record of the last runs (release.lua), "1\nID\n
 * EVENT\n...", into ev.  Returns 0, or -1. */
int rl_decode_run(const char *s, size_t n, struct rlock_event *ev);
/* acquire.lua's busy answer into h (lib/scripts/acquire.c). */
int rl_parse_busy(const redisReply *r, struct rlock_holder *h, int *joined,
		  long long *arrival);
/* A baton's wake-up (lib/scripts/baton.lua), popped from the waiter's
 * list. */
struct baton {
	char token[RLOCK_TOKEN_LEN + 1];	/* whom it was granted to */
	long long fence;
	long long stamp;		/* our CLOCK_BOOTTIME ms when we sent
					 * the beat the grant read */
	long long age;			/* the server's ms from that beat to
					 * the grant */
	int recorded;			/* as a grant's reply says: 0 refused,
					 * 1 recorded, 2 not a stream; -1 not
					 * asked */
};
/* "granted\nTOKEN\nFENCE\nSTAMP\nAGE\nRECORDED" into b.  Returns 0, or
 * -1 when m is not one. */
int rl_decode_baton(const char *m, size_t len, struct baton *b);
/* Element i of array r as rl_elem_num reads it, 0 when it does not (for
 * what is only shown), or as a string into buf. */
long long rl_elem_ll(const redisReply *r, size_t i);
void rl_elem_str(const redisReply *r, size_t i, char *buf, size_t len);
/* The holder layout of the force and status scripts: {flag, pttl, host,
 * pid, user, command, since, fence, token8, now}.  Returns 0 or -1. */
int rl_parse_holder(const redisReply *r, struct rlock_holder *h);
/* The same fields at off in r, the flag and pttl first in r. */
int rl_parse_holder_at(const redisReply *r, size_t off, struct rlock_holder *h);
/* A kind as the scripts write it ("x", "s", '' or a limit 2 to
 * RLOCK_LIMIT_MAX).  Returns 0, or -1 for anything else (*limit 0). */
int rl_parse_kind(const char *k, int *shared, int *limit);
/* A kind of a pool: "p", a pool's holders, or "pK", a waiter for K
 * members.  Returns K, 1 for "p", or 0 for anything else. */
int rl_pool_kind(const char *k);
/* A pool's members as a grant or the members script gives them: {name,
 * properties, ...}, up to max, each checked (rlock_check_member,
 * rlock_check_prop), into out.  Returns how many, or -1 for anything
 * else, with what in why. */
int rl_decode_members(const redisReply *r, struct rlock_member *out,
		      size_t max, const char **why);
/* Whether the n bytes at v are a member's properties: "KEY=VALUE" lines
 * (rlock_check_prop), "" none. */
int rl_props_ok(const char *v, size_t n);

/* A waiter's "KIND:ID\nsince\npid\nhost\nuser\n[priority\n]command"
 * into w; what does not decode is unknown, noted in junk. */
void rl_parse_waiter(const char *v, long long now, struct rlock_waiter *w,
		     char *junk, size_t jlen);
/* Note in junk (when empty) that field what held the n bytes at v, which
 * rlock did not write: "what 'value'", cut at 40 bytes, raw (escaped
 * where it is shown). */
void rl_note_junk(char *junk, size_t len, const char *what, const char *v,
		  size_t n);
/* A number field of n bytes at v: empty is unknown (unk); digits within
 * min..max; anything else is noted in junk and unknown. */
long long rl_num_field(const char *v, size_t n, long long min, long long max,
		       long long unk, const char *what, char *junk, size_t jlen);
/* A shared or semaphore holder's metadata into h. */
void rl_parse_meta(const char *v, long long now, struct rlock_holder *h);

#endif
