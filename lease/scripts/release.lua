-- release: delete the lease only if it still holds this holding, and tell the fleet.
-- KEYS[1] lease key; ARGV[1] holding value, ARGV[2] lease TTL in milliseconds (unused),
-- ARGV[3] pub/sub channel (optional), ARGV[4] message to publish on it.
-- Returns 1 if the lease was deleted, 0 otherwise.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[3] and ARGV[3] ~= '' then
    redis.call('PUBLISH', ARGV[3], ARGV[4])
  end
  return 1
end
return 0
