-- renew_leases.  KEYS: leases (zset member 'agent\ttask' -> expiry ms), lease owners (hash member -> holder)
-- ARGV: owner, ttl (ms), owner set prefix
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local owner, ttl = ARGV[1], tonumber(ARGV[2])
local mine = redis.call('SMEMBERS', ARGV[3] .. owner)
for _, member in ipairs(mine) do
  if redis.call('HGET', KEYS[2], member) == owner then
    redis.call('ZADD', KEYS[1], 'XX', now + ttl, member)
  else
    redis.call('SREM', ARGV[3] .. owner, member)
  end
end
return #mine
