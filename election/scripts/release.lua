-- Release a holding if the role is still held by instance ARGV[1] with term ARGV[2], and tell the standbys.
-- KEYS[1] leader key   KEYS[2] term key   KEYS[3] heartbeat hash
-- ARGV[1] instance ID   ARGV[2] term   ARGV[3] pub/sub channel   ARGV[4] role
-- Returns 1 when released (or already gone with no later grant known: a re-sent request), 0 when the
-- role is held by another holding, this instance's later ones included.
local cur = redis.call('GET', KEYS[1])
if not cur then
  local last = redis.call('GET', KEYS[2])
  if not last or last == ARGV[2] then
    return 1
  end
  return 0
end
local term, _, holder = string.match(cur, '^(%d+):(%x+):(.*)$')
if holder ~= ARGV[1] or term ~= ARGV[2] then
  return 0
end
redis.call('DEL', KEYS[1], KEYS[3])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
