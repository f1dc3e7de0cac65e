-- Fence.  KEYS: the eight (lock, meta, fence).  ARGV: token, fence.
-- With several masters the fence handed out is the highest of the
-- majority's counters; raising the others to it (never lowering one)
-- makes every later majority, which shares a master with this one, count
-- above it.  A minority grant that was undone still moved its master's
-- counter, so without this the next fence could be lower than the last.
--@include fence_of.lua
local v = redis.call('GET', KEYS[8])
local c = 0
if v then
  c = fence_of(v)
  if not c then return bad_fence(v) end
end
if c < tonumber(ARGV[2]) then redis.call('SET', KEYS[8], ARGV[2]) end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  local rest = string.match(redis.call('GET', KEYS[2]) or '', '^%d*(\n.*)$')
  if rest then redis.call('SET', KEYS[2], ARGV[2] .. rest, 'KEEPTTL') end
end
return 1
