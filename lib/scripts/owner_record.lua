-- owner_record(fs, hold, pid, host, user, note, cmd): a shared or
-- semaphore holder's record in P{N}:holders:meta, "fence\nsince\nhold-until\n
-- pid\nhost\nuser\nnote\ncommand" (hold-until '0' without --min-hold).
local function owner_record(fs, hold, pid, host, user, note, cmd)
  local hu = hold == '0' and '0' or ms(now + tonumber(hold))
  return fs .. '\n' .. ms(now) .. '\n' .. hu .. '\n' .. pid .. '\n' ..
         host .. '\n' .. user .. '\n' .. note .. '\n' .. cmd
end
