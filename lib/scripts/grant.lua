-- What every exclusive or held grant writes besides the lock, for acquire
-- and for release handing the lock to the next in line (after now.lua,
-- next_fence.lua and append.lua): owner_record is the holder's record,
-- "fence\nsince\nhold-until\npid\nhost\nuser\nnote\ncommand" (hold-until
-- '0' without --min-hold, hold the --min-hold ms); acquired_event appends
-- the history's acquired entry, the stream's expiry kept when the grant
-- before (prev) was in the same hour.  An exclusive grant that did not
-- wait leaves out kind ('x') and waited ('0'), which readers take as
-- those: two fields fewer on the path every uncontended lock takes.
local function owner_record(fs, hold, pid, host, user, note, cmd)
  local hu = hold == '0' and '0' or ms(now + tonumber(hold))
  return fs .. '\n' .. ms(now) .. '\n' .. hu .. '\n' .. pid .. '\n' ..
         host .. '\n' .. user .. '\n' .. note .. '\n' .. cmd
end
local function acquired_event(hmax, httl, f, fs, token, kind, pid, host, user,
                              note, cmd, waited)
  if hmax == '0' then return nil end
  local id
  local keep = prev and math.floor(prev / 3600000000) == math.floor(f / 3600000000)
  if note == '' and kind == 'x' and waited == '0' then
    id = append(KEYS[9], hmax, httl, keep, 'event', 'acquired',
                'host', host, 'user', user, 'pid', pid, 'fence', fs,
                'token', string.sub(token, 1, 8), 'command', cmd)
  elseif note == '' then
    id = append(KEYS[9], hmax, httl, keep, 'event', 'acquired',
                'host', host, 'user', user, 'pid', pid, 'kind', kind,
                'fence', fs, 'token', string.sub(token, 1, 8),
                'waited', waited, 'command', cmd)
  else
    id = append(KEYS[9], hmax, httl, keep, 'event', 'acquired',
                'host', host, 'user', user, 'pid', pid, 'kind', kind,
                'fence', fs, 'token', string.sub(token, 1, 8),
                'waited', waited, 'command', cmd, 'note', note)
  end
  if type(id) == 'string' then return 1 end
  return id
end
