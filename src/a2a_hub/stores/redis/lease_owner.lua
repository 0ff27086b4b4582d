-- lease_owner.  KEYS: leases (zset member 'agent\ttask' -> expiry ms), lease owners (hash member -> holder)
-- ARGV: member.  The holder of a live lease, or false.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) > now then return redis.call('HGET', KEYS[2], ARGV[1]) end
return false
