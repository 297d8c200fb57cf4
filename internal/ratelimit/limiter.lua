-- Relay's rate-limit script: one EVALSHA checks and takes every counter of a
-- request atomically (reserve), reports them (peek), corrects them after the
-- response (settle), or renews concurrency leases (renew). The Go Memory
-- store implements the same semantics; keep the two in step.
--
-- ARGV[1] mode: 'r' reserve, 'p' peek, 's' settle, 'n' renew
-- ARGV[2] now in Unix ms; 0 uses the server's clock (TIME)
-- ARGV[3] number of counters, then 5 fields per counter:
--   kind ('w' window, 'l' lease, 's' spacing, 'p' period, 'h' pod heartbeat),
--   room: what may already be taken for this amount to fit (limit − amount)
--     for 'w' and 'p', the limit for 'l',
--   window ms (interval for 's', TTL for 'l' and 'h'),
--   amount (delta when settling),
--   extra: the lease id ('l', 'h'), the period's end in ms ('p'); when
--     settling, the reservation's clock for 'w' and the time it set for 's'
--     (an undo)
-- KEYS: per counter in order; 'w' takes two, the others one.
-- When settling, two more ARGV may follow the counters: a pub/sub channel
-- and this pod's name. A settlement that gives room back (a lease
-- released, a window lowered) publishes the name there, so that the other
-- pods' requests waiting for that room ask again at once.
--
-- Cost: after the network, a script's CPU is mostly its redis.call()s
-- (each builds, runs and parses back a command) and the numbers Lua parses
-- and prints. So a reservation reads every counter kept in a string with
-- one MGET, writes with commands that answer integers (BITFIELD, INCRBY),
-- passes amounts through as the strings they came in, and touches a
-- window's buckets only when a new one starts or one expires.
--
-- A window is two keys. The first is 32 bytes, four signed 64-bit integers
-- read and written with BITFIELD — the live sum (offset 0), a lower bound of
-- the oldest bucket's expiry (64), the newest (tail) bucket's expiry (128)
-- and its amount (192) — and is all a request touches in the common case.
-- The second is a hash of the older buckets, one field per bucket named by
-- its expiry. An amount reserved at t goes to the bucket of t (window/1000
-- wide, at least 1 ms) and expires at the end of that bucket plus the
-- window. Buckets expire on a grid, so the expired ones are found by
-- stepping from the head to now — never a scan of the live ones — and a
-- settlement finds its bucket by name.
--
-- A reservation that fits answers {1, 0, -1, now, the time set by each
-- spacing counter..., then what each counter held before it (used)...};
-- a refusal and a peek answer {ok, wait, worst, now, then used and reset
-- for each counter}.

local mode = ARGV[1]
local now = tonumber(ARGV[2])
if now <= 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local n = tonumber(ARGV[3])

local function int(x) return string.format('%d', x) end

local snow = int(now)

local function bucket(win) return math.max(1, math.floor(win / 1000)) end

local function expiry(at, win)
  local b = bucket(win)
  return math.ceil(at / b) * b + win
end

-- meta decodes a window's 32 bytes (nil: an empty window).
local function meta(raw)
  if not raw then return 0, 0, 0, 0 end
  local sum, h, t, c = struct.unpack('>i8>i8>i8>i8', raw)
  return sum, h, t, c
end

-- wload takes window m (older buckets in bk) as read, drops the buckets
-- that expired and writes the sum and head back if it dropped any. It
-- returns the live sum, head, tail and the tail's amount (tail 0: empty).
local function wload(m, bk, win, sum, h, t, c)
  if t == 0 then return 0, 0, 0, 0 end
  if t <= now then
    redis.call('DEL', m, bk)
    return 0, 0, 0, 0
  end
  if h > now then return sum, h, t, c end
  -- Every bucket before the tail is in bk, on the grid from the head.
  local b = bucket(win)
  local fs = {}
  while h <= now do
    fs[#fs + 1] = int(h)
    h = h + b
  end
  local ws = redis.call('HMGET', bk, unpack(fs))
  for i = 1, #fs do
    if ws[i] then sum = sum - tonumber(ws[i]) end
  end
  redis.call('HDEL', bk, unpack(fs))
  if sum < 0 then sum = 0 end
  redis.call('BITFIELD', m, 'SET', 'i64', '0', int(sum), 'SET', 'i64', '64', int(h))
  return sum, h, t, c
end

-- wput adds amt (a string; n its value) to window m at bucket e. An amount
-- for a bucket before the tail (a clock that went back) joins the tail,
-- which expires later: conservative. A new tail moves the old one into bk.
local function wput(m, bk, h, t, c, e, amt, n)
  if n <= 0 then return end
  if t ~= 0 and e <= t then
    redis.call('BITFIELD', m, 'INCRBY', 'i64', '0', amt, 'INCRBY', 'i64', '192', amt)
    return
  end
  if t ~= 0 then
    redis.call('HSET', bk, int(t), int(c))
    redis.call('PEXPIRE', bk, int(math.max(1, t - now)))
  end
  if h == 0 then h = e end
  redis.call('BITFIELD', m, 'INCRBY', 'i64', '0', amt, 'SET', 'i64', '64', int(h), 'SET', 'i64', '128', int(e), 'SET', 'i64', '192', amt)
  redis.call('PEXPIRE', m, int(math.max(1, e - now)))
end

-- wwait is how long until need of a window has expired: its buckets in
-- expiry order, from the head, until enough has gone.
local function wwait(bk, need, h, t, c, win)
  local b = bucket(win)
  local acc = 0
  local g = h
  while g < t do
    local fs = {}
    while #fs < 128 and g < t do
      fs[#fs + 1] = int(g)
      g = g + b
    end
    local ws = redis.call('HMGET', bk, unpack(fs))
    for j = 1, #fs do
      if ws[j] then
        acc = acc + tonumber(ws[j])
        if acc >= need then return tonumber(fs[j]) - now end
      end
    end
  end
  if acc + c >= need then return t - now end
  return win
end

if mode == 'r' or mode == 'p' then
  local out = {1, 0, -1, now}
  -- What the check read, for the take: per counter.
  local keys, wins, sums, heads, tails, tamts = {}, {}, {}, {}, {}, {}
  local worst = 0
  -- One MGET reads every counter kept in a string: windows' metas,
  -- spacing and periods.
  local mk, mi = {}, {}
  local ki = 1
  for i = 1, n do
    local kind = ARGV[3 + (i - 1) * 5 + 1]
    keys[i] = ki
    if kind == 'w' or kind == 'p' or kind == 's' then
      mk[#mk + 1] = KEYS[ki]
      mi[i] = #mk
    end
    ki = ki + 1
    if kind == 'w' then ki = ki + 1 end
  end
  local mv = {}
  if #mk > 0 then mv = redis.call('MGET', unpack(mk)) end
  for i = 1, n do
    local a = 3 + (i - 1) * 5
    local kind = ARGV[a + 1]
    local k = KEYS[keys[i]]
    local used, reset, wait = 0, 0, 0
    if kind == 'w' then
      local bk = KEYS[keys[i] + 1]
      local room, win = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
      local sum, h, t, c = wload(k, bk, win, meta(mv[mi[i]]))
      used = sum
      if t ~= 0 then reset = t - now end
      if room < 0 then
        wait = -2
      elseif sum > room then
        wait = wwait(bk, sum - room, h, t, c, win)
      end
      wins[i], sums[i], heads[i], tails[i], tamts[i] = win, sum, h, t, c
    elseif kind == 'l' then
      local limit = tonumber(ARGV[a + 2])
      -- ZCARD is O(1) and counts expired leases too (those of pods that
      -- died): below the limit it is enough; at the limit they go first.
      local c = redis.call('ZCARD', k)
      if c >= limit or mode == 'p' then
        redis.call('ZREMRANGEBYSCORE', k, '-inf', snow)
        c = redis.call('ZCARD', k)
      end
      used = c
      if c >= limit then
        if limit < 1 then
          wait = -2
        else
          local first = redis.call('ZRANGE', k, 0, 0, 'WITHSCORES')
          wait = math.max(1, tonumber(first[2]) - now)
        end
      end
    elseif kind == 's' then
      local tat = tonumber(mv[mi[i]] or '0')
      if tat > now then wait = tat - now; reset = wait end
      sums[i] = tat
    elseif kind == 'p' then
      local raw = mv[mi[i]]
      local cur = tonumber(raw or '0')
      local room = tonumber(ARGV[a + 2])
      tails[i] = raw
      used = cur
      if room < 0 or cur > room or mode == 'p' then
        local ends = tonumber(ARGV[a + 5])
        reset = ends - now
        if room < 0 then
          wait = -2
        elseif cur > room then
          wait = math.max(1, ends - now)
        end
      end
    end
    out[4 + 2 * i - 1] = used
    out[4 + 2 * i] = reset
    if wait ~= 0 and worst ~= -2 and (wait == -2 or wait > worst) then
      worst = wait
      out[3] = i - 1
    end
  end
  if worst ~= 0 or mode == 'p' then
    if worst ~= 0 then
      out[1] = 0
      out[2] = worst
    end
    return out
  end
  local ok = {1, 0, -1, now}
  for i = 1, n do
    local a = 3 + (i - 1) * 5
    local kind, amt = ARGV[a + 1], ARGV[a + 4]
    local k = KEYS[keys[i]]
    if kind == 'w' then
      local win = wins[i]
      wput(k, KEYS[keys[i] + 1], heads[i], tails[i], tamts[i], expiry(now, win), amt, tonumber(amt))
    elseif kind == 'l' then
      local win = ARGV[a + 3]
      redis.call('ZADD', k, int(now + tonumber(win)), ARGV[a + 5])
      redis.call('PEXPIRE', k, win)
    elseif kind == 's' then
      local win = tonumber(ARGV[a + 3])
      local nt = sums[i]
      if win > 0 then
        nt = math.max(nt, now) + win
        redis.call('SET', k, int(nt), 'PX', int(nt - now + win))
      end
      ok[#ok + 1] = nt
    elseif kind == 'p' and amt ~= '0' then
      redis.call('INCRBY', k, amt)
      if not tails[i] then
        -- A new period: its spend stays readable for a day after it ends.
        redis.call('PEXPIREAT', k, int(tonumber(ARGV[a + 5]) + 86400000))
      end
    end
  end
  for i = 1, n do
    ok[#ok + 1] = out[4 + 2 * i - 1]
  end
  return ok
end

if mode == 's' then
  -- Leases released from one set go in one ZREM.
  local zrem, zkeys = {}, {}
  local freed = false
  local ki = 1
  for i = 1, n do
    local a = 3 + (i - 1) * 5
    local kind, delta, extra = ARGV[a + 1], ARGV[a + 4], ARGV[a + 5]
    local k = KEYS[ki]
    ki = ki + 1
    if kind == 'w' then
      ki = ki + 1
    end
    if kind == 'w' and delta ~= '0' then
      -- The delta goes to the bucket the reservation wrote; a charge that
      -- comes after that bucket expired goes to now's.
      local bk = KEYS[ki - 1]
      local win, d = tonumber(ARGV[a + 3]), tonumber(delta)
      if d < 0 then freed = true end
      local e = expiry(tonumber(extra), win)
      local v = redis.call('BITFIELD', k, 'GET', 'i64', '0', 'GET', 'i64', '64', 'GET', 'i64', '128', 'GET', 'i64', '192')
      local sum, h, t, c = wload(k, bk, win, v[1], v[2], v[3], v[4])
      local done = false
      if t ~= 0 and e > now then
        if e == t then
          if c + d < 0 then d = -c end
          redis.call('BITFIELD', k, 'INCRBY', 'i64', '0', int(d), 'INCRBY', 'i64', '192', int(d))
          done = true
        elseif e < t then
          local be = int(e)
          if redis.call('HEXISTS', bk, be) == 1 then
            local nw = redis.call('HINCRBY', bk, be, delta)
            if nw < 0 then
              redis.call('HSET', bk, be, '0')
              d = d - nw
            end
            redis.call('BITFIELD', k, 'INCRBY', 'i64', '0', int(d))
            done = true
          end
        end
      end
      if not done and d > 0 then
        wput(k, bk, h, t, c, expiry(now, win), delta, d)
      end
    elseif kind == 'l' then
      local ids = zrem[k]
      if not ids then
        ids = {}
        zrem[k] = ids
        zkeys[#zkeys + 1] = k
      end
      ids[#ids + 1] = extra
      freed = true
    elseif kind == 'p' and delta ~= '0' then
      if redis.call('EXISTS', k) == 1 then
        local v = redis.call('INCRBY', k, delta)
        if v < 0 then redis.call('INCRBY', k, int(-v)) end
      end
    elseif kind == 's' then
      -- Undo a spacing slot taken by a reservation refused elsewhere, if
      -- nobody took the next one since.
      if redis.call('GET', k) == extra then
        local win = tonumber(ARGV[a + 3])
        local p = tonumber(extra) - win
        if p > now then
          redis.call('SET', k, int(p), 'PX', int(p - now + win))
        else
          redis.call('DEL', k)
        end
      end
    end
  end
  for _, k in ipairs(zkeys) do
    redis.call('ZREM', k, unpack(zrem[k]))
  end
  local chan = ARGV[4 + 5 * n]
  if freed and chan and chan ~= '' then
    redis.call('PUBLISH', chan, ARGV[5 + 5 * n] or '')
  end
  return {now}
end

if mode == 'n' then
  local pods = 1
  for i = 1, n do
    local a = 3 + (i - 1) * 5
    local kind, win, extra = ARGV[a + 1], tonumber(ARGV[a + 3]), ARGV[a + 5]
    local z = KEYS[i]
    if kind == 'l' then
      local s = redis.call('ZSCORE', z, extra)
      if s and tonumber(s) > now then
        redis.call('ZADD', z, int(now + win), extra)
        redis.call('PEXPIRE', z, int(win))
      end
    elseif kind == 'h' then
      redis.call('ZADD', z, int(now + win), extra)
      redis.call('ZREMRANGEBYSCORE', z, '-inf', snow)
      redis.call('PEXPIRE', z, int(win))
      pods = redis.call('ZCARD', z)
    end
  end
  return {pods}
end

return redis.error_reply('relay limiter: unknown mode ' .. tostring(mode))
