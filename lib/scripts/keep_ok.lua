-- keep_ok(stream): the newest release that ended well among the last 64
-- entries of the history into its record of the last runs (stream ..
-- ':last', 'ok'), before a run that did not end well is recorded there.
-- A release on the shortest path (release.lua) leaves the record alone:
-- while the history holds the last success, last reads it there; this
-- keeps it for when trimming has taken it, which takes at least as many
-- entries as the history keeps after it.  A success further back than 64
-- entries (as many holders that vanished without a release, each leaving
-- only its grant) is not looked for: the record keeps the older one it
-- had, never a newer one than the truth.  A read: a pcall.
local function keep_ok(stream)
  local es = redis.pcall('XREVRANGE', stream, '+', '-', 'COUNT', 64)
  if type(es) ~= 'table' or es.err then return end
  for _, e in ipairs(es) do
    local f, ok = e[2], false
    if f[1] == 'r1' then
      local ex, sig = string.match(f[2] or '', '^[^\n]*\n([^\n]*)\n(.*)$')
      ok = sig == '' and (ex == '' or ex == '0')
    elseif f[1] == 'event' and f[2] == 'released' then
      local ex, sig, why = '', '', ''
      for i = 3, #f - 1, 2 do
        if f[i] == 'exit' then ex = f[i + 1]
        elseif f[i] == 'signal' then sig = f[i + 1]
        elseif f[i] == 'reason' then why = f[i + 1] end
      end
      ok = sig == '' and (ex == '0' or (ex == '' and why == ''))
    end
    if ok then
      redis.pcall('HSET', stream .. ':last', 'ok', e[1])
      return
    end
  end
end
