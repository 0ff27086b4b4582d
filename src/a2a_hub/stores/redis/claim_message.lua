-- claim_message: KEYS[1] the claim's key.  ARGV[1] the claim (JSON), ARGV[2] its TTL in ms
-- ('0': none), ARGV[3] '1' when the claim carries a reply, ARGV[4] its task id.
-- Without a reply: record it unless a claim is there.  With one: complete the claim there
-- if it is of the same task and has no reply yet (keeping its TTL).
-- Returns false when recorded (or completed), else the claim already there.
local cur = redis.call('GET', KEYS[1])
if ARGV[3] == '1' then
  if not cur then return false end
  local held = cjson.decode(cur)
  if held['task_id'] ~= ARGV[4] or held['reply'] ~= nil then return cur end
  redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
  return false
end
if cur then return cur end
if ARGV[2] == '0' then
  redis.call('SET', KEYS[1], ARGV[1])
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return false
