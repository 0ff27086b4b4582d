-- delete_task.  KEYS: task, events, push, tasks index, expiring, ended
-- ARGV: task id, context prefix, state prefix.  Returns 1 if the task existed.
local cur = redis.call('HMGET', KEYS[1], 'ctx', 'state')
if cur[1] then redis.call('ZREM', ARGV[2] .. cur[1], ARGV[1]) end
if cur[2] then redis.call('ZREM', ARGV[3] .. cur[2], ARGV[1]) end
forget(ARGV[1], KEYS[4], KEYS[5], KEYS[6], ARGV[2], ARGV[3])
local existed = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2], KEYS[3])
return existed
