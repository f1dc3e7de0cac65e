-- The history (DESIGN section 3): record(key, max, ttl, ...) appends one
-- entry of field/value pairs to the lock's stream, trimmed to about max
-- entries, and keeps the stream ttl ms from now.  max '0' records nothing.
-- A pcall: a server or ACL that refuses the stream (a user without +xadd,
-- a server without streams) never fails the lock operation around it.
-- Returns the entry's id, 0 refused (2: the key is not a stream, another
-- client's data), nil not asked to; a new stream's expiry is also given
-- to the record of its last runs, KEY:last (the release script's).
--
-- append(key, max, ttl, keep, ...) is record() where the stream's expiry
-- may stand (keep): it only adds the entry to a stream that exists
-- (NOMKSTREAM, one command where record takes two), and falls back to
-- record() when the stream is gone or the server is older than 6.2.  A
-- grant keeps the expiry when the grant before it was in the same hour (the
-- first grant of each hour set it): the history outlives its last grant by
-- ttl less at most an hour.  A release appends with keep: its grant set
-- the expiry.
local function record(key, max, ttl, ...)
  if max == '0' then return nil end
  local id = redis.pcall('XADD', key, 'MAXLEN', '~', max, '*', ...)
  if type(id) ~= 'string' then
    return string.find(id.err or '', 'WRONGTYPE', 1, true) and 2 or 0
  end
  redis.pcall('PEXPIRE', key, ttl)
  redis.pcall('PEXPIRE', key .. ':last', ttl)
  return id
end
local function append(key, max, ttl, keep, ...)
  if max == '0' then return nil end
  if keep then
    local id = redis.pcall('XADD', key, 'NOMKSTREAM', 'MAXLEN', '~', max, '*', ...)
    if type(id) == 'string' then return id end
  end
  return record(key, max, ttl, ...)
end
