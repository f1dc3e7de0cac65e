-- fresh_fence(): a fence for a grant that has its entry already (one that
-- is renewed after its holder waited too long to hear of it): the id of an
-- entry added and removed at once, or the counter's when the stream is
-- refused or gone.  An id that gives no fence (SEQ past 999) gives way to
-- the next millisecond's first; past the last id that gives one, nothing
-- does: never the counter's or the clock's, which would be lower than the
-- stream's fences.  Returns nil and the BADSTREAM error reply then.
local function fresh_fence()
  local eid = redis.pcall('XADD', KEYS[9], 'NOMKSTREAM', '*', 'f', '')
  if type(eid) ~= 'string' then return next_fence() end
  redis.pcall('XDEL', KEYS[9], eid)
  local f = fence_of_id(eid)
  if not f then
    local m = string.match(eid, '^(%d%d%d%d%d%d%d%d%d%d%d%d%d)%-%d+$')
    if m and m < '9007199253690' then
      local e2 = redis.pcall('XADD', KEYS[9], 'NOMKSTREAM', ms(tonumber(m) + 1) .. '-0', 'f', '')
      if type(e2) == 'string' then
        redis.pcall('XDEL', KEYS[9], e2)
        f = fence_of_id(e2)
      end
    end
    if not f then return nil, redis.error_reply('BADSTREAM ' .. string.sub(eid, 1, 64)) end
  end
  return f, ms(f)
end
