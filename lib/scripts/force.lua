-- Forced release.  KEYS: the twelve (lib/keys.c).  ARGV: release
-- channel, wake-up prefix, who forced it (the record's reason), the
-- history's length and ttl.  Removes the exclusive holder, or every shared
-- or semaphore holder (recording each as forced), and wakes the line as
-- release does.  Keys of the lock that hold another type than rlock keeps
-- there (another client's data, which would make every script fail with
-- WRONGTYPE) are deleted first, whatever they hold: force is the
-- operator's tool for that.  Each is probed with a read of the type rlock
-- keeps there (TYPE is not in the ACL rule rlock asks for), and only a
-- WRONGTYPE answer deletes it; the fence counter and the record of the
-- last runs too (named from the lock's and the log's keys: one slot).  A
-- fence counter of another type can go: the next fence is at least the
-- server's clock in µs, above any handed out.  Answers {0, junk} when
-- nothing was held, else the holder layout of status ({1, 0, host, pid,
-- user, command, since, fence, token prefix, 0}), how many were removed
-- and junk, the number of keys of another type deleted.
--@include now.lua
--@include holders.lua
--@include pool.lua
--@include line.lua
--@include unpack_meta.lua
--@include holder_meta.lua
--@include shrink.lua
--@include record.lua
local function forced(hkind, host, user, pid, fence, tok, since, command)
  since = tonumber(since or '')
  record(KEYS[9], ARGV[4], ARGV[5], 'event', 'forced', 'host', host or '',
         'user', user or '', 'pid', pid or '', 'kind', hkind, 'fence', fence or '',
         'token', string.sub(tok, 1, 8), 'held', since and ms(now - since) or '',
         'reason', ARGV[3], 'command', command or '')
end
local junk = 0
local function clear(k, ...)
  local e = redis.pcall(...)
  if type(e) == 'table' and e.err and string.find(e.err, 'WRONGTYPE', 1, true) then
    redis.call('DEL', k)
    junk = junk + 1
  end
end
for i = 1, 2 do clear(KEYS[i], 'GET', KEYS[i]) end
for _, i in ipairs({8, 11, 12}) do clear(KEYS[i], 'GET', KEYS[i]) end
for _, i in ipairs({3, 5, 6}) do clear(KEYS[i], 'ZCARD', KEYS[i]) end
for _, i in ipairs({4, 7}) do clear(KEYS[i], 'HGET', KEYS[i], 'limit') end
clear(KEYS[9] .. ':last', 'HGET', KEYS[9] .. ':last', 'ok')
clear(KEYS[9], 'XRANGE', KEYS[9], '+', '+', 'COUNT', 1)
local cur = redis.call('GET', KEYS[1])
local r
if cur then
  local f = holder_meta(cur, 10)
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[11], KEYS[12])
  forced('x', f[5], f[6], f[4], f[1], cur, f[2], f[7])
  r = {1, 0, f[5] or '', f[4] or '', f[6] or '', f[7] or '', f[2] or '',
       f[1] or '', string.sub(cur, 1, 8), '0', 1, junk}
else
  holders_purge()
  local hs = redis.call('ZRANGE', KEYS[3], 0, -1)
  if #hs == 0 then
    if junk > 0 then redis.pcall('PUBLISH', ARGV[1], 'forced') end
    return {0, junk}
  end
  local f = unpack_meta(redis.call('HGET', KEYS[4], hs[1]) or '')
  local hkind = redis.call('HGET', KEYS[4], 'limit') or 's'
  for i, h in ipairs(hs) do
    local g = i == 1 and f or unpack_meta(redis.call('HGET', KEYS[4], h) or '')
    forced(hkind, g[5], g[6], g[4], g[1], h, g[2], g[7])
  end
  redis.call('DEL', KEYS[3], KEYS[4])
  r = {1, 0, f[5] or '', f[4] or '', f[6] or '', f[7] or '', f[2] or '',
       f[1] or '', string.sub(hs[1], 1, 8), '0', #hs, junk}
end
if redis.call('EXISTS', KEYS[5]) == 0 then
  redis.pcall('PUBLISH', ARGV[1], 'forced')
else
  line_purge()
  wake(ARGV[2], nil)
end
return r
