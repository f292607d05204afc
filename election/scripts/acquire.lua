-- Acquire a role for ARGV[1] for ARGV[2] milliseconds.
-- KEYS[1] leader key (value: holder ID, PX ttl)   KEYS[2] term key (last term granted, no TTL)
-- KEYS[3] epoch key (end of the fresh-dataset grace, Redis TIME µs, no TTL)   KEYS[4] heartbeat hash
-- ARGV[1] instance ID   ARGV[2] ttl ms   ARGV[3] "1" to write the heartbeat hash
-- Returns {1, term} when ARGV[1] holds the role, {0, holder} otherwise ("" while nobody may be granted).
local id, ttl = ARGV[1], tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local holder = redis.call('GET', KEYS[1])
if holder == id then
  -- A retried request whose first attempt took effect: the same holding, the same term.
  redis.call('PEXPIRE', KEYS[1], ttl)
  return {1, redis.call('GET', KEYS[2]) or '0'}
end
if holder then
  return {0, holder}
end

-- No epoch key means a dataset that is new or was lost (a restart without persistence). A holder from
-- before may still act until its local deadline, so nobody is granted the role for one TTL.
local epoch = redis.call('GET', KEYS[3])
if not epoch then
  redis.call('SET', KEYS[3], string.format('%d', now + ttl * 1000))
  return {0, ''}
end
if now < tonumber(epoch) then
  return {0, ''}
end

-- Terms are Redis TIME in µs, and above every earlier term: they keep increasing across a data loss.
local term = now
local prev = tonumber(redis.call('GET', KEYS[2]) or '0')
if term <= prev then
  term = prev + 1
end
local ts = string.format('%d', term)
redis.call('SET', KEYS[2], ts)
redis.call('SET', KEYS[1], id, 'PX', ttl)
if ARGV[3] == '1' then
  redis.call('HSET', KEYS[4], 'id', id, 'term', ts, 'at_us', string.format('%d', now))
  redis.call('PEXPIRE', KEYS[4], ttl)
end
return {1, ts}
