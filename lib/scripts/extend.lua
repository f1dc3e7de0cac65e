-- Extend.  KEYS: lock and meta (ARGV[3] 'x'), or holders and hmeta ('h').
-- ARGV: token, ttl, kind.  Only the two keys of the holder's kind, which
-- exist together while it holds: a cluster moving the slot serves the
-- renewal as long as both are on the same node (a request naming a key
-- that is missing there is refused with TRYAGAIN until the move ends).
-- A shared or semaphore holder whose lease ended is not brought back.
-- ARGV[2] '': only say whether token holds it, writing nothing (a nested
-- run's look at the hold of its ancestor).
if ARGV[2] == '' then
  if ARGV[3] == 'x' then return redis.call('GET', KEYS[1]) == ARGV[1] and 1 or 0 end
  local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
  if not held then return 0 end
  local t = redis.call('TIME')
  return tonumber(held) > tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) and 1 or 0
end
if ARGV[3] == 'x' then
  if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  -- The record of the grant (grant.lua) and P{N}:hold live as long as
  -- the lock: the hold's end is in its value and the record's, which the
  -- release reads (a hold key past it only sends the release the whole
  -- way).  Not declared: pcalls, so that a slot on the move, where either
  -- may be missing, refuses none of the renewal (a record gone early is
  -- read as none, holder_meta.lua).
  redis.pcall('PEXPIRE', KEYS[1] .. ':grant', ARGV[2])
  redis.pcall('PEXPIRE', KEYS[1] .. ':hold', ARGV[2])
  return 1
end
local sc = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not sc then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(sc) <= now then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1], '#' .. ARGV[1])
else
  redis.call('ZADD', KEYS[1], 'XX', string.format('%.0f', now + tonumber(ARGV[2])), ARGV[1])
end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if last[2] then
  redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', tonumber(last[2])))
  redis.call('PEXPIREAT', KEYS[2], string.format('%.0f', tonumber(last[2])))
else
  redis.call('DEL', KEYS[2])
end
return tonumber(sc) > now and 1 or 0
