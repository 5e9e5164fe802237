import { createHash } from 'node:crypto';

/**
 * The one Lua script behind every RedisStore decision. It is a line-for-line port of the state
 * transitions in `@portcullis/core`'s `algorithms/*.ts` (fixed window, weighted sliding window,
 * token bucket, failure log) and of `MemoryStore`'s bookkeeping (a key is absent from its
 * `expiresAt` on; a refused first call stores nothing; a kind mismatch counts as absent). Every
 * quantity is an integer held in a Lua number (an IEEE double, exactly like a JS number) and every
 * division is floored or ceiled the same way, so Redis and memory agree to the unit.
 *
 * KEYS[1]  the prefixed key.
 * ARGV[1]  operation: `c` consume, `p` peek, `k` check failures, `r` record failure.
 * ARGV[2]  now in ms, or '' to read the Redis server clock (`TIME`) — the normal case.
 * windows  ARGV[3] algorithm (`f` fixed, `s` sliding, `t` token bucket), ARGV[4] limit,
 *          ARGV[5] windowMs, ARGV[6] cost (consume only).
 * failures ARGV[3] maxAttempts, ARGV[4] windowMs, ARGV[5] lockoutMs.
 *
 * Stored value (one string per key, TTL = expiresAt − now, so nothing outlives its use; the value
 * carries expiresAt too, which is what counts — the TTL only reclaims the memory):
 *   `F,<expiresAt>,<start>,<count>`            fixed window
 *   `S,<expiresAt>,<start>,<prev>,<curr>`      sliding window
 *   `T,<expiresAt>,<scaled>,<last>`            token bucket (tokens × windowMs)
 *   `L,<expiresAt>,<lockedUntil>,<t1>,…,<tn>`  failure log (n < maxAttempts), lockout end or 0
 *
 * Reply: `{ allowed (0|1), remaining, retryAfterMs, resetMs, lockoutStarted (0|1) }`.
 */
export const SCRIPT = `
local key = KEYS[1]
local op = ARGV[1]
local now
if ARGV[2] == '' then
  if redis.replicate_commands then redis.replicate_commands() end
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[2])
end
local floor, ceil, max, min = math.floor, math.ceil, math.max, math.min

local function num(x) return string.format('%.17g', x) end

-- The live fields of the stored value, or nil when absent, of another kind or expired.
local function load(kind)
  local raw = redis.call('GET', key)
  if not raw then return nil end
  local f = {}
  for part in string.gmatch(raw, '[^,]+') do f[#f + 1] = part end
  if f[1] ~= kind then
    -- Another kind under this key (a rule changed algorithm): MemoryStore forgets it too.
    redis.call('DEL', key)
    return nil
  end
  local exp = tonumber(f[2])
  if exp == nil or now >= exp then return nil end
  for i = 2, #f do f[i] = tonumber(f[i]) end
  return f
end

local function save(fields, exp)
  local ttl = exp - now
  if ttl <= 0 then
    redis.call('DEL', key)
    return
  end
  -- With a caller's clock (tests only) virtual time does not pass in Redis: keep the key a minute
  -- so it is not gone in real time before its virtual end (the stored expiresAt still rules).
  if ARGV[2] ~= '' and ttl < 60000 then ttl = 60000 end
  fields[2] = exp
  for i = 2, #fields do fields[i] = num(fields[i]) end
  redis.call('SET', key, table.concat(fields, ','), 'PX', string.format('%d', ttl))
end

if op == 'c' or op == 'p' then
  local alg = ARGV[3]
  local limit = tonumber(ARGV[4])
  local w = tonumber(ARGV[5])
  local cost = tonumber(ARGV[6]) or 1

  if alg == 'f' then
    local f = load('F')
    if op == 'p' then
      if f == nil or now >= f[3] + w then return { 1, limit, 0, 0, 0 } end
      local reset = f[3] + w - now
      local remaining = max(0, limit - f[4])
      if remaining > 0 then return { 1, remaining, 0, reset, 0 } end
      return { 0, 0, reset, reset, 0 }
    end
    local start, count = now, 0
    if f ~= nil and now < f[3] + w then start, count = f[3], f[4] end
    local reset = start + w - now
    local out
    if count + cost > limit then
      out = { 0, max(0, limit - count), reset, reset, 0 }
    else
      count = count + cost
      out = { 1, limit - count, 0, reset, 0 }
    end
    if f ~= nil or out[1] == 1 then save({ 'F', 0, start, count }, start + w) end
    return out
  end

  if alg == 's' then
    local f = load('S')
    if op == 'p' and f == nil then return { 1, limit, 0, 0, 0 } end
    local start, prev, curr = now, 0, 0
    if f ~= nil then
      start, prev, curr = f[3], f[4], f[5]
      local steps = floor((now - start) / w)
      if steps == 1 then
        prev, curr, start = curr, 0, start + w
      elseif steps >= 2 then
        prev, curr, start = 0, 0, start + steps * w
      end
    end
    local elapsed = now - start
    local function resetMs()
      if curr > 0 then return 2 * w - elapsed end
      if prev > 0 then return w - elapsed end
      return 0
    end
    local function retryMs(c)
      local room = limit - curr - c
      if room >= 0 and prev > 0 then return w - floor((room * w) / prev) - elapsed end
      local nextRoom = limit - c
      if nextRoom < 0 then return w end
      local into = 0
      if curr > 0 then into = max(0, w - floor((nextRoom * w) / curr)) end
      return w - elapsed + into
    end
    local total = limit * w
    local used = prev * (w - elapsed) + curr * w
    if op == 'p' then
      local remaining = max(0, floor((total - used) / w))
      if used + w > total then return { 0, remaining, retryMs(1), resetMs(), 0 } end
      return { 1, remaining, 0, resetMs(), 0 }
    end
    local out
    if used + cost * w > total then
      out = { 0, max(0, floor((total - used) / w)), retryMs(cost), resetMs(), 0 }
    else
      curr = curr + cost
      out = { 1, floor((total - used - cost * w) / w), 0, resetMs(), 0 }
    end
    if f ~= nil or out[1] == 1 then save({ 'S', 0, start, prev, curr }, start + 2 * w) end
    return out
  end

  -- token bucket
  local f = load('T')
  local full = limit * w
  local scaled, last = full, now
  if f ~= nil then
    scaled, last = f[3], f[4]
    if now > last then
      scaled = min(full, scaled + (now - last) * limit)
      last = now
    end
  end
  local function untilFull() return ceil((full - scaled) / limit) end
  if op == 'p' then
    local remaining = floor(scaled / w)
    if remaining < 1 then return { 0, 0, ceil((w - scaled) / limit), untilFull(), 0 } end
    return { 1, remaining, 0, untilFull(), 0 }
  end
  local need = cost * w
  local out
  if scaled < need then
    local retry = w
    if cost <= limit then retry = ceil((need - scaled) / limit) end
    out = { 0, floor(scaled / w), retry, untilFull(), 0 }
  else
    scaled = scaled - need
    out = { 1, floor(scaled / w), 0, untilFull(), 0 }
  end
  if f ~= nil or out[1] == 1 then save({ 'T', 0, scaled, last }, last + untilFull()) end
  return out
end

-- failure log
local maxAttempts = tonumber(ARGV[3])
local w = tonumber(ARGV[4])
local lockoutMs = tonumber(ARGV[5])
local f = load('L')
local lockedUntil = 0
local log = {}
if f ~= nil then
  lockedUntil = f[3]
  if lockedUntil ~= 0 then
    if now >= lockedUntil then f = nil; lockedUntil = 0 end
  else
    for i = 4, #f do
      if f[i] + w > now then log[#log + 1] = f[i] end
    end
    if #log == 0 then f = nil end
  end
end

if lockedUntil ~= 0 then
  local left = lockedUntil - now
  return { 0, 0, left, left, 0 }
end

if op == 'r' then
  log[#log + 1] = now
  if #log >= maxAttempts then
    lockedUntil = now + lockoutMs
    save({ 'L', 0, lockedUntil }, lockedUntil)
    return { 0, 0, lockoutMs, lockoutMs, 1 }
  end
  local fields = { 'L', 0, 0 }
  for i = 1, #log do fields[i + 3] = log[i] end
  save(fields, now + w)
elseif #log == 0 then
  return { 1, maxAttempts, 0, 0, 0 }
end
return { 1, maxAttempts - #log, 0, log[#log] + w - now, 0 }
`;

/** SHA1 of {@link SCRIPT}, computed once at module load: what `EVALSHA` sends. */
export const SCRIPT_SHA = createHash('sha1').update(SCRIPT).digest('hex');
