/*
 * scripts.c - the protocol: the Lua scripts that make acquire, extend and
 * release one round trip each, the key names, one argument builder per
 * script (the only place that knows its argument order, for lock.c and
 * bench.c alike), and what an error reply means to users.
 */
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
 * deleted: the server's clock decides, whichever client releases.  The
 * wake-up is a pcall: an ACL user without the channel (Redis 7 grants none
 * by default) has released once the DEL ran, and says so with 3, not with
 * an error that would make the caller believe it still holds the lock.
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
	"local p = redis.pcall('PUBLISH', ARGV[2], 'released')\n"
	"if type(p) == 'table' and p.err then return 3 end\n"
	"return 1\n";

/* Forced release.  KEYS: lock, meta.  ARGV: channel.  The wake-up as in
 * release. */
static const char force_lua[] =
	"local cur = redis.call('GET', KEYS[1])\n"
	"if not cur then return {0} end\n"
	"local m = redis.call('HMGET', KEYS[2], 'host', 'pid', 'user', 'command', 'since', 'fence')\n"
	"redis.call('DEL', KEYS[1], KEYS[2])\n"
	"redis.pcall('PUBLISH', ARGV[1], 'forced')\n"
	"return {1, 0, m[1] or '', m[2] or '', m[3] or '', m[4] or '', m[5] or '',\n"
	"        m[6] or '', string.sub(cur, 1, 8), '0'}\n";

/*
 * Fence.  KEYS: lock, meta, fence.  ARGV: token, fence.  With several
 * masters the fence handed out is the highest of the majority's counters;
 * raising the others to it (never lowering one) makes every later
 * majority, which shares a master with this one, count above it.  A
 * minority grant that was undone still moved its master's counter, so
 * without this the next fence could be lower than the last.
 */
static const char fence_lua[] =
	"local c = tonumber(redis.call('GET', KEYS[3]) or '0') or 0\n"
	"if c < tonumber(ARGV[2]) then redis.call('SET', KEYS[3], ARGV[2]) end\n"
	"if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
	"  redis.call('HSET', KEYS[2], 'fence', ARGV[2])\n"
	"end\n"
	"return 1\n";

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
				   "21d394ba38e011b797e4deae096f790d7363055b" },
	[RLOCK_SCRIPT_FORCE] = { "force", force_lua,
				 "ef391c7870e95b75ae766ab1ae728c5cd278f524" },
	[RLOCK_SCRIPT_FENCE] = { "fence", fence_lua,
				 "a3a2ce407637b107b8ddedc20e8a0070fefb76bd" },
	[RLOCK_SCRIPT_STATUS] = { "status", status_lua,
				  "2fff7f8cda4f3a5613b78ffc6b10480bfdf9374c" },
};

/* ---- key names and argument builders ---------------------------------- */

int lock_key(char *buf, size_t len, const char *prefix, const char *name,
	     const char *suffix)
{
	int n = snprintf(buf, len, "%s{%s}%s", prefix, name, suffix);

	return n < 0 || (size_t)n >= len ? -1 : n;
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

int key_slot(const char *key, size_t len)
{
	const char *open = memchr(key, '{', len), *close = NULL;

	if (open != NULL)
		close = memchr(open + 1, '}', len - (size_t)(open - key) - 1);
	if (close != NULL && close > open + 1)
		return (int)(crc16(open + 1, (size_t)(close - open - 1)) %
			     CLUSTER_SLOTS);
	return (int)(crc16(key, len) % CLUSTER_SLOTS);
}

static void begin(struct request *q, int script, int nkeys,
		  const struct lock_names *n)
{
	const char *keys[3] = { n->key, n->meta, n->fence };

	q->script = script;
	q->slot = n->slot;
	q->nkeys = nkeys;
	for (q->argc = 0; q->argc < nkeys; q->argc++)
		q->argv[q->argc] = keys[q->argc];
}

static const char *num(struct request *q, int slot, long long v)
{
	snprintf(q->num[slot], sizeof(q->num[slot]), "%lld", v);
	return q->num[slot];
}

/* KEYS: lock, meta, fence.  ARGV: token, ttl, host, pid, user, command,
 * min-hold, details. */
void req_acquire(struct request *q, const struct lock_names *n,
		 const char *token, int64_t ttl_ms, const struct acquirer *who,
		 int details)
{
	begin(q, RLOCK_SCRIPT_ACQUIRE, 3, n);
	/* The label is cut at RLOCK_LABEL_MAX bytes, as status shows it. */
	snprintf(q->label, sizeof(q->label), "%s",
		 who->label != NULL ? who->label : "");
	q->argv[q->argc++] = token;
	q->argv[q->argc++] = num(q, 0, ttl_ms);
	q->argv[q->argc++] = who->host;
	q->argv[q->argc++] = num(q, 1, who->pid);
	q->argv[q->argc++] = who->user;
	q->argv[q->argc++] = q->label;
	q->argv[q->argc++] = num(q, 2, who->min_hold_ms);
	q->argv[q->argc++] = details ? "1" : "0";
}

/* KEYS: lock, meta.  ARGV: token, ttl. */
void req_extend(struct request *q, const struct lock_names *n,
		const char *token, int64_t ttl_ms)
{
	begin(q, RLOCK_SCRIPT_EXTEND, 2, n);
	q->argv[q->argc++] = token;
	q->argv[q->argc++] = num(q, 0, ttl_ms);
}

/* KEYS: lock, meta.  ARGV: token, channel. */
void req_release(struct request *q, const struct lock_names *n,
		 const char *token)
{
	begin(q, RLOCK_SCRIPT_RELEASE, 2, n);
	q->argv[q->argc++] = token;
	q->argv[q->argc++] = n->chan;
}

/* KEYS: lock, meta.  ARGV: channel. */
void req_force(struct request *q, const struct lock_names *n)
{
	begin(q, RLOCK_SCRIPT_FORCE, 2, n);
	q->argv[q->argc++] = n->chan;
}

/* KEYS: lock, meta, fence.  ARGV: token, fence. */
void req_fence(struct request *q, const struct lock_names *n,
	       const char *token, long long fence)
{
	begin(q, RLOCK_SCRIPT_FENCE, 3, n);
	q->argv[q->argc++] = token;
	q->argv[q->argc++] = num(q, 0, fence);
}

/* KEYS: lock, meta, fence. */
void req_status(struct request *q, const struct lock_names *n)
{
	begin(q, RLOCK_SCRIPT_STATUS, 3, n);
}

void req_command(struct request *q, int argc, const char *const *argv,
		 int slot)
{
	q->script = REQ_COMMAND;
	q->slot = slot;
	q->nkeys = 0;
	for (q->argc = 0; q->argc < argc && q->argc < RLOCK_REQ_MAXARGS;
	     q->argc++)
		q->argv[q->argc] = argv[q->argc];
}

int req_send(struct rlock_conn *c, const struct request *q, int use_eval)
{
	const struct rlock_script *s;
	const char *argv[3 + RLOCK_REQ_MAXARGS];
	char nk[8];
	int argc = 0, i;

	if (q->script == REQ_COMMAND)
		return conn_send(c, q->argc, q->argv, NULL);
	s = &rlock_scripts[q->script];
	snprintf(nk, sizeof(nk), "%d", q->nkeys);
	argv[argc++] = use_eval ? "EVAL" : "EVALSHA";
	argv[argc++] = use_eval ? s->body : s->sha;
	argv[argc++] = nk;
	for (i = 0; i < q->argc; i++)
		argv[argc++] = q->argv[i];
	return conn_send(c, argc, argv, NULL);
}

/* ---- error replies ---------------------------------------------------- */

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
/* What the scripts call, for the ACL rule that lets them. */
#define SCRIPT_COMMANDS "+evalsha +eval +get +set +pexpire +pttl +hget " \
	"+hmget +hset +incr +del +publish +time"

/* Whether the error reply says an ACL refused something. */
static int acl_refusal(const redisReply *r)
{
	return starts_with(r, "NOPERM") ||
	       memmem(r->str, r->len, "user executing the script can't",
		      31) != NULL;
}

/*
 * An ACL refusal, with the rule that would allow it: keys and channels
 * under the key's prefix, or the command named.  user is the URL's ("" is
 * the default user).
 */
static void acl_error(const redisReply *r, int n, const char *addr,
		      const char *user, const char *key,
		      struct rlock_result *res)
{
	const char *brace = strchr(key, '{');
	const char *q1 = memchr(r->str, '\'', r->len), *q2 = NULL;
	int plen = brace != NULL ? (int)(brace - key) : (int)strlen(key);
	char rule[160];

	if (user[0] == '\0')
		user = "default";
	if (q1 != NULL)
		q2 = memchr(q1 + 1, '\'', r->len - (size_t)(q1 + 1 - r->str));
	if (memmem(r->str, r->len, "channel", 7) != NULL)
		snprintf(rule, sizeof(rule), "&%.*s*", plen > 100 ? 100 : plen,
			 key);
	else if (memmem(r->str, r->len, "key", 3) != NULL)
		snprintf(rule, sizeof(rule), "~%.*s*", plen > 100 ? 100 : plen,
			 key);
	else if (q2 != NULL && starts_with(r, "NOPERM"))
		snprintf(rule, sizeof(rule), "+%.*s",
			 (int)(q2 - q1 - 1) > 60 ? 60 : (int)(q2 - q1 - 1),
			 q1 + 1);
	else
		snprintf(rule, sizeof(rule), "%s", SCRIPT_COMMANDS);
	res->rc = RLOCK_ENOPERM;
	snprintf(res->err, sizeof(res->err), "%.100s: permission refused to "
		 "user '%.40s' (%.*s): allow it with ACL SETUSER %.40s %s%s",
		 addr, user, n > 120 ? 120 : n, r->str, user, rule,
		 rule[0] == '~' || rule[0] == '&' ? ", or use a --prefix the "
		 "user's keys are under" : "");
}

void classify_error(const redisReply *r, const struct rlock_conn *c,
		    const char *key, struct rlock_result *res)
{
	const char *addr = conn_addr(c);
	int n = (int)r->len;
	const char *tail = memmem(r->str, r->len, " script:", 8);

	if (tail != NULL)
		n = (int)(tail - r->str);
	if (acl_refusal(r)) {
		acl_error(r, n, addr, conn_url(c)->user, key, res);
	} else if (starts_with(r, "READONLY")) {
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err),
			 "%s is a replica (READONLY): point rlock at the "
			 "master, or use a redis-sentinel:// URL", addr);
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
	} else if (starts_with(r, "LOADING")) {
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err),
			 "%s: server is loading its data (LOADING)", addr);
	} else if (starts_with(r, "TRYAGAIN")) {
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err), "%s: the lock's slot is "
			 "being migrated (TRYAGAIN)", addr);
	} else if (starts_with(r, "CROSSSLOT")) {
		res->rc = RLOCK_EUSAGE;
		snprintf(res->err, sizeof(res->err), "%s: the lock name has "
			 "an empty hash tag: on a cluster its keys would span "
			 "slots (CROSSSLOT); a name must not start with '}'",
			 key);
	} else if (starts_with(r, "LOADING") || starts_with(r, "MASTERDOWN") ||
		   starts_with(r, "CLUSTERDOWN") || starts_with(r, "BUSY")) {
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err), "%s: %.*s", addr, n,
			 r->str);
	} else {
		res->rc = RLOCK_EPROTO;
		snprintf(res->err, sizeof(res->err), "%s: %.*s", addr, n,
			 r->str);
	}
}
