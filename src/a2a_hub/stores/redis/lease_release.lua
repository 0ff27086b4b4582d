-- release_lease.  KEYS: leases (zset member 'agent\ttask' -> expiry ms), lease owners (hash member -> holder)
-- ARGV: member, owner, owner set prefix
local member, owner = ARGV[1], ARGV[2]
if redis.call('HGET', KEYS[2], member) == owner then
  redis.call('ZREM', KEYS[1], member)
  redis.call('HDEL', KEYS[2], member)
end
redis.call('SREM', ARGV[3] .. owner, member)
return 1
