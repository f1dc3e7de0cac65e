-- Several locks at once (--with, issue 35): one script for the whole set
-- on one server, so that it is taken all or nothing.  KEYS: the lock key
-- P{N} of each name, the first the one the set is known by; the script
-- names each lock's other keys from it, as acquire.lua's short layout
-- does.  On a Cluster (only names whose keys share one slot) every key is
-- declared instead: each lock's thirteen, in the order of G below.  ARGV[1] says what to do, ARGV[2] is the
-- token:
--   'a' acquire: 3 ttl, 4 the holder's fields "KIND\nWAITED\nTOKEN8\nPID\n
--       HOST\nUSER\nNOTE\nCOMMAND" (acquire.lua's), 5 the waiter id (''
--       a try that takes no place), 6 join ('1': take a place in every
--       line), 7 and 8 the history's length and ttl, 9 the names, one a
--       line, 10 details ('1': a busy answer says who holds the first
--       lock held).  Answers {1, fence...} (one per name, in order), or
--       {0, pttl, place, joined, held}: pttl the shortest lease left among
--       the locks held (-1 none), place the nearest place to the head (-1
--       none), held the first lock held by an exclusive holder (1.., 0
--       none), and with details and such a lock its holder as acquire.lua's
--       busy answer gives it (host, pid, user, command, since, fence,
--       token8) and the server's time.  11 (absent: '0') a waiting
--       run's baton lease: in line, it leaves what a release needs to
--       grant it the whole set (baton.lua), for that long until it
--       confirms the grant with its next request, which finds the set
--       its own.
--   'e' extend: 3 ttl.  Answers 1, or 0 when the token holds not every one.
--   'r' release: 3 exit ('' unknown), 4 signal, 5 and 6 the history's
--       length and ttl.  Answers how many it held.
--   'l' leave the lines: 3 the waiter id, 4 and 5 the history's length and
--       ttl.  Answers 1.
--
-- The set waits as one waiter: one place in each lock's line, all with the
-- same score (one arrival, on the server's clock), so that two sets that
-- share names are in the same order in every line they share and never
-- wait on each other; it is granted only when it heads every line (or the
-- line is empty) and every lock is free, and single waiters that came
-- after it stay behind it (each line first come, first served).  A release
-- wakes a line's head as usual; a set woken tries the whole set again.
--
-- While held, P{N}:with of each lock keeps "TOKEN\nNAME\nFENCE\n..." (every
-- name of the set and its fence, in order), with the lock's expiry:
-- status shows the others held with a lock, and a release by token of the
-- first name frees them all.
local op, tok = ARGV[1], ARGV[2]
local G = {}
if #KEYS >= 13 and KEYS[2] == KEYS[1] .. ':owner' then
  -- The whole layout (a cluster): each lock's thirteen keys, declared.
  for i = 1, #KEYS / 13 do
    G[i] = {}
    for j = 1, 13 do G[i][j] = KEYS[(i - 1) * 13 + j] end
  end
else
  for i = 1, #KEYS do
    local l = KEYS[i]
    G[i] = {l, l .. ':owner', l .. ':holders', l .. ':holders:meta', l .. ':line',
            l .. ':line:lease', l .. ':line:who', l .. ':fence', l .. ':log', l .. ':once',
            l .. ':grant', l .. ':hold', l .. ':with'}
  end
end
local A = ARGV
local KEYS = G[1]
if op == 'e' then
  for i = 1, #G do
    if redis.call('GET', G[i][1]) ~= tok then return 0 end
  end
  for i = 1, #G do
    redis.call('PEXPIRE', G[i][1], A[3])
    redis.call('PEXPIRE', G[i][2], A[3])
    redis.call('PEXPIRE', G[i][11], A[3])
    redis.call('PEXPIRE', G[i][13], A[3])
  end
  return 1
end
--@include shrink.lua
--@include append.lua
--@include keep_ok.lua
--@include now.lua
--@include next_fence.lua
--@include entry.lua
--@include grant.lua
--@include holders.lua
--@include pool.lua
--@include line.lua
--@include baton.lua
--@include unpack_meta.lua
--@include holder_meta.lua
local t8 = string.sub(tok, 1, 8)
-- The release of the lock KEYS names, held by tok: its history entry and
-- the record of the last runs as release.lua writes them.  Once every
-- lock of the set is released, hand_on() gives each to the next in its
-- line (baton.lua: a single waiting run, or a set that heads every line
-- of its own and finds them all free) or wakes it.
local function release_one(ex, sig, hmax, httl, why)
  local m = holder_meta(tok, 10)
  local v = ''
  if m[1] then
    v = m[1] .. '\n' .. (m[2] or '') .. '\n' .. (m[3] or '') .. '\n' .. (m[4] or '') ..
        '\n' .. (m[5] or '') .. '\n' .. (m[6] or '') .. '\n' .. (m[8] or '') .. '\n' ..
        (m[7] or '')
  end
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[11], KEYS[12], KEYS[13])
  if hmax ~= '0' then
    local id
    if why then
      id = append(KEYS[9], hmax, httl, true, 'event', 'released', 'fence', m[1] or '',
                  'token', t8, 'since', m[2] or '', 'exit', '', 'reason', why)
    elseif sig == 'abandoned' then
      id = append(KEYS[9], hmax, httl, true, 'event', 'abandoned', 'fence', m[1] or '',
                  'token', t8)
    else
      id = append(KEYS[9], hmax, httl, true, 'r1', t8 .. '\n' .. ex .. '\n' .. sig,
                  'fence', m[1] or '')
    end
    if type(id) == 'string' and not why and sig ~= 'abandoned' then
      local rec, n = KEYS[9] .. ':last'
      if sig == '' and (ex == '0' or ex == '') then
        n = redis.pcall('HSET', rec, 'ok', id)
      else
        keep_ok(KEYS[9])
        n = redis.pcall('HSET', rec, 'run', '1\n' .. id .. '\nreleased\nx\n' .. ex .. '\n' ..
                        sig .. '\n' .. t8 .. '\n\n' .. v)
      end
      if n == 1 then redis.pcall('PEXPIRE', rec, httl) end
    end
  end
end
local function hand_on(touched)
  for _, i in ipairs(touched) do
    KEYS = G[i]
    if redis.call('EXISTS', KEYS[5]) == 1 then
      line_purge()
      if not baton(KEYS[1] .. ':wake:') then wake(KEYS[1] .. ':wake:', nil) end
    end
  end
end
if op == 'r' then
  local n, touched = 0, {}
  for i = 1, #G do
    KEYS = G[i]
    if redis.call('GET', KEYS[1]) == tok then
      release_one(A[3], A[4], A[5], A[6], nil)
      n = n + 1
      touched[#touched + 1] = i
    end
  end
  hand_on(touched)
  return n
end
if op == 'l' then
  local me, touched = 'x:' .. A[3], {}
  for i = 1, #G do
    KEYS = G[i]
    local was = false
    -- A grant whose answer was lost as the wait ended: given back.
    if redis.call('GET', KEYS[1]) == tok then
      release_one('', '', A[4], A[5], 'handed over as its wait ended')
      was = true
    end
    if redis.call('ZSCORE', KEYS[5], me) then
      leave(me)
      was = true
    end
    if was then touched[#touched + 1] = i end
  end
  hand_on(touched)
  return 1
end
if op ~= 'a' then return redis.error_reply('BADARGS the operation') end
local ttl, info, wid, join, hmax, httl = A[3], A[4], A[5], A[6] == '1', A[7], A[8]
local f8 = {string.match(info,
  '^[^\n]*\n[^\n]*\n[^\n]*\n([^\n]*)\n([^\n]*)\n([^\n]*)\n[^\n]*\n(.*)$')}
if not f8[4] then return redis.error_reply('BADARGS the holder fields') end
local names = {}
for v in string.gmatch(A[9] .. '\n', '([^\n]*)\n') do names[#names + 1] = v end
if #names ~= #G then return redis.error_reply('BADARGS the names') end
local me = wid ~= '' and ('x:' .. wid) or nil
-- A retry after a lost answer finds the set its own.
local mine = 0
for i = 1, #G do
  if redis.call('GET', G[i][1]) == tok then mine = mine + 1 end
end
if mine == #G then
  local w = redis.call('GET', G[1][13]) or ''
  local r = {1}
  local i = 0
  for v in string.gmatch(w, '([^\n]*)') do
    i = i + 1
    if i > 1 and i % 2 == 1 then r[#r + 1] = tonumber(v) end
  end
  if #r == #G + 1 then
    for j = 1, #G do
      for _, k in ipairs({1, 2, 11, 13}) do redis.call('PEXPIRE', G[j][k], ttl) end
    end
    return r
  end
end
-- Part of the set, left by a grant whose lease ran out in part: not a
-- hold of the set; given back before the set is asked for again.
if mine > 0 then
  for i = 1, #G do
    if redis.call('GET', G[i][1]) == tok then
      redis.call('DEL', G[i][1], G[i][2], G[i][11], G[i][13])
    end
  end
end
local free, pttl, places, near, hj, htok = true, -1, {}, -1, 0, nil
local function shortest(p)
  if p >= 0 and (pttl < 0 or p < pttl) then pttl = p end
end
for i = 1, #G do
  KEYS = G[i]
  local cur = redis.call('GET', KEYS[1])
  if cur then
    free = false
    shortest(redis.call('PTTL', KEYS[1]))
    if hj == 0 then hj, htok = i, cur end
  else
    holders_purge()
    local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
    if first[2] then
      free = false
      shortest(tonumber(first[2]) - now)
    end
  end
  line_purge()
  local place = me and redis.call('ZRANK', KEYS[5], me)
  places[i] = place
  if place then
    if place ~= 0 then free = false end
  elseif redis.call('EXISTS', KEYS[5]) == 1 then
    free = false
  end
end
if free then
  local r = {1}
  local rec = tok
  for i = 1, #G do
    KEYS = G[i]
    if places[i] then leave(me) end
    local others = {}
    for j = 1, #names do
      if j ~= i then others[#others + 1] = names[j] end
    end
    local g = grant_x(tok, ttl, info, '0', hmax, httl, false, 'with', table.concat(others, '\n'))
    if g.err then
      for j = 1, i - 1 do redis.call('DEL', G[j][1], G[j][2], G[j][11], G[j][13]) end
      return g
    end
    r[i + 1] = g[2]
    rec = rec .. '\n' .. names[i] .. '\n' .. ms(g[2])
  end
  for i = 1, #G do redis.call('SET', G[i][13], rec, 'PX', ttl) end
  return r
end
local joined = 0
if me then
  local have, missing = false, false
  for i = 1, #G do
    if places[i] then have = true else missing = true end
  end
  -- A place lost in one line (a stall past its lease) but kept in another
  -- would give the set two arrivals: it leaves every line and takes its
  -- places again, at the end of each, with one.
  if have and missing then
    for i = 1, #G do
      KEYS = G[i]
      if places[i] then
        leave(me)
        wake(KEYS[1] .. ':wake:', nil)
        places[i] = nil
      end
    end
  end
  if missing and join then
    -- One score for every line: after the last one each line gave in the
    -- last moments, and tied with none (a tie orders by member name).
    local at = sec * 1000000 + usec
    local lo, hi = ms(at), ms(at + @PRIO_STEP_US@ / 2)
    for i = 1, #G do
      local n = redis.call('ZCOUNT', G[i][5], lo, hi)
      if n > 0 then
        local last = redis.call('ZRANGEBYSCORE', G[i][5], lo, hi, 'WITHSCORES', 'LIMIT', n - 1, 1)
        if tonumber(last[2]) >= at then at = tonumber(last[2]) + 1 end
      end
    end
    local tied = true
    while tied do
      tied = false
      for i = 1, #G do
        if redis.call('ZCOUNT', G[i][5], ms(at), ms(at)) > 0 then tied = true end
      end
      if tied then at = at + 1 end
    end
    for i = 1, #G do
      KEYS = G[i]
      redis.call('ZADD', KEYS[5], ms(at), me)
      redis.call('HSET', KEYS[7], me, ms(now) .. '\n' .. f8[1] .. '\n' .. f8[2] .. '\n' ..
                 f8[3] .. '\n0\n' .. f8[4])
      places[i] = redis.call('ZRANK', KEYS[5], me)
    end
    joined = 1
  end
  for i = 1, #G do
    KEYS = G[i]
    local place = places[i]
    if place then
      if near < 0 or place < near then near = place end
      local lease = lease_for(place)
      redis.call('ZADD', KEYS[6], ms(now + lease), me)
      if joined == 1 or redis.call('PTTL', KEYS[5]) < 3 * lease then
        local keep = ms(4 * lease)
        redis.call('PEXPIRE', KEYS[5], keep)
        redis.call('PEXPIRE', KEYS[6], keep)
        redis.call('PEXPIRE', KEYS[7], keep)
      end
    end
  end
end
-- A waiting run's baton (baton.lua): what a release needs to grant it
-- the whole set, in every line it has its place in.
if me and A[11] and A[11] ~= '0' and places[1] and
   (joined == 1 or not redis.call('HGET', G[1][7], '&' .. me)) then
  local b = {tok, A[11], hmax, httl, ms(#G)}
  for i = 1, #G do b[#b + 1] = G[i][1] end
  for i = 1, #G do b[#b + 1] = names[i] end
  b[#b + 1] = info
  local v = table.concat(b, '\n')
  for i = 1, #G do
    if places[i] then redis.call('HSET', G[i][7], '&' .. me, v) end
  end
end
local r = {0, pttl, near, joined, hj}
if hj == 0 or A[10] ~= '1' then return r end
KEYS = G[hj]
local f = holder_meta(htok, 1)
local who = {f[5] or '', f[4] or '', f[6] or '', f[7] or '', f[2] or '', f[1] or '',
             string.sub(htok, 1, 8)}
for i = 1, 7 do r[#r + 1] = who[i] end
r[#r + 1] = ms(now)
return r
