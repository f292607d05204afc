-- Establish a role's dataset: create its epoch key with the fresh-dataset grace already over, bound to
-- this server run (the run_id the acquire script compares).
-- KEYS[1] epoch key   ARGV[1] its TTL in milliseconds
-- Never overwrites an existing key, so a grace in force stays in force. Returns 1 if it created the key.
local rid = ''
local info = redis.pcall('INFO', 'server')
if type(info) == 'string' then
  rid = string.match(info, 'run_id:(%x+)') or ''
end
if redis.call('SET', KEYS[1], rid .. ' 0', 'PX', tonumber(ARGV[1]), 'NX') then
  return 1
end
return 0
