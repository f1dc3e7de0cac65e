-- fence_of(v): the counter's value v as a fence, or nil when it is not one
-- rlock wrote: 1 to 16 digits, below FENCE_LIMIT (2^53 less 2^20, so that
-- the next one is still exact in a double).  bad_fence(v): the error reply
-- that names it, "BADFENCE " and its first 64 bytes (rl_classify_error).
local function fence_of(v)
  if #v > 0 and #v <= 16 and not string.find(v, '%D') then
    local n = tonumber(v)
    if n < @FENCE_LIMIT@ then return n end
  end
end
local function bad_fence(v)
  return redis.error_reply('BADFENCE ' .. string.sub(v, 1, 64))
end
