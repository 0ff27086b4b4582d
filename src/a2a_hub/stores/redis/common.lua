-- Helpers prepended to every store script.  forget() removes a task id from every
-- index, using what 'ended' recorded about it (its state and context), since the task
-- hash itself may already have expired.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function forget(id, all, expiring, ended, ctx_prefix, state_prefix)
  local info = redis.call('HGET', ended, id)
  if info then
    local nl = string.find(info, '\n', 1, true)
    redis.call('ZREM', state_prefix .. string.sub(info, 1, nl - 1), id)
    redis.call('ZREM', ctx_prefix .. string.sub(info, nl + 1), id)
    redis.call('HDEL', ended, id)
  end
  redis.call('ZREM', all, id)
  redis.call('ZREM', expiring, id)
end
local function sweep(limit, all, expiring, ended, ctx_prefix, state_prefix)
  local due = redis.call('ZRANGEBYSCORE', expiring, '-inf', now_ms(), 'LIMIT', 0, limit)
  for _, id in ipairs(due) do
    forget(id, all, expiring, ended, ctx_prefix, state_prefix)
  end
end
