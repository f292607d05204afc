-- renew: extend the lease only if it still holds this holding.
-- KEYS[1] lease key; ARGV[1] holding value, ARGV[2] lease TTL in milliseconds
-- Returns 1 if the lease was extended, 0 otherwise (gone, or another holding, even one of this instance).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
