-- A grant's history entry and its fence (docs/design.md#the-history).  A
-- grant is recorded by one entry, "a1" and the holder's fields (the acquire
-- script's ARGV[3]), and the entry's id is the fence: the id MS-SEQ gives
-- (MS + 1) * 1000 + SEQ.  A stream's ids never go back while it lives
-- (XADD takes the server's clock, or the last id's MS and the next SEQ
-- when the clock is behind it), and when it is gone (the history expired
-- or was deleted) the clock starts it again above every fence handed out
-- before, as long as the clock did not go back: the floor the fence
-- counter gave, without a write of its own on the path every lock takes.
-- The + 1 puts a fence above those an older rlock handed out (the clock in
-- µs) up to the same millisecond.
--
-- fence_of_id(id): the fence of entry id, or nil when it gives none (MS
-- not 13 digits, SEQ above 999, or a fence that would reach FENCE_LIMIT).
local function fence_of_id(eid)
  local m, q = string.match(eid, '^(%d+)%-(%d+)$')
  if m and #m == 13 and #q <= 3 and m < '9007199253691' then
    return (tonumber(m) + 1) * 1000 + tonumber(q)
  end
end
-- acl_refused(e): whether the error text e of a call the script made says
-- the server's ACL refused it.  By its kind where the server says one
-- (NOPERM), else in the words each server puts in a script's way: "ERR
-- ACL failure in script: ..." (Valkey, Redis 7.2 and later), "The user
-- executing the script can't ..." (Redis 7.0 and 7.0's forks).
local function acl_refused(e)
  return string.find(e, '^NOPERM') ~= nil or
         string.find(e, 'ACL failure in script', 1, true) ~= nil or
         string.find(e, 'user executing the script can', 1, true) ~= nil
end
-- xadd(stream, max, nomk, eid, ...): XADD with id eid, trimmed to about
-- max entries, into a stream that exists only when nomk.  Max '0' keeps
-- no entry: the caller deletes the one added (a stream that several
-- masters' history is recorded in otherwise, by log.lua, is not trimmed
-- to nothing).  A pcall: its error is the caller's to read.
local function xadd(stream, max, nomk, eid, ...)
  if max == '0' then
    if nomk then return redis.pcall('XADD', stream, 'NOMKSTREAM', eid, ...) end
    return redis.pcall('XADD', stream, eid, ...)
  end
  if nomk then return redis.pcall('XADD', stream, 'NOMKSTREAM', 'MAXLEN', '~', max, eid, ...) end
  return redis.pcall('XADD', stream, 'MAXLEN', '~', max, eid, ...)
end
-- grant_entry(hmax, httl, fields, ...): append the grant's entry to the
-- history (KEYS[9]), its fields "a1" and fields then the field/value pairs
-- given (a semaphore's "slot", a pool's "members", the locks held --with
-- it), its id the server's clock to the µs (MS and, as SEQ,
-- the µs within it), and return its fence, the fence's digits, the
-- entry's id and 1.  An id that gives no fence (SEQ past 999) is replaced by the
-- next millisecond's first.  The fence counter an older rlock left
-- (KEYS[8]) is a floor: the entry's id is put above it, and the counter
-- deleted (the shortest path, acquire.lua, is taken only without one); a
-- counter rlock did not write is an error.  The stream's expiry is set
-- again to httl when the stream is new or less than 10^6 ms of it has
-- gone.  A server that refuses the stream (an ACL without XADD: 0, a key
-- of another type: 2, the fourth value) gets the fence from the counter
-- (next_fence.lua) and no id.  Returns nil and an error reply when
-- neither gives a fence.  A stream made here is shrunk to the size it
-- holds (shrink.lua, which comes before this, where the script includes
-- it).
local function grant_entry(hmax, httl, fields, ...)
  local stream = KEYS[9]
  -- The id MS-µs of the server's clock: fences order to the µs across
  -- masters a failover put side by side; one not above the stream's last
  -- gives way to the next the server gives.
  local want = ms(now) .. '-' .. ms(usec % 1000)
  local eid = xadd(stream, hmax, true, want, 'a1', fields, ...)
  if type(eid) == 'table' and string.find(eid.err or '', 'smaller', 1, true) then
    want = '*'
    eid = xadd(stream, hmax, true, want, 'a1', fields, ...)
  end
  local made = false
  -- A server before 6.2 knows no NOMKSTREAM: the stream is made as new.
  if type(eid) == 'table' and not string.find(eid.err or '', 'WRONGTYPE', 1, true) then
    eid = false
  end
  if eid == false then
    eid = xadd(stream, hmax, false, want, 'a1', fields, ...)
    made = true
  end
  if type(eid) ~= 'string' then
    local wrongtype = string.find(eid.err or '', 'WRONGTYPE', 1, true)
    -- Only a refusal of the history (an ACL without XADD, a key of
    -- another type) leaves the fence to the counter: the server's state
    -- (OOM, NOREPLICAS...) is the caller's error.
    if not wrongtype and not acl_refused(eid.err or '') then
      return nil, eid
    end
    local f, fs = next_fence()
    if not f then return nil, fs end
    return f, fs, nil, wrongtype and 2 or 0
  end
  local f = fence_of_id(eid)
  if not f then
    local was = eid
    local m = string.match(eid, '^(%d%d%d%d%d%d%d%d%d%d%d%d%d)%-%d+$')
    redis.pcall('XDEL', stream, eid)
    if m and m < '9007199253690' then
      eid = xadd(stream, hmax, true, ms(tonumber(m) + 1) .. '-0', 'a1', fields, ...)
      f = type(eid) == 'string' and fence_of_id(eid)
    end
    if not f then return nil, redis.error_reply('BADSTREAM ' .. string.sub(was, 1, 64)) end
  end
  local c = redis.call('GET', KEYS[8])
  if c then
    local floor = fence_of(c)
    -- The entry is taken back (the stream too when this call made it: no
    -- key without an expiry is left behind) and the counter left as it is.
    if not floor or (f <= floor and floor >= 9007199253691999) then
      if made then redis.call('DEL', stream) else redis.pcall('XDEL', stream, eid) end
      -- No id gives a fence above 9007199253691999 (MS below
      -- 9007199253691): a floor there leaves none to hand out.
      if floor then return nil, fence_limit(c) end
      return nil, bad_fence(c)
    end
    if f <= floor then
      -- The floor's id is above the stream's last (this one): XADD takes it.
      redis.pcall('XDEL', stream, eid)
      eid = xadd(stream, hmax, true, ms(math.floor((floor + 1) / 1000) - 1) .. '-' ..
                 ms((floor + 1) % 1000), 'a1', fields, ...)
      if type(eid) ~= 'string' then return nil, eid end
      f = fence_of_id(eid)
      if not f then return nil, redis.error_reply('BADSTREAM ' .. string.sub(eid, 1, 64)) end
    end
    redis.call('DEL', KEYS[8])
  end
  -- ttl '0' (several masters, whose history log.lua writes): the
  -- stream's expiry is that history's.
  if httl ~= '0' and (made or redis.call('PTTL', stream) < tonumber(httl) - 1000000) then
    redis.pcall('PEXPIRE', stream, httl)
    redis.pcall('PEXPIRE', stream .. ':last', httl)
  end
  if hmax == '0' then
    redis.pcall('XDEL', stream, eid)
  elseif made then
    shrink(stream)
  end
  return f, ms(f), eid, 1
end
