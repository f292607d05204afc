-- Extend a holding if it is still ARGV[1]'s with term ARGV[2].
-- KEYS[1] leader key   KEYS[2] term key   KEYS[3] heartbeat hash
-- ARGV[1] instance ID   ARGV[2] term   ARGV[3] ttl ms   ARGV[4] "1" to write the heartbeat hash
-- Returns 1 when extended, 0 when not held.
if redis.call('GET', KEYS[1]) ~= ARGV[1] or redis.call('GET', KEYS[2]) ~= ARGV[2] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if ARGV[4] == '1' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  redis.call('HSET', KEYS[3], 'id', ARGV[1], 'term', ARGV[2], 'at_us', string.format('%d', now))
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
end
return 1
