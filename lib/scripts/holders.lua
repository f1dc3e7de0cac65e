-- Holders of a shared lock or semaphore: drop those whose lease ended
-- (their records and slots), keep both keys alive as long as the longest
-- lease.
local function holders_expire()
  local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
  if last[2] then
    redis.call('PEXPIREAT', KEYS[3], ms(tonumber(last[2])))
    redis.call('PEXPIREAT', KEYS[4], ms(tonumber(last[2])))
  else
    redis.call('DEL', KEYS[4])
  end
end
local function holders_purge()
  local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ms(now), 'LIMIT', 0, 64)
  if #gone > 0 then
    redis.call('ZREM', KEYS[3], unpack(gone))
    redis.call('HDEL', KEYS[4], unpack(gone))
    -- Their slots (slot.lua) free with them.
    for i = 1, #gone do gone[i] = '#' .. gone[i] end
    redis.call('HDEL', KEYS[4], unpack(gone))
    holders_expire()
  end
end
