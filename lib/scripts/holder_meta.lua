-- holder_meta(who): the exclusive holder who's (a token) record in unpack_meta's
-- layout (fence, since, hold, pid, host, user, command, note), or {} when
-- neither record is its.
local function holder_meta(who)
  local g = redis.call('GET', KEYS[11])
  if g then
    local gid, f, hu, rest = string.match(g, '^2\n([^\n]*)\n(%d*)\n(%d*)\n(.*)$')
    local t8, pid, host, user, note, cmd = string.match(rest or '',
      '^[^\n]*\n[^\n]*\n([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n(.*)$')
    if t8 and t8 == string.sub(who, 1, 8) then
      local m, q = string.match(gid, '^(%d+)%-(%d+)$')
      if f == '' and m and #m == 13 and #q <= 3 then
        f = string.format('%d', (tonumber(m) + 1) * 1000 + tonumber(q))
      end
      -- A fence the counter gave (no id) was the server's µs.
      local since = m or (#f > 3 and string.sub(f, 1, -4)) or ''
      return {f, since, hu, pid, host, user, cmd, note}
    end
  end
  return unpack_meta(redis.call('GET', KEYS[2]) or '')
end
