-- state(): what the lock is held as, and by how many: 'x' and 1 for the
-- exclusive holder, the holders' kind ('s' shared, or a semaphore's limit)
-- and their number, or nil and 0 when it is free.
local function state()
  if redis.call('EXISTS', KEYS[1]) == 1 then return 'x', 1 end
  local n = redis.call('ZCARD', KEYS[3])
  if n == 0 then return nil, 0 end
  return redis.call('HGET', KEYS[4], 'limit') or 's', n
end
