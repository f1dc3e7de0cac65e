-- Acquire, in two layouts.  A first try sends KEYS: the lock key P{N}
-- alone; the script names the others from it (each P{N} and a suffix: one
-- hash tag, one slot).  ARGV: 1 token, 2 ttl, 3 the holder's fields
-- "KIND\nWAITED\nTOKEN8\nPID\nHOST\nUSER\nNOTE\nCOMMAND" (KIND x, s or the
-- limit N of a semaphore, WAITED the ms waited, NOTE without newlines),
-- which the grant records as they are (its history entry a1, and the
-- record P{N}:grant off the shortest path), and 4 the options, absent
-- when all are the defaults: "FAST\nDETAILS\nWAITER\nJOIN\nMIN-HOLD\n
-- HMAX\nHTTL\nPRIORITY\nSUPERSEDE\nONCE\nBATON-LEASE\nBATON-STAMP\n
-- ARRIVAL" (each below; FAST '+' or 'u' when a free lock may be granted
-- at once: exclusive, no --min-hold, no --once-per, the history's default
-- length and ttl; 'u' alone when nothing else is asked).
--
-- The path every uncontended lock takes comes first and costs the server
-- five commands (six with FAST 'u': TIME, for an id to the µs) and no Lua
-- function (issue 34): nobody in line, no shared holder and no fence
-- counter of an older rlock (EXISTS), the lock key set if free (SET NX
-- GET PX, Redis 7), the grant's history entry, whose id is the fence
-- (entry.lua) and whose fields are the holder's record (status and the
-- others find it there, holder_meta.lua), and the history's expiry set
-- again when less than 10^6 ms of it has gone (PTTL).  It
-- answers the entry's id, "MS-SEQ", from which the caller takes the fence.
-- One grant in sixteen (the token's last hex digit is 0: tokens are
-- random) trims the stream to about HISTORY_MAX.  Anything else goes on
-- to the whole script below, which answers as it always did.
--
-- The whole script.  Its keys, and its arguments as it takes them, which
-- a waiter that keeps a place in line sends as they are (the short layout
-- above is for a first try: named and parsed here):
--   KEYS  1 lock, 2 owner (an older rlock's record), 3 holders, 4 hmeta,
--         5 line, 6 lease, 7 who, 8 fence, 9 log, 10 once, 11 grant,
--         12 hold (lib/keys.h)
--   ARGV  1 token, 2 ttl, 3 host, 4 pid, 5 user, 6 command, 7 min-hold,
--         8 details, 9 kind, 10 waiter id ('' none: several masters keep
--         no line), 11 join, 12 the wake-up channels' prefix, 13 note,
--         14 ms waited, 15 and 16 the history's length and ttl, 17
--         priority, 18 supersede, 19 --once-per in ms, 20 and 21 a
--         waiting run's baton lease and stamp, 22 its arrival
local lkey, tok = KEYS[1], ARGV[1]
local taken, info
local K, A = KEYS, ARGV
if #KEYS == 1 then
  local opt = ARGV[4]
  local o1 = opt and string.byte(opt, 1)
  if (not opt or o1 == 43 or o1 == 117) and
     redis.call('EXISTS', lkey .. ':line', lkey .. ':holders', lkey .. ':fence') == 0 then
    local cur = redis.pcall('SET', lkey, tok, 'NX', 'GET', 'PX', ARGV[2])
    if not cur then
      taken = true
      local stream, fid = lkey .. ':log'
      local want, trim = '*', string.byte(tok, -1) == 48
      if o1 == 117 then
        -- u: the id MS-µs, so that fences order to the server's µs
        -- across masters a failover put side by side.
        local t = redis.call('TIME')
        local u = tonumber(t[2])
        want = t[1] .. string.format('%03d-%d', math.floor(u / 1000), u % 1000)
      end
      for _ = 1, 2 do
        if trim then
          fid = redis.pcall('XADD', stream, 'NOMKSTREAM', 'MAXLEN', '~', '@HISTORY_MAX@', want,
                            'a1', ARGV[3])
        else
          fid = redis.pcall('XADD', stream, 'NOMKSTREAM', want, 'a1', ARGV[3])
        end
        -- An id not above the stream's last: the next one the server gives.
        if want == '*' or type(fid) ~= 'table' or
           not string.find(fid.err or '', 'smaller', 1, true) then
          break
        end
        want = '*'
      end
      if type(fid) == 'string' and #fid <= 17 and string.find(fid, '-', 14, true) == 14 and
         fid < '9007199253691' then
        if redis.call('PTTL', stream) < @HISTORY_TTL_MS@ - 1000000 then
          redis.pcall('PEXPIRE', stream, '@HISTORY_TTL_MS@')
          redis.pcall('PEXPIRE', stream .. ':last', '@HISTORY_TTL_MS@')
        end
        return fid
      elseif type(fid) == 'string' then
        redis.pcall('XDEL', stream, fid)
      end
    elseif type(cur) == 'table' and not string.find(cur.err or '', 'syntax', 1, true) then
      -- Refused before anything was written (OOM, WRONGTYPE, READONLY,
      -- NOREPLICAS...): as it is.  A syntax error is a server before 7.0
      -- (no NX with GET): the whole script.
      return cur
    end
  end
  info = ARGV[3]
  local f8 = {string.match(info,
    '^([^\n]*)\n([^\n]*)\n[^\n]*\n([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n(.*)$')}
  if not f8[7] then return redis.error_reply('BADARGS the holder fields') end
  local op = {'+', '0', '', '0', '0', '@HISTORY_MAX@', '@HISTORY_TTL_MS@', '0', '0', '0', '0',
              '0', ''}
  if opt and opt ~= 'u' then
    op = {}
    for v in string.gmatch(opt .. '\n', '([^\n]*)\n') do op[#op + 1] = v end
    if #op ~= 13 then return redis.error_reply('BADARGS the options') end
  end
  K = {lkey, lkey .. ':owner', lkey .. ':holders', lkey .. ':holders:meta',
       lkey .. ':line', lkey .. ':line:lease', lkey .. ':line:who', lkey .. ':fence',
       lkey .. ':log', lkey .. ':once', lkey .. ':grant', lkey .. ':hold'}
  A = {tok, ARGV[2], f8[4], f8[3], f8[5], f8[7], op[5], op[2], f8[1], op[3], op[4],
       lkey .. ':wake:', f8[6], f8[2], op[6], op[7], op[8], op[9], op[10], op[11], op[12],
       op[13]}
else
  info = ARGV[9] .. '\n' .. ARGV[14] .. '\n' .. string.sub(tok, 1, 8) .. '\n' .. ARGV[4] ..
         '\n' .. ARGV[3] .. '\n' .. ARGV[5] .. '\n' .. ARGV[13] .. '\n' .. ARGV[6]
end
local KEYS, ARGV = K, A
--@include now.lua
--@include next_fence.lua
--@include unpack_meta.lua
--@include holder_meta.lua
--@include shrink.lua
--@include entry.lua
--@include fresh_fence.lua
--@include grant.lua
--@include owner_record.lua
--@include append.lua
-- The fast path set the lock, and its entry's stream was missing, refused
-- or gave an id that is no fence.
if taken then
  local g = grant_x(tok, ARGV[2], info, '0', ARGV[15], ARGV[16], true)
  -- No fence (a counter or a stream another client wrote): nothing granted.
  if g.err then redis.call('DEL', KEYS[1]) end
  return g
end
local k = ARGV[9]
-- A pool's waiter for pk members asks as "pK"; its holders' kind is 'p'.
local pk = tonumber(string.match(k, '^p(%d+)$') or '')
local kc = pk and 'p' or k
local cur = redis.call('GET', KEYS[1])
-- A baton that nobody took (baton.lua left '~baton', "LIST\nTOKEN\nAT",
-- in the line's record): its grant has waited in its waiter's list
-- LINE_BEAT_MS, where a live waiter pops it within milliseconds, so the
-- waiter is gone (killed, or stopped).  The grant is taken back with its
-- message, which can then never be popped, and recorded; the lock is the
-- line's again.
if cur and cur ~= tok then
  local bw, bt, bat = string.match(redis.call('HGET', KEYS[7], '~baton') or '',
                                    '^([^\n]*)\n([^\n]*)\n(%d+)$')
  if bt == cur and now - tonumber(bat) >= @LINE_BEAT_MS@ and
     string.sub(bw, 1, #lkey + 6) == lkey .. ':wake:' and
     string.sub(redis.call('LINDEX', bw, 0) or '', 1, #cur + 9) == 'granted\n' .. cur .. '\n' then
    local m = holder_meta(cur, 10)
    redis.call('DEL', bw, KEYS[1], KEYS[2], KEYS[11], KEYS[12])
    redis.call('HDEL', KEYS[7], '~baton')
    append(KEYS[9], ARGV[15], ARGV[16], true, 'event', 'released', 'fence', m[1] or '',
           'token', string.sub(cur, 1, 8), 'since', m[2] or '', 'exit', '',
           'reason', 'handed over to a waiter that never took it')
    cur = nil
  end
end
if cur == tok then
  -- Its baton, confirmed: nobody may take it back.
  if ARGV[10] ~= '' then redis.call('DEL', ARGV[12] .. ARGV[10]) end
  -- The record of the grant lives as long as the lock (grant.lua).
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[11], ARGV[2])
  local m = holder_meta(tok, 10)
  local held = m[1] and fence_of(m[1])
  if held and now - (tonumber(m[2]) or 0) < @BATON_REFENCE_MS@ then
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
    return {1, held}
  end
  local f, fs = fresh_fence()
  if not f then return fs end
  -- Its release goes the whole way (P{N}:hold, '0': no --min-hold, with
  -- the lock's expiry, which extend.lua gives it too), which writes this
  -- fence in its history entry: the grant's entry has the first.
  if not redis.call('GET', KEYS[12]) then redis.call('SET', KEYS[12], '0', 'PX', ARGV[2]) end
  local g = redis.call('GET', KEYS[11]) or ''
  local gid, grest = string.match(g, '^2\n([^\n]*)\n%d*(\n.*)$')
  if grest and string.match(grest, '^\n[^\n]*\n[^\n]*\n[^\n]*\n([^\n]*)') == string.sub(tok, 1, 8) then
    redis.call('SET', KEYS[11], '2\n' .. gid .. '\n' .. fs .. grest, 'PX', ARGV[2])
  else
    local v = redis.call('GET', KEYS[2]) or ''
    local since, orest = string.match(v, '^%d*\n(%d*)(\n.*)$')
    if orest then redis.call('SET', KEYS[2], fs .. '\n' .. since .. orest, 'PX', ARGV[2]) end
  end
  return {1, f}
end
local once = ARGV[19] and ARGV[19] ~= '0'
if not once and not cur and k == 'x' and redis.call('EXISTS', KEYS[3], KEYS[5]) == 0 then
  return grant_x(tok, ARGV[2], info, ARGV[7], ARGV[15], ARGV[16], false)
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
--@include slot.lua
--@include pool.lua
local function grant()
  if k == 'x' then return grant_x(tok, ARGV[2], info, ARGV[7], ARGV[15], ARGV[16], false) end
  if k == 's' then
    local f, fs, _, rec = grant_entry(ARGV[15], ARGV[16], info)
    if not f then return fs end
    redis.call('ZADD', KEYS[3], ms(now + ttl), tok)
    redis.call('HSET', KEYS[4], 'limit', k, tok, owner_record(fs, ARGV[7], ARGV[4],
               ARGV[3], ARGV[5], ARGV[13], ARGV[6]))
    holders_expire()
    if ARGV[15] == '0' then rec = nil end
    return {1, f, rec}
  end
  if pk then
    -- A pool's place comes with its members (pool.lua), in its entry.
    local got, _, total = pool_free(pk)
    if #got < pk then return redis.error_reply('POOLSMALL ' .. ms(total)) end
    local names = table.concat(got, '\n')
    local f, fs, _, rec = grant_entry(ARGV[15], ARGV[16], info, 'members', names)
    if not f then return fs end
    redis.call('ZADD', KEYS[3], ms(now + ttl), tok)
    redis.call('HSET', KEYS[4], 'limit', 'p', tok, owner_record(fs, ARGV[7], ARGV[4],
               ARGV[3], ARGV[5], ARGV[13], ARGV[6]), '#' .. tok, names)
    holders_expire()
    return {1, f, ARGV[15] == '0' and -1 or rec, pool_props(got)}
  end
  -- A semaphore's place comes with its slot (slot.lua), in its entry.
  local sl, se = slot_free(tok, tonumber(k))
  if not sl then return se end
  local f, fs, _, rec = grant_entry(ARGV[15], ARGV[16], info, 'slot', sl)
  if not f then return fs end
  redis.call('ZADD', KEYS[3], ms(now + ttl), tok)
  redis.call('HSET', KEYS[4], 'limit', k, tok, owner_record(fs, ARGV[7], ARGV[4],
             ARGV[3], ARGV[5], ARGV[13], ARGV[6]), '#' .. tok, sl)
  holders_expire()
  return {1, f, ARGV[15] == '0' and -1 or rec, tonumber(sl)}
end
--@include line.lua
if k ~= 'x' then
  local sc = redis.call('ZSCORE', KEYS[3], tok)
  if sc and tonumber(sc) > now then
    redis.call('ZADD', KEYS[3], ms(now + ttl), tok)
    holders_expire()
    local v = redis.call('HGET', KEYS[4], tok) or ''
    local of, rest = string.match(v, '^(%d*)(\n.*)$')
    local held = of and fence_of(of)
    -- Its slot, as it was granted (none: an older rlock's grant), or
    -- a pool's members.
    local sl, se
    if pk then
      local names = {}
      for m in string.gmatch((redis.call('HGET', KEYS[4], '#' .. tok) or '') .. '\n',
                             '([^\n]*)\n') do
        if m ~= '' then names[#names + 1] = m end
      end
      sl = pool_props(names)
    elseif k ~= 's' then
      sl, se = slot_of(tok, tonumber(k))
      if se then return se end
      sl = sl and tonumber(sl)
    end
    if held then return {1, held, -1, sl} end
    local f, fs = fresh_fence()
    if not f then return fs end
    if rest then redis.call('HSET', KEYS[4], tok, fs .. rest) end
    return {1, f, -1, sl}
  end
end
-- A pool with fewer members than asked for would never serve it.
if pk then
  local n = redis.call('HLEN', KEYS[1] .. ':members')
  if n < pk then return redis.error_reply('POOLSMALL ' .. ms(n)) end
end
local hk, hn = 'x', 1
if not cur then
  holders_purge()
  hk, hn = state()
end
if hk and hk ~= 'x' and hk ~= 's' and hk ~= kc then return {-1, hk} end
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
if hk ~= 'x' and (hk == nil or hk == kc) then
  if not me then
    let = k ~= 'x' or hk == nil
    if k ~= 's' and k ~= 'x' then let = not pk and hn < tonumber(k) end
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
  if place then
    leave(me)
    redis.call('DEL', ARGV[12] .. ARGV[10])
  end
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
    post(ARGV[12] .. string.match(old, '[^:]*$'), 'superseded', false)
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
  -- This try is what a wake-up waiting in its list asked for (line.lua):
  -- those go, and junk pushed there with them.
  redis.call('DEL', ARGV[12] .. ARGV[10])
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
local f, t8
if hk == 'x' then
  f, t8 = holder_meta(cur or '', 1), string.sub(cur or '', 1, 8)
else
  f, t8 = unpack_meta(redis.call('HGET', KEYS[4], first[1]) or ''), string.sub(first[1], 1, 8)
end
local who = {f[5] or '', f[4] or '', f[6] or '', f[7] or '', f[2] or '', f[1] or '', t8}
for i = 1, 7 do r[#r + 1] = who[i] end
r[#r + 1] = ms(now)
return r
