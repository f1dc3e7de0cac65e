-- append(key, max, ttl, keep, ...) is record() where the stream's expiry
-- may stand (keep): it only adds the entry to a stream that exists
-- (NOMKSTREAM, one command where record takes two), and falls back to
-- record() when the stream is gone or the server is older than 6.2.  A
-- grant keeps the expiry when the grant before it was in the same hour (the
-- first grant of each hour set it): the history outlives its last grant by
-- ttl less at most an hour.  A release appends with keep: its grant set
-- the expiry.
--@include record.lua
local function append(key, max, ttl, keep, ...)
  if max == '0' then return nil end
  if keep then
    local id = redis.pcall('XADD', key, 'NOMKSTREAM', 'MAXLEN', '~', max, '*', ...)
    if type(id) == 'string' then return id end
  end
  return record(key, max, ttl, ...)
end
