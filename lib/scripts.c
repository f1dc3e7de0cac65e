/*
 * scripts.c - the Lua scripts that make acquire, extend and release one
 * round trip each, and the call that runs one of them on every server of
 * a lock at once (EVALSHA, EVAL on NOSCRIPT, retry on LOADING).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_int.h"

/*
 * Acquire.  KEYS: lock, meta, fence.  ARGV: token, ttl, host, pid, user,
 * command, min-hold, details.  Our own token already there means a retry
 * after a lost reply: renew it and report the grant again.  GET comes
 * first so a key of another type is an error (SET NX alone would answer
 * nil and the caller would wait for ever).  A busy answer carries the
 * holder's details only when asked: every waiter retries on every release,
 * so the busy path must stay cheap.  Every field of meta is written, so
 * nothing of an earlier holder survives into ours.
 */
static const char acquire_lua[] =
	"local cur = redis.call('GET', KEYS[1])\n"
	"if cur == ARGV[1] then\n"
	"  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
	"  redis.call('PEXPIRE', KEYS[2], ARGV[2])\n"
	"  return {1, tonumber(redis.call('HGET', KEYS[2], 'fence')) or 0}\n"
	"end\n"
	"if cur then\n"
	"  if ARGV[8] == '0' then return {0, redis.call('PTTL', KEYS[1])} end\n"
	"  local m = redis.call('HMGET', KEYS[2], 'host', 'pid', 'user', 'command', 'since', 'fence')\n"
	"  local t = redis.call('TIME')\n"
	"  return {0, redis.call('PTTL', KEYS[1]), m[1] or '', m[2] or '', m[3] or '',\n"
	"          m[4] or '', m[5] or '', m[6] or '', string.sub(cur, 1, 8),\n"
	"          t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000))}\n"
	"end\n"
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
	"local hold = tonumber(ARGV[7])\n"
	"local f = redis.call('INCR', KEYS[3])\n"
	"redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
	"redis.call('HSET', KEYS[2], 'fence', f, 'host', ARGV[3], 'pid', ARGV[4],\n"
	"           'user', ARGV[5], 'command', ARGV[6], 'since', string.format('%.0f', now),\n"
	"           'hold_until', hold > 0 and string.format('%.0f', now + hold) or '0')\n"
	"redis.call('PEXPIRE', KEYS[2], ARGV[2])\n"
	"return {1, f}\n";

/* Extend.  KEYS: lock, meta.  ARGV: token, ttl. */
static const char extend_lua[] =
	"if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
	"redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
	"redis.call('PEXPIRE', KEYS[2], ARGV[2])\n"
	"return 1\n";

/*
 * Release.  KEYS: lock, meta.  ARGV: token, channel.  Before the holder's
 * hold_until (--min-hold) the key is left to expire then instead of being
 * deleted: the server's clock decides, whichever client releases.
 */
static const char release_lua[] =
	"if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
	"local hu = tonumber(redis.call('HGET', KEYS[2], 'hold_until') or '0') or 0\n"
	"if hu > 0 then\n"
	"  local t = redis.call('TIME')\n"
	"  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
	"  if hu > now then\n"
	"    local left = string.format('%.0f', hu - now)\n"
	"    redis.call('PEXPIRE', KEYS[1], left)\n"
	"    redis.call('PEXPIRE', KEYS[2], left)\n"
	"    return 2\n"
	"  end\n"
	"end\n"
	"redis.call('DEL', KEYS[1], KEYS[2])\n"
	"redis.call('PUBLISH', ARGV[2], 'released')\n"
	"return 1\n";

/* Forced release.  KEYS: lock, meta.  ARGV: channel. */
static const char force_lua[] =
	"local cur = redis.call('GET', KEYS[1])\n"
	"if not cur then return {0} end\n"
	"local m = redis.call('HMGET', KEYS[2], 'host', 'pid', 'user', 'command', 'since', 'fence')\n"
	"redis.call('DEL', KEYS[1], KEYS[2])\n"
	"redis.call('PUBLISH', ARGV[1], 'forced')\n"
	"return {1, 0, m[1] or '', m[2] or '', m[3] or '', m[4] or '', m[5] or '',\n"
	"        m[6] or '', string.sub(cur, 1, 8), '0'}\n";

/* Status.  KEYS: lock, meta, fence.  Same holder layout as acquire. */
static const char status_lua[] =
	"local cur = redis.call('GET', KEYS[1])\n"
	"local f = redis.call('GET', KEYS[3]) or '0'\n"
	"local t = redis.call('TIME')\n"
	"local now = string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))\n"
	"if not cur then return {0, -2, '', '', '', '', '', f, '', now} end\n"
	"local m = redis.call('HMGET', KEYS[2], 'host', 'pid', 'user', 'command', 'since', 'fence')\n"
	"return {1, redis.call('PTTL', KEYS[1]), m[1] or '', m[2] or '', m[3] or '',\n"
	"        m[4] or '', m[5] or '', m[6] or f, string.sub(cur, 1, 8), now}\n";

/*
 * The scripts' SHA-1 digests, written here rather than computed at every
 * start (hashing them cost a fifth of an uncontended run).  The unit test
 * "scripts" fails when a body and its digest disagree; at run time a wrong
 * one would only cost a NOSCRIPT and an EVAL.
 */
const struct rlock_script rlock_scripts[RLOCK_SCRIPT_COUNT] = {
	[RLOCK_SCRIPT_ACQUIRE] = { "acquire", acquire_lua,
				   "1fd9acb7b37d46713b46b1f4679b16b1dba8f068" },
	[RLOCK_SCRIPT_EXTEND] = { "extend", extend_lua,
				  "628126630f9cabe0b036df8dd68e7a49081bba66" },
	[RLOCK_SCRIPT_RELEASE] = { "release", release_lua,
				   "2266d7f8aff72b9cd15fd9aeba05f58fc270af6d" },
	[RLOCK_SCRIPT_FORCE] = { "force", force_lua,
				 "9d26df5ba92bd49ab132f83d31604833ebfbec43" },
	[RLOCK_SCRIPT_STATUS] = { "status", status_lua,
				  "2fff7f8cda4f3a5613b78ffc6b10480bfdf9374c" },
};

/* ---- running a script on every server ------------------------------ */

int rlock_script_send(struct rlock_conn *c, enum rlock_script_id id,
		      int use_eval, int nkeys, const char **keys, int nargs,
		      const char **args)
{
	const struct rlock_script *s = &rlock_scripts[id];
	const char *argv[3 + RLOCK_EVAL_MAXARGS];
	char nk[8];
	int argc = 0, i;

	snprintf(nk, sizeof(nk), "%d", nkeys);
	argv[argc++] = use_eval ? "EVAL" : "EVALSHA";
	argv[argc++] = use_eval ? s->body : s->sha;
	argv[argc++] = nk;
	for (i = 0; i < nkeys; i++)
		argv[argc++] = keys[i];
	for (i = 0; i < nargs; i++)
		argv[argc++] = args[i];
	return conn_send(c, argc, argv, NULL);
}

static int starts_with(const redisReply *r, const char *p)
{
	size_t n = strlen(p);

	return r->len >= n && memcmp(r->str, p, n) == 0;
}

/*
 * Turn an error reply into a code and a message naming what users can act
 * on.  Script errors carry a " script: ..." tail that means nothing to
 * them, so only the first words are kept.
 */
void rlock_classify_error(const redisReply *r, const char *addr,
			  const char *key, struct rlock_result *res)
{
	int n = (int)r->len;
	const char *tail = memmem(r->str, r->len, " script:", 8);

	if (tail != NULL)
		n = (int)(tail - r->str);
	if (starts_with(r, "READONLY")) {
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err),
			 "%s: server is a read-only replica (READONLY)", addr);
	} else if (starts_with(r, "OOM")) {
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err),
			 "%s: server out of memory (OOM)", addr);
	} else if (starts_with(r, "WRONGTYPE")) {
		res->rc = RLOCK_EPROTO;
		snprintf(res->err, sizeof(res->err),
			 "%s: key holds the wrong kind of value (WRONGTYPE)",
			 key);
	} else if (starts_with(r, "NOAUTH") ||
		   memmem(r->str, r->len, "unauthenticated", 15) != NULL) {
		/* Redis 7 refuses long commands before AUTH with a
		 * protocol error instead of NOAUTH. */
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err),
			 "%s: authentication required (NOAUTH): give a "
			 "password in the URL, --password-file or "
			 "REDISCLI_AUTH", addr);
	} else if (starts_with(r, "WRONGPASS")) {
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err),
			 "%s: authentication failed: %.*s", addr, n, r->str);
	} else if (starts_with(r, "LOADING") || starts_with(r, "MASTERDOWN") ||
		   starts_with(r, "BUSY")) {
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err), "%s: %.*s", addr, n,
			 r->str);
	} else {
		res->rc = RLOCK_EPROTO;
		snprintf(res->err, sizeof(res->err), "%s: %.*s", addr, n,
			 r->str);
	}
}

enum { ST_SEND, ST_WAIT, ST_RETRY, ST_DONE };

/* Cut a deadline to the handle's hard deadline (a lease's end). */
static int64_t bound(const struct rlock *rl, int64_t deadline)
{
	if (rl->hard_deadline > 0 && deadline > rl->hard_deadline)
		return rl->hard_deadline;
	return deadline;
}

/*
 * Run script s on every server of rl at once and wait for all replies
 * within the I/O timeout.  NOSCRIPT (after SCRIPT FLUSH or a restart) is
 * answered with EVAL, which loads the script again; LOADING is retried
 * every 100ms; a connection that drops is reopened and the request sent
 * again, which every script tolerates (acquire finds its own token).
 * res[i] gets the reply or an error for server i.
 */
void rlock_eval_all(struct rlock *rl, enum rlock_script_id id, int nkeys,
		    const char **keys, int nargs, const char **args,
		    struct rlock_result *res)
{
	struct pollfd pfd[RLOCK_MAX_SERVERS];
	int state[RLOCK_MAX_SERVERS], use_eval[RLOCK_MAX_SERVERS];
	int tries[RLOCK_MAX_SERVERS];
	int64_t retry_at[RLOCK_MAX_SERVERS];
	int64_t deadline;
	size_t i, left;

	rl->resent = 0;
	deadline = bound(rl, rlock_mono_ms() + rl->copts.io_timeout_ms);
	for (i = 0; i < rl->nsrv; i++) {
		memset(&res[i], 0, sizeof(res[i]));
		state[i] = ST_SEND;
		use_eval[i] = 0;
		tries[i] = 0;
		retry_at[i] = 0;
	}
	for (;;) {
		int64_t now = rlock_mono_ms(), wake = deadline;
		size_t np = 0;
		int idx[RLOCK_MAX_SERVERS];

		left = 0;
		for (i = 0; i < rl->nsrv; i++) {
			struct rlock_conn *c = rl->srv[i].cmd;

			if (state[i] == ST_RETRY && now >= retry_at[i])
				state[i] = ST_SEND;
			if (state[i] == ST_SEND) {
				if (!conn_is_up(c)) {
					int64_t cd = now +
						rl->copts.connect_timeout_ms;

					if (tries[i] > 0 && now >= deadline)
						cd = now;
					cd = bound(rl, cd);
					if (conn_open(c, cd) != RLOCK_OK) {
						res[i].rc = RLOCK_EUNAVAIL;
						snprintf(res[i].err,
							 sizeof(res[i].err),
							 "%s", conn_errstr(c));
						state[i] = ST_DONE;
						continue;
					}
					/* A fresh connection restarts the
					 * I/O clock for the first attempt. */
					if (tries[i] == 0)
						deadline = bound(rl,
							rlock_mono_ms() +
							rl->copts.io_timeout_ms);
				}
				tries[i]++;
				if (rlock_script_send(c, id, use_eval[i], nkeys,
						      keys, nargs, args) !=
				    RLOCK_OK) {
					res[i].rc = RLOCK_ESYS;
					snprintf(res[i].err, sizeof(res[i].err),
						 "%s", conn_errstr(c));
					state[i] = ST_DONE;
					continue;
				}
				state[i] = ST_WAIT;
			}
			if (state[i] == ST_RETRY) {
				left++;
				if (retry_at[i] < wake)
					wake = retry_at[i];
			} else if (state[i] == ST_WAIT && !conn_is_up(c)) {
				/* The write failed: the connection dropped. */
				if (tries[i] < 3 && now < deadline) {
					state[i] = ST_RETRY;
					retry_at[i] = rlock_mono_ms() + 10;
					rl->resent++;
					left++;
					if (retry_at[i] < wake)
						wake = retry_at[i];
				} else {
					res[i].rc = RLOCK_EUNAVAIL;
					snprintf(res[i].err, sizeof(res[i].err),
						 "%s", conn_errstr(c));
					state[i] = ST_DONE;
				}
			} else if (state[i] == ST_WAIT) {
				left++;
				pfd[np].fd = conn_fd(c);
				pfd[np].events = conn_events(c);
				pfd[np].revents = 0;
				idx[np++] = (int)i;
			}
		}
		if (left == 0)
			break;
		now = rlock_mono_ms();
		if (now >= deadline) {
			for (i = 0; i < rl->nsrv; i++) {
				if (state[i] != ST_WAIT && state[i] != ST_RETRY)
					continue;
				res[i].rc = RLOCK_EUNAVAIL;
				if (state[i] == ST_RETRY) {
					snprintf(res[i].err, sizeof(res[i].err),
						 "%s: server is loading its data (LOADING)",
						 conn_addr(rl->srv[i].cmd));
				} else {
					conn_timed_out(rl->srv[i].cmd);
					snprintf(res[i].err, sizeof(res[i].err),
						 "%s", conn_errstr(rl->srv[i].cmd));
				}
				state[i] = ST_DONE;
			}
			break;
		}
		/* A retry time may already have passed while this round
		 * connected and sent: never hand poll a negative timeout,
		 * which would wait for ever. */
		if (poll(pfd, np, wake > now ? (int)(wake - now) : 0) < 0)
			continue;
		for (size_t k = 0; k < np; k++) {
			struct rlock_conn *c;
			redisReply *r = NULL;
			int got;

			i = (size_t)idx[k];
			c = rl->srv[i].cmd;
			if (pfd[k].revents == 0)
				continue;
			if (conn_on_ready(c, pfd[k].revents) != RLOCK_OK) {
				/* Dropped: send again on a new connection
				 * while there is time. */
				if (tries[i] < 3 && rlock_mono_ms() < deadline) {
					state[i] = ST_RETRY;
					retry_at[i] = rlock_mono_ms() + 10;
					rl->resent++;
					continue;
				}
				res[i].rc = RLOCK_EUNAVAIL;
				snprintf(res[i].err, sizeof(res[i].err), "%s",
					 conn_errstr(c));
				state[i] = ST_DONE;
				continue;
			}
			got = conn_take_reply(c, &r);
			if (got < 0) {
				res[i].rc = RLOCK_EPROTO;
				snprintf(res[i].err, sizeof(res[i].err), "%s",
					 conn_errstr(c));
				state[i] = ST_DONE;
				continue;
			}
			if (got == 0)
				continue;
			if (r->type == REDIS_REPLY_ERROR &&
			    starts_with(r, "NOSCRIPT") && !use_eval[i]) {
				freeReplyObject(r);
				use_eval[i] = 1;
				state[i] = ST_SEND;
				continue;
			}
			if (r->type == REDIS_REPLY_ERROR &&
			    starts_with(r, "LOADING")) {
				freeReplyObject(r);
				state[i] = ST_RETRY;
				retry_at[i] = rlock_mono_ms() + 100;
				continue;
			}
			if (r->type == REDIS_REPLY_ERROR) {
				rlock_classify_error(r, conn_addr(c), keys[0],
						     &res[i]);
				freeReplyObject(r);
				state[i] = ST_DONE;
				continue;
			}
			res[i].rc = RLOCK_OK;
			res[i].r = r;
			state[i] = ST_DONE;
		}
	}
}

void rlock_results_free(struct rlock *rl, struct rlock_result *res)
{
	for (size_t i = 0; i < rl->nsrv; i++) {
		if (res[i].r != NULL)
			freeReplyObject(res[i].r);
		res[i].r = NULL;
	}
}
