-- Acquire.  KEYS: the nine (lib/scripts.c).  ARGV: 1 token, 2 ttl, 3 host, 4 pid,
-- 5 user, 6 command, 7 min-hold, 8 details, 9 kind, 10 waiter id ('' for
-- none: several masters keep no line), 11 join ('1': take a place in line
-- when not let in, or keep it), 12 the wake-up channels' prefix, 13 note,
-- 14 ms waited, 15 and 16 the history's length and ttl (record.lua), and
-- only when one of them is not the default: 17 priority (-100..100), 18
-- supersede ('1'), 19 --once-per in ms ('0' none; when not, KEYS[10] is
-- the period's record), and for a waiter that takes the lock from the
-- release that frees it (a run, exclusive; see release): 20 its first
-- lease in ms, 21 its clock (CLOCK_BOOTTIME ms) as it sent this request
-- (each '0' when not such a waiter), and 22 a waiter's arrival in line
-- (its place's score) when it joined before: taking a place again (a new
-- master after a failover, whose line lacks it), it takes it there, not
-- at the end, but never earlier than its wait (ARGV[14]) allows.
-- Sixteen arguments on the common path, not seventeen: the server builds
-- ARGV by doubling a table, and the seventeenth would double it to 32.
--
-- Such a waiter keeps in who, under "^" and its member, "token\nlease\n
-- min-hold\nstamp\nat\nhistory length\nhistory ttl\nnote", stamp being
-- ARGV[21] of its last request and at the server's ms when it ran.
--
-- The line is ordered by priority, then arrival: a place's score is its
-- arrival in µs less priority times PRIO_STEP_US (115 days), exact in a
-- double for every priority, and above every score of its priority (the
-- same µs, a clock that went back), found with commands the documented
-- ACL rule allows (ZCOUNT, ZRANGEBYSCORE; not ZREVRANGEBYSCORE), once
-- per call: where the caller would stand, then where it takes its place.
--
-- A waiter with supersede that takes a place removes the one such waiter
-- already in line (there is at most one: each removed the one before),
-- leaves "!" and who did it under the removed one's member in who, and
-- wakes it: its next try answers {-2, who}.  A period already done
-- (--once-per: the record is of the same period length, and its until is
-- the end of this period of the server's clock) answers {-3, until, host,
-- user, pid, since, fence} before anything else, and gives up the
-- caller's place.
--
-- Granted: {1, fence, recorded} (recorded: 1, or 0 when the history was
-- refused, absent when not asked for).  A kind that disagrees with the
-- holders' (a semaphore of another limit, shared against a semaphore):
-- {-1, theirs}.  Otherwise {0, pttl, place (0 the head, -1 not in line),
-- waiting (-1 unless details), holders, joined (0, or the arrival of
-- the place taken: its score, µs), kind held ('' none)} and,
-- when asked, the (first) holder's host, pid, user, command, since,
-- fence, token prefix and the server's time.
--
-- pttl is the exclusive holder's PTTL (given only to the next in line, to
-- one not in line, or with details), or the time until the first shared
-- or semaphore lease ends.
--
-- Our own token already there means a grant we did not hear of: a retry
-- after a lost reply, or a grant a release made for us (the baton) that
-- we did not trust or have not heard of yet.  It is renewed and reported
-- again; when it is BATON_REFENCE_MS old on this server's clock (the
-- server stopped before it could answer), with a new fence, which the
-- holder's record takes: a failover meanwhile may have handed out a
-- higher one.
--
-- GET comes first so a key of another type is an error (SET NX alone
-- would answer nil and the caller would wait for ever).  The path of a
-- free exclusive lock with nobody in line and no shared holder costs one
-- EXISTS more than SET NX would.
local k, tok = ARGV[9], ARGV[1]
local cur = redis.call('GET', KEYS[1])
--@include now.lua
--@include next_fence.lua
if cur == tok then
  local v = redis.call('GET', KEYS[2]) or ''
  local of, since, rest = string.match(v, '^(%d*)\n(%d*)(\n.*)$')
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  local held = rest and fence_of(of)
  if held and now - (tonumber(since) or 0) < @BATON_REFENCE_MS@ then
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
    return {1, held}
  end
  local f, fs = next_fence()
  if not f then return fs end
  if rest then redis.call('SET', KEYS[2], fs .. '\n' .. since .. rest, 'PX', ARGV[2]) end
  return {1, f}
end
--@include append.lua
--@include grant.lua
local function grant_x()
  local f, fs = next_fence()
  if not f then return fs end
  redis.call('SET', KEYS[1], tok, 'PX', ARGV[2])
  redis.call('SET', KEYS[2], owner_record(fs, ARGV[7], ARGV[4], ARGV[3], ARGV[5],
             ARGV[13], ARGV[6]), 'PX', ARGV[2])
  return {1, f, acquired_event(ARGV[15], ARGV[16], f, fs, tok, k, ARGV[4], ARGV[3],
                               ARGV[5], ARGV[13], ARGV[6], ARGV[14])}
end
local once = ARGV[19] and ARGV[19] ~= '0'
if not once and not cur and k == 'x' and redis.call('EXISTS', KEYS[3], KEYS[5]) == 0 then
  return grant_x()
end
local ttl = tonumber(ARGV[2])
local done
if once then
  local once_ms = tonumber(ARGV[19])
  local o = redis.call('HMGET', KEYS[10], 'until', 'host', 'user', 'pid', 'since', 'fence', 'per')
  if o[1] == ms((math.floor(now / once_ms) + 1) * once_ms) and o[7] == ARGV[19] then
    done = {-3, o[1], o[2] or '', o[3] or '', o[4] or '', o[5] or '', o[6] or ''}
  end
end
--@include holders.lua
local function grant()
  if k == 'x' then return grant_x() end
  local f, fs = next_fence()
  if not f then return fs end
  redis.call('ZADD', KEYS[3], ms(now + ttl), tok)
  redis.call('HSET', KEYS[4], 'limit', k, tok, owner_record(fs, ARGV[7], ARGV[4],
             ARGV[3], ARGV[5], ARGV[13], ARGV[6]))
  holders_expire()
  return {1, f, acquired_event(ARGV[15], ARGV[16], f, fs, tok, k, ARGV[4], ARGV[3],
                               ARGV[5], ARGV[13], ARGV[6], ARGV[14])}
end
--@include line.lua
--@include unpack_meta.lua
if k ~= 'x' then
  local sc = redis.call('ZSCORE', KEYS[3], tok)
  if sc and tonumber(sc) > now then
    redis.call('ZADD', KEYS[3], ms(now + ttl), tok)
    holders_expire()
    local v = redis.call('HGET', KEYS[4], tok) or ''
    local of, rest = string.match(v, '^(%d*)(\n.*)$')
    local held = of and fence_of(of)
    if held then return {1, held} end
    local f, fs = next_fence()
    if not f then return fs end
    if rest then redis.call('HSET', KEYS[4], tok, fs .. rest) end
    return {1, f}
  end
end
local hk, hn = 'x', 1
if not cur then
  holders_purge()
  hk, hn = state()
end
if hk and hk ~= 'x' and hk ~= 's' and hk ~= k then return {-1, hk} end
if hk == 's' and k ~= 's' and k ~= 'x' then return {-1, hk} end
if hk == 'x' and k ~= 'x' and k ~= 's' then return {-1, 'x'} end
local me = ARGV[10] ~= '' and (k .. ':' .. ARGV[10]) or nil
local place = nil
if me then place = redis.call('ZRANK', KEYS[5], me) end
if done then
  if place then leave(me); wake(ARGV[12], nil) end
  return done
end
if me and not place and ARGV[11] == '1' then
  local w = redis.call('HGET', KEYS[7], me)
  if w and string.sub(w, 1, 1) == '!' then
    redis.call('HDEL', KEYS[7], me)
    return {-2, string.sub(w, 2)}
  end
end
local prio = tonumber(ARGV[17] or '0')
local at
local function arrival()
  if at then return at end
  at = sec * 1000000 + usec - prio * @PRIO_STEP_US@
  local was = tonumber(ARGV[22] or '')
  if was and was < at and was >= at - tonumber(ARGV[14]) * 1000 - 1000000 then
    at = was
    while redis.call('ZCOUNT', KEYS[5], ms(at), ms(at)) > 0 do at = at + 1 end
    return at
  end
  local lo, hi = ms(at), ms(at + @PRIO_STEP_US@ / 2)
  local n = redis.call('ZCOUNT', KEYS[5], lo, hi)
  if n > 0 then
    local last = redis.call('ZRANGEBYSCORE', KEYS[5], lo, hi, 'WITHSCORES', 'LIMIT', n - 1, 1)
    at = tonumber(last[2]) + 1
  end
  return at
end
local let = false
if me and hk ~= 'x' then
  line_purge()
  if place and place > 0 then
    wake(ARGV[12], me)
    hk, hn = state()
  end
  place = redis.call('ZRANK', KEYS[5], me)
end
if hk ~= 'x' and (hk == nil or hk == k) then
  if not me then
    let = k ~= 'x' or hk == nil
    if k ~= 's' and k ~= 'x' then let = hn < tonumber(k) end
  else
    local upto = place
    if not upto and prio ~= 0 then
      upto = redis.call('ZCOUNT', KEYS[5], '-inf', '(' .. ms(arrival()))
    end
    upto = upto or redis.call('ZCARD', KEYS[5])
    if upto <= 64 then
      local es = upto > 0 and redis.call('ZRANGE', KEYS[5], 0, upto - 1) or {}
      es[upto + 1] = me
      let = true
      for i = 1, upto + 1 do
        if not ok(kind(es[i]), i, kind(es[1]), hk, hn) then let = false; break end
      end
    end
  end
end
if let then
  if place then leave(me) end
  if place and ARGV[18] == '1' and redis.call('HGET', KEYS[7], '~sup') == me then
    redis.call('HDEL', KEYS[7], '~sup')
  end
  return grant()
end
local function supersede()
  local old = redis.call('HGET', KEYS[7], '~sup')
  if old and old ~= me and redis.call('ZSCORE', KEYS[5], old) then
    leave(old)
    local by = ARGV[5] .. '@' .. ARGV[3] .. ':' .. ARGV[4]
    if ARGV[6] ~= '' then by = by .. ' (' .. ARGV[6] .. ')' end
    redis.call('HSET', KEYS[7], old, '!' .. by)
    redis.pcall('PUBLISH', ARGV[12] .. string.match(old, '[^:]*$'), 'superseded')
    if hk ~= 'x' then wake(ARGV[12], nil) end
  end
  redis.call('HSET', KEYS[7], '~sup', me)
end
local joined = 0
if me and (place or ARGV[11] == '1') then
  if not place then
    if ARGV[18] == '1' then supersede() end
    redis.call('ZADD', KEYS[5], ms(arrival()), me)
    redis.call('HSET', KEYS[7], me, ms(now) .. '\n' .. ARGV[4] .. '\n' ..
               ARGV[3] .. '\n' .. ARGV[5] .. '\n' .. prio .. '\n' .. ARGV[6])
    place = redis.call('ZRANK', KEYS[5], me)
    joined = 1
  end
  local lease = lease_for(place)
  redis.call('ZADD', KEYS[6], ms(now + lease), me)
  if ARGV[20] and ARGV[20] ~= '0' then
    redis.call('HSET', KEYS[7], '^' .. me, tok .. '\n' .. ARGV[20] .. '\n' .. ARGV[7] ..
               '\n' .. ARGV[21] .. '\n' .. ms(now) .. '\n' .. ARGV[15] .. '\n' ..
               ARGV[16] .. '\n' .. ARGV[13])
  end
  -- The line lives while someone keeps a place in it: its keys' TTL
  -- is put back to four leases whenever it falls below three.
  if joined == 1 or redis.call('PTTL', KEYS[5]) < 3 * lease then
    local keep = ms(4 * lease)
    redis.call('PEXPIRE', KEYS[5], keep)
    redis.call('PEXPIRE', KEYS[6], keep)
    redis.call('PEXPIRE', KEYS[7], keep)
  end
end
local pttl, first = 0, nil
local detail = ARGV[8] == '1'
if hk == 'x' and (detail or not place or place == 0) then
  pttl = redis.call('PTTL', KEYS[1])
elseif hk and hk ~= 'x' then
  first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  pttl = tonumber(first[2]) - now
end
local r = {0, pttl, place or -1, detail and redis.call('ZCARD', KEYS[5]) or -1,
           hn, joined == 1 and arrival() or 0, hk or ''}
if not detail or not hk then return r end
local v, t8
if hk == 'x' then
  v, t8 = redis.call('GET', KEYS[2]), string.sub(cur or '', 1, 8)
else
  v, t8 = redis.call('HGET', KEYS[4], first[1]), string.sub(first[1], 1, 8)
end
local f = unpack_meta(v or '')
local who = {f[5] or '', f[4] or '', f[6] or '', f[7] or '', f[2] or '', f[1] or '', t8}
for i = 1, 7 do r[#r + 1] = who[i] end
r[#r + 1] = ms(now)
return r
