-- Log.  KEYS: the log, the lock.  ARGV: the history's length and ttl, the run it
-- ends for the record of the last runs ('' none: see release), then an
-- entry's field/value pairs: a run or acquire that gave up (skipped), a
-- lease that was lost, which no other script is there to record.
--@include shrink.lua
--@include record.lua
--@include keep_ok.lua
-- While the lock is held its grant's entry, which holds the holder's
-- record (holder_meta.lua), is not trimmed: about max entries once it is
-- free again.
local max = ARGV[1]
if max ~= '0' and redis.call('EXISTS', KEYS[2]) == 1 then
  max = '1000000000'
end
local id = record(KEYS[1], max, ARGV[2], unpack(ARGV, 4))
if type(id) ~= 'string' then return id end
if ARGV[3] ~= '' then
  local rec = KEYS[1] .. ':last'
  keep_ok(KEYS[1])
  local n = redis.pcall('HSET', rec, 'run', '1\n' .. id .. '\n' .. ARGV[3])
  if type(n) == 'number' and n > 0 then redis.pcall('PEXPIRE', rec, ARGV[2]) end
end
return 1
