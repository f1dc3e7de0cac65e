-- shrink(stream): a stream just made by its first XADD, copied over
-- itself.  Redis allocates a new stream's first node whole (4 KB, a name
-- run once costs 4.7 KB for the history's 30 days), and COPY copies it at
-- the size it holds (under 1 KB); later XADDs grow it by small steps.
-- The copy is STREAM:c (lib/keys.h, KEY_LOG_COPY: one hash tag, one
-- slot), renamed back at once; RENAME keeps the expiry COPY copied.
-- pcalls: a server or ACL user that refuses COPY (before 6.2, no +copy)
-- or RENAME keeps the stream as it was, and a copy left behind goes.
-- Only for a stream this call made: never on a later XADD.
local function shrink(stream)
  local c = stream .. ':c'
  if redis.pcall('COPY', stream, c, 'REPLACE') ~= 1 then return end
  local r = redis.pcall('RENAME', c, stream)
  if type(r) == 'table' and r.err then redis.pcall('DEL', c) end
end
