-- MUTANT (checker-power tests only): the fresh-dataset guard lasts half a lease TTL.
-- acquire: take the lease if it is free, or confirm it if it already holds this very holding.
-- KEYS[1] lease key, KEYS[2] fencing counter, KEYS[3] dataset epoch key
-- ARGV[1] holding value (<instance>:<attempt nonce>), ARGV[2] lease TTL in milliseconds,
-- ARGV[3] fencing counter TTL in milliseconds (optional; no TTL when absent),
-- ARGV[4] epoch key TTL in milliseconds (optional; no TTL when absent: the single layout's one epoch key)
-- Returns the fencing token (> 0) on success, 0 when another holding has the lease,
-- -1 while the fresh-dataset guard refuses every grant.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local ttl = tonumber(ARGV[2])
local keep = tonumber(ARGV[4] or '0') or 0

-- The guard is bound to this server process: a restart, whatever dataset it loads, gets a new
-- run_id. A server whose scripts cannot read INFO binds it to the epoch key alone.
local run = ''
local info = redis.pcall('INFO', 'server')
if type(info) == 'string' then
  run = string.match(info, 'run_id:(%x+)') or ''
end
local epoch = redis.call('GET', KEYS[3])
local guardEnd, guardRun
if epoch then
  guardEnd, guardRun = string.match(epoch, '^(%d+) ?(%x*)$')
end
if not guardEnd or guardRun ~= run then
  -- A new dataset (first use, FLUSHALL, a restart that loaded nothing) or a new server process (a
  -- restart that loaded an older snapshot or log): holders from before may still believe in their
  -- leases for up to one TTL, so grant nothing until then.
  local arm = string.format('%.0f', now + ttl * 500) .. ' ' .. run
  if keep > 0 then
    redis.call('SET', KEYS[3], arm, 'PX', keep)
  else
    redis.call('SET', KEYS[3], arm)
  end
  return -1
end
if now < tonumber(guardEnd) then
  return -1
end

local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  -- This holding already has it (a client re-send after a lost reply): same grant, same token.
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
if ARGV[3] and tonumber(ARGV[3]) and tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[2], string.format('%.0f', token), 'PX', ARGV[3])
else
  redis.call('SET', KEYS[2], string.format('%.0f', token))
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
if keep > 0 then
  -- A per-endpoint epoch lives as long as the fencing counter: an endpoint unused that long arms a
  -- guard again on its next grant.
  redis.call('PEXPIRE', KEYS[3], keep)
end
return token
