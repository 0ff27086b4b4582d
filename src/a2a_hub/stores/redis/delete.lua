-- delete_task.  KEYS: (common 1..4), task, events, push.  ARGV: (common 1..3), task id.
-- Returns 1 if the task existed.
local id = ARGV[4]
local cur = redis.call('HMGET', KEYS[5], 'ctx', 'state', 'owner')
if cur[1] then redis.call('ZREM', ix.ctx .. cur[1], id) end
if cur[2] then redis.call('ZREM', ix.state .. cur[2], id) end
if cur[3] then redis.call('ZREM', ix.owner .. cur[3], id) end
forget(id)
local existed = redis.call('DEL', KEYS[5])
redis.call('DEL', KEYS[6], KEYS[7])
return existed
