-- The object index's calls, one script so each is one round trip.
-- KEYS[1] is the list (a sorted set: score = created_at in ms, member = id);
-- ARGV[1] names the call, ARGV[2] is the object keys' prefix (the list's key
-- and ":"), so every key shares the list's hash tag and cluster slot.
local call, base = ARGV[1], ARGV[2]

if call == 'put' then
  -- ARGV: 3 id, 4 json, 5 created ms, 6 time to live ms, 7 cut ms (older is expired), 8 max entries
  local id = ARGV[3]
  redis.call('HSET', base .. id, 'o', ARGV[4])
  redis.call('PEXPIRE', base .. id, ARGV[6])
  redis.call('ZADD', KEYS[1], ARGV[5], id)
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[7])
  local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[8])
  if over > 0 then
    local old = redis.call('ZRANGE', KEYS[1], 0, over - 1)
    for _, x in ipairs(old) do redis.call('DEL', base .. x) end
    redis.call('ZREMRANGEBYRANK', KEYS[1], 0, over - 1)
  end
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[6]) then redis.call('PEXPIRE', KEYS[1], ARGV[6]) end
  return 1
end

if call == 'list' then
  -- ARGV: 3 after id or "", 4 how many to read, 5 cut ms, 6 "asc" for oldest first
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[5])
  local rank, range = 'ZREVRANK', 'ZREVRANGE'
  if ARGV[6] == 'asc' then rank, range = 'ZRANK', 'ZRANGE' end
  local start = 0
  if ARGV[3] ~= '' then
    local r = redis.call(rank, KEYS[1], ARGV[3])
    if not r then return {} end
    start = r + 1
  end
  local ids = redis.call(range, KEYS[1], start, start + tonumber(ARGV[4]) - 1)
  local out = {}
  for _, x in ipairs(ids) do
    local v = redis.call('HGET', base .. x, 'o')
    if v then table.insert(out, v) else redis.call('ZREM', KEYS[1], x) end
  end
  return out
end

if call == 'delete' then
  -- ARGV: 3 id
  redis.call('ZREM', KEYS[1], ARGV[3])
  return redis.call('DEL', base .. ARGV[3])
end

if call == 'claim' then
  -- ARGV: 3 id, 4 mark; -1 when the object is gone
  if redis.call('EXISTS', base .. ARGV[3]) == 0 then return -1 end
  return redis.call('HSETNX', base .. ARGV[3], 'c:' .. ARGV[4], '1')
end

return redis.error_reply('unknown call ' .. call)
