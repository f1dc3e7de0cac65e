/*
 * keys.c - a lock's key names, the cluster slot they share, and the
 * fields of a history entry: the layout every script and reader uses.
 */
#include <stdio.h>
#include <string.h>

#include "keys.h"

/*
 * The keys of a lock.  The scripts take the lock key as KEYS[1] and name
 * the others from it (one hash tag: one slot), in this order, which a
 * waiter in line sends whole to acquire.lua:
 *   1 lock      P{N}               string: the exclusive holder's token
 *   2 meta      P{N}:owner         string: an older rlock's exclusive
 *                                  holder, "fence\nsince\nhold_until\n
 *                                  pid\nhost\nuser\nnote\ncommand"; read,
 *                                  renewed and released, not written
 *   3 holders   P{N}:holders       zset: shared or semaphore holders' tokens
 *                                  by lease deadline (server ms)
 *   4 hmeta     P{N}:holders:meta  hash: 'limit' ('s' shared, or N), and per
 *                                  token "fence\nsince\nhold_until\npid\n
 *                                  host\nuser\nnote\ncommand"
 *   5 line      P{N}:line          zset: waiters, "KIND:ID" by arrival (µs)
 *   6 lease     P{N}:line:lease    zset: the same by lease deadline (ms)
 *   7 who       P{N}:line:who      hash: "KIND:ID" -> "since\npid\nhost\n
 *                                  user\npriority\ncommand"; a waiter
 *                                  superseded -> "!" and who did; '~sup'
 *                                  -> the --supersede waiter in line;
 *                                  "^KIND:ID" -> a waiting run's baton
 *                                  (acquire.lua); "&x:ID" -> a waiting
 *                                  set's (with.lua, baton.lua); '~baton'
 *                                  -> "LIST\nTOKEN\nAT", the last baton
 *                                  handed over (baton.lua)
 *   8 fence     P{N}:fence         counter, expires with the history
 *                                  (HISTORY_TTL_MS) each time it is
 *                                  written: an older rlock's, the floor
 *                                  of a stream made new, the fence where
 *                                  XADD is refused (entry.lua)
 *   9 log       P{N}:log           stream: the history, whose ids are the
 *                                  fences (entry.lua)
 *     last      P{N}:log:last      hash: the last run that did not end
 *                                  well ('run': "1\nID\nEVENT\nKIND\n
 *                                  EXIT\nSIGNAL\nTOKEN8\nREASON\n" and
 *                                  the holder's record, as meta) and the
 *                                  last that did ('ok': its ID alone,
 *                                  brought up to date before a 'run' is
 *                                  written: keep_ok.lua), ID its history
 *                                  entry's; trimming the stream never
 *                                  reaches it.  Named from the log key
 *     copy      P{N}:log:c         stream: a history just made, copied to
 *                                  its size and renamed back over it in
 *                                  the same script (shrink.lua): never
 *                                  seen between scripts.  Named from the
 *                                  log key
 *  10 once      P{N}:once          hash: the period done (--once-per):
 *                                  until, host, user, pid, since, done,
 *                                  fence, per (its length)
 *  11 grant     P{N}:grant         string, with the lock's expiry: the
 *                                  last exclusive grant's record
 *                                  (grant.lua)
 *  12 hold      P{N}:hold          string: --min-hold's end, while it
 *                                  lasts and the lock with it ('0' a
 *                                  grant fenced again, acquire.lua)
 */

const char *const rl_ev_field[EV_NFIELDS] = {
	"event", "host", "user", "pid", "kind", "fence", "token", "waited",
	"since", "held", "exit", "signal", "reason", "command", "note",
	"slot", "members",
};

int rl_lock_key(char *buf, size_t len, const char *prefix, const char *name,
		const char *suffix)
{
	return rlock_join(buf, len, (const char *[]){ prefix, "{", name, "}",
						       suffix, NULL });
}

/* dst = key followed by suffix (dst has room for RLOCK_KEY_MAX + 16). */
static void suffixed(char *dst, const char *key, size_t klen,
		     const char *suffix)
{
	size_t slen = strlen(suffix);

	memcpy(dst, key, klen);
	memcpy(dst + klen, suffix, slen + 1);
}

void rl_lock_keys_init(struct lock_keys *k, const char *prefix,
		       const char *name)
{
	int n = rl_lock_key(k->key, sizeof(k->key), prefix, name, "");
	size_t len = n > 0 ? (size_t)n : 0;

	/* The key once, then its suffixes: this runs twice per run. */
	suffixed(k->meta, k->key, len, KEY_META);
	suffixed(k->fence, k->key, len, KEY_FENCE);
	suffixed(k->holders, k->key, len, KEY_HOLDERS);
	suffixed(k->hmeta, k->key, len, KEY_HMETA);
	suffixed(k->line, k->key, len, KEY_LINE);
	suffixed(k->lease, k->key, len, KEY_LEASE);
	suffixed(k->who, k->key, len, KEY_WHO);
	suffixed(k->chan, k->key, len, KEY_CHANNEL);
	suffixed(k->wake, k->key, len, KEY_WAKE);
	suffixed(k->log, k->key, len, KEY_LOG);
	suffixed(k->once, k->key, len, KEY_ONCE);
	suffixed(k->last, k->key, len, KEY_LAST);
	suffixed(k->grant, k->key, len, KEY_GRANT);
	suffixed(k->hold, k->key, len, KEY_HOLD);
	k->v = (struct lock_names){ k->key, k->meta, k->fence, k->holders,
				    k->hmeta, k->line, k->lease, k->who,
				    k->chan, k->wake, k->log, k->once,
				    k->last, k->grant, k->hold,
				    rl_key_slot(k->key, len), 0 };
	k->v.multislot = rl_key_slot(k->line, strlen(k->line)) != k->v.slot;
}


/* CRC16-CCITT (XMODEM), the checksum Redis Cluster hashes keys with. */
static unsigned crc16(const char *s, size_t n)
{
	unsigned crc = 0;

	for (size_t i = 0; i < n; i++) {
		crc ^= (unsigned)(unsigned char)s[i] << 8;
		for (int b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
	}
	return crc & 0xffff;
}

int rl_key_slot(const char *key, size_t len)
{
	const char *open = memchr(key, '{', len), *close = NULL;

	if (open != NULL)
		close = memchr(open + 1, '}', len - (size_t)(open - key) - 1);
	if (close != NULL && close > open + 1)
		return (int)(crc16(open + 1, (size_t)(close - open - 1)) %
			     CLUSTER_SLOTS);
	return (int)(crc16(key, len) % CLUSTER_SLOTS);
}
