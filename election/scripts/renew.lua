-- Extend a holding if the role is still held by instance ARGV[1] with term ARGV[2].
-- KEYS[1] leader key   KEYS[2] term key   KEYS[3] epoch key   KEYS[4] heartbeat hash
-- ARGV[1] instance ID   ARGV[2] term   ARGV[3] ttl ms   ARGV[4] "1" to write the heartbeat hash
-- ARGV[5] key TTL ms: the term and epoch keys live that long after the role's last use
-- Returns 1 when extended, 0 when not held.
local cur = redis.call('GET', KEYS[1])
if not cur then
  return 0
end
local term, _, holder = string.match(cur, '^(%d+):(%x+):(.*)$')
if holder ~= ARGV[1] or term ~= ARGV[2] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
redis.call('PEXPIRE', KEYS[3], ARGV[5])
if ARGV[4] == '1' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  redis.call('HSET', KEYS[4], 'id', ARGV[1], 'term', ARGV[2], 'at_us', string.format('%d', now))
  redis.call('PEXPIRE', KEYS[4], ARGV[3])
end
return 1
