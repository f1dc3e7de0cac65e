-- The history (docs/design.md#the-history): record(key, max, ttl, ...)
-- appends one entry of field/value pairs to the lock's stream, trimmed to
-- about max entries, and keeps the stream ttl ms from now.  max '0' records
-- nothing.
-- A pcall: a server or ACL that refuses the stream (a user without +xadd,
-- a server without streams) never fails the lock operation around it.
-- Returns the entry's id, 0 refused (2: the key is not a stream, another
-- client's data), nil not asked to; a new stream's expiry is also given
-- to the record of its last runs, KEY:last (the release script's).  A
-- stream whose first entry this is (made here, or left empty by the
-- grants of several masters, which take their fence from an entry added
-- and removed: entry.lua) is shrunk to the size it holds (shrink.lua,
-- which comes before this, where the script includes it).
local function record(key, max, ttl, ...)
  if max == '0' then return nil end
  local id = redis.pcall('XADD', key, 'MAXLEN', '~', max, '*', ...)
  if type(id) ~= 'string' then
    return string.find(id.err or '', 'WRONGTYPE', 1, true) and 2 or 0
  end
  redis.pcall('PEXPIRE', key, ttl)
  redis.pcall('PEXPIRE', key .. ':last', ttl)
  if redis.pcall('XLEN', key) == 1 then shrink(key) end
  return id
end
