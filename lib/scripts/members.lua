-- A pool's members (issue 35, pool.lua).  KEYS: the twelve
-- (lib/keys.c); the members are KEYS[1] .. ':members'.  ARGV: 1 what
-- ('add', 'rm' or 'list'), 2 the member, 3 its properties ("KEY=VALUE"
-- lines, add), 4 the wake-up channels' prefix (add).
--   add:  the member with its properties (replacing them): 1 new, 0
--         replaced.  Waiters in line are woken: a member may be free now.
--   rm:   {1 removed or 0 none, and its holder: token prefix and record
--         ('' '' free)}; a holder keeps a member removed from under it.
--   list: {server ms, the holders' kind ('' none), {member, properties,
--         holder's token prefix ('' free), holder's record, removed}...},
--         members in name order, and then those held that are no longer
--         members (properties '', removed '1'; '0' the others).
--@include now.lua
--@include pool.lua
--@include line.lua
local mkey = KEYS[1] .. ':members'
-- Who holds each member: member -> token, from the live holders.
local function owners()
  local by = {}
  if redis.call('HGET', KEYS[4], 'limit') ~= 'p' then return by end
  local live = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. ms(now), '+inf')
  for _, h in ipairs(live) do
    local v = redis.call('HGET', KEYS[4], '#' .. h)
    if v then
      for m in string.gmatch(v .. '\n', '([^\n]*)\n') do by[m] = h end
    end
  end
  return by
end
if ARGV[1] == 'add' then
  local new = redis.call('HSET', mkey, ARGV[2], ARGV[3])
  if redis.call('EXISTS', KEYS[5]) == 1 then
    line_purge()
    wake(ARGV[4], nil)
  end
  return new
end
if ARGV[1] == 'rm' then
  local gone = redis.call('HDEL', mkey, ARGV[2])
  local who = owners()[ARGV[2]]
  if not who then return {gone, '', ''} end
  return {gone, string.sub(who, 1, 8), redis.call('HGET', KEYS[4], who) or ''}
end
local by = owners()
local all = redis.call('HGETALL', mkey)
local names, props = {}, {}
for i = 1, #all, 2 do
  names[#names + 1] = all[i]
  props[all[i]] = all[i + 1]
end
table.sort(names)
local gone = {}
for m in pairs(by) do
  if not props[m] then gone[#gone + 1] = m end
end
table.sort(gone)
for _, m in ipairs(gone) do names[#names + 1] = m end
local r = {}
for _, m in ipairs(names) do
  local who = by[m]
  r[#r + 1] = {m, props[m] or '', who and string.sub(who, 1, 8) or '',
               who and redis.call('HGET', KEYS[4], who) or '', props[m] and '0' or '1'}
end
return {ms(now), redis.call('HGET', KEYS[4], 'limit') or '', r}
