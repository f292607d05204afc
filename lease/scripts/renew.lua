-- renew: extend the lease only if it still holds our ID.
-- KEYS[1] lease key; ARGV[1] instance ID, ARGV[2] lease TTL in milliseconds
-- Returns 1 if the lease was extended, 0 otherwise.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
