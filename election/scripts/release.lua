-- Release a holding if it is still ARGV[1]'s with term ARGV[2], and tell the standbys.
-- KEYS[1] leader key   KEYS[2] term key   KEYS[3] heartbeat hash
-- ARGV[1] instance ID   ARGV[2] term   ARGV[3] pub/sub channel   ARGV[4] role
-- Returns 1 when released (or already gone with nobody granted since: a retried request), 0 when the
-- role is held by someone else or was granted again since.
if redis.call('GET', KEYS[2]) ~= ARGV[2] then
  return 0
end
local holder = redis.call('GET', KEYS[1])
if not holder then
  return 1
end
if holder ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1], KEYS[3])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
