-- Relay's rate-limit script: one EVALSHA checks and takes every counter of a
-- request atomically (reserve), reports them (peek), corrects them after the
-- response (settle), or renews concurrency leases (renew). The Go Memory
-- store implements the same semantics; keep the two in step.
--
-- ARGV[1] mode: 'r' reserve, 'p' peek, 's' settle, 'n' renew
-- ARGV[2] now in Unix ms; 0 uses the server's clock (TIME)
-- ARGV[3] number of counters, then 6 fields per counter:
--   kind ('w' window, 'l' lease, 's' spacing, 'p' period, 'h' pod heartbeat),
--   limit, window ms (interval for 's', TTL for 'l' and 'h'),
--   amount (delta when settling), at (ms, settling a window), extra
--   (lease id for 'l', period end ms for 'p', pod id for 'h')
-- KEYS: per counter in order, 'w' takes two (log, sum), the others one.
--
-- A window's log is a list of "expiry:amount" entries in expiry order; an
-- amount reserved at t expires at the end of t's bucket (window/1000, at
-- least 1 ms) plus the window. Its sum key holds the total of the list.

local mode = ARGV[1]
local now = tonumber(ARGV[2])
if now <= 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local n = tonumber(ARGV[3])

local function int(x) return string.format('%d', x) end

local function entry(s)
  local c = string.find(s, ':', 1, true)
  return tonumber(string.sub(s, 1, c - 1)), tonumber(string.sub(s, c + 1))
end

local function bucket(win) return math.max(1, math.floor(win / 1000)) end

local function expiry(at, win)
  local b = bucket(win)
  return math.ceil(at / b) * b + win
end

-- evict drops expired entries and returns the live sum.
local function evict(log, sk)
  local sum = tonumber(redis.call('GET', sk) or '0')
  local dropped = false
  local h = redis.call('LINDEX', log, 0)
  while h do
    local e, w = entry(h)
    if e > now then break end
    redis.call('LPOP', log)
    sum = sum - w
    dropped = true
    h = redis.call('LINDEX', log, 0)
  end
  if not h then
    if sum ~= 0 or dropped then redis.call('DEL', log, sk) end
    return 0
  end
  if sum < 0 then sum = 0 end
  if dropped then redis.call('SET', sk, int(sum), 'KEEPTTL') end
  return sum
end

-- add puts amt into the entry expiring at e. An amount for the bucket of
-- the last entry (or, settling late, an earlier one) joins the last entry,
-- which expires no sooner (conservative). Only a new last entry moves the
-- keys' expiry: both live until the last entry expires.
local function add(log, sk, e, amt, win)
  if amt <= 0 then return end
  local tail = redis.call('LINDEX', log, -1)
  if tail then
    local te, tw = entry(tail)
    if te >= e then
      redis.call('LSET', log, -1, int(te) .. ':' .. int(tw + amt))
      redis.call('INCRBY', sk, int(amt))
      return
    end
  end
  redis.call('RPUSH', log, int(e) .. ':' .. int(amt))
  redis.call('INCRBY', sk, int(amt))
  local ttl = e - now + bucket(win)
  redis.call('PEXPIRE', log, int(ttl))
  redis.call('PEXPIRE', sk, int(ttl))
end

if mode == 'r' or mode == 'p' then
  local out = {1, 0, -1, now}
  local st = {}
  local worst = 0
  local ki = 1
  for i = 1, n do
    local a = 3 + (i - 1) * 6
    local kind, limit, win, amt, extra = ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), ARGV[a + 6]
    local used, reset, wait = 0, 0, 0
    if kind == 'w' then
      local log, sk = KEYS[ki], KEYS[ki + 1]
      ki = ki + 2
      local sum = evict(log, sk)
      used = sum
      if amt > limit then
        wait = -2
      elseif sum + amt > limit then
        local need, acc, j = sum + amt - limit, 0, 0
        wait = win
        local found = false
        while not found do
          local chunk = redis.call('LRANGE', log, j, j + 99)
          if #chunk == 0 then break end
          for _, s in ipairs(chunk) do
            local e, w = entry(s)
            acc = acc + w
            if acc >= need then wait = e - now; found = true; break end
          end
          j = j + 100
        end
      end
      st[i] = {log, sk}
    elseif kind == 'l' then
      local z = KEYS[ki]
      ki = ki + 1
      redis.call('ZREMRANGEBYSCORE', z, '-inf', int(now))
      local c = redis.call('ZCARD', z)
      used = c
      if c >= limit then
        if limit < 1 then
          wait = -2
        else
          local first = redis.call('ZRANGE', z, 0, 0, 'WITHSCORES')
          wait = math.max(1, tonumber(first[2]) - now)
        end
      end
      st[i] = z
    elseif kind == 's' then
      local k = KEYS[ki]
      ki = ki + 1
      local tat = tonumber(redis.call('GET', k) or '0')
      if tat > now then wait = tat - now; reset = wait end
      st[i] = {k, tat}
    elseif kind == 'p' then
      local k = KEYS[ki]
      ki = ki + 1
      local cur = tonumber(redis.call('GET', k) or '0')
      local ends = tonumber(extra)
      used = cur
      reset = ends - now
      if amt > limit then
        wait = -2
      elseif cur + amt > limit then
        wait = math.max(1, ends - now)
      end
      st[i] = k
    end
    out[4 + 2 * i - 1] = used
    out[4 + 2 * i] = reset
    if wait ~= 0 and worst ~= -2 and (wait == -2 or wait > worst) then
      worst = wait
      out[3] = i - 1
    end
  end
  if worst ~= 0 or mode == 'p' then
    -- Refused (or asked): report when each window is all free again.
    for i = 1, n do
      if ARGV[3 + (i - 1) * 6 + 1] == 'w' then
        local tail = redis.call('LINDEX', st[i][1], -1)
        if tail then out[4 + 2 * i] = entry(tail) - now end
      end
    end
    if worst ~= 0 then
      out[1] = 0
      out[2] = worst
    end
    return out
  end
  for i = 1, n do
    local a = 3 + (i - 1) * 6
    local kind, win, amt, extra = ARGV[a + 1], tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), ARGV[a + 6]
    if kind == 'w' then
      add(st[i][1], st[i][2], expiry(now, win), amt, win)
    elseif kind == 'l' then
      redis.call('ZADD', st[i], int(now + win), extra)
      redis.call('PEXPIRE', st[i], int(win))
    elseif kind == 's' and win > 0 then
      local nt = math.max(st[i][2], now) + win
      redis.call('SET', st[i][1], int(nt), 'PX', int(nt - now + win))
    elseif kind == 'p' and amt > 0 then
      redis.call('INCRBY', st[i], int(amt))
      redis.call('PEXPIREAT', st[i], int(tonumber(extra) + 86400000))
    end
  end
  return out
end

if mode == 's' then
  local ki = 1
  for i = 1, n do
    local a = 3 + (i - 1) * 6
    local kind, win, delta, at, extra = ARGV[a + 1], tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]), ARGV[a + 6]
    if kind == 'w' then
      local log, sk = KEYS[ki], KEYS[ki + 1]
      ki = ki + 2
      if delta ~= 0 then
        local e = expiry(at, win)
        evict(log, sk)
        local found = false
        if e > now then
          local j = -1
          while true do
            local s = redis.call('LINDEX', log, j)
            if not s then break end
            local te, tw = entry(s)
            if te < e then break end
            if te == e then
              local nw = math.max(0, tw + delta)
              redis.call('LSET', log, j, int(te) .. ':' .. int(nw))
              redis.call('INCRBY', sk, int(nw - tw))
              found = true
              break
            end
            j = j - 1
          end
        end
        if not found and delta > 0 then
          add(log, sk, math.max(e, expiry(now, win)), delta, win)
        end
      end
    elseif kind == 'l' then
      redis.call('ZREM', KEYS[ki], extra)
      ki = ki + 1
    elseif kind == 'p' then
      local k = KEYS[ki]
      ki = ki + 1
      if delta ~= 0 and redis.call('EXISTS', k) == 1 then
        local v = redis.call('INCRBY', k, int(delta))
        if v < 0 then redis.call('INCRBY', k, int(-v)) end
      end
    else
      ki = ki + 1
    end
  end
  return {now}
end

if mode == 'n' then
  local pods = 1
  for i = 1, n do
    local a = 3 + (i - 1) * 6
    local kind, win, extra = ARGV[a + 1], tonumber(ARGV[a + 3]), ARGV[a + 6]
    local z = KEYS[i]
    if kind == 'l' then
      local s = redis.call('ZSCORE', z, extra)
      if s and tonumber(s) > now then
        redis.call('ZADD', z, int(now + win), extra)
        redis.call('PEXPIRE', z, int(win))
      end
    elseif kind == 'h' then
      redis.call('ZADD', z, int(now + win), extra)
      redis.call('ZREMRANGEBYSCORE', z, '-inf', int(now))
      redis.call('PEXPIRE', z, int(win))
      pods = redis.call('ZCARD', z)
    end
  end
  return {pods}
end

return redis.error_reply('relay limiter: unknown mode ' .. tostring(mode))
