-- guard_left: how long the fresh-dataset guard recorded in an epoch key still lasts, on this server's
-- clock. KEYS[1] the epoch key. Read only: it writes nothing.
-- Returns the microseconds left (0 when the guard has ended), or -1 when the key is missing or
-- unreadable (the next acquire arms a guard).
local epoch = redis.call('GET', KEYS[1])
if not epoch then
  return -1
end
local guardEnd = string.match(epoch, '^(%d+)')
if not guardEnd then
  return -1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local left = tonumber(guardEnd) - now
if left < 0 then
  left = 0
end
return left
