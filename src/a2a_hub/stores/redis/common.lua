-- Prepended to the store scripts that touch the listing indexes (save, list, delete).
-- Each of them takes the same first keys and arguments:
--   KEYS[1..4]: tasks index, expiring, ended, ended-owner
--   ARGV[1..3]: context index prefix, state index prefix, owner index prefix
-- forget() removes a task id from every index, using what 'ended' and 'ended-owner'
-- recorded about it (state, context, owner), since the task hash itself may already
-- have expired.
local ix = {
  all = KEYS[1], expiring = KEYS[2], ended = KEYS[3], ended_owner = KEYS[4],
  ctx = ARGV[1], state = ARGV[2], owner = ARGV[3],
}
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function forget(id)
  local info = redis.call('HGET', ix.ended, id)
  if info then
    local nl = string.find(info, '\n', 1, true)
    redis.call('ZREM', ix.state .. string.sub(info, 1, nl - 1), id)
    redis.call('ZREM', ix.ctx .. string.sub(info, nl + 1), id)
    redis.call('HDEL', ix.ended, id)
  end
  local owner = redis.call('HGET', ix.ended_owner, id)
  if owner then
    redis.call('ZREM', ix.owner .. owner, id)
    redis.call('HDEL', ix.ended_owner, id)
  end
  redis.call('ZREM', ix.all, id)
  redis.call('ZREM', ix.expiring, id)
end
local function sweep(limit)
  local due = redis.call('ZRANGEBYSCORE', ix.expiring, '-inf', now_ms(), 'LIMIT', 0, limit)
  for _, id in ipairs(due) do
    forget(id)
  end
end
