-- The record of the last exclusive grant, P{N}:grant (KEYS[11] in the
-- scripts' layout), with the lock's expiry (set with it here, extended
-- and deleted with it): "2\nID\nFENCE\nHOLD\n" and the
-- holder's fields "KIND\nWAITED\nTOKEN8\nPID\nHOST\nUSER\nNOTE\nCOMMAND"
-- (the acquire script's ARGV[3]), ID its history entry's id ('' when the
-- stream was refused), FENCE '' when it is the id's (entry.lua), HOLD the
-- server's ms until which --min-hold keeps the lock ('0' none).  It is
-- the holder's while the lock key holds a token that starts with
-- TOKEN8; status and the busy answer read it then, and one that finds it
-- gone reads the grant's history entry, or nothing, as for a lock an
-- older rlock or another client took (holder_meta.lua).  A lock held by an
-- older rlock has its record in P{N}:owner (KEYS[2]) instead, "fence\n
-- since\nhold\npid\nhost\nuser\nnote\ncommand" with the lock's expiry.
--
-- grant_x(holder, ttl, fields, hold, hmax, httl, taken): grant the
-- exclusive lock to token holder for ttl ms (is_set: the lock key holds it
-- already), with the holder's fields (the acquire script's ARGV[3]), record
-- the grant (entry.lua) and write its record.  hold: --min-hold in ms
-- ('0' none), kept also in P{N}:hold (KEYS[12]) until it ends, which the
-- release looks for.  Returns {1, fence, recorded} (recorded nil when
-- hmax is '0'), or the error reply.  More field/value pairs (...) go into
-- the grant's history entry after the holder's fields.
local function grant_x(holder, ttl, fields, hold, hmax, httl, is_set, ...)
  local f, fs, eid, rec = grant_entry(hmax, httl, fields, ...)
  if not f then return fs end
  if not is_set then redis.call('SET', KEYS[1], holder, 'PX', ttl) end
  local hu = '0'
  if hold ~= '0' then
    hu = ms(now + tonumber(hold))
    redis.call('SET', KEYS[12], hu, 'PX', hold)
  end
  redis.call('SET', KEYS[11], '2\n' .. (eid or '') .. '\n' .. (eid and '' or fs) .. '\n' ..
             hu .. '\n' .. fields, 'PX', ttl)
  if hmax == '0' then rec = nil end
  return {1, f, rec}
end
