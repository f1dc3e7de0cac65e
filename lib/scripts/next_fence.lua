-- The next fence: one more than the last, and at least the server's clock
-- in µs, so that a server that forgot the counter (a restart without AOF,
-- a failover to a replica that missed the last grants, the key deleted)
-- still hands out a fence above every one before, as long as its clock is
-- not behind the clock of the last grant.  Below 2^53 until the year 2255:
-- exact in a double, in JSON and in shell arithmetic.  The counter is
-- written as digits (Lua would write 1.7e+15), and expires with the
-- history (HISTORY_TTL_MS) each time it is written: once it is gone the
-- clock is the floor again (docs/design.md#the-fence-after-every-key-expired).
--
-- One command in the common case: SET ... GET writes the clock and reads
-- the last fence, which is below it unless the clock went back.  A server
-- before 6.2 has no SET ... GET (a syntax error): GET, then SET.  Any
-- other error (WRONGTYPE, an ACL refusal) is raised by the same SET again,
-- as redis.call would have.  prev is the last fence when it was read (nil
-- otherwise): when the grant before this one was.  Returns the fence and
-- its digits.
--
-- A counter rlock did not write (fence_of.lua) is put back as it was and
-- nothing is handed out: returns nil and the BADFENCE error reply, which
-- the caller returns.  Counting on from it could give a fence of 0 (Lua
-- reads 9223372036854775807 as 2^63, which INCR's reply wraps), the same
-- fence twice (above 2^53 a double has no room for the +1) or a lower one
-- ("1e300", "0x10" and " 12" are numbers to tonumber, not to INCR).  A
-- counter at the last fence below FENCE_LIMIT is put back likewise:
-- returns nil and the FENCEMAX error reply (no larger fence exists).
--@include fence_of.lua
-- fence_limit(v): the error reply of a counter v rlock may have written
-- but above which no fence can be handed out, "FENCEMAX " and v: one
-- below FENCE_LIMIT by less than one, or at or above the highest fence a
-- history entry's id gives (9007199253691999, entry.lua).  Fences never
-- go back: nothing is granted, the counter is left as it is.
local function fence_limit(v)
  return redis.error_reply('FENCEMAX ' .. string.sub(v, 1, 64))
end
local prev
local function next_fence()
  local c = sec * 1000000 + usec
  local cs = ms(c)
  local old = redis.pcall('SET', KEYS[8], cs, 'GET', 'PX', '@HISTORY_TTL_MS@')
  if type(old) == 'table' and old.err then
    if not string.find(old.err, 'syntax', 1, true) then
      redis.call('SET', KEYS[8], cs, 'GET', 'PX', '@HISTORY_TTL_MS@')
    end
    old = redis.call('GET', KEYS[8])
    if old then
      prev = fence_of(old)
      if not prev then return nil, bad_fence(old) end
      if prev + 1 >= @FENCE_LIMIT@ then return nil, fence_limit(old) end
      if prev >= c then c = prev + 1 end
    end
    cs = ms(c)
    redis.call('SET', KEYS[8], cs, 'PX', '@HISTORY_TTL_MS@')
    return c, cs
  end
  if not old then return c, cs end
  prev = fence_of(old)
  if not prev then
    redis.call('SET', KEYS[8], old, 'PX', '@HISTORY_TTL_MS@')
    return nil, bad_fence(old)
  end
  if prev < c then return c, cs end
  if prev + 1 >= @FENCE_LIMIT@ then
    redis.call('SET', KEYS[8], old, 'PX', '@HISTORY_TTL_MS@')
    return nil, fence_limit(old)
  end
  cs = ms(prev + 1)
  redis.call('SET', KEYS[8], cs, 'PX', '@HISTORY_TTL_MS@')
  return prev + 1, cs
end
