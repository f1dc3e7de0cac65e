-- Status.  KEYS: the twelve (lib/keys.c).  Reads only (expired holders and waiters are
-- skipped, not removed).  {held, pttl, host, pid, user, command, since,
-- fence, token prefix, now} as the acquire's busy answer lays out a
-- holder (the exclusive one, or the shared or semaphore holder whose
-- lease ends first), then the kind held ('x', 's', the limit, '' free),
-- the number of holders, the number waiting in line, the next in line
-- ("KIND:ID\nsince\npid\nhost\nuser\ncommand", '' none), up to 100
-- holders as {token prefix, ttl, metadata[, slot]} (slot.lua: none
-- without one),
-- the holder's note, and the
-- last completed run from the history ({id, {field, value, ...}} of the
-- newest released, lost or stepped-down entry among the last 50, then its grant's entry,
-- {} when not among them; {} none, or the stream refused: a read, so a
-- pcall), and the period done ({until, host, user, pid, since, done,
-- fence, per}, {} none).  KEYS: the nine and the period's record.
--@include now.lua
--@include unpack_meta.lua
--@include holder_meta.lua
-- An entry's event and token: a packed one's from its one field (a1 a
-- grant, "KIND\nWAITED\nTOKEN8\n...", r1 a release, "TOKEN8\n...").
local function event_of(e)
  local f = e[2][1]
  if f == 'a1' then return 'acquired' elseif f == 'r1' then return 'released' end
  return e[2][2]
end
local function token_of(e)
  local f = e[2][1]
  if f == 'a1' then return string.match(e[2][2] or '', '^[^\n]*\n[^\n]*\n([^\n]*)') end
  if f == 'r1' then return string.match(e[2][2] or '', '^([^\n]*)') end
  for i = 1, #e[2], 2 do
    if e[2][i] == 'token' then return e[2][i + 1] end
  end
end
-- The last fence handed out here: the newest grant's in the history (an
-- entry a1, or the acquired event several masters' history has), the
-- last exclusive grant's record (while it holds: it goes with the lock),
-- or the counter of an older rlock (or of grants the server refused the
-- history), the highest.
local function last_fence()
  local best = tonumber(redis.call('GET', KEYS[8]) or '') or 0
  local function of_id(eid, given)
    local m, q = string.match(eid or '', '^(%d+)%-(%d+)$')
    local f = tonumber(given or '') or (m and #m == 13 and #q <= 3 and
                                        (tonumber(m) + 1) * 1000 + tonumber(q))
    if f and f > best then best = f end
  end
  local gid, gf = string.match(redis.call('GET', KEYS[11]) or '', '^2\n([^\n]*)\n(%d*)\n')
  of_id(gid, gf)
  local es = redis.pcall('XREVRANGE', KEYS[9], '+', '-', 'COUNT', 20)
  if type(es) == 'table' and not es.err then
    for _, e in ipairs(es) do
      if e[2][1] == 'a1' then
        of_id(e[1], e[2][3] == 'fence' and e[2][4] or nil)
        break
      end
      if e[2][1] == 'event' and e[2][2] == 'acquired' then
        for i = 3, #e[2] - 1, 2 do
          if e[2][i] == 'fence' then of_id(nil, e[2][i + 1]) end
        end
        break
      end
    end
  end
  return ms(best)
end
local function last_run()
  local es = redis.pcall('XREVRANGE', KEYS[9], '+', '-', 'COUNT', 50)
  if type(es) ~= 'table' or es.err then return {}, {} end
  for i, e in ipairs(es) do
    local ev = event_of(e)
    if ev == 'released' or ev == 'abandoned' or ev == 'lost' or
       ev == 'stepped-down' then
      local tok = token_of(e)
      for j = i + 1, #es do
        if event_of(es[j]) == 'acquired' and token_of(es[j]) == tok then return e, es[j] end
      end
      return e, {}
    end
  end
  return {}, {}
end
local function once()
  local o = redis.call('HMGET', KEYS[10], 'until', 'host', 'user', 'pid', 'since', 'done', 'fence', 'per')
  if not o[1] then return {} end
  for i = 2, 8 do o[i] = o[i] or '' end
  return o
end
local run, grant = last_run()
local cur = redis.call('GET', KEYS[1])
local f = last_fence()
local nline = redis.call('ZCOUNT', KEYS[6], '(' .. ms(now), '+inf')
local head = ''
if nline > 0 then
  for _, m in ipairs(redis.call('ZRANGE', KEYS[5], 0, 63)) do
    local d = tonumber(redis.call('ZSCORE', KEYS[6], m) or '0')
    if d > now then
      head = m .. '\n' .. (redis.call('HGET', KEYS[7], m) or '')
      break
    end
  end
end
if cur then
  local m = holder_meta(cur, 10)
  return {1, redis.call('PTTL', KEYS[1]), m[5] or '', m[4] or '', m[6] or '',
          m[7] or '', m[2] or '', m[1] or f, string.sub(cur, 1, 8), ms(now),
          'x', 1, nline, head, {}, m[8] or '', run, grant, once()}
end
local hs = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. ms(now), '+inf',
                      'WITHSCORES', 'LIMIT', 0, 100)
if #hs == 0 then
  return {0, -2, '', '', '', '', '', f, '', ms(now), '', 0, nline, head, {}, '',
          run, grant, once()}
end
local list = {}
for i = 1, #hs, 2 do
  list[#list + 1] = {string.sub(hs[i], 1, 8), ms(tonumber(hs[i + 1]) - now),
                     redis.call('HGET', KEYS[4], hs[i]) or '',
                     redis.call('HGET', KEYS[4], '#' .. hs[i]) or nil}
end
local m = unpack_meta(list[1][3])
return {1, tonumber(list[1][2]), m[5] or '', m[4] or '', m[6] or '', m[7] or '',
        m[2] or '', m[1] or f, list[1][1], ms(now),
        redis.call('HGET', KEYS[4], 'limit') or 's',
        redis.call('ZCOUNT', KEYS[3], '(' .. ms(now), '+inf'), nline, head, list,
        m[8] or '', run, grant, once()}
