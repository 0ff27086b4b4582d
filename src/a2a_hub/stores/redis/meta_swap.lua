-- swap_meta: set KEYS[1] to ARGV[2] if it holds ARGV[1] ('' with ARGV[3] = '0': absent).
-- Returns 1 when set, else 0.
local cur = redis.call('GET', KEYS[1])
if ARGV[3] == '0' then
  if cur then return 0 end
elseif cur ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2])
return 1
