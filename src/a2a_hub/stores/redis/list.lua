-- list_tasks: newest first, keyset paging; sweeps due index entries first.
-- KEYS: (common 1..4), scratch, then the indexes to read (the tasks index when there is
--       no filter; several are intersected into scratch)
-- ARGV: (common 1..3), task prefix, lowest score ('-inf'), cursor score ('' on the first
--       page), '1' to read the ties of the cursor score, limit
-- Returns {total, ties, tie id, tie data, ..., id, score, data, ...}: the members
-- with exactly the cursor score (the caller keeps those whose id is below the
-- cursor's), then at most ``limit`` members below the cursor score, newest first.
local scratch, src = KEYS[5], KEYS[6]
local task_prefix, lo, cursor, limit = ARGV[4], ARGV[5], ARGV[6], tonumber(ARGV[8])

sweep(1000)  -- up to a thousand per list
if #KEYS > 6 then
  local args = {scratch, #KEYS - 5}
  for i = 6, #KEYS do args[#args + 1] = KEYS[i] end
  args[#args + 1] = 'AGGREGATE'
  args[#args + 1] = 'MAX'
  redis.call('ZINTERSTORE', unpack(args))
  src = scratch
end
local total
if lo == '-inf' then  -- no updated_after: the index's cardinality, O(1)
  total = redis.call('ZCARD', src)
else
  total = redis.call('ZCOUNT', src, lo, '+inf')
end
local out = {0, 0}
local function fetch(id)
  local d = redis.call('HGET', task_prefix .. id, 'd')
  if not d then  -- expired before the sweep got to it
    forget(id)
    redis.call('ZREM', src, id)
    total = total - 1
  end
  return d
end
local ties = 0
if ARGV[7] == '1' then
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
if src == scratch then redis.call('DEL', scratch) end
out[1] = total
out[2] = ties
return out
