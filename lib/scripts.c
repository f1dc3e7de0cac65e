/*
 * scripts.c - the protocol: the Lua scripts that make acquire, extend and
 * release one round trip each, the key names, one argument builder per
 * script (the only place that knows its argument order, for lock.c and
 * bench.c alike), and what an error reply means to users.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lock_int.h"

/* A number macro as a string, for the scripts. */
#define STR_(x) #x
#define STR(x) STR_(x)

/*
 * The keys of a lock, in the order every script below takes them (each
 * takes the first few it needs):
 *   1 lock      P{N}               string: the exclusive holder's token
 *   2 meta      P{N}:owner         string: the exclusive holder, "fence\n
 *                                  since\nhold_until\npid\nhost\nuser\nnote\n
 *                                  command" (as a shared holder's, below)
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
 *                                  (acquire, below)
 *   8 fence     P{N}:fence         counter, never expires
 *   9 log       P{N}:log           stream: the history (LUA_RECORD)
 *     last      P{N}:log:last      hash: the last run that did not end
 *                                  well ('run': "1\nID\nEVENT\nKIND\n
 *                                  EXIT\nSIGNAL\nTOKEN8\nREASON\n" and
 *                                  the holder's record, as meta) and the
 *                                  last that did ('ok': its ID alone, one
 *                                  short field on the hot path), ID its
 *                                  history entry's; trimming the stream
 *                                  never reaches it.  Named from the log
 *                                  key (one slot), with its expiry
 *  10 once      P{N}:once          hash: the period done (--once-per):
 *                                  until, host, user, pid, since, done,
 *                                  fence, per (its length); named
 *                                  only by the calls that use it
 *                                  (after the log)
 * The fence comes after the first seven: only the scripts that hand out
 * or read a fence name it (acquire, release, which may hand the lock to
 * the next in line, leave, status, and the fence script of several
 * masters).  Force takes the first seven and the log (its KEYS[8]).
 * KIND is x (exclusive), s (shared) or the limit N of a semaphore; ID is
 * 16 random hex digits, and the waiter's wake-up channel is P{N}:wake:ID.
 */

/* The server's clock, in ms, and whole numbers formatted for commands
 * (Lua 5.1 writes large numbers as %.14g).  %d, not %.0f: every number
 * written is whole, and %d costs the server a third of what %.0f does. */
#define LUA_NOW \
	"local t = redis.call('TIME')\n" \
	"local sec, usec = tonumber(t[1]), tonumber(t[2])\n" \
	"local now = sec * 1000 + math.floor(usec / 1000)\n" \
	"local function ms(x) return string.format('%d', x) end\n"

/*
 * fence_of(v): the counter's value v as a fence, or nil when it is not one
 * rlock wrote: 1 to 16 digits, below FENCE_LIMIT (2^53 less 2^20, so that
 * the next one is still exact in a double).  bad_fence(v): the error reply
 * that names it, "BADFENCE " and its first 64 bytes (classify_error).
 */
#define LUA_FENCE_OF \
	"local function fence_of(v)\n" \
	"  if #v > 0 and #v <= 16 and not string.find(v, '%D') then\n" \
	"    local n = tonumber(v)\n" \
	"    if n < " STR(FENCE_LIMIT) " then return n end\n" \
	"  end\n" \
	"end\n" \
	"local function bad_fence(v)\n" \
	"  return redis.error_reply('BADFENCE ' .. string.sub(v, 1, 64))\n" \
	"end\n"

/*
 * The next fence: one more than the last, and at least the server's clock
 * in µs, so that a server that forgot the counter (a restart without AOF,
 * a failover to a replica that missed the last grants, the key deleted)
 * still hands out a fence above every one before, as long as its clock is
 * not behind the clock of the last grant.  Below 2^53 until the year 2255:
 * exact in a double, in JSON and in shell arithmetic.  The counter is
 * written as digits (Lua would write 1.7e+15).
 *
 * One command in the common case: SET ... GET writes the clock and reads
 * the last fence, which is below it unless the clock went back.  A server
 * before 6.2 has no SET ... GET (a syntax error): GET, then SET.  Any
 * other error (WRONGTYPE, an ACL refusal) is raised by the same SET again,
 * as redis.call would have.  prev is the last fence when it was read (nil
 * otherwise): when the grant before this one was.  Returns the fence and
 * its digits.
 *
 * A counter rlock did not write (LUA_FENCE_OF) is put back as it was and
 * nothing is handed out: returns nil and the BADFENCE error reply, which
 * the caller returns.  Counting on from it could give a fence of 0 (Lua
 * reads 9223372036854775807 as 2^63, which INCR's reply wraps), the same
 * fence twice (above 2^53 a double has no room for the +1) or a lower one
 * ("1e300", "0x10" and " 12" are numbers to tonumber, not to INCR).
 */
#define LUA_NEXT_FENCE \
	LUA_FENCE_OF \
	"local prev\n" \
	"local function next_fence()\n" \
	"  local c = sec * 1000000 + usec\n" \
	"  local cs = ms(c)\n" \
	"  local old = redis.pcall('SET', KEYS[8], cs, 'GET')\n" \
	"  if type(old) == 'table' and old.err then\n" \
	"    if not string.find(old.err, 'syntax', 1, true) then\n" \
	"      redis.call('SET', KEYS[8], cs, 'GET')\n" \
	"    end\n" \
	"    old = redis.call('GET', KEYS[8])\n" \
	"    if old then\n" \
	"      prev = fence_of(old)\n" \
	"      if not prev then return nil, bad_fence(old) end\n" \
	"      if prev >= c then c = prev + 1 end\n" \
	"    end\n" \
	"    cs = ms(c)\n" \
	"    redis.call('SET', KEYS[8], cs)\n" \
	"    return c, cs\n" \
	"  end\n" \
	"  if not old then return c, cs end\n" \
	"  prev = fence_of(old)\n" \
	"  if not prev then\n" \
	"    redis.call('SET', KEYS[8], old)\n" \
	"    return nil, bad_fence(old)\n" \
	"  end\n" \
	"  if prev < c then return c, cs end\n" \
	"  cs = ms(prev + 1)\n" \
	"  redis.call('SET', KEYS[8], cs)\n" \
	"  return prev + 1, cs\n" \
	"end\n"

/*
 * The history (DESIGN section 3): record(key, max, ttl, ...) appends one
 * entry of field/value pairs to the lock's stream, trimmed to about max
 * entries, and keeps the stream ttl ms from now.  max '0' records nothing.
 * A pcall: a server or ACL that refuses the stream (a user without +xadd,
 * a server without streams) never fails the lock operation around it.
 * Returns the entry's id, 0 refused (2: the key is not a stream, another
 * client's data), nil not asked to; a new stream's expiry is also given
 * to the record of its last runs, KEY:last (the release script's).
 *
 * append(key, max, ttl, keep, ...) is record() where the stream's expiry
 * may stand (keep): it only adds the entry to a stream that exists
 * (NOMKSTREAM, one command where record takes two), and falls back to
 * record() when the stream is gone or the server is older than 6.2.  A
 * grant keeps the expiry when the grant before it was in the same hour (the
 * first grant of each hour set it): the history outlives its last grant by
 * ttl less at most an hour.  A release appends with keep: its grant set
 * the expiry.
 */
#define LUA_RECORD \
	"local function record(key, max, ttl, ...)\n" \
	"  if max == '0' then return nil end\n" \
	"  local id = redis.pcall('XADD', key, 'MAXLEN', '~', max, '*', ...)\n" \
	"  if type(id) ~= 'string' then\n" \
	"    return string.find(id.err or '', 'WRONGTYPE', 1, true) and 2 or 0\n" \
	"  end\n" \
	"  redis.pcall('PEXPIRE', key, ttl)\n" \
	"  redis.pcall('PEXPIRE', key .. ':last', ttl)\n" \
	"  return id\n" \
	"end\n" \
	"local function append(key, max, ttl, keep, ...)\n" \
	"  if max == '0' then return nil end\n" \
	"  if keep then\n" \
	"    local id = redis.pcall('XADD', key, 'NOMKSTREAM', 'MAXLEN', '~', max, '*', ...)\n" \
	"    if type(id) == 'string' then return id end\n" \
	"  end\n" \
	"  return record(key, max, ttl, ...)\n" \
	"end\n" \

/*
 * What every exclusive or held grant writes besides the lock, for acquire
 * and for release handing the lock to the next in line (after LUA_NOW,
 * LUA_NEXT_FENCE and LUA_RECORD): owner_record is the holder's record,
 * "fence\nsince\nhold-until\npid\nhost\nuser\nnote\ncommand" (hold-until
 * '0' without --min-hold, hold the --min-hold ms); acquired_event appends
 * the history's acquired entry, the stream's expiry kept when the grant
 * before (prev) was in the same hour.  An exclusive grant that did not
 * wait leaves out kind ('x') and waited ('0'), which readers take as
 * those: two fields fewer on the path every uncontended lock takes.
 */
#define LUA_GRANT \
	"local function owner_record(fs, hold, pid, host, user, note, cmd)\n" \
	"  local hu = hold == '0' and '0' or ms(now + tonumber(hold))\n" \
	"  return fs .. '\\n' .. ms(now) .. '\\n' .. hu .. '\\n' .. pid .. '\\n' ..\n" \
	"         host .. '\\n' .. user .. '\\n' .. note .. '\\n' .. cmd\n" \
	"end\n" \
	"local function acquired_event(hmax, httl, f, fs, tok, kind, pid, host, user,\n" \
	"                              note, cmd, waited)\n" \
	"  if hmax == '0' then return nil end\n" \
	"  local id\n" \
	"  local keep = prev and math.floor(prev / 3600000000) == math.floor(f / 3600000000)\n" \
	"  if note == '' and kind == 'x' and waited == '0' then\n" \
	"    id = append(KEYS[9], hmax, httl, keep, 'event', 'acquired',\n" \
	"                'host', host, 'user', user, 'pid', pid, 'fence', fs,\n" \
	"                'token', string.sub(tok, 1, 8), 'command', cmd)\n" \
	"  elseif note == '' then\n" \
	"    id = append(KEYS[9], hmax, httl, keep, 'event', 'acquired',\n" \
	"                'host', host, 'user', user, 'pid', pid, 'kind', kind,\n" \
	"                'fence', fs, 'token', string.sub(tok, 1, 8),\n" \
	"                'waited', waited, 'command', cmd)\n" \
	"  else\n" \
	"    id = append(KEYS[9], hmax, httl, keep, 'event', 'acquired',\n" \
	"                'host', host, 'user', user, 'pid', pid, 'kind', kind,\n" \
	"                'fence', fs, 'token', string.sub(tok, 1, 8),\n" \
	"                'waited', waited, 'command', cmd, 'note', note)\n" \
	"  end\n" \
	"  if type(id) == 'string' then return 1 end\n" \
	"  return id\n" \
	"end\n"


/* Holders of a shared lock or semaphore: drop those whose lease ended,
 * keep both keys alive as long as the longest lease. */
#define LUA_HOLDERS \
	"local function holders_expire()\n" \
	"  local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')\n" \
	"  if last[2] then\n" \
	"    redis.call('PEXPIREAT', KEYS[3], ms(tonumber(last[2])))\n" \
	"    redis.call('PEXPIREAT', KEYS[4], ms(tonumber(last[2])))\n" \
	"  else\n" \
	"    redis.call('DEL', KEYS[4])\n" \
	"  end\n" \
	"end\n" \
	"local function holders_purge()\n" \
	"  local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ms(now), 'LIMIT', 0, 64)\n" \
	"  if #gone > 0 then\n" \
	"    redis.call('ZREM', KEYS[3], unpack(gone))\n" \
	"    redis.call('HDEL', KEYS[4], unpack(gone))\n" \
	"    holders_expire()\n" \
	"  end\n" \
	"end\n" \
	"local function state()\n" \
	"  if redis.call('EXISTS', KEYS[1]) == 1 then return 'x', 1 end\n" \
	"  local n = redis.call('ZCARD', KEYS[3])\n" \
	"  if n == 0 then return nil, 0 end\n" \
	"  return redis.call('HGET', KEYS[4], 'limit') or 's', n\n" \
	"end\n"

/* A shared or semaphore holder's metadata, "fence\nsince\nhold_until\n
 * pid\nhost\nuser\nnote\ncommand", into fence, since, hold_until, pid,
 * host, user, command and note, in that order (the command, last, may
 * hold newlines of its own; a note holds none). */
#define LUA_UNPACK_META \
	"local function unpack_meta(v)\n" \
	"  local f, s = {}, 1\n" \
	"  for i = 1, 7 do\n" \
	"    local e = string.find(v, '\\n', s, true)\n" \
	"    if not e then break end\n" \
	"    f[i] = string.sub(v, s, e - 1)\n" \
	"    s = e + 1\n" \
	"  end\n" \
	"  f[8] = f[7]\n" \
	"  f[7] = string.sub(v, s)\n" \
	"  return f\n" \
	"end\n"

/*
 * The line.  A member leaves when it is granted, gives up, or its lease
 * ended; one whose wake-up channel has no subscriber left (its process
 * died and the server closed its connection) leaves when it is woken.
 * ok(kind, i, first) says whether the waiter of kind at place i (1 the
 * head) may be let in now with hk, hn held, first being the kind at the
 * head: only the head when exclusive, a run of shared waiters together,
 * and a semaphore's waiters while places are free.  wake(prefix, skip)
 * publishes to each of those (skip aside) on its channel, and drops one
 * that nobody listens to and looks again, at most eight times: PUBLISH
 * counts the receivers, so a waiter whose process died costs nothing.  A
 * waiter listens before it takes its place, so a place is never dropped
 * for want of a listener that was still coming.
 */
#define LUA_LINE \
	"local function leave(m)\n" \
	"  redis.call('ZREM', KEYS[5], m)\n" \
	"  redis.call('ZREM', KEYS[6], m)\n" \
	"  redis.call('HDEL', KEYS[7], m, '^' .. m)\n" \
	"end\n" \
	"local function line_purge()\n" \
	"  local gone = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', ms(now), 'LIMIT', 0, 64)\n" \
	"  if #gone > 0 then\n" \
	"    redis.call('ZREM', KEYS[5], unpack(gone))\n" \
	"    redis.call('ZREM', KEYS[6], unpack(gone))\n" \
	"    redis.call('HDEL', KEYS[7], unpack(gone))\n" \
	"    for i = 1, #gone do gone[i] = '^' .. gone[i] end\n" \
	"    redis.call('HDEL', KEYS[7], unpack(gone))\n" \
	"  end\n" \
	"end\n" \
	"local function kind(m)\n" \
	"  local k = string.match(m, '^([xs]):') or string.match(m, '^(%d+):')\n" \
	"  if not k then error('BADLINE ' .. string.sub(m, 1, 64), 0) end\n" \
	"  return k\n" \
	"end\n" \
	"local function ok(k, i, first, hk, hn)\n" \
	"  if hk == 'x' or k ~= first then return false end\n" \
	"  if k == 'x' then return i == 1 and hk == nil end\n" \
	"  if hk ~= nil and hk ~= k then return false end\n" \
	"  if k == 's' then return true end\n" \
	"  return hn + i <= tonumber(k)\n" \
	"end\n" \
	"local wake_refused = false\n" \
	"local function lease_for(p)\n" \
	"  if not p or p < " STR(LINE_NEAR) " then return " STR(LINE_LEASE_MS) " end\n" \
	"  return math.min(" STR(LINE_LEASE_MS) " * p / " STR(LINE_NEAR) ", " \
	STR(LINE_LEASE_MS) " * " STR(LINE_FAR_MAX) ")\n" \
	"end\n" \
	"local function wake(prefix, skip)\n" \
	"  for round = 1, 8 do\n" \
	"    local hk, hn = state()\n" \
	"    if hk == 'x' then return end\n" \
	"    local es = redis.call('ZRANGE', KEYS[5], 0, 0)\n" \
	"    if es[1] and kind(es[1]) ~= 'x' then es = redis.call('ZRANGE', KEYS[5], 0, 63) end\n" \
	"    local dead = false\n" \
	"    for i, e in ipairs(es) do\n" \
	"      if not ok(kind(e), i, kind(es[1]), hk, hn) then break end\n" \
	"      if e ~= skip then\n" \
	"        local p = redis.pcall('PUBLISH', prefix .. string.match(e, '[^:]*$'), 'wake')\n" \
	"        if type(p) == 'table' then wake_refused = true\n" \
	"        elseif p == 0 then leave(e); dead = true\n" \
	"        elseif tonumber(redis.call('ZSCORE', KEYS[6], e) or '0') > now + lease_for(0) then\n" \
	"          redis.call('ZADD', KEYS[6], ms(now + lease_for(0)), e)\n" \
	"        end\n" \
	"      end\n" \
	"    end\n" \
	"    if not dead then return end\n" \
	"  end\n" \
	"end\n"

/*
 * Acquire.  KEYS: the nine above.  ARGV: 1 token, 2 ttl, 3 host, 4 pid,
 * 5 user, 6 command, 7 min-hold, 8 details, 9 kind, 10 waiter id ('' for
 * none: several masters keep no line), 11 join ('1': take a place in line
 * when not let in, or keep it), 12 the wake-up channels' prefix, 13 note,
 * 14 ms waited, 15 and 16 the history's length and ttl (LUA_RECORD), and
 * only when one of them is not the default: 17 priority (-100..100), 18
 * supersede ('1'), 19 --once-per in ms ('0' none; when not, KEYS[10] is
 * the period's record), and for a waiter that takes the lock from the
 * release that frees it (a run, exclusive; see release): 20 its first
 * lease in ms, 21 its clock (CLOCK_BOOTTIME ms) as it sent this request
 * (each '0' when not such a waiter), and 22 a waiter's arrival in line
 * (its place's score) when it joined before: taking a place again (a new
 * master after a failover, whose line lacks it), it takes it there, not
 * at the end, but never earlier than its wait (ARGV[14]) allows.
 * Sixteen arguments on the common path, not seventeen: the server builds
 * ARGV by doubling a table, and the seventeenth would double it to 32.
 *
 * Such a waiter keeps in who, under "^" and its member, "token\nlease\n
 * min-hold\nstamp\nat\nhistory length\nhistory ttl\nnote", stamp being
 * ARGV[21] of its last request and at the server's ms when it ran.
 *
 * The line is ordered by priority, then arrival: a place's score is its
 * arrival in µs less priority times PRIO_STEP_US (115 days), exact in a
 * double for every priority, and above every score of its priority (the
 * same µs, a clock that went back), found with commands the documented
 * ACL rule allows (ZCOUNT, ZRANGEBYSCORE; not ZREVRANGEBYSCORE), once
 * per call: where the caller would stand, then where it takes its place.
 *
 * A waiter with supersede that takes a place removes the one such waiter
 * already in line (there is at most one: each removed the one before),
 * leaves "!" and who did it under the removed one's member in who, and
 * wakes it: its next try answers {-2, who}.  A period already done
 * (--once-per: the record is of the same period length, and its until is
 * the end of this period of the server's clock) answers {-3, until, host,
 * user, pid, since, fence} before anything else, and gives up the
 * caller's place.
 *
 * Granted: {1, fence, recorded} (recorded: 1, or 0 when the history was
 * refused, absent when not asked for).  A kind that disagrees with the
 * holders' (a semaphore of another limit, shared against a semaphore):
 * {-1, theirs}.  Otherwise {0, pttl, place (0 the head, -1 not in line),
 * waiting (-1 unless details), holders, joined (0, or the arrival of
 * the place taken: its score, µs), kind held ('' none)} and,
 * when asked, the (first) holder's host, pid, user, command, since,
 * fence, token prefix and the server's time.
 *
 * pttl is the exclusive holder's PTTL (given only to the next in line, to
 * one not in line, or with details), or the time until the first shared
 * or semaphore lease ends.
 *
 * Our own token already there means a grant we did not hear of: a retry
 * after a lost reply, or a grant a release made for us (the baton) that
 * we did not trust or have not heard of yet.  It is renewed and reported
 * again; when it is BATON_REFENCE_MS old on this server's clock (the
 * server stopped before it could answer), with a new fence, which the
 * holder's record takes: a failover meanwhile may have handed out a
 * higher one.
 *
 * GET comes first so a key of another type is an error (SET NX alone
 * would answer nil and the caller would wait for ever).  The path of a
 * free exclusive lock with nobody in line and no shared holder costs one
 * EXISTS more than SET NX would.
 */
static const char acquire_lua[] =
	"local k, tok = ARGV[9], ARGV[1]\n"
	"local cur = redis.call('GET', KEYS[1])\n"
	LUA_NOW
	LUA_NEXT_FENCE
	"if cur == tok then\n"
	"  local v = redis.call('GET', KEYS[2]) or ''\n"
	"  local of, since, rest = string.match(v, '^(%d*)\\n(%d*)(\\n.*)$')\n"
	"  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
	"  local held = rest and fence_of(of)\n"
	"  if held and now - (tonumber(since) or 0) < " STR(BATON_REFENCE_MS) " then\n"
	"    redis.call('PEXPIRE', KEYS[2], ARGV[2])\n"
	"    return {1, held}\n"
	"  end\n"
	"  local f, fs = next_fence()\n"
	"  if not f then return fs end\n"
	"  if rest then redis.call('SET', KEYS[2], fs .. '\\n' .. since .. rest, 'PX', ARGV[2]) end\n"
	"  return {1, f}\n"
	"end\n"
	LUA_RECORD
	LUA_GRANT
	"local function grant_x()\n"
	"  local f, fs = next_fence()\n"
	"  if not f then return fs end\n"
	"  redis.call('SET', KEYS[1], tok, 'PX', ARGV[2])\n"
	"  redis.call('SET', KEYS[2], owner_record(fs, ARGV[7], ARGV[4], ARGV[3], ARGV[5],\n"
	"             ARGV[13], ARGV[6]), 'PX', ARGV[2])\n"
	"  return {1, f, acquired_event(ARGV[15], ARGV[16], f, fs, tok, k, ARGV[4], ARGV[3],\n"
	"                               ARGV[5], ARGV[13], ARGV[6], ARGV[14])}\n"
	"end\n"
	"local once = ARGV[19] and ARGV[19] ~= '0'\n"
	"if not once and not cur and k == 'x' and redis.call('EXISTS', KEYS[3], KEYS[5]) == 0 then\n"
	"  return grant_x()\n"
	"end\n"
	"local ttl = tonumber(ARGV[2])\n"
	"local done\n"
	"if once then\n"
	"  local once_ms = tonumber(ARGV[19])\n"
	"  local o = redis.call('HMGET', KEYS[10], 'until', 'host', 'user', 'pid', 'since', 'fence', 'per')\n"
	"  if o[1] == ms((math.floor(now / once_ms) + 1) * once_ms) and o[7] == ARGV[19] then\n"
	"    done = {-3, o[1], o[2] or '', o[3] or '', o[4] or '', o[5] or '', o[6] or ''}\n"
	"  end\n"
	"end\n"
	LUA_HOLDERS
	"local function grant()\n"
	"  if k == 'x' then return grant_x() end\n"
	"  local f, fs = next_fence()\n"
	"  if not f then return fs end\n"
	"  redis.call('ZADD', KEYS[3], ms(now + ttl), tok)\n"
	"  redis.call('HSET', KEYS[4], 'limit', k, tok, owner_record(fs, ARGV[7], ARGV[4],\n"
	"             ARGV[3], ARGV[5], ARGV[13], ARGV[6]))\n"
	"  holders_expire()\n"
	"  return {1, f, acquired_event(ARGV[15], ARGV[16], f, fs, tok, k, ARGV[4], ARGV[3],\n"
	"                               ARGV[5], ARGV[13], ARGV[6], ARGV[14])}\n"
	"end\n"
	LUA_LINE
	LUA_UNPACK_META
	"if k ~= 'x' then\n"
	"  local sc = redis.call('ZSCORE', KEYS[3], tok)\n"
	"  if sc and tonumber(sc) > now then\n"
	"    redis.call('ZADD', KEYS[3], ms(now + ttl), tok)\n"
	"    holders_expire()\n"
	"    local v = redis.call('HGET', KEYS[4], tok) or ''\n"
	"    local of, rest = string.match(v, '^(%d*)(\\n.*)$')\n"
	"    local held = of and fence_of(of)\n"
	"    if held then return {1, held} end\n"
	"    local f, fs = next_fence()\n"
	"    if not f then return fs end\n"
	"    if rest then redis.call('HSET', KEYS[4], tok, fs .. rest) end\n"
	"    return {1, f}\n"
	"  end\n"
	"end\n"
	"local hk, hn = 'x', 1\n"
	"if not cur then\n"
	"  holders_purge()\n"
	"  hk, hn = state()\n"
	"end\n"
	"if hk and hk ~= 'x' and hk ~= 's' and hk ~= k then return {-1, hk} end\n"
	"if hk == 's' and k ~= 's' and k ~= 'x' then return {-1, hk} end\n"
	"if hk == 'x' and k ~= 'x' and k ~= 's' then return {-1, 'x'} end\n"
	"local me = ARGV[10] ~= '' and (k .. ':' .. ARGV[10]) or nil\n"
	"local place = nil\n"
	"if me then place = redis.call('ZRANK', KEYS[5], me) end\n"
	"if done then\n"
	"  if place then leave(me); wake(ARGV[12], nil) end\n"
	"  return done\n"
	"end\n"
	"if me and not place and ARGV[11] == '1' then\n"
	"  local w = redis.call('HGET', KEYS[7], me)\n"
	"  if w and string.sub(w, 1, 1) == '!' then\n"
	"    redis.call('HDEL', KEYS[7], me)\n"
	"    return {-2, string.sub(w, 2)}\n"
	"  end\n"
	"end\n"
	"local prio = tonumber(ARGV[17] or '0')\n"
	"local at\n"
	"local function arrival()\n"
	"  if at then return at end\n"
	"  at = sec * 1000000 + usec - prio * " STR(PRIO_STEP_US) "\n"
	"  local was = tonumber(ARGV[22] or '')\n"
	"  if was and was < at and was >= at - tonumber(ARGV[14]) * 1000 - 1000000 then\n"
	"    at = was\n"
	"    while redis.call('ZCOUNT', KEYS[5], ms(at), ms(at)) > 0 do at = at + 1 end\n"
	"    return at\n"
	"  end\n"
	"  local lo, hi = ms(at), ms(at + " STR(PRIO_STEP_US) " / 2)\n"
	"  local n = redis.call('ZCOUNT', KEYS[5], lo, hi)\n"
	"  if n > 0 then\n"
	"    local last = redis.call('ZRANGEBYSCORE', KEYS[5], lo, hi, 'WITHSCORES', 'LIMIT', n - 1, 1)\n"
	"    at = tonumber(last[2]) + 1\n"
	"  end\n"
	"  return at\n"
	"end\n"
	"local let = false\n"
	"if me and hk ~= 'x' then\n"
	"  line_purge()\n"
	"  if place and place > 0 then\n"
	"    wake(ARGV[12], me)\n"
	"    hk, hn = state()\n"
	"  end\n"
	"  place = redis.call('ZRANK', KEYS[5], me)\n"
	"end\n"
	"if hk ~= 'x' and (hk == nil or hk == k) then\n"
	"  if not me then\n"
	"    let = k ~= 'x' or hk == nil\n"
	"    if k ~= 's' and k ~= 'x' then let = hn < tonumber(k) end\n"
	"  else\n"
	"    local upto = place\n"
	"    if not upto and prio ~= 0 then\n"
	"      upto = redis.call('ZCOUNT', KEYS[5], '-inf', '(' .. ms(arrival()))\n"
	"    end\n"
	"    upto = upto or redis.call('ZCARD', KEYS[5])\n"
	"    if upto <= 64 then\n"
	"      local es = upto > 0 and redis.call('ZRANGE', KEYS[5], 0, upto - 1) or {}\n"
	"      es[upto + 1] = me\n"
	"      let = true\n"
	"      for i = 1, upto + 1 do\n"
	"        if not ok(kind(es[i]), i, kind(es[1]), hk, hn) then let = false; break end\n"
	"      end\n"
	"    end\n"
	"  end\n"
	"end\n"
	"if let then\n"
	"  if place then leave(me) end\n"
	"  if place and ARGV[18] == '1' and redis.call('HGET', KEYS[7], '~sup') == me then\n"
	"    redis.call('HDEL', KEYS[7], '~sup')\n"
	"  end\n"
	"  return grant()\n"
	"end\n"
	"local function supersede()\n"
	"  local old = redis.call('HGET', KEYS[7], '~sup')\n"
	"  if old and old ~= me and redis.call('ZSCORE', KEYS[5], old) then\n"
	"    leave(old)\n"
	"    local by = ARGV[5] .. '@' .. ARGV[3] .. ':' .. ARGV[4]\n"
	"    if ARGV[6] ~= '' then by = by .. ' (' .. ARGV[6] .. ')' end\n"
	"    redis.call('HSET', KEYS[7], old, '!' .. by)\n"
	"    redis.pcall('PUBLISH', ARGV[12] .. string.match(old, '[^:]*$'), 'superseded')\n"
	"    if hk ~= 'x' then wake(ARGV[12], nil) end\n"
	"  end\n"
	"  redis.call('HSET', KEYS[7], '~sup', me)\n"
	"end\n"
	"local joined = 0\n"
	"if me and (place or ARGV[11] == '1') then\n"
	"  if not place then\n"
	"    if ARGV[18] == '1' then supersede() end\n"
	"    redis.call('ZADD', KEYS[5], ms(arrival()), me)\n"
	"    redis.call('HSET', KEYS[7], me, ms(now) .. '\\n' .. ARGV[4] .. '\\n' ..\n"
	"               ARGV[3] .. '\\n' .. ARGV[5] .. '\\n' .. prio .. '\\n' .. ARGV[6])\n"
	"    place = redis.call('ZRANK', KEYS[5], me)\n"
	"    joined = 1\n"
	"  end\n"
	"  local lease = lease_for(place)\n"
	"  redis.call('ZADD', KEYS[6], ms(now + lease), me)\n"
	"  if ARGV[20] and ARGV[20] ~= '0' then\n"
	"    redis.call('HSET', KEYS[7], '^' .. me, tok .. '\\n' .. ARGV[20] .. '\\n' .. ARGV[7] ..\n"
	"               '\\n' .. ARGV[21] .. '\\n' .. ms(now) .. '\\n' .. ARGV[15] .. '\\n' ..\n"
	"               ARGV[16] .. '\\n' .. ARGV[13])\n"
	"  end\n"
	"  -- The line lives while someone keeps a place in it: its keys' TTL\n"
	"  -- is put back to four leases whenever it falls below three.\n"
	"  if joined == 1 or redis.call('PTTL', KEYS[5]) < 3 * lease then\n"
	"    local keep = ms(4 * lease)\n"
	"    redis.call('PEXPIRE', KEYS[5], keep)\n"
	"    redis.call('PEXPIRE', KEYS[6], keep)\n"
	"    redis.call('PEXPIRE', KEYS[7], keep)\n"
	"  end\n"
	"end\n"
	"local pttl, first = 0, nil\n"
	"local detail = ARGV[8] == '1'\n"
	"if hk == 'x' and (detail or not place or place == 0) then\n"
	"  pttl = redis.call('PTTL', KEYS[1])\n"
	"elseif hk and hk ~= 'x' then\n"
	"  first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')\n"
	"  pttl = tonumber(first[2]) - now\n"
	"end\n"
	"local r = {0, pttl, place or -1, detail and redis.call('ZCARD', KEYS[5]) or -1,\n"
	"           hn, joined == 1 and arrival() or 0, hk or ''}\n"
	"if not detail or not hk then return r end\n"
	"local v, t8\n"
	"if hk == 'x' then\n"
	"  v, t8 = redis.call('GET', KEYS[2]), string.sub(cur or '', 1, 8)\n"
	"else\n"
	"  v, t8 = redis.call('HGET', KEYS[4], first[1]), string.sub(first[1], 1, 8)\n"
	"end\n"
	"local f = unpack_meta(v or '')\n"
	"local who = {f[5] or '', f[4] or '', f[6] or '', f[7] or '', f[2] or '', f[1] or '', t8}\n"
	"for i = 1, 7 do r[#r + 1] = who[i] end\n"
	"r[#r + 1] = ms(now)\n"
	"return r\n";

/*
 * Extend.  KEYS: lock and meta (ARGV[3] 'x'), or holders and hmeta ('h').
 * ARGV: token, ttl, kind.  Only the two keys of the holder's kind, which
 * exist together while it holds: a cluster moving the slot serves the
 * renewal as long as both are on the same node (a request naming a key
 * that is missing there is refused with TRYAGAIN until the move ends).
 * A shared or semaphore holder whose lease ended is not brought back.
 */
static const char extend_lua[] =
	"if ARGV[3] == 'x' then\n"
	"  if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
	"  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
	"  redis.call('PEXPIRE', KEYS[2], ARGV[2])\n"
	"  return 1\n"
	"end\n"
	"local sc = redis.call('ZSCORE', KEYS[1], ARGV[1])\n"
	"if not sc then return 0 end\n"
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
	"if tonumber(sc) <= now then\n"
	"  redis.call('ZREM', KEYS[1], ARGV[1])\n"
	"  redis.call('HDEL', KEYS[2], ARGV[1])\n"
	"else\n"
	"  redis.call('ZADD', KEYS[1], 'XX', string.format('%.0f', now + tonumber(ARGV[2])), ARGV[1])\n"
	"end\n"
	"local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')\n"
	"if last[2] then\n"
	"  redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', tonumber(last[2])))\n"
	"  redis.call('PEXPIREAT', KEYS[2], string.format('%.0f', tonumber(last[2])))\n"
	"else\n"
	"  redis.call('DEL', KEYS[2])\n"
	"end\n"
	"return tonumber(sc) > now and 1 or 0\n";

/*
 * Release.  KEYS: the nine.  ARGV: token, release channel, wake-up
 * prefix, the exit status and the signal to record ('' not known; the
 * signal 'abandoned': a renewer released for a script that died holding
 * the lock, recorded as that event), the
 * history's length and ttl, and with --once-per its period in ms (then
 * KEYS[10] is the period's record): an exclusive holder that
 * exits 0 marks the period it was granted in as done, until its end.
 * The history's record names the grant it ends by its token, and has the
 * fence (from the holder's metadata: several masters raise it to the one
 * handed out, and a hand-off that came too late gets a new one) and the
 * exit status when it is known; who held it, the kind and when it was
 * granted (the time held is the entry's time less the grant's) are in the
 * grant's record, which readers join.  The record of the last runs
 * (P{N}:log:last) gets the release's entry id as 'ok' when it ended well
 * (no signal, exit 0 or not known: a plain release), else the whole run
 * as 'run'; one short field on the path every lock takes.  Each
 * value in a record costs the
 * server a field to read and one to write: this is the hot path.  Before
 * the holder's hold_until (--min-hold) the lease is cut to end then
 * instead of being removed: the server's clock decides, whichever
 * client releases.  Then the next in line is woken (or the next run of
 * shared waiters, or as many as a semaphore has free places); with nobody
 * in line, the release channel hears it when the caller names it (several
 * masters, whose waiters keep no line: ARGV[2] '' otherwise).  The
 * wake-up is a pcall: an ACL user without the channel (Redis 7 grants
 * none by default) has released once the DEL ran, and says so with 3,
 * not with an error that would make the caller believe it still holds
 * the lock.
 *
 * The baton: an exclusive release whose next in line left a baton (a
 * waiting run) grants the lock to that waiter itself, for the waiter's
 * first lease, with its metadata and history entry, and the wake-up that
 * follows carries the grant: "granted\nfence\nstamp\ndelta\nrecorded",
 * delta the server's ms since the request that left the stamp, so that
 * the waiter counts its lease from stamp + delta on its own clock.  The
 * plain 'wake' goes first and its count of receivers decides: PUBLISH
 * counts only this node's subscribers, and a waiter listening on another
 * (a cluster's slot that moved, a master turned replica) would still hear
 * a message published here, so "granted" is published only once the
 * grant is written, and a waiter nobody heard here is dropped, as wake()
 * drops it, and asks when it hears 'wake' elsewhere.
 */
static const char release_lua[] =
	LUA_RECORD
	"local tok = ARGV[1]\n"
	"local cur = redis.call('GET', KEYS[1])\n"
	"local function released(kind, v, fence)\n"
	"  if ARGV[6] == '0' then return end\n"
	"  local ev, ex, sig, t8, id = 'released', ARGV[4], ARGV[5], string.sub(tok, 1, 8)\n"
	"  local rec, n = KEYS[9] .. ':last'\n"
	"  if sig == 'abandoned' then ev, sig = sig, '' end\n"
	"  if sig == '' and ex == '' then\n"
	"    id = append(KEYS[9], ARGV[6], ARGV[7], true, 'event', ev, 'fence', fence or '',\n"
	"                'token', t8)\n"
	"  elseif sig == '' then\n"
	"    id = append(KEYS[9], ARGV[6], ARGV[7], true, 'event', ev, 'fence', fence or '',\n"
	"                'token', t8, 'exit', ex)\n"
	"  else\n"
	"    id = append(KEYS[9], ARGV[6], ARGV[7], true, 'event', ev, 'fence', fence or '',\n"
	"                'token', t8, 'exit', ex, 'signal', sig)\n"
	"  end\n"
	"  if type(id) ~= 'string' then return end\n"
	"  if ev == 'released' and sig == '' and (ex == '0' or ex == '') then\n"
	"    n = redis.pcall('HSET', rec, 'ok', id)\n"
	"  else\n"
	"    n = redis.pcall('HSET', rec, 'run', '1\\n' .. id .. '\\n' .. ev .. '\\n' .. kind .. '\\n' ..\n"
	"                    ex .. '\\n' .. sig .. '\\n' .. t8 .. '\\n\\n' .. v)\n"
	"  end\n"
	"  if n == 1 then redis.pcall('PEXPIRE', rec, ARGV[7]) end\n"
	"end\n"
	"if cur == tok then\n"
	"  local v = redis.call('GET', KEYS[2]) or ''\n"
	"  local fence, since, hu = string.match(v, '^(%d*)\\n(%d*)\\n(%d*)')\n"
	"  if ARGV[8] and ARGV[4] == '0' and ARGV[5] == '' and tonumber(since or '') then\n"
	"    local once = tonumber(ARGV[8])\n"
	"    local pid, host, user = string.match(v, '^%d*\\n%d*\\n%d*\\n([^\\n]*)\\n([^\\n]*)\\n([^\\n]*)')\n"
	"    local t = redis.call('TIME')\n"
	"    local at = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
	"    local pend = (math.floor(tonumber(since) / once) + 1) * once\n"
	"    if pend > at then\n"
	"      local ps = string.format('%d', pend)\n"
	"      redis.call('HSET', KEYS[10], 'until', ps, 'host', host or '', 'user', user or '',\n"
	"                 'pid', pid or '', 'since', since, 'done', string.format('%d', at),\n"
	"                 'fence', fence or '', 'per', ARGV[8])\n"
	"      redis.call('PEXPIREAT', KEYS[10], ps)\n"
	"    end\n"
	"  end\n"
	"  if hu and hu ~= '0' then\n"
	"    local t = redis.call('TIME')\n"
	"    local at = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
	"    if tonumber(hu) > at then\n"
	"      local left = string.format('%d', tonumber(hu) - at)\n"
	"      redis.call('PEXPIRE', KEYS[1], left)\n"
	"      redis.call('PEXPIRE', KEYS[2], left)\n"
	"      released('x', v, fence)\n"
	"      return 2\n"
	"    end\n"
	"  end\n"
	"  redis.call('DEL', KEYS[1], KEYS[2])\n"
	"  released('x', v, fence)\n"
	"end\n"
	"local function announce()\n"
	"  if ARGV[2] == '' then return 1 end\n"
	"  local p = redis.pcall('PUBLISH', ARGV[2], 'released')\n"
	"  if type(p) == 'table' then return 3 end\n"
	"  return 1\n"
	"end\n"
	"if cur == tok and redis.call('EXISTS', KEYS[5]) == 0 then return announce() end\n"
	LUA_NOW
	LUA_NEXT_FENCE
	LUA_GRANT
	LUA_HOLDERS
	LUA_LINE
	LUA_UNPACK_META
	"local function baton()\n"
	"  for round = 1, 8 do\n"
	"    local m = redis.call('ZRANGE', KEYS[5], 0, 0)[1]\n"
	"    if not m or kind(m) ~= 'x' then return false end\n"
	"    local b = redis.call('HGET', KEYS[7], '^' .. m)\n"
	"    if not b then return false end\n"
	"    local btok, lease, hold, stamp, at, hmax, httl, note = string.match(b,\n"
	"      '^([^\\n]*)\\n(%d+)\\n(%d+)\\n(%d+)\\n(%d+)\\n(%d+)\\n(%d+)\\n(.*)$')\n"
	"    local since, pid, host, user, cmd = string.match(redis.call('HGET', KEYS[7], m) or '',\n"
	"      '^(%d+)\\n([^\\n]*)\\n([^\\n]*)\\n([^\\n]*)\\n[^\\n]*\\n(.*)$')\n"
	"    if not btok or not since then return false end\n"
	"    local ch = ARGV[3] .. string.match(m, '[^:]*$')\n"
	"    local p = redis.pcall('PUBLISH', ch, 'wake')\n"
	"    if type(p) == 'table' then return false end\n"
	"    leave(m)\n"
	"    if p > 0 then\n"
	"      if redis.call('HGET', KEYS[7], '~sup') == m then redis.call('HDEL', KEYS[7], '~sup') end\n"
	"      local f, fs = next_fence()\n"
	"      if not f then return false end\n"
	"      redis.call('SET', KEYS[1], btok, 'PX', lease)\n"
	"      redis.call('SET', KEYS[2], owner_record(fs, hold, pid, host, user, note, cmd),\n"
	"                 'PX', lease)\n"
	"      local rec = acquired_event(hmax, httl, f, fs, btok, 'x', pid, host, user, note,\n"
	"                                 cmd, ms(now - tonumber(since)))\n"
	"      redis.pcall('PUBLISH', ch, 'granted\\n' .. fs .. '\\n' .. stamp .. '\\n' ..\n"
	"                  ms(math.max(now - tonumber(at), 0)) .. '\\n' .. (rec or ''))\n"
	"      return true\n"
	"    end\n"
	"  end\n"
	"  return false\n"
	"end\n"
	"if cur ~= tok then\n"
	"  local sc = redis.call('ZSCORE', KEYS[3], tok)\n"
	"  if not sc then return 0 end\n"
	"  if tonumber(sc) <= now then holders_purge(); return 0 end\n"
	"  local raw = redis.call('HGET', KEYS[4], tok) or ''\n"
	"  local f = unpack_meta(raw)\n"
	"  local hu = tonumber(f[3] or '0') or 0\n"
	"  released(redis.call('HGET', KEYS[4], 'limit') or 's', raw, f[1])\n"
	"  if hu > now then\n"
	"    redis.call('ZADD', KEYS[3], 'XX', ms(hu), tok)\n"
	"    holders_expire()\n"
	"    return 2\n"
	"  end\n"
	"  redis.call('ZREM', KEYS[3], tok)\n"
	"  redis.call('HDEL', KEYS[4], tok)\n"
	"  holders_expire()\n"
	"  if redis.call('EXISTS', KEYS[5]) == 0 then return announce() end\n"
	"end\n"
	"line_purge()\n"
	"if cur == tok and baton() then return 1 end\n"
	"wake(ARGV[3], nil)\n"
	"if wake_refused then return 3 end\n"
	"return 1\n";

/*
 * Leave the line.  KEYS: the nine.  ARGV: member ("KIND:ID"), wake-up
 * prefix, the waiter's token, the history's length and ttl.  A waiter
 * that gives up (its wait ran out, a signal) leaves at once, and when it
 * was the one let in next, the next after it is woken.  A release that
 * handed it the lock as it gave up (the baton, in release) left the lock
 * with its token: that grant is released here, and recorded so.
 */
static const char leave_lua[] =
	LUA_NOW
	LUA_HOLDERS
	LUA_LINE
	LUA_RECORD
	"if redis.call('GET', KEYS[1]) == ARGV[3] then\n"
	"  local fence, since = string.match(redis.call('GET', KEYS[2]) or '', '^(%d*)\\n(%d*)')\n"
	"  redis.call('DEL', KEYS[1], KEYS[2])\n"
	"  append(KEYS[9], ARGV[4], ARGV[5], true, 'event', 'released', 'fence', fence or '',\n"
	"         'token', string.sub(ARGV[3], 1, 8), 'since', since or '', 'exit', '',\n"
	"         'reason', 'handed over as its wait ended')\n"
	"end\n"
	"leave(ARGV[1])\n"
	"if redis.call('HGET', KEYS[7], '~sup') == ARGV[1] then redis.call('HDEL', KEYS[7], '~sup') end\n"
	"if redis.call('EXISTS', KEYS[5]) == 1 then\n"
	"  line_purge()\n"
	"  wake(ARGV[2], nil)\n"
	"end\n"
	"return 1\n";

/*
 * Forced release.  KEYS: the first seven and the log.  ARGV: release
 * channel, wake-up prefix, who forced it (the record's reason), the
 * history's length and ttl.  Removes the exclusive holder, or every shared
 * or semaphore holder (recording each as forced), and wakes the line as
 * release does.  Keys of the lock that hold another type than rlock keeps
 * there (another client's data, which would make every script fail with
 * WRONGTYPE) are deleted first, whatever they hold: force is the
 * operator's tool for that.  Each is probed with a read of the type rlock
 * keeps there (TYPE is not in the ACL rule rlock asks for), and only a
 * WRONGTYPE answer deletes it; the fence counter and the record of the
 * last runs too (named from the lock's and the log's keys: one slot).  A
 * fence counter of another type can go: the next fence is at least the
 * server's clock in µs, above any handed out.  Answers {0, junk} when nothing was held, else
 * the holder layout of status ({1, 0, host, pid, user, command, since,
 * fence, token prefix, 0}), how many were removed and junk, the number of
 * keys of another type deleted.
 */
static const char force_lua[] =
	LUA_NOW
	LUA_HOLDERS
	LUA_LINE
	LUA_UNPACK_META
	LUA_RECORD
	"local function forced(kind, host, user, pid, fence, tok, since, command)\n"
	"  since = tonumber(since or '')\n"
	"  record(KEYS[8], ARGV[4], ARGV[5], 'event', 'forced', 'host', host or '',\n"
	"         'user', user or '', 'pid', pid or '', 'kind', kind, 'fence', fence or '',\n"
	"         'token', string.sub(tok, 1, 8), 'held', since and ms(now - since) or '',\n"
	"         'reason', ARGV[3], 'command', command or '')\n"
	"end\n"
	"local junk = 0\n"
	"local function clear(k, ...)\n"
	"  local e = redis.pcall(...)\n"
	"  if type(e) == 'table' and e.err and string.find(e.err, 'WRONGTYPE', 1, true) then\n"
	"    redis.call('DEL', k)\n"
	"    junk = junk + 1\n"
	"  end\n"
	"end\n"
	"for i = 1, 2 do clear(KEYS[i], 'GET', KEYS[i]) end\n"
	"clear(KEYS[1] .. ':fence', 'GET', KEYS[1] .. ':fence')\n"
	"for _, i in ipairs({3, 5, 6}) do clear(KEYS[i], 'ZCARD', KEYS[i]) end\n"
	"for _, i in ipairs({4, 7}) do clear(KEYS[i], 'HGET', KEYS[i], 'limit') end\n"
	"clear(KEYS[8] .. ':last', 'HGET', KEYS[8] .. ':last', 'ok')\n"
	"clear(KEYS[8], 'XRANGE', KEYS[8], '+', '+', 'COUNT', 1)\n"	"local cur = redis.call('GET', KEYS[1])\n"
	"local r\n"
	"if cur then\n"
	"  local f = unpack_meta(redis.call('GET', KEYS[2]) or '')\n"
	"  redis.call('DEL', KEYS[1], KEYS[2])\n"
	"  forced('x', f[5], f[6], f[4], f[1], cur, f[2], f[7])\n"
	"  r = {1, 0, f[5] or '', f[4] or '', f[6] or '', f[7] or '', f[2] or '',\n"
	"       f[1] or '', string.sub(cur, 1, 8), '0', 1, junk}\n"
	"else\n"
	"  holders_purge()\n"
	"  local hs = redis.call('ZRANGE', KEYS[3], 0, -1)\n"
	"  if #hs == 0 then\n"
	"    if junk > 0 then redis.pcall('PUBLISH', ARGV[1], 'forced') end\n"
	"    return {0, junk}\n"
	"  end\n"
	"  local f = unpack_meta(redis.call('HGET', KEYS[4], hs[1]) or '')\n"
	"  local kind = redis.call('HGET', KEYS[4], 'limit') or 's'\n"
	"  for i, h in ipairs(hs) do\n"
	"    local g = i == 1 and f or unpack_meta(redis.call('HGET', KEYS[4], h) or '')\n"
	"    forced(kind, g[5], g[6], g[4], g[1], h, g[2], g[7])\n"
	"  end\n"
	"  redis.call('DEL', KEYS[3], KEYS[4])\n"
	"  r = {1, 0, f[5] or '', f[4] or '', f[6] or '', f[7] or '', f[2] or '',\n"
	"       f[1] or '', string.sub(hs[1], 1, 8), '0', #hs, junk}\n"
	"end\n"
	"if redis.call('EXISTS', KEYS[5]) == 0 then\n"
	"  redis.pcall('PUBLISH', ARGV[1], 'forced')\n"
	"else\n"
	"  line_purge()\n"
	"  wake(ARGV[2], nil)\n"
	"end\n"
	"return r\n";

/*
 * Fence.  KEYS: the eight (lock, meta, fence).  ARGV: token, fence.
 * With several masters the fence handed out is the highest of the majority's counters;
 * raising the others to it (never lowering one) makes every later
 * majority, which shares a master with this one, count above it.  A
 * minority grant that was undone still moved its master's counter, so
 * without this the next fence could be lower than the last.
 */
static const char fence_lua[] =
	LUA_FENCE_OF
	"local v = redis.call('GET', KEYS[8])\n"
	"local c = 0\n"
	"if v then\n"
	"  c = fence_of(v)\n"
	"  if not c then return bad_fence(v) end\n"
	"end\n"
	"if c < tonumber(ARGV[2]) then redis.call('SET', KEYS[8], ARGV[2]) end\n"
	"if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
	"  local rest = string.match(redis.call('GET', KEYS[2]) or '', '^%d*(\\n.*)$')\n"
	"  if rest then redis.call('SET', KEYS[2], ARGV[2] .. rest, 'KEEPTTL') end\n"
	"end\n"
	"return 1\n";

/*
 * Status.  KEYS: the eight.  Reads only (expired holders and waiters are
 * skipped, not removed).  {held, pttl, host, pid, user, command, since,
 * fence, token prefix, now} as the acquire's busy answer lays out a
 * holder (the exclusive one, or the shared or semaphore holder whose
 * lease ends first), then the kind held ('x', 's', the limit, '' free),
 * the number of holders, the number waiting in line, the next in line
 * ("KIND:ID\nsince\npid\nhost\nuser\ncommand", '' none), up to 100
 * holders as {token prefix, ttl, metadata}, the holder's note, and the
 * last completed run from the history ({id, {field, value, ...}} of the
 * newest released or lost entry among the last 50, then its grant's entry,
 * {} when not among them; {} none, or the stream refused: a read, so a
 * pcall), and the period done ({until, host, user, pid, since, done,
 * fence, per}, {} none).  KEYS: the nine and the period's record.
 */
static const char status_lua[] =
	LUA_NOW
	LUA_UNPACK_META
	"local function token_of(e)\n"
	"  for i = 1, #e[2], 2 do\n"
	"    if e[2][i] == 'token' then return e[2][i + 1] end\n"
	"  end\n"
	"end\n"
	"local function last_run()\n"
	"  local es = redis.pcall('XREVRANGE', KEYS[9], '+', '-', 'COUNT', 50)\n"
	"  if type(es) ~= 'table' or es.err then return {}, {} end\n"
	"  for i, e in ipairs(es) do\n"
	"    local ev = e[2][2]\n"
	"    if ev == 'released' or ev == 'lost' then\n"
	"      local tok = token_of(e)\n"
	"      for j = i + 1, #es do\n"
	"        if es[j][2][2] == 'acquired' and token_of(es[j]) == tok then return e, es[j] end\n"
	"      end\n"
	"      return e, {}\n"
	"    end\n"
	"  end\n"
	"  return {}, {}\n"
	"end\n"
	"local function once()\n"
	"  local o = redis.call('HMGET', KEYS[10], 'until', 'host', 'user', 'pid', 'since', 'done', 'fence', 'per')\n"
	"  if not o[1] then return {} end\n"
	"  for i = 2, 8 do o[i] = o[i] or '' end\n"
	"  return o\n"
	"end\n"
	"local run, grant = last_run()\n"
	"local cur = redis.call('GET', KEYS[1])\n"
	"local f = redis.call('GET', KEYS[8]) or '0'\n"
	"local nline = redis.call('ZCOUNT', KEYS[6], '(' .. ms(now), '+inf')\n"
	"local head = ''\n"
	"if nline > 0 then\n"
	"  for _, m in ipairs(redis.call('ZRANGE', KEYS[5], 0, 63)) do\n"
	"    local d = tonumber(redis.call('ZSCORE', KEYS[6], m) or '0')\n"
	"    if d > now then\n"
	"      head = m .. '\\n' .. (redis.call('HGET', KEYS[7], m) or '')\n"
	"      break\n"
	"    end\n"
	"  end\n"
	"end\n"
	"if cur then\n"
	"  local m = unpack_meta(redis.call('GET', KEYS[2]) or '')\n"
	"  return {1, redis.call('PTTL', KEYS[1]), m[5] or '', m[4] or '', m[6] or '',\n"
	"          m[7] or '', m[2] or '', m[1] or f, string.sub(cur, 1, 8), ms(now),\n"
	"          'x', 1, nline, head, {}, m[8] or '', run, grant, once()}\n"
	"end\n"
	"local hs = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. ms(now), '+inf',\n"
	"                      'WITHSCORES', 'LIMIT', 0, 100)\n"
	"if #hs == 0 then\n"
	"  return {0, -2, '', '', '', '', '', f, '', ms(now), '', 0, nline, head, {}, '',\n"
	"          run, grant, once()}\n"
	"end\n"
	"local list = {}\n"
	"for i = 1, #hs, 2 do\n"
	"  list[#list + 1] = {string.sub(hs[i], 1, 8), ms(tonumber(hs[i + 1]) - now),\n"
	"                     redis.call('HGET', KEYS[4], hs[i]) or ''}\n"
	"end\n"
	"local m = unpack_meta(list[1][3])\n"
	"return {1, tonumber(list[1][2]), m[5] or '', m[4] or '', m[6] or '', m[7] or '',\n"
	"        m[2] or '', m[1] or f, list[1][1], ms(now),\n"
	"        redis.call('HGET', KEYS[4], 'limit') or 's',\n"
	"        redis.call('ZCOUNT', KEYS[3], '(' .. ms(now), '+inf'), nline, head, list,\n"
	"        m[8] or '', run, grant, once()}\n";

/*
 * Log.  KEYS: the log.  ARGV: the history's length and ttl, the run it
 * ends for the record of the last runs ('' none: see release), then an
 * entry's field/value pairs: a run or acquire that gave up (skipped), a
 * lease that was lost, which no other script is there to record.
 */
static const char log_lua[] =
	LUA_RECORD
	"local id = record(KEYS[1], ARGV[1], ARGV[2], unpack(ARGV, 4))\n"
	"if type(id) ~= 'string' then return id end\n"
	"if ARGV[3] ~= '' then\n"
	"  local rec = KEYS[1] .. ':last'\n"
	"  local n = redis.pcall('HSET', rec, 'run', '1\\n' .. id .. '\\n' .. ARGV[3])\n"
	"  if type(n) == 'number' and n > 0 then redis.pcall('PEXPIRE', rec, ARGV[2]) end\n"
	"end\n"
	"return 1\n";

/*
 * The scripts' SHA-1 digests, written here rather than computed at every
 * start (hashing them cost a fifth of an uncontended run).  The unit test
 * "scripts" fails when a body and its digest disagree; at run time a wrong
 * one would only cost a NOSCRIPT and an EVAL.
 */
const struct rlock_script rlock_scripts[RLOCK_SCRIPT_COUNT] = {
	[RLOCK_SCRIPT_ACQUIRE] = { "acquire", acquire_lua,
				   "a7364e4d5fd05331d9c0a18cdd8a565ad58be813" },
	[RLOCK_SCRIPT_EXTEND] = { "extend", extend_lua,
				  "d45fadead8e5f8ac6ea58c9fdfb061e63c0758ff" },
	[RLOCK_SCRIPT_RELEASE] = { "release", release_lua,
				   "7303a3f858968cfb99744a4884a618d3a48e7aa0" },
	[RLOCK_SCRIPT_FORCE] = { "force", force_lua,
				 "cff334268ebc4ffb553383bf13a6850633090a94" },
	[RLOCK_SCRIPT_FENCE] = { "fence", fence_lua,
				 "e1739b8972f25cb751720b099bd9ef558309d9a0" },
	[RLOCK_SCRIPT_STATUS] = { "status", status_lua,
				  "9b2649239f5bf1855b066df5cc1d9d0e00fb6429" },
	[RLOCK_SCRIPT_LEAVE] = { "leave", leave_lua,
				 "d0ea48055068d7eda46339d74e96549b3603eba0" },
	[RLOCK_SCRIPT_LOG] = { "log", log_lua,
			       "889818c54158aabb9f10a0ce7ef94d390cb0bf84" },
};

const char *const ev_field[EV_NFIELDS] = {
	"event", "host", "user", "pid", "kind", "fence", "token", "waited",
	"since", "held", "exit", "signal", "reason", "command", "note",
};

/* ---- key names and argument builders ---------------------------------- */

int lock_key(char *buf, size_t len, const char *prefix, const char *name,
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

void lock_keys_init(struct lock_keys *k, const char *prefix,
		    const char *name)
{
	int n = lock_key(k->key, sizeof(k->key), prefix, name, "");
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
	k->v = (struct lock_names){ k->key, k->meta, k->fence, k->holders,
				    k->hmeta, k->line, k->lease, k->who,
				    k->chan, k->wake, k->log, k->once,
				    k->last, key_slot(k->key, len) };
}

int64_t line_wait_ms(long long pttl, long long place, int in_line,
		     int subscribed, unsigned rnd)
{
	int64_t ms = pttl >= 0 ? pttl + 1 + rnd % (pttl / 20 + 5) : 1000;
	int64_t beat = LINE_BEAT_MS;

	/* Further back, less often: as the script lengthens the lease. */
	if (place >= LINE_NEAR)
		beat = place >= LINE_NEAR * LINE_FAR_MAX ?
			LINE_BEAT_MS * LINE_FAR_MAX :
			LINE_BEAT_MS * place / LINE_NEAR;
	beat -= rnd % (beat / 8);

	if (in_line)
		return place != 0 || ms > beat ? beat : ms;
	return !subscribed && ms > 1000 ? 1000 : ms;
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
	const char *keys[LOCK_NKEYS] = { n->key, n->meta, n->holders,
					 n->hmeta, n->line, n->lease, n->who,
					 n->fence, n->log };

	q->script = script;
	q->slot = n->slot;
	q->nkeys = nkeys;
	for (q->argc = 0; q->argc < nkeys; q->argc++)
		q->argv[q->argc] = keys[q->argc];
}

static const char *num(struct request *q, int slot, long long v)
{
	q->num[slot][rlock_lltoa(q->num[slot], v)] = '\0';
	return q->num[slot];
}

/* The history's length and ttl, as the scripts take them. */
static void history_args(struct request *q, int slot, const struct history *h)
{
	q->argv[q->argc++] = h != NULL && h->max > 0 ? num(q, slot, h->max) : "0";
	q->argv[q->argc++] = num(q, slot + 1, h != NULL ? h->ttl_ms : 0);
}

/* Append a key (the log, the period's record) as the next. */
static void add_key(struct request *q, const char *key)
{
	q->argv[q->argc++] = key;
	q->nkeys++;
}

/* KEYS: the nine (and the period's record with --once-per).  ARGV:
 * token, ttl, host, pid, user, command, min-hold, details, kind, waiter,
 * join, wake-up prefix, note, waited, the history's length and ttl, and
 * only when one is asked for (the uncontended path does without):
 * priority, supersede, once-per. */
void req_acquire(struct request *q, const struct lock_names *n,
		 const char *token, int64_t ttl_ms, const struct acquirer *who,
		 const struct ask *a, const struct history *h)
{
	int policy = a->priority != 0 || a->supersede || a->once_ms > 0;

	begin(q, RLOCK_SCRIPT_ACQUIRE, LOCK_NKEYS, n);
	if (a->once_ms > 0)
		add_key(q, n->once);
	/* The label is cut at RLOCK_LABEL_MAX bytes, as status shows it. */
	rlock_strlcpy(q->label, who->label != NULL ? who->label : "",
		      sizeof(q->label));
	q->argv[q->argc++] = token;
	q->argv[q->argc++] = num(q, 0, ttl_ms);
	q->argv[q->argc++] = who->host;
	q->argv[q->argc++] = num(q, 1, who->pid);
	q->argv[q->argc++] = who->user;
	q->argv[q->argc++] = q->label;
	q->argv[q->argc++] = num(q, 2, who->min_hold_ms);
	q->argv[q->argc++] = a->details ? "1" : "0";
	q->argv[q->argc++] = a->kind;
	q->argv[q->argc++] = a->waiter;
	q->argv[q->argc++] = a->join ? "1" : "0";
	q->argv[q->argc++] = n->wake;
	q->argv[q->argc++] = who->note != NULL ? who->note : "";
	q->argv[q->argc++] = num(q, 4, who->waited_ms);
	history_args(q, 5, h);
	if (!policy && a->baton_ms == 0 && a->arrival == 0)
		return;
	q->argv[q->argc++] = num(q, 7, a->priority);
	q->argv[q->argc++] = a->supersede ? "1" : "0";
	q->argv[q->argc++] = num(q, 8, a->once_ms);
	if (a->baton_ms == 0 && a->arrival == 0)
		return;
	q->argv[q->argc++] = a->baton_ms > 0 ? num(q, 3, a->baton_ms) : "0";
	q->argv[q->argc++] = a->baton_ms > 0 ? num(q, 9, rlock_boot_ms()) :
			     "0";
	if (a->arrival > 0)
		q->argv[q->argc++] = num(q, 10, a->arrival);
}

/* KEYS: lock, meta ('x'), or holders, hmeta ('h').  ARGV: token, ttl,
 * kind. */
void req_extend(struct request *q, const struct lock_names *n,
		const char *token, int64_t ttl_ms, int kind)
{
	begin(q, RLOCK_SCRIPT_EXTEND, 0, n);
	q->nkeys = 2;
	q->argv[q->argc++] = kind == 'x' ? n->key : n->holders;
	q->argv[q->argc++] = kind == 'x' ? n->meta : n->hmeta;
	q->argv[q->argc++] = token;
	q->argv[q->argc++] = num(q, 0, ttl_ms);
	q->argv[q->argc++] = kind == 'x' ? "x" : "h";
}

/* KEYS: the nine (and the period's record).  ARGV: token, channel ('' not
 * to announce the release: with one server, waiters listen on channels of
 * their own), wake-up prefix, exit status, signal, the history's length
 * and ttl (and the period). */
void req_release(struct request *q, const struct lock_names *n,
		 const char *token, const struct history *h,
		 const struct rlock_outcome *how, int64_t once_ms,
		 int announce)
{
	begin(q, RLOCK_SCRIPT_RELEASE, LOCK_NKEYS, n);
	if (once_ms > 0)
		add_key(q, n->once);
	q->argv[q->argc++] = token;
	q->argv[q->argc++] = announce ? n->chan : "";
	q->argv[q->argc++] = n->wake;
	q->argv[q->argc++] = how != NULL && how->exit >= 0 ?
			     num(q, 0, how->exit) : "";
	q->argv[q->argc++] = how != NULL && how->abandoned ? "abandoned" :
			     how != NULL && how->signal > 0 ?
			     rlock_signame(how->signal, q->num[1],
					   sizeof(q->num[1])) : "";
	history_args(q, 2, h);
	if (once_ms > 0)
		q->argv[q->argc++] = num(q, 4, once_ms);
}

/* KEYS: the nine.  ARGV: "KIND:ID", wake-up prefix, token, the history's
 * length and ttl. */
void req_leave(struct request *q, const struct lock_names *n,
	       const char *kind, const char *waiter, const char *token,
	       const struct history *h)
{
	begin(q, RLOCK_SCRIPT_LEAVE, LOCK_NKEYS, n);
	snprintf(q->member, sizeof(q->member), "%s:%s", kind, waiter);
	q->argv[q->argc++] = q->member;
	q->argv[q->argc++] = n->wake;
	q->argv[q->argc++] = token;
	history_args(q, 0, h);
}

/* KEYS: the first seven, the log.  ARGV: channel, wake-up prefix, who
 * forced it, the history's length and ttl. */
void req_force(struct request *q, const struct lock_names *n,
	       const char *by, const struct history *h)
{
	begin(q, RLOCK_SCRIPT_FORCE, LOCK_NKEYS - 2, n);
	add_key(q, n->log);
	q->argv[q->argc++] = n->chan;
	q->argv[q->argc++] = n->wake;
	q->argv[q->argc++] = by;
	history_args(q, 0, h);
}

/* KEYS: the log.  ARGV: the history's length and ttl, the field/value
 * pairs of the values given. */
void req_log(struct request *q, const struct lock_names *n,
	     const struct history *h, const char *run, const char *const *v)
{
	begin(q, RLOCK_SCRIPT_LOG, 0, n);
	add_key(q, n->log);
	history_args(q, 0, h);
	q->argv[q->argc++] = run != NULL ? run : "";
	for (int i = 0; i < EV_NFIELDS; i++) {
		if (v[i] == NULL || v[i][0] == '\0')
			continue;
		q->argv[q->argc++] = ev_field[i];
		q->argv[q->argc++] = v[i];
	}
}

/* KEYS: the first eight.  ARGV: token, fence. */
void req_fence(struct request *q, const struct lock_names *n,
	       const char *token, long long fence)
{
	begin(q, RLOCK_SCRIPT_FENCE, LOCK_NKEYS - 1, n);
	q->argv[q->argc++] = token;
	q->argv[q->argc++] = num(q, 0, fence);
}

/* KEYS: the nine and the period's record. */
void req_status(struct request *q, const struct lock_names *n)
{
	begin(q, RLOCK_SCRIPT_STATUS, LOCK_NKEYS, n);
	add_key(q, n->once);
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
	char nk[24];
	int argc = 0, i;

	if (q->script == REQ_COMMAND)
		return conn_send(c, q->argc, q->argv, NULL);
	s = &rlock_scripts[q->script];
	nk[rlock_utoa(nk, (unsigned)q->nkeys)] = '\0';
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
#define SCRIPT_COMMANDS "+evalsha +eval +get +set +pexpire +pexpireat " \
	"+pttl +hget +hmget +hset +hdel +incr +del +exists +publish +time " \
	"+zadd +zrem +zrange +zrangebyscore +zrank +zscore +zcard +zcount " \
	"+xadd +xrange +xrevrange"

/* Whether the error reply says an ACL refused something. */
static int acl_refusal(const redisReply *r)
{
	return starts_with(r, "NOPERM") ||
	       memmem(r->str, r->len, "user executing the script can't",
		      31) != NULL;
}

int scripts_unavailable(const redisReply *r, char *why, size_t len)
{
	static const char unknown[] = "ERR unknown command ";
	static const char *const cmd[2] = { "EVALSHA", "EVAL" };
	static const char needs[] = "rlock needs EVAL and EVALSHA";
	size_t at = sizeof(unknown) - 1;

	if (r->type != REDIS_REPLY_ERROR)
		return 0;
	/* Quoted with ' from Redis 6.2, with ` before. */
	if (starts_with(r, unknown) && r->len > at &&
	    (r->str[at] == '\'' || r->str[at] == '`')) {
		for (int i = 0; i < 2; i++) {
			size_t n = strlen(cmd[i]);

			if (r->len > at + 1 + n &&
			    strncasecmp(r->str + at + 1, cmd[i], n) == 0 &&
			    r->str[at + 1 + n] == r->str[at]) {
				snprintf(why, len, "cannot run Lua scripts (%s is "
					 "an unknown command): %s", cmd[i], needs);
				return 1;
			}
		}
	}
	/* rlock's scripts have no shebang: the engine asked for is Lua. */
	if (starts_with(r, "ERR Could not find scripting engine")) {
		snprintf(why, len, "cannot run Lua scripts (no Lua engine is "
			 "loaded): %s", needs);
		return 1;
	}
	return 0;
}

/* The commands that read the history: log reads with XREVRANGE and
 * follows with XRANGE, so a rule naming only the one refused would fail
 * again at the other. */
#define HISTORY_READS "+xrange +xrevrange"

static int history_read(const char *cmd, size_t len)
{
	return (len == 6 && strncasecmp(cmd, "xrange", 6) == 0) ||
	       (len == 9 && strncasecmp(cmd, "xrevrange", 9) == 0);
}

/*
 * An ACL refusal, with the rule that would allow it: keys and channels
 * under the key's prefix, the history's two reads together, or the
 * command named.  user is the URL's ("" is the default user).
 */
static void acl_error(const redisReply *r, int n, const char *addr,
		      const char *user, const char *key,
		      struct rlock_result *res)
{
	const char *brace = strchr(key, '{');
	const char *q1 = memchr(r->str, '\'', r->len), *q2 = NULL;
	int plen = brace != NULL ? (int)(brace - key) : (int)strlen(key);
	char rule[240];

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
	else if (q2 != NULL && starts_with(r, "NOPERM") &&
		 history_read(q1 + 1, (size_t)(q2 - q1 - 1)))
		snprintf(rule, sizeof(rule), "%s", HISTORY_READS);
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

/* The type rlock keeps at a key, by its suffix (the longest that ends
 * it after the name's closing brace). */
static const char *kept_type(const char *key)
{
	static const struct {
		const char *suffix, *type;
	} kept[] = {
		{ "}", "string" }, { "}" KEY_META, "string" },
		{ "}" KEY_FENCE, "string" }, { "}" KEY_HOLDERS, "zset" },
		{ "}" KEY_HMETA, "hash" }, { "}" KEY_LINE, "zset" },
		{ "}" KEY_LEASE, "zset" }, { "}" KEY_WHO, "hash" },
		{ "}" KEY_LOG, "stream" }, { "}" KEY_ONCE, "hash" },
		{ "}" KEY_LAST, "hash" },
	};
	size_t len = strlen(key);

	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		size_t sl = strlen(kept[i].suffix);

		if (len >= sl && strcmp(key + len - sl, kept[i].suffix) == 0)
			return kept[i].type;
	}
	return NULL;
}

void explain_wrongtype(struct rlock_conn *c, const struct request *q,
		       const char *prefix, int64_t deadline,
		       struct rlock_result *res)
{
	int first = q->script == REQ_COMMAND ? 1 : 0;
	int last = q->script == REQ_COMMAND ? 2 : q->nkeys;

	for (int k = first; k < last && k < q->argc; k++) {
		const char *argv[2] = { "TYPE", q->argv[k] }, *want;
		char vis[RLOCK_KEY_MAX * 4 + 1], name[RLOCK_KEY_MAX * 4 + 1];
		const char *open, *close;
		redisReply *r = NULL;
		size_t plen = strlen(prefix);

		want = kept_type(q->argv[k]);
		if (want == NULL ||
		    conn_call(c, deadline, -1, 2, argv, NULL, &r) != RLOCK_OK)
			continue;
		if (r->type != REDIS_REPLY_STATUS || strcmp(r->str, "none") == 0 ||
		    strcmp(r->str, want) == 0 || r->len > 32) {
			freeReplyObject(r);
			continue;
		}
		/* prefix{NAME}suffix: the name, for the fix. */
		open = q->argv[k] + plen;
		close = strrchr(q->argv[k], '}');
		if (strncmp(q->argv[k], prefix, plen) != 0 || *open != '{' ||
		    close == NULL || close <= open)
			snprintf(name, sizeof(name), "NAME");
		else
			snprintf(name, sizeof(name), "%.*s",
				 (int)(close - open - 1), open + 1);
		snprintf(vis, sizeof(vis), "%s", q->argv[k]);
		snprintf(res->err, sizeof(res->err), "%.300s holds a %.32s, "
			 "not the %s rlock keeps there (another client's "
			 "data): 'rlock release --force %.200s' removes it",
			 vis, r->str, want, name);
		freeReplyObject(r);
		return;
	}
}

void classify_error(const redisReply *r, const struct rlock_conn *c,
		    const char *key, struct rlock_result *res)
{
	const char *addr = conn_addr(c);
	int n = (int)r->len;
	const char *tail = memmem(r->str, r->len, " script:", 8), *bad;
	char why[128];

	if (tail != NULL)
		n = (int)(tail - r->str);
	if (acl_refusal(r)) {
		acl_error(r, n, addr, conn_url(c)->user, key, res);
	} else if (scripts_unavailable(r, why, sizeof(why))) {
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err), "%s %s", addr, why);
	} else if (starts_with(r, "READONLY")) {
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err),
			 "%s is a replica (READONLY): point rlock at the "
			 "master, or use a redis-sentinel:// URL", addr);
	} else if (starts_with(r, "OOM")) {
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err),
			 "%s: server out of memory (OOM)", addr);
	} else if (starts_with(r, "BADFENCE ")) {
		char v[300];

		res->rc = RLOCK_EPROTO;
		snprintf(v, sizeof(v), "%.*s", n - 9, r->str + 9);
		snprintf(res->err, sizeof(res->err), "%s:fence holds '%s', "
			 "which is not a fence rlock wrote (digits, below "
			 "2^53 - 2^20): no fence handed out, nothing granted",
			 key, v);
	} else if ((bad = memmem(r->str, (size_t)n, "BADLINE ", 8)) != NULL) {
		char v[300];

		res->rc = RLOCK_EPROTO;
		snprintf(v, sizeof(v), "%.*s", (int)(r->str + n - bad - 8),
			 bad + 8);
		snprintf(res->err, sizeof(res->err), "%s:line holds '%s', "
			 "which is not a waiter rlock wrote (KIND:ID): the "
			 "line cannot be served", key, v);
	} else if (starts_with(r, "WRONGTYPE")) {
		res->rc = RLOCK_EPROTO;
		res->wrongtype = 1;
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
	} else if (memmem(r->str, r->len, "max number of clients", 21) !=
		   NULL) {
		/* Said on connecting, and read as the first reply. */
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err), "%s: the server takes no "
			 "more clients (maxclients reached)", addr);
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
