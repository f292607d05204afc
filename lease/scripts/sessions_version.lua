-- sessions_version: read the session change counter and the server's run_id in one call.
-- KEYS[1] the change counter key. Read only: it writes nothing.
-- Returns {counter value, or false when the key is absent; run_id, or '' where scripts cannot read INFO}.
local run = ''
local info = redis.pcall('INFO', 'server')
if type(info) == 'string' then
  run = string.match(info, 'run_id:(%x+)') or ''
end
return {redis.call('GET', KEYS[1]), run}
