-- A shared or semaphore holder's metadata, "fence\nsince\nhold_until\n
-- pid\nhost\nuser\nnote\ncommand", into fence, since, hold_until, pid,
-- host, user, command and note, in that order (the command, last, may
-- hold newlines of its own; a note holds none).
local function unpack_meta(v)
  local f, s = {}, 1
  for i = 1, 7 do
    local e = string.find(v, '\n', s, true)
    if not e then break end
    f[i] = string.sub(v, s, e - 1)
    s = e + 1
  end
  f[8] = f[7]
  f[7] = string.sub(v, s)
  return f
end
