-- acquire: take the lease if it is free, or confirm it if it already holds our ID.
-- KEYS[1] lease key, KEYS[2] fencing counter, KEYS[3] dataset epoch key
-- ARGV[1] instance ID, ARGV[2] lease TTL in milliseconds
-- Returns the fencing token (> 0) on success, 0 when another instance holds the lease,
-- -1 while the fresh-dataset guard refuses every grant.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local ttl = tonumber(ARGV[2])

local guard = redis.call('GET', KEYS[3])
if not guard then
  -- No epoch key: this dataset is new (first use, or Redis restarted empty). Holders from an earlier
  -- dataset may still believe in their leases for up to one TTL, so grant nothing until then.
  redis.call('SET', KEYS[3], string.format('%.0f', now + ttl * 1000))
  return -1
end
if now < tonumber(guard) then
  return -1
end

local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  -- Already ours (typically a client re-send after a lost reply): same grant, same token.
  redis.call('PEXPIRE', KEYS[1], ttl)
  return tonumber(redis.call('GET', KEYS[2]) or '0')
end
if cur then
  return 0
end

local prev = tonumber(redis.call('GET', KEYS[2]) or '0')
local token = now
if prev + 1 > token then
  token = prev + 1
end
redis.call('SET', KEYS[2], string.format('%.0f', token))
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
return token
