-- acquire_lease.  KEYS: leases (zset member 'agent\ttask' -> expiry ms), lease owners (hash member -> holder)
-- ARGV: member, owner, ttl (ms), owner set prefix
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local member, owner, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local prev = redis.call('HGET', KEYS[2], member)
if prev and prev ~= owner then redis.call('SREM', ARGV[4] .. prev, member) end
redis.call('ZADD', KEYS[1], now + ttl, member)
redis.call('HSET', KEYS[2], member, owner)
redis.call('SADD', ARGV[4] .. owner, member)
return 1
