-- Leave the line.  KEYS: the twelve (lib/keys.c).  ARGV: member ("KIND:ID"), wake-up
-- prefix, the waiter's token, the history's length and ttl.  A waiter
-- that gives up (its wait ran out, a signal) leaves at once, and when it
-- was the one let in next, the next after it is woken.  A release that
-- handed it the lock as it gave up (the baton, in release) left the lock
-- with its token: that grant is released here, and recorded so.
--@include now.lua
--@include pool.lua
--@include line.lua
--@include unpack_meta.lua
--@include holder_meta.lua
--@include shrink.lua
--@include append.lua
if redis.call('GET', KEYS[1]) == ARGV[3] then
  local m = holder_meta(ARGV[3], 10)
  local fence, since = m[1], m[2]
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[11], KEYS[12])
  append(KEYS[9], ARGV[4], ARGV[5], true, 'event', 'released', 'fence', fence or '',
         'token', string.sub(ARGV[3], 1, 8), 'since', since or '', 'exit', '',
         'reason', 'handed over as its wait ended')
end
leave(ARGV[1])
redis.call('DEL', ARGV[2] .. string.match(ARGV[1], '[^:]*$'))
if redis.call('HGET', KEYS[7], '~sup') == ARGV[1] then redis.call('HDEL', KEYS[7], '~sup') end
if redis.call('EXISTS', KEYS[5]) == 1 then
  line_purge()
  wake(ARGV[2], nil)
end
return 1
