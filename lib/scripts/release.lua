-- Release, in two layouts.  A release that ended well, not announced,
-- with the history's default length and ttl and no --once-per, sends
-- KEYS: the lock key P{N} alone (the others are named from it, as
-- acquire.lua does); ARGV: 1 token, 2 its history entry "TOKEN8\nEXIT\n"
-- (EXIT '' when not known).  Any other sends the whole layout, every key
-- declared:
--   KEYS  the twelve (lib/keys.c)
--   ARGV  1 token, 2 release channel ('' none), 3 wake-up prefix, 4 exit,
--         5 signal ('' none; 'abandoned': a renewer released for a script
--         that died holding the lock, recorded as that event), 6 and 7 the
--         history's length and ttl, 8 --once-per in ms (absent none)
--
-- The path of an exclusive holder's release with nobody in line and no
-- --min-hold (P{N}:hold) comes first: the lock key deleted, the entry
-- appended to a history that exists.  It leaves the record of the last
-- runs alone: the history has the success, and the record is brought up
-- to date before a run that did not end well is written there
-- (keep_ok.lua).  Anything else goes on to the whole script below.
local lkey, tok = KEYS[1], ARGV[1]
local K, A = KEYS, ARGV
if #KEYS == 1 then
  if redis.call('GET', lkey) == tok and
     redis.call('EXISTS', lkey .. ':line', lkey .. ':hold') == 0 then
    redis.call('DEL', lkey, lkey .. ':grant')
    redis.pcall('XADD', lkey .. ':log', 'NOMKSTREAM', '*', 'r1', ARGV[2])
    return 1
  end
  local ex = string.match(ARGV[2], '^[^\n]*\n([^\n]*)\n$')
  if not ex then return redis.error_reply('BADARGS the release entry') end
  K = {lkey, lkey .. ':owner', lkey .. ':holders', lkey .. ':holders:meta',
       lkey .. ':line', lkey .. ':line:lease', lkey .. ':line:who', lkey .. ':fence',
       lkey .. ':log', lkey .. ':once', lkey .. ':grant', lkey .. ':hold'}
  A = {tok, '', lkey .. ':wake:', ex, '', '@HISTORY_MAX@', '@HISTORY_TTL_MS@'}
end
local KEYS, ARGV = K, A
--@include shrink.lua
--@include append.lua
--@include keep_ok.lua
--@include unpack_meta.lua
--@include holder_meta.lua
local cur = redis.call('GET', KEYS[1])
local function released(kind, v, fence)
  if ARGV[6] == '0' then return end
  local ev, ex, sig, t8 = 'released', ARGV[4], ARGV[5], string.sub(tok, 1, 8)
  local id
  local rec, n = KEYS[9] .. ':last'
  if sig == 'abandoned' then ev, sig = sig, '' end
  if ev == 'released' and fence and fence ~= '' then
    -- The fence the holder had: its grant's entry may say another (a
    -- grant fenced again, too late to trust, acquire.lua).
    id = append(KEYS[9], ARGV[6], ARGV[7], true, 'r1', t8 .. '\n' .. ex .. '\n' .. sig,
                'fence', fence)
  elseif ev == 'released' then
    id = append(KEYS[9], ARGV[6], ARGV[7], true, 'r1', t8 .. '\n' .. ex .. '\n' .. sig)
  else
    id = append(KEYS[9], ARGV[6], ARGV[7], true, 'event', ev, 'fence', fence or '',
                'token', t8)
  end
  if type(id) ~= 'string' then return end
  if ev == 'released' and sig == '' and (ex == '0' or ex == '') then
    n = redis.pcall('HSET', rec, 'ok', id)
  else
    keep_ok(KEYS[9])
    n = redis.pcall('HSET', rec, 'run', '1\n' .. id .. '\n' .. ev .. '\n' .. kind .. '\n' ..
                    ex .. '\n' .. sig .. '\n' .. t8 .. '\n\n' .. v)
  end
  if n == 1 then redis.pcall('PEXPIRE', rec, ARGV[7]) end
end
if cur == tok then
  local m = holder_meta(tok, 10)
  local fence, since, hu, pid, host, user = m[1], m[2], m[3], m[4], m[5], m[6]
  -- The holder's record in the layout of the record of the last runs; ''
  -- when none is found (its entry gone with the history, another client's).
  local v = ''
  if m[1] then
    v = m[1] .. '\n' .. (m[2] or '') .. '\n' .. (m[3] or '') .. '\n' .. (m[4] or '') ..
        '\n' .. (m[5] or '') .. '\n' .. (m[6] or '') .. '\n' .. (m[8] or '') .. '\n' ..
        (m[7] or '')
  end
  if ARGV[8] and ARGV[4] == '0' and ARGV[5] == '' and tonumber(since or '') then
    local once = tonumber(ARGV[8])
    local t = redis.call('TIME')
    local at = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    -- The grant's time is its entry id's, which runs ahead of the clock
    -- where the stream's ids do (a clock stepped back): not after now.
    since = string.format('%d', math.min(tonumber(since), at))
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
      -- The lock, its record and the hold stay until the hold's end: a
      -- release asked again finds them (and answers 2 again).
      redis.call('PEXPIRE', KEYS[1], left)
      redis.call('PEXPIRE', KEYS[2], left)
      redis.call('PEXPIRE', KEYS[11], left)
      redis.call('PEXPIRE', KEYS[12], left)
      released('x', v, fence)
      return 2
    end
  end
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[11], KEYS[12])
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
--@include entry.lua
--@include grant.lua
--@include holders.lua
--@include pool.lua
--@include line.lua
--@include baton.lua
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
  redis.call('HDEL', KEYS[4], tok, '#' .. tok)
  holders_expire()
  if redis.call('EXISTS', KEYS[5]) == 0 then return announce() end
end
line_purge()
if cur == tok and baton(ARGV[3]) then return 1 end
if wake(ARGV[3], nil) then return 3 end
return 1
