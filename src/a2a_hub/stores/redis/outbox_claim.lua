-- claim_deliveries: up to ARGV[3] due deliveries, each the first of its config's queue;
-- a claim moves the delivery's due time to the end of the lease (ARGV[2]).
-- KEYS: outbox due zset, outbox data hash; ARGV: now, lease end, limit, queue key prefix
local due, data = KEYS[1], KEYS[2]
local limit = tonumber(ARGV[3])
local out = {}
local cands = redis.call('ZRANGEBYSCORE', due, '-inf', ARGV[1], 'LIMIT', 0, limit * 4 + 16)
for _, ident in ipairs(cands) do
  if #out >= limit then break end
  local json = redis.call('HGET', data, ident)
  if not json then
    redis.call('ZREM', due, ident)
  else
    local queue = ARGV[4] .. string.match(ident, '^(.*)|%d+|%d$')
    local head = redis.call('ZRANGE', queue, 0, 0)[1]
    if head == ident then
      redis.call('ZADD', due, ARGV[2], ident)
      out[#out + 1] = json
    end
  end
end
return out
