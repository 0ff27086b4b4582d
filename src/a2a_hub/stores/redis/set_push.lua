-- set_push_config.  KEYS: task, push.
-- ARGV: field ('c:<config id>'), config, push TTL (ms, 0 = forever).
-- Returns 0 if the task does not exist.
local cur = redis.call('HMGET', KEYS[1], 'seq', 'end')
if not cur[1] then return 0 end
local old = redis.call('HGET', KEYS[2], ARGV[1])
local order
if old then
  order = string.sub(old, 1, string.find(old, ' ', 1, true) - 1)
else
  order = tostring(redis.call('HINCRBY', KEYS[2], '#', 1))
end
redis.call('HSET', KEYS[2], ARGV[1], order .. ' ' .. ARGV[2])
local ttl = tonumber(ARGV[3])
if cur[2] and ttl > 0 then redis.call('PEXPIREAT', KEYS[2], tonumber(cur[2]) + ttl) end
return 1
