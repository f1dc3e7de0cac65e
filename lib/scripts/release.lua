-- Release.  KEYS: the nine.  ARGV: token, release channel, wake-up
-- prefix, the exit status and the signal to record ('' not known; the
-- signal 'abandoned': a renewer released for a script that died holding
-- the lock, recorded as that event), the
-- history's length and ttl, and with --once-per its period in ms (then
-- KEYS[10] is the period's record): an exclusive holder that
-- exits 0 marks the period it was granted in as done, until its end.
-- The history's record names the grant it ends by its token, and has the
-- fence (from the holder's metadata: several masters raise it to the one
-- handed out, and a hand-off that came too late gets a new one) and the
-- exit status when it is known; who held it, the kind and when it was
-- granted (the time held is the entry's time less the grant's) are in the
-- grant's record, which readers join.  The record of the last runs
-- (P{N}:log:last) gets the release's entry id as 'ok' when it ended well
-- (no signal, exit 0 or not known: a plain release), else the whole run
-- as 'run'; one short field on the path every lock takes.  Each
-- value in a record costs the
-- server a field to read and one to write: this is the hot path.  Before
-- the holder's hold_until (--min-hold) the lease is cut to end then
-- instead of being removed: the server's clock decides, whichever
-- client releases.  Then the next in line is woken (or the next run of
-- shared waiters, or as many as a semaphore has free places); with nobody
-- in line, the release channel hears it when the caller names it (several
-- masters, whose waiters keep no line: ARGV[2] '' otherwise).  The
-- wake-up is a pcall: an ACL user without the channel (Redis 7 grants
-- none by default) has released once the DEL ran, and says so with 3,
-- not with an error that would make the caller believe it still holds
-- the lock.
--
-- The baton: an exclusive release whose next in line left a baton (a
-- waiting run) grants the lock to that waiter itself, for the waiter's
-- first lease, with its metadata and history entry, and the wake-up that
-- follows carries the grant: "granted\nfence\nstamp\ndelta\nrecorded",
-- delta the server's ms since the request that left the stamp, so that
-- the waiter counts its lease from stamp + delta on its own clock.  The
-- plain 'wake' goes first and its count of receivers decides: PUBLISH
-- counts only this node's subscribers, and a waiter listening on another
-- (a cluster's slot that moved, a master turned replica) would still hear
-- a message published here, so "granted" is published only once the
-- grant is written, and a waiter nobody heard here is dropped, as wake()
-- drops it, and asks when it hears 'wake' elsewhere.
--@include append.lua
local tok = ARGV[1]
local cur = redis.call('GET', KEYS[1])
local function released(kind, v, fence)
  if ARGV[6] == '0' then return end
  local ev, ex, sig, t8 = 'released', ARGV[4], ARGV[5], string.sub(tok, 1, 8)
  local id
  local rec, n = KEYS[9] .. ':last'
  if sig == 'abandoned' then ev, sig = sig, '' end
  if sig == '' and ex == '' then
    id = append(KEYS[9], ARGV[6], ARGV[7], true, 'event', ev, 'fence', fence or '',
                'token', t8)
  elseif sig == '' then
    id = append(KEYS[9], ARGV[6], ARGV[7], true, 'event', ev, 'fence', fence or '',
                'token', t8, 'exit', ex)
  else
    id = append(KEYS[9], ARGV[6], ARGV[7], true, 'event', ev, 'fence', fence or '',
                'token', t8, 'exit', ex, 'signal', sig)
  end
  if type(id) ~= 'string' then return end
  if ev == 'released' and sig == '' and (ex == '0' or ex == '') then
    n = redis.pcall('HSET', rec, 'ok', id)
  else
    n = redis.pcall('HSET', rec, 'run', '1\n' .. id .. '\n' .. ev .. '\n' .. kind .. '\n' ..
                    ex .. '\n' .. sig .. '\n' .. t8 .. '\n\n' .. v)
  end
  if n == 1 then redis.pcall('PEXPIRE', rec, ARGV[7]) end
end
if cur == tok then
  local v = redis.call('GET', KEYS[2]) or ''
  local fence, since, hu = string.match(v, '^(%d*)\n(%d*)\n(%d*)')
  if ARGV[8] and ARGV[4] == '0' and ARGV[5] == '' and tonumber(since or '') then
    local once = tonumber(ARGV[8])
    local pid, host, user = string.match(v, '^%d*\n%d*\n%d*\n([^\n]*)\n([^\n]*)\n([^\n]*)')
    local t = redis.call('TIME')
    local at = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    local pend = (math.floor(tonumber(since) / once) + 1) * once
    if pend > at then
      local ps = string.format('%d', pend)
      redis.call('HSET', KEYS[10], 'until', ps, 'host', host or '', 'user', user or '',
                 'pid', pid or '', 'since', since, 'done', string.format('%d', at),
                 'fence', fence or '', 'per', ARGV[8])
      redis.call('PEXPIREAT', KEYS[10], ps)
    end
  end
  if hu and hu ~= '0' then
    local t = redis.call('TIME')
    local at = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    if tonumber(hu) > at then
      local left = string.format('%d', tonumber(hu) - at)
      redis.call('PEXPIRE', KEYS[1], left)
      redis.call('PEXPIRE', KEYS[2], left)
      released('x', v, fence)
      return 2
    end
  end
  redis.call('DEL', KEYS[1], KEYS[2])
  released('x', v, fence)
end
local function announce()
  if ARGV[2] == '' then return 1 end
  local p = redis.pcall('PUBLISH', ARGV[2], 'released')
  if type(p) == 'table' then return 3 end
  return 1
end
if cur == tok and redis.call('EXISTS', KEYS[5]) == 0 then return announce() end
--@include now.lua
--@include next_fence.lua
--@include grant.lua
--@include holders.lua
--@include line.lua
--@include unpack_meta.lua
local function baton()
  for _ = 1, 8 do
    local m = redis.call('ZRANGE', KEYS[5], 0, 0)[1]
    if not m or kind(m) ~= 'x' then return false end
    local b = redis.call('HGET', KEYS[7], '^' .. m)
    if not b then return false end
    local btok, lease, hold, stamp, at, hmax, httl, note = string.match(b,
      '^([^\n]*)\n(%d+)\n(%d+)\n(%d+)\n(%d+)\n(%d+)\n(%d+)\n(.*)$')
    local since, pid, host, user, cmd = string.match(redis.call('HGET', KEYS[7], m) or '',
      '^(%d+)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n[^\n]*\n(.*)$')
    if not btok or not since then return false end
    local ch = ARGV[3] .. string.match(m, '[^:]*$')
    local p = redis.pcall('PUBLISH', ch, 'wake')
    if type(p) == 'table' then return false end
    leave(m)
    if p > 0 then
      if redis.call('HGET', KEYS[7], '~sup') == m then redis.call('HDEL', KEYS[7], '~sup') end
      local f, fs = next_fence()
      if not f then return false end
      redis.call('SET', KEYS[1], btok, 'PX', lease)
      redis.call('SET', KEYS[2], owner_record(fs, hold, pid, host, user, note, cmd),
                 'PX', lease)
      local rec = acquired_event(hmax, httl, f, fs, btok, 'x', pid, host, user, note,
                                 cmd, ms(now - tonumber(since)))
      redis.pcall('PUBLISH', ch, 'granted\n' .. fs .. '\n' .. stamp .. '\n' ..
                  ms(math.max(now - tonumber(at), 0)) .. '\n' .. (rec or ''))
      return true
    end
  end
  return false
end
if cur ~= tok then
  local sc = redis.call('ZSCORE', KEYS[3], tok)
  if not sc then return 0 end
  if tonumber(sc) <= now then holders_purge(); return 0 end
  local raw = redis.call('HGET', KEYS[4], tok) or ''
  local f = unpack_meta(raw)
  local hu = tonumber(f[3] or '0') or 0
  released(redis.call('HGET', KEYS[4], 'limit') or 's', raw, f[1])
  if hu > now then
    redis.call('ZADD', KEYS[3], 'XX', ms(hu), tok)
    holders_expire()
    return 2
  end
  redis.call('ZREM', KEYS[3], tok)
  redis.call('HDEL', KEYS[4], tok)
  holders_expire()
  if redis.call('EXISTS', KEYS[5]) == 0 then return announce() end
end
line_purge()
if cur == tok and baton() then return 1 end
if wake(ARGV[3], nil) then return 3 end
return 1
