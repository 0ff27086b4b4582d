-- claim_expired.  KEYS: leases (zset member 'agent\ttask' -> expiry ms), lease owners (hash member -> holder)
-- ARGV: limit, owner set prefix.  Returns {member, holder, ...}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local out = {}
for _, member in ipairs(due) do
  local owner = redis.call('HGET', KEYS[2], member) or ''
  redis.call('ZREM', KEYS[1], member)
  redis.call('HDEL', KEYS[2], member)
  if owner ~= '' then redis.call('SREM', ARGV[2] .. owner, member) end
  table.insert(out, member)
  table.insert(out, owner)
end
return out
