-- list_tasks: newest first, keyset paging; sweeps due index entries first.
-- KEYS: tasks index, expiring, ended, source index, second index (= source: none), scratch
-- ARGV: context prefix, state prefix, task prefix, lowest score ('-inf'), cursor score
--       ('' on the first page), '1' to read the ties of the cursor score, limit
-- Returns {total, ties, tie id, tie data, ..., id, score, data, ...}: the members
-- with exactly the cursor score (the caller keeps those whose id is below the
-- cursor's), then at most ``limit`` members below the cursor score, newest first.
local all, expiring, ended, src = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local ctx_prefix, state_prefix, task_prefix = ARGV[1], ARGV[2], ARGV[3]
local lo, cursor, limit = ARGV[4], ARGV[5], tonumber(ARGV[7])

sweep(1000, all, expiring, ended, ctx_prefix, state_prefix)  -- up to a thousand per list
if KEYS[5] ~= src then
  redis.call('ZINTERSTORE', KEYS[6], 2, src, KEYS[5], 'AGGREGATE', 'MAX')
  src = KEYS[6]
end
local total = redis.call('ZCOUNT', src, lo, '+inf')
local out = {0, 0}
local function fetch(id)
  local d = redis.call('HGET', task_prefix .. id, 'd')
  if not d then  -- expired before the sweep got to it
    forget(id, all, expiring, ended, ctx_prefix, state_prefix)
    redis.call('ZREM', src, id)
    total = total - 1
  end
  return d
end
local ties = 0
if ARGV[6] == '1' then
  for _, id in ipairs(redis.call('ZRANGE', src, cursor, cursor, 'BYSCORE')) do
    local d = fetch(id)
    if d then
      out[#out + 1] = id
      out[#out + 1] = d
      ties = ties + 1
    end
  end
end
local hi = '+inf'
if cursor ~= '' then hi = '(' .. cursor end
local kept = 0
while kept < limit do
  local batch = redis.call(
    'ZRANGE', src, hi, lo, 'BYSCORE', 'REV', 'LIMIT', kept, limit - kept, 'WITHSCORES')
  if #batch == 0 then break end
  for i = 1, #batch, 2 do
    local d = fetch(batch[i])
    if d then
      out[#out + 1] = batch[i]
      out[#out + 1] = batch[i + 1]
      out[#out + 1] = d
      kept = kept + 1
    end
  end
end
if src ~= KEYS[4] then redis.call('DEL', src) end
out[1] = total
out[2] = ties
return out
