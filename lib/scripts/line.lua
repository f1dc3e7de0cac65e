-- The line.  A member leaves when it is granted, gives up, or its lease
-- ended.
-- ok(mk, i, first, hk, hn) says whether the waiter of kind mk at place i
-- (1 the head) may be let in now with hk, hn held (state()), first being
-- the kind at the head: only the head when exclusive, a run of shared
-- waiters together, a semaphore's waiters while places are free, and a
-- run of a pool's waiters for K members each ("pK") while K members are
-- free for each (pool.lua): a waiter for another K waits its turn.
-- wake(prefix, skip) tells each of those (skip aside) on its wake-up list,
-- prefix .. ID, which the waiter pops (BLPOP) on its one connection
-- (issue 46); nothing is lost between its pops, and one "wake" waiting is
-- enough.  A waiter whose process died is not seen here: its place runs
-- out with its lease, which a wake-up cuts back to LINE_LEASE_MS.
-- post(key, msg, only_if_empty) pushes msg, the list kept for
-- WAKE_TTL_MS: false when refused (an ACL user without the key).
-- wake returns true when a push was refused.
--@include state.lua
-- (pool.lua comes before it, where the script includes it.)
-- A line left empty keeps no record of a baton (baton.lua): its keys go.
local function emptied()
  if redis.call('EXISTS', KEYS[5]) == 0 then redis.call('HDEL', KEYS[7], '~baton') end
end
local function leave(m)
  redis.call('ZREM', KEYS[5], m)
  redis.call('ZREM', KEYS[6], m)
  redis.call('HDEL', KEYS[7], m, '^' .. m, '&' .. m)
  emptied()
end
local function line_purge()
  local gone = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', ms(now), 'LIMIT', 0, 64)
  if #gone > 0 then
    redis.call('ZREM', KEYS[5], unpack(gone))
    redis.call('ZREM', KEYS[6], unpack(gone))
    redis.call('HDEL', KEYS[7], unpack(gone))
    local n = #gone
    for i = 1, n do
      gone[n + i] = '&' .. gone[i]
      gone[i] = '^' .. gone[i]
    end
    redis.call('HDEL', KEYS[7], unpack(gone))
    emptied()
  end
end
local function kind(m)
  local mk = string.match(m, '^([xs]):') or string.match(m, '^(%d+):') or
             string.match(m, '^(p%d+):')
  if not mk then error('BADLINE ' .. string.sub(m, 1, 64), 0) end
  return mk
end
local pool_left = 0
local function ok(mk, i, first, hk, hn)
  if hk == 'x' or mk ~= first then return false end
  if mk == 'x' then return i == 1 and hk == nil end
  if string.byte(mk, 1) == 112 then
    if hk ~= nil and hk ~= 'p' then return false end
    -- Callers ask from the head on: the free members, counted once.
    if i == 1 then
      local _, nf = pool_free(0)
      pool_left = nf
    end
    return i * tonumber(string.sub(mk, 2)) <= pool_left
  end
  if hk ~= nil and hk ~= mk then return false end
  if mk == 's' then return true end
  return hn + i <= tonumber(mk)
end
local function lease_for(p)
  if not p or p < @LINE_NEAR@ then return @LINE_LEASE_MS@ end
  return math.min(@LINE_LEASE_MS@ * p / @LINE_NEAR@, @LINE_LEASE_MS@ * @LINE_FAR_MAX@)
end
local function post(key, msg, only_if_empty)
  if only_if_empty and redis.call('EXISTS', key) == 1 then return true end
  if not only_if_empty then redis.call('DEL', key) end
  local p = redis.pcall('RPUSH', key, msg)
  if type(p) == 'table' then return false end
  redis.call('PEXPIRE', key, @WAKE_TTL_MS@)
  return true
end
local function wake(prefix, skip)
  local hk, hn = state()
  if hk == 'x' then return false end
  local es = redis.call('ZRANGE', KEYS[5], 0, 0)
  if es[1] and kind(es[1]) ~= 'x' then es = redis.call('ZRANGE', KEYS[5], 0, 63) end
  local refused = false
  for i, e in ipairs(es) do
    if not ok(kind(e), i, kind(es[1]), hk, hn) then break end
    if e ~= skip then
      if not post(prefix .. string.match(e, '[^:]*$'), 'wake', true) then refused = true end
      if tonumber(redis.call('ZSCORE', KEYS[6], e) or '0') > now + lease_for(0) then
        redis.call('ZADD', KEYS[6], ms(now + lease_for(0)), e)
      end
    end
  end
  return refused
end
