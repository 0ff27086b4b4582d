-- save_task: check that the events continue the log, write the snapshot, XADD the events,
-- move the index entries, set or clear the TTLs; sweeps a few due index entries first.
-- KEYS: task, events, push, tasks index, context index, state index, expiring, ended
-- ARGV: task id, snapshot, context id, state, updated_at, terminal (1/0),
--       task/history/push TTL (ms, 0 = forever), context prefix, state prefix,
--       seq of the first event (0: none), event payloads...
-- Returns {1, last seq} or, when the events do not continue the log, {0, stored last seq}.
local task, stream, push, all = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local ctx_index, state_index, expiring, ended = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local id, data, ctx, state, updated = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local task_ttl, history_ttl, push_ttl = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local ctx_prefix, state_prefix = ARGV[10], ARGV[11]
local first, count = tonumber(ARGV[12]), #ARGV - 12

sweep(16, all, expiring, ended, ctx_prefix, state_prefix)  -- a few due index entries per save
local cur = redis.call('HMGET', task, 'seq', 'ctx', 'state', 'upd', 'end')
local last = tonumber(cur[1] or '0')
if count > 0 and first ~= last + 1 then
  return {0, last}
end
if not cur[1] then
  -- a new task, or the id of an expired one: drop whatever is left of that one
  forget(id, all, expiring, ended, ctx_prefix, state_prefix)
  redis.call('DEL', stream, push)
else
  if cur[2] ~= ctx then redis.call('ZREM', ctx_prefix .. cur[2], id) end
  if cur[3] ~= state then redis.call('ZREM', state_prefix .. cur[3], id) end
  -- updated_at never goes back, even if a client clock does
  if tonumber(cur[4]) > tonumber(updated) then updated = cur[4] end
end
for i = 1, count do
  redis.call('XADD', stream, string.format('0-%d', first + i - 1), 'd', ARGV[12 + i])
end
if count > 0 then last = first + count - 1 end
redis.call('HSET', task, 'd', data, 'seq', last, 'ctx', ctx, 'state', state, 'upd', updated)
redis.call('ZADD', all, updated, id)
redis.call('ZADD', ctx_index, updated, id)
redis.call('ZADD', state_index, updated, id)
if ARGV[6] == '1' then
  local ended_at = tonumber(cur[5] or '0')
  if not cur[5] then
    ended_at = now_ms()
    redis.call('HSET', task, 'end', ended_at)
  end
  if task_ttl > 0 then
    redis.call('PEXPIREAT', task, ended_at + task_ttl)
    redis.call('ZADD', expiring, ended_at + task_ttl, id)
    redis.call('HSET', ended, id, state .. '\n' .. ctx)
  end
  if history_ttl > 0 then redis.call('PEXPIREAT', stream, ended_at + history_ttl) end
  if push_ttl > 0 then redis.call('PEXPIREAT', push, ended_at + push_ttl) end
elseif cur[5] then
  -- no longer ended: keep it forever again
  redis.call('HDEL', task, 'end')
  redis.call('PERSIST', task)
  redis.call('PERSIST', stream)
  redis.call('PERSIST', push)
  redis.call('ZREM', expiring, id)
  redis.call('HDEL', ended, id)
end
return {1, last}
