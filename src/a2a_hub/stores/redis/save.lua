-- save_task: check that the events continue the log, write the snapshot, XADD the events,
-- move the index entries, set or clear the TTLs; sweeps a few due index entries first.
-- KEYS: (common 1..4), task, events, push, context index, state index
-- ARGV: (common 1..3), task id, snapshot, context id, state, updated_at, terminal (1/0),
--       task/history/push TTL (ms, 0 = forever), owner ('' = none, else '=' .. owner),
--       seq of the first event (0: none), event payloads..., then per delivery
--       (ident, order, json, queue key), per push config (field 'c:<id>', json), the
--       number of push configs, the number of deliveries
--       (KEYS 10, 11: the outbox's due zset and data hash, KEYS 12: its dead hash)
-- Returns {1, last seq} or, when the events do not continue the log, {0, stored last seq}.
-- The owner is recorded when the task is created and never changed afterwards.
local task, stream, push, ctx_index, state_index = KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local id, data, ctx, state, updated = ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local task_ttl, history_ttl, push_ttl = tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
local ndeliv, nconf = tonumber(ARGV[#ARGV]), tonumber(ARGV[#ARGV - 1])
local given_owner, first = ARGV[13], tonumber(ARGV[14])
local count = #ARGV - 16 - 4 * ndeliv - 2 * nconf

sweep(16)  -- a few due index entries per save
local cur = redis.call('HMGET', task, 'seq', 'ctx', 'state', 'upd', 'end', 'owner')
local last = tonumber(cur[1] or '0')
if count > 0 and first ~= last + 1 then
  return {0, last}
end
local owner = cur[6]
if not cur[1] then
  -- a new task, or the id of an expired one: drop whatever is left of that one
  forget(id)
  redis.call('DEL', stream, push)
  if given_owner ~= '' then
    owner = string.sub(given_owner, 2)
    redis.call('HSET', task, 'owner', owner)
  end
else
  if cur[2] ~= ctx then redis.call('ZREM', ix.ctx .. cur[2], id) end
  if cur[3] ~= state then redis.call('ZREM', ix.state .. cur[3], id) end
  -- updated_at never goes back, even if a client clock does
  if tonumber(cur[4]) > tonumber(updated) then updated = cur[4] end
end
for i = 1, count do
  redis.call('XADD', stream, string.format('0-%d', first + i - 1), 'd', ARGV[14 + i])
end
if count > 0 then last = first + count - 1 end
redis.call('HSET', task, 'd', data, 'seq', last, 'ctx', ctx, 'state', state, 'upd', updated)
redis.call('ZADD', ix.all, updated, id)
redis.call('ZADD', ctx_index, updated, id)
redis.call('ZADD', state_index, updated, id)
if owner then redis.call('ZADD', ix.owner .. owner, updated, id) end
-- push configs stored with the task (as set_push does), before its TTLs are set
local conf_at = 14 + count + 4 * ndeliv
for i = 1, nconf do
  local field, json = ARGV[conf_at + 2 * i - 1], ARGV[conf_at + 2 * i]
  local old = redis.call('HGET', push, field)
  local order
  if old then
    order = string.sub(old, 1, string.find(old, ' ', 1, true) - 1)
  else
    order = tostring(redis.call('HINCRBY', push, '#', 1))
  end
  redis.call('HSET', push, field, order .. ' ' .. json)
end
if ARGV[9] == '1' then
  local ended_at = tonumber(cur[5] or '0')
  if not cur[5] then
    ended_at = now_ms()
    redis.call('HSET', task, 'end', ended_at)
  end
  if task_ttl > 0 then
    redis.call('PEXPIREAT', task, ended_at + task_ttl)
    redis.call('ZADD', ix.expiring, ended_at + task_ttl, id)
    redis.call('HSET', ix.ended, id, state .. '\n' .. ctx)
    if owner then redis.call('HSET', ix.ended_owner, id, owner) end
  end
  if history_ttl > 0 then redis.call('PEXPIREAT', stream, ended_at + history_ttl) end
  if push_ttl > 0 then redis.call('PEXPIREAT', push, ended_at + push_ttl) end
elseif cur[5] then
  -- no longer ended: keep it forever again
  redis.call('HDEL', task, 'end')
  redis.call('PERSIST', task)
  redis.call('PERSIST', stream)
  redis.call('PERSIST', push)
  redis.call('ZREM', ix.expiring, id)
  redis.call('HDEL', ix.ended, id)
  redis.call('HDEL', ix.ended_owner, id)
end
-- the deliveries of these events enter the outbox in this same write
local at = 14 + count
for i = 1, ndeliv do
  local ident, order, json, queue = ARGV[at + 1], ARGV[at + 2], ARGV[at + 3], ARGV[at + 4]
  at = at + 4
  if redis.call('HEXISTS', KEYS[12], ident) == 0 and redis.call('HSETNX', KEYS[11], ident, json) == 1 then
    redis.call('ZADD', KEYS[10], 0, ident)
    redis.call('ZADD', queue, order, ident)
  end
end
return {1, last}
