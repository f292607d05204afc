-- establish: create the dataset epoch key, bound to this server process, with the guard already over.
-- KEYS[1] dataset epoch key. Never overwrites an existing key. Returns 1 if it created the key.
local run = ''
local info = redis.pcall('INFO', 'server')
if type(info) == 'string' then
  run = string.match(info, 'run_id:(%x+)') or ''
end
if redis.call('SET', KEYS[1], '0 ' .. run, 'NX') then
  return 1
end
return 0
