-- Pools (issue 35).  A pool NAME is a lock whose holders each hold a set
-- of its members: a semaphore whose slots have names.  The members are
-- the hash P{N}:members (KEYS[1] .. ':members', no expiry): member name
-- -> its properties, "KEY=VALUE" lines.  A holder is a place in
-- P{N}:holders as a semaphore's is, its record in P{N}:holders:meta
-- (whose limit is 'p'), and its members the field '#TOKEN' there (the
-- field of a semaphore holder's slot, slot.lua), newline-separated: they
-- go with the holder (release, purge, extend, force), and a member is
-- free when it is in P{N}:members and no live holder has it.  A member
-- removed while held stays with its holder and is not given again; one
-- added again while held is not free until its holder lets it go.  A
-- waiter for K members is "pK:ID" in the line (line.lua).
--
-- pool_held(): the set of members live holders have.  pool_free(n): up
-- to n free members, lowest name first, how many are free, and how many
-- members there are.
local function pool_held()
  local live = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. ms(now), '+inf')
  local held = {}
  for at = 1, #live, 1000 do
    local f = {}
    for i = at, math.min(at + 999, #live) do f[#f + 1] = '#' .. live[i] end
    for _, v in ipairs(redis.call('HMGET', KEYS[4], unpack(f))) do
      if v then
        for m in string.gmatch(v .. '\n', '([^\n]*)\n') do held[m] = true end
      end
    end
  end
  return held
end
local function pool_free(n)
  local all = redis.call('HKEYS', KEYS[1] .. ':members')
  table.sort(all)
  local held = pool_held()
  local got, nfree = {}, 0
  for _, m in ipairs(all) do
    if not held[m] then
      nfree = nfree + 1
      if #got < n then got[#got + 1] = m end
    end
  end
  return got, nfree, #all
end
