-- Acquire a role: a new holding for instance ARGV[1], identified by the attempt nonce ARGV[4].
-- KEYS[1] leader key: "<term>:<nonce>:<instance>", PX ttl
-- KEYS[2] term key: the last term granted (a floor; PX ARGV[5])
-- KEYS[3] epoch key: "<run_id> <end of the fresh-dataset grace, Redis TIME µs>" (PX ARGV[5])
-- KEYS[4] heartbeat hash
-- ARGV[1] instance ID   ARGV[2] ttl ms   ARGV[3] "1" to write the heartbeat hash
-- ARGV[4] attempt nonce (hex; the same for every re-send of one attempt)   ARGV[5] key TTL ms (term, epoch)
-- Returns {1, term} when the attempt holds the role, {0, holder} otherwise ("" while nobody may be granted).
local id, ttl, nonce, keep = ARGV[1], tonumber(ARGV[2]), ARGV[4], tonumber(ARGV[5])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local cur = redis.call('GET', KEYS[1])
if cur then
  local term, n, holder = string.match(cur, '^(%d+):(%x+):(.*)$')
  if holder == id and n == nonce then
    -- A re-sent request whose first attempt took effect: the same holding, the same term.
    redis.call('PEXPIRE', KEYS[1], ttl)
    return {1, term}
  end
  -- Held by someone else, or by an earlier holding of this instance (whose release may be in flight).
  return {0, holder or cur}
end

-- The guard is armed when the epoch key is missing (a new role, a FLUSHALL, a dataset lost in a restart)
-- or names another server run (a restart that loaded a snapshot older than the holdings). A holder from
-- before may still act until its local deadline, so nobody is granted the role for one TTL.
local rid = ''
local info = redis.pcall('INFO', 'server')
if type(info) == 'string' then
  rid = string.match(info, 'run_id:(%x+)') or ''
end
local epoch = redis.call('GET', KEYS[3])
local erid, grace
if epoch then
  erid, grace = string.match(epoch, '^(%x*) (%d+)$')
end
if not grace or erid ~= rid then
  redis.call('SET', KEYS[3], rid .. ' ' .. string.format('%d', now + ttl * 1000), 'PX', keep)
  return {0, ''}
end
redis.call('PEXPIRE', KEYS[3], keep)
if now < tonumber(grace) then
  return {0, ''}
end

-- Terms are Redis TIME in µs, raised above the last term granted: they keep increasing when the term key
-- expires or is lost, as long as the server's clock does not step back.
local term = now
local prev = tonumber(redis.call('GET', KEYS[2]) or '0')
if term <= prev then
  term = prev + 1
end
local ts = string.format('%d', term)
redis.call('SET', KEYS[2], ts, 'PX', keep)
redis.call('SET', KEYS[1], ts .. ':' .. nonce .. ':' .. id, 'PX', ttl)
if ARGV[3] == '1' then
  redis.call('HSET', KEYS[4], 'id', id, 'term', ts, 'at_us', string.format('%d', now))
  redis.call('PEXPIRE', KEYS[4], ttl)
end
return {1, ts}
