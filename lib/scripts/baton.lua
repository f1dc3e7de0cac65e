-- The baton: a release hands the exclusive lock it freed (KEYS, its
-- layout) to the head of its line in the same script and tells it on its
-- wake-up list (line.lua's post), where the waiter pops it: "granted\n
-- TOKEN\nFENCE\nSTAMP\nAGE\nRECORDED".  TOKEN is the waiter's own (the
-- lock key and its record in the line show it to whoever reads them: a
-- message is as much to be trusted as the lock key), STAMP the waiter's
-- clock when it sent the beat that left the record below, AGE the
-- server's ms from that beat to this grant, so that the waiter times its
-- first lease from STAMP + AGE without asking (lib/lock.c), and RECORDED
-- whether the history took the grant.  The head takes it when it left
-- what the grant needs in P{N}:line:who (KEYS[7]):
--   "^KIND:ID" a single waiting run (acquire.lua): "TOKEN\nLEASE\nHOLD\n
--       STAMP\nAT\nHMAX\nHTTL\nNOTE";
--   "&x:ID" a waiting set (--with, with.lua), the same in the line of each
--       of its locks: "TOKEN\nLEASE\nHMAX\nHTTL\nK\n" then the K lock keys
--       and the K names, one a line, in the set's order, then the holder's
--       fields "KIND\nWAITED\nTOKEN8\nPID\nHOST\nUSER\nNOTE\nCOMMAND";
--       told "wake", it confirms the grant with its next request.
-- A set is handed the baton only when it heads the line of every one of
-- its locks and every one is free (no holder, no shared holder): the set
-- is granted whole, as with.lua grants it, or not at all, and nobody
-- overtakes anyone in any line.  LEASE is a short first lease, which the
-- waiter's first renewal makes its TTL: a head whose process died would
-- hold the lock that long, but the next in line takes the grant back once
-- its message has waited in the list LINE_BEAT_MS (acquire.lua).
-- baton(prefix), prefix the wake-up lists' of this lock: true when the
-- lock was handed on, false when the caller is to wake the line instead.
local function take_lines(s, n)
  local out, at = {}, 1
  for i = 1, n do
    local e = string.find(s, '\n', at, true)
    if not e then return nil end
    out[i] = string.sub(s, at, e - 1)
    at = e + 1
  end
  return out, string.sub(s, at)
end
local function layout(l)
  return {l, l .. ':owner', l .. ':holders', l .. ':holders:meta', l .. ':line',
          l .. ':line:lease', l .. ':line:who', l .. ':fence', l .. ':log', l .. ':once',
          l .. ':grant', l .. ':hold', l .. ':with'}
end
-- The set m heads every line of, with its record b: true granted, false
-- not now.
local function set_baton(m, b, prefix)
  local h, rest = take_lines(b, 5)
  local k = h and tonumber(h[5])
  if not k or k < 1 or k > 16 or h[1] == '' or not string.match(h[2], '^%d+$') or
     not string.match(h[3], '^%d+$') or not string.match(h[4], '^%d+$') then
    return false
  end
  local kn, info = take_lines(rest, 2 * k)
  if not kn then return false end
  -- Each key the lock key of its name, this lock's among them: a record
  -- that says otherwise is nobody's to act on.
  local mine = false
  for j = 1, k do
    if string.sub(kn[j], -(#kn[k + j] + 2)) ~= '{' .. kn[k + j] .. '}' then return false end
    if kn[j] == KEYS[1] then mine = true end
  end
  if not mine then return false end
  local kind1, fields = string.match(info, '^([^\n]*)\n[^\n]*\n(.*)$')
  local since = string.match(redis.call('HGET', KEYS[7], m) or '', '^(%d+)\n')
  if not kind1 or not since then return false end
  local here, L = KEYS, {}
  for j = 1, k do
    KEYS = layout(kn[j])
    L[j] = KEYS
    holders_purge()
    line_purge()
    if state() or redis.call('ZRANGE', KEYS[5], 0, 0)[1] ~= m then
      KEYS = here
      return false
    end
  end
  KEYS = here
  if not post(prefix .. string.match(m, '[^:]*$'), 'wake', false) then return false end
  for j = 1, k do
    KEYS = L[j]
    leave(m)
  end
  local btok = h[1]
  local v = kind1 .. '\n' .. ms(now - tonumber(since)) .. '\n' .. fields
  local rec = btok
  for j = 1, k do
    KEYS = L[j]
    local others = {}
    for i = 1, k do
      if i ~= j then others[#others + 1] = kn[k + i] end
    end
    local g = grant_x(btok, h[2], v, '0', h[3], h[4], false, 'with', table.concat(others, '\n'))
    if g.err then
      for i = 1, j - 1 do redis.call('DEL', L[i][1], L[i][2], L[i][11], L[i][13]) end
      KEYS = here
      return false
    end
    rec = rec .. '\n' .. kn[k + j] .. '\n' .. ms(g[2])
  end
  for j = 1, k do redis.call('SET', L[j][13], rec, 'PX', h[2]) end
  KEYS = here
  return true
end
local function baton(prefix)
  if redis.call('EXISTS', KEYS[1]) == 1 then return false end
  local m = redis.call('ZRANGE', KEYS[5], 0, 0)[1]
  if not m or kind(m) ~= 'x' then return false end
  local sb = redis.call('HGET', KEYS[7], '&' .. m)
  if sb then return set_baton(m, sb, prefix) end
  local b = redis.call('HGET', KEYS[7], '^' .. m)
  if not b then return false end
  local btok, lease, hold, stamp, at, hmax, httl, note = string.match(b,
    '^([^\n]*)\n(%d+)\n(%d+)\n(%d+)\n(%d+)\n(%d+)\n(%d+)\n(.*)$')
  local since, pid, host, user, cmd = string.match(redis.call('HGET', KEYS[7], m) or '',
    '^(%d+)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n[^\n]*\n(.*)$')
  if not btok or not since then return false end
  local ch = prefix .. string.match(m, '[^:]*$')
  if not post(ch, 'wake', false) then return false end
  leave(m)
  if redis.call('HGET', KEYS[7], '~sup') == m then redis.call('HDEL', KEYS[7], '~sup') end
  local g = grant_x(btok, lease, 'x\n' .. ms(now - tonumber(since)) .. '\n' ..
                    string.sub(btok, 1, 8) .. '\n' .. pid .. '\n' .. host .. '\n' ..
                    user .. '\n' .. note .. '\n' .. cmd, hold, hmax, httl, false)
  if g.err then return false end
  local fs, rec = ms(g[2]), g[3]
  redis.call('LSET', ch, 0, 'granted\n' .. btok .. '\n' .. fs .. '\n' .. stamp .. '\n' ..
             ms(math.max(now - tonumber(at), 0)) .. '\n' .. (rec or ''))
  -- For the next in line to take it back if nobody pops it (acquire.lua).
  if redis.call('EXISTS', KEYS[5]) == 1 then
    redis.call('HSET', KEYS[7], '~baton', ch .. '\n' .. btok .. '\n' .. ms(now))
  end
  return true
end
