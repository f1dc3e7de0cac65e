-- Slots of a semaphore (--limit N, issue 35): each holder is given the
-- lowest slot 0..N-1 that no live holder has, in the script that grants
-- it, and keeps it until it leaves.  A holder's slot is the field
-- '#TOKEN' of P{N}:holders:meta (KEYS[4]), its value the slot's decimal
-- digits, beside the holder's record (field TOKEN): it goes with the
-- record (release, holders_purge, extend, force) and with the hash.  A
-- field left behind by a holder that is no longer in P{N}:holders (an
-- older rlock's purge) is not read: only live holders' slots count.
--
-- A live holder without a slot (granted by an older rlock) counts as
-- holding the lowest slot that no recorded holder has, so a new holder
-- never takes a slot that such a holder may be thought to use: with
-- fewer than N holders there is always one left.  A slot that is not
-- digits below N is not rlock's: nothing is granted, and the error
-- BADSLOT names it, never a slot of 0.
--
-- slot_of(who, limit): token who's slot, its digits; nil when it has
-- none; or nil and the BADSLOT error reply.  slot_free(who, limit): the
-- lowest slot free for who among limit (the caller records it); or nil
-- and the error reply.
local function slot_ok(v, limit)
  if #v >= 1 and #v <= 6 and not string.find(v, '%D') and
     (#v == 1 or string.byte(v, 1) ~= 48) and tonumber(v) < limit then
    return tonumber(v)
  end
end
local function bad_slot(v)
  return redis.error_reply('BADSLOT ' .. string.sub(v, 1, 64))
end
local function slot_of(who, limit)
  local v = redis.call('HGET', KEYS[4], '#' .. who)
  if not v then return nil end
  if not slot_ok(v, limit) then return nil, bad_slot(v) end
  return v
end
local function slot_free(who, limit)
  local live = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. ms(now), '+inf')
  local used, unknown = {}, 0
  -- HMGET in pieces: unpack() has room for a few thousand values.
  for at = 1, #live, 1000 do
    local f = {}
    for i = at, math.min(at + 999, #live) do f[#f + 1] = '#' .. live[i] end
    local v = redis.call('HMGET', KEYS[4], unpack(f))
    for i = 1, #f do
      if live[at + i - 1] ~= who then
        if v[i] then
          local n = slot_ok(v[i], limit)
          if not n then return nil, bad_slot(v[i]) end
          used[n] = true
        else
          unknown = unknown + 1
        end
      end
    end
  end
  for s = 0, limit - 1 do
    if not used[s] then
      if unknown == 0 then return ms(s) end
      unknown = unknown - 1
    end
  end
  return nil, redis.error_reply('BADSLOT none free of ' .. ms(limit))
end
-- pool_props(names): a pool's members names (pool.lua) and their
-- properties, {name, properties, ...} ('' for a member removed since).
local function pool_props(names)
  local r = {}
  if #names == 0 then return r end
  local v = redis.call('HMGET', KEYS[1] .. ':members', unpack(names))
  for i, m in ipairs(names) do
    r[#r + 1] = m
    r[#r + 1] = v[i] or ''
  end
  return r
end
