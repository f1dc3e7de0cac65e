-- holder_meta(who, pages): the exclusive holder who's (a token) record in
-- unpack_meta's layout (fence, since, hold, pid, host, user, command,
-- note): the grant's record (grant.lua) when it is who's; else who's grant
-- entry in the history (a1, its fence the id's unless a fence field
-- follows), newest first, up to pages pages of 100: the shortest path
-- writes no record (acquire.lua), and a grant's entry is not trimmed while
-- it holds (log.lua); else an older rlock's P{N}:owner.  {} when none is
-- its (another client's token: redis-py's Lock writes no record).
local function holder_meta(who, pages)
  local t8 = string.sub(who, 1, 8)
  local g = redis.call('GET', KEYS[11])
  if g then
    local gid, f, hu, rest = string.match(g, '^2\n([^\n]*)\n(%d*)\n(%d*)\n(.*)$')
    local gt8, pid, host, user, note, cmd = string.match(rest or '',
      '^[^\n]*\n[^\n]*\n([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n(.*)$')
    if gt8 and gt8 == t8 then
      local m, q = string.match(gid, '^(%d+)%-(%d+)$')
      if f == '' and m and #m == 13 and #q <= 3 then
        f = string.format('%d', (tonumber(m) + 1) * 1000 + tonumber(q))
      end
      -- A fence the counter gave (no id) was the server's µs.
      local since = m or (#f > 3 and string.sub(f, 1, -4)) or ''
      return {f, since, hu, pid, host, user, cmd, note}
    end
  end
  local top = '+'
  for _ = 1, pages do
    local es = redis.pcall('XREVRANGE', KEYS[9], top, '-', 'COUNT', 100)
    if type(es) ~= 'table' or es.err or #es == 0 then break end
    for _, e in ipairs(es) do
      local v = e[2]
      if v[1] == 'a1' then
        local et8, pid, host, user, note, cmd = string.match(v[2] or '',
          '^[^\n]*\n[^\n]*\n([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n(.*)$')
        if et8 == t8 then
          local m, q = string.match(e[1], '^(%d+)%-(%d+)$')
          local f = v[3] == 'fence' and v[4] or ''
          if f == '' and m and #m == 13 and #q <= 3 then
            f = string.format('%d', (tonumber(m) + 1) * 1000 + tonumber(q))
          end
          return {f, m or '', '0', pid, host, user, cmd, note}
        end
      end
    end
    if #es < 100 then break end
    top = '(' .. es[#es][1]
  end
  return unpack_meta(redis.call('GET', KEYS[2]) or '')
end
