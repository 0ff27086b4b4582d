-- last_seq.  KEYS: task, events.  The task's last seq; from the log once the snapshot expired.
local seq = redis.call('HGET', KEYS[1], 'seq')
if seq then return tonumber(seq) end
local top = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if #top == 0 then return 0 end
local id = top[1][1]
return tonumber(string.sub(id, string.find(id, '-', 1, true) + 1))
