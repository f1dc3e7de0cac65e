-- Fence.  KEYS: the twelve (lib/keys.c).  ARGV: token, fence.
-- With several masters the fence handed out is the highest the majority
-- gave; raising the others to it (never lowering one) makes every later
-- majority, which shares a master with this one, count above it.  A
-- minority grant that was undone still moved its master's stream on, so
-- without this the next fence could be lower than the last.
--@include fence_of.lua
-- The stream's ids, which the next grants' fences come from: an entry
-- with the id of this fence, added and removed at once, when it is above
-- the last (XADD refuses an id that is not).  With no stream, or one the
-- server refuses, the counter is the floor (entry.lua), kept as long as a
-- history (next_fence.lua).
local F = tonumber(ARGV[2])
local fid = string.format('%d-%d', math.floor(F / 1000) - 1, F % 1000)
local e = redis.pcall('XADD', KEYS[9], 'NOMKSTREAM', fid, 'f', '')
if type(e) == 'string' then
  redis.pcall('XDEL', KEYS[9], e)
elseif not (type(e) == 'table' and string.find(e.err or '', 'smaller', 1, true)) then
  local v = redis.call('GET', KEYS[8])
  local c = 0
  if v then
    c = fence_of(v)
    if not c then return bad_fence(v) end
  end
  if c < F then redis.call('SET', KEYS[8], ARGV[2], 'PX', '@HISTORY_TTL_MS@') end
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  local g = redis.call('GET', KEYS[11]) or ''
  local gid, rest = string.match(g, '^2\n([^\n]*)\n%d*(\n.*)$')
  if rest and string.match(rest, '^\n[^\n]*\n[^\n]*\n[^\n]*\n([^\n]*)') == string.sub(ARGV[1], 1, 8) then
    redis.call('SET', KEYS[11], '2\n' .. gid .. '\n' .. ARGV[2] .. rest, 'KEEPTTL')
  else
    local orest = string.match(redis.call('GET', KEYS[2]) or '', '^%d*(\n.*)$')
    if orest then redis.call('SET', KEYS[2], ARGV[2] .. orest, 'KEEPTTL') end
  end
end
return 1
