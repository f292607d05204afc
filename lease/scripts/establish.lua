-- establish: create the dataset epoch key, bound to this server process, with the guard already over.
-- KEYS[1] dataset epoch key; ARGV[1] its TTL in milliseconds (optional: none when absent, the single
-- layout's one key). Never overwrites an existing key. Returns 1 if it created the key.
local run = ''
local info = redis.pcall('INFO', 'server')
if type(info) == 'string' then
  run = string.match(info, 'run_id:(%x+)') or ''
end
local keep = tonumber(ARGV[1] or '0') or 0
local set
if keep > 0 then
  set = redis.call('SET', KEYS[1], '0 ' .. run, 'NX', 'PX', keep)
else
  set = redis.call('SET', KEYS[1], '0 ' .. run, 'NX')
end
if set then
  return 1
end
return 0
