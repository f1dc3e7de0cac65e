-- fresh_fence(): a fence for a grant that has its entry already (one that
-- is renewed after its holder waited too long to hear of it): the id of an
-- entry added and removed at once, or the counter's when the stream is
-- refused or gone.
local function fresh_fence()
  local eid = redis.pcall('XADD', KEYS[9], 'NOMKSTREAM', '*', 'f', '')
  local f = type(eid) == 'string' and fence_of_id(eid)
  if type(eid) == 'string' then redis.pcall('XDEL', KEYS[9], eid) end
  if f then return f, ms(f) end
  return next_fence()
end
