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
 * ARGV[1]  operation: `c` consume, `p` peek or `g` give back (refund) followed by the algorithm
 *          (`f` fixed window, `s` sliding window, `t` token bucket), or `k` check failures, `r`
 *          record a failure, `s` record a success, `w` write back a lockout the fallback started
 *          during an outage; `x` followed by an algorithm or `l` (failures) re-stamps a key under
 *          a reconfigured rule (`xl` sends the old windowMs as ARGV[5], so its time is ARGV[6]);
 *          `b` bans a key by hand for ARGV[5] ms (its time is ARGV[6]); `d` records a failure
 *          against the member ARGV[5] of a distinct log (its time is ARGV[6]); `v` is a failure
 *          during a lockout the caller has seen (a check, that re-rules the expiry of a lockout in
 *          force as `r` does); `n` reads a key a listing found in the lockout index, as `k` does when
 *          its state is stored locked past now, else answers a clean slate and changes nothing; `i` lists a lockout
 *          in the lockout index KEYS[1] (ARGV[2] member, ARGV[3] ms left, ARGV[4] the member to drop).
 * windows  ARGV[2] limit, ARGV[3] windowMs, ARGV[4] cost (1 for a peek); a refund has one more,
 *          ARGV[5] agoMs (how long ago the units were spent) or `@<time>` (when, by the script's
 *          clock, as its consume replied), so its time argument is ARGV[6].
 * failures ARGV[2] maxAttempts (`w`: the lockout's remaining ms), ARGV[3] windowMs, ARGV[4] lockoutMs,
 *          or `lockoutMs,factor,maxLockoutMs` for a rule that escalates (a plain rule's number alone,
 *          so the common call parses nothing more).
 * ARGV[5]  (a refund's ARGV[6]) absent: read the Redis server clock (`TIME`), the normal case;
 *          else now in ms (tests). A consume of a fixed window that stands reads the clock from
 *          its key's PTTL instead (every write of a fixed window sets its expiry to the window's
 *          end with PEXPIREAT, so end − PTTL is TIME's reading to the millisecond). A check (`k`) or success (`s`) on an absent key answers a clean
 *          slate from its `GET` alone, before the clock is read.
 *
 * Clock steps: state stamped in the future (a window start, a bucket's last refill, a failure
 * time, a lockout end beyond now + its length, an escalation's last end) is clamped to now, exactly as the core algorithms'
 * `*Clamp` functions do, and written back even by a peek or a check, as `MemoryStore` keeps it.
 *
 * Stored value: one binary string per key, packed with Redis Lua's `struct` library as a kind byte
 * followed by big-endian IEEE doubles (`>c1d…`), so numbers round-trip bit for bit and nothing is
 * formatted or parsed as text. The TTL is expiresAt − now, so nothing outlives its use; the value
 * carries expiresAt too, which is what counts (the TTL only reclaims the memory):
 *   `F` expiresAt start count                  fixed window, 25 bytes
 *   `S` expiresAt start prev curr              sliding window, 33 bytes
 *   `T` expiresAt scaled last                  token bucket (tokens × windowMs), 25 bytes
 *   `L` expiresAt lockedUntil t1 … tn          failure log (n < maxAttempts) or lockout, 17 + 8n bytes
 *   `L` expiresAt lockedUntil banMs            a ban, 25 bytes
 *   `E` expiresAt lockedUntil banMs step lastEnd n t1 … tn [m1 … mn]
 *                                              failure state that escalates (step, lastEnd ≠ 0) or
 *                                              names members (op d; each `>H` length + bytes),
 *                                              49 + 8n bytes (+ members). Anything else stays `L`,
 *                                              so values written before `E` existed read as they did.
 *
 * Reply: `{ allowed (0|1), remaining, retryAfterMs, resetMs, lockoutStarted (0|1) }` (a window
 * call refused because its key holds failure state says 2 in the fifth field; a failure call
 * answers a ban with 3 there, and a lockout that reading the key started, under a lowered
 * maxAttempts, with 4), and for a
 * consume that spent, a sixth field: the script's now, when the units were spent (a refund of them
 * names it, so it reaches only a window that had started by then, however late the reply came). A `w`
 * replies the lockout now in force (the longer of Redis' own and the one written back). A refund
 * (`g…`) replies the integer 1 when it gave something back, 2 when it gave back to a window that
 * refused a unit call just before (another process may hold that refusal in its local deny table,
 * so the store publishes an invalidation), else 0.
 */
export const SCRIPT = `
local key = KEYS[1]
local code = ARGV[1]
local refund = code == 'gf' or code == 'gs' or code == 'gt'
local at = 5
if refund or code == 'xl' or code == 'b' or code == 'd' then at = 6 end
local clocked = ARGV[at] ~= nil
-- A failure check or success on an absent key (every clean client's login) is answered from the
-- GET alone: nothing is stored, nothing to compare with the clock, so no TIME is read.
local early
if code == 'k' or code == 's' or code == 'n' then
  early = redis.call('GET', key)
  if not early then return { 1, tonumber(ARGV[2]), 0, 0, 0 } end
end
-- A fixed window's key expires exactly at the window's end (PEXPIREAT, below), so while its window
-- stands, end − PTTL is the server clock's reading to the millisecond, as TIME gives it: a consume
-- of such a window (the hot path) reads the clock there and needs no TIME. Anything else (no
-- window, another kind or rule, a PTTL that does not fit: a key written by an older version, a
-- server clock stepped back) reads TIME. The decision itself is the fixed window's, below.
local fetched
local now
if clocked then
  now = tonumber(ARGV[at])
else
  if code == 'cf' then
    fetched = redis.call('GET', key)
    if fetched and #fetched == 25 then
      local kind, exp, start = struct.unpack('>c1dd', fetched)
      local w = tonumber(ARGV[3])
      if kind == 'F' and exp == start + w then
        local left = redis.call('PTTL', key)
        if left > 0 and left <= w then now = exp - left end
      end
    end
  end
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
end

if code == 'i' then
  -- The lockout index of one hash slot (KEYS[1], a sorted set; see RedisStore.lockouts): ARGV[2]
  -- the member (a kind digit and the key), ARGV[3] the ms it lasts, ARGV[4] the member of the other kind,
  -- which goes. What has ended is trimmed, the set is bounded (the soonest to end go first), and
  -- it lives as long as its latest entry.
  local untilMs = now + tonumber(ARGV[3])
  redis.call('ZREM', key, ARGV[4])
  redis.call('ZADD', key, untilMs, ARGV[2])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  local size = redis.call('ZCARD', key)
  if size > 100000 then redis.call('ZREMRANGEBYRANK', key, 0, size - 100001) end
  local ttl = untilMs - now
  if clocked and ttl < 60000 then ttl = 60000 end
  if ttl > 0 and redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
  return 1
end

-- Writes a fixed window's value, expiring exactly at its end exp (what the PTTL clock above relies
-- on); with a caller's clock (tests) it is kept ttl ms instead (see save()).
local function fixed(value, exp, ttl)
  if clocked then
    redis.call('SET', key, value, 'PX', ttl)
  else
    redis.call('SET', key, value)
    redis.call('PEXPIREAT', key, exp)
  end
end

-- Fixed window first, before the other helpers exist: it is the common case and the hot path, so it
-- reads and writes inline.

if code == 'cf' or code == 'pf' then
  local limit, w = tonumber(ARGV[2]), tonumber(ARGV[3])
  local raw = fetched or redis.call('GET', key)
  local live, exp, start, count = false, 0, now, 0
  if raw then
    local kind
    if #raw == 25 then kind, exp, start, count = struct.unpack('>c1ddd', raw) end
    if kind == 'F' then
      live = now < exp
      -- A dead value is forgotten, as MemoryStore forgets it: a clock stepping back must not
      -- bring it back to life.
      if not live then redis.call('DEL', key) end
    elseif (string.sub(raw, 1, 1) == 'L' or string.sub(raw, 1, 1) == 'E') and #raw >= 17 and struct.unpack('>d', raw, 2) > now then
      -- Failure state under this key (a failure limiter sharing the store and the name): a window
      -- call never erases it, its key may be the client's to choose. Refused until it ends.
      local left = struct.unpack('>d', raw, 2) - now
      return { 0, 0, left, left, 2 }
    else
      -- Another kind under this key (a rule changed algorithm): MemoryStore forgets it too.
      redis.call('DEL', key)
      exp, start, count = 0, now, 0
    end
  end
  -- A window starting in the future (the clock stepped back) starts now, keeping its count.
  local clamped = live and start > now
  if clamped then start = now end
  if code == 'pf' then
    if not live or now >= start + w then return { 1, limit, 0, 0, 0 } end
    if clamped then
      local ttl = w
      if clocked and ttl < 60000 then ttl = 60000 end
      fixed(struct.pack('>c1ddd', 'F', start + w, start, count), start + w, ttl)
    end
    local reset = start + w - now
    if count < limit then return { 1, limit - count, 0, reset, 0 } end
    return { 0, 0, reset, reset, 0 }
  end
  local cost = tonumber(ARGV[4])
  local same = live and now < start + w and exp == start + w
  if not same and (not live or now >= start + w) then start, count = now, 0 end
  local reset = start + w - now
  local allowed = count + cost <= limit
  if allowed then count = count + cost end
  if same then
    -- The hot path: the window and its expiry stand, only the count (bytes 18–25) changes.
    if allowed then redis.call('SETRANGE', key, 17, struct.pack('>d', count)) end
  elseif live or allowed then
    -- A new or re-ruled window: the whole value, expiring when the window ends (reset > 0).
    local ttl = reset
    if clocked and ttl < 60000 then ttl = 60000 end
    fixed(struct.pack('>c1ddd', 'F', start + w, start, count), start + w, ttl)
  end
  if allowed then return { 1, limit - count, 0, reset, 0, now } end
  return { 0, math.max(0, limit - count), reset, reset, 0 }
end

local floor, ceil, max, min = math.floor, math.ceil, math.max, math.min
local spack, sunpack = struct.pack, struct.unpack

-- A failure rule's lockout (ARGV[4]): 'lockoutMs', or 'lockoutMs,factor,maxLockoutMs' when the
-- rule escalates (a plain rule's call parses nothing more than it always did).
local function lockoutRule(arg)
  local ms = tonumber(arg)
  if ms then return ms end
  local a, b, c = string.match(arg, '^([^,]+),([^,]+),([^,]+)$')
  return tonumber(a), tonumber(b), tonumber(c)
end

-- The members of a distinct log (op d), stored after its n times as a >H length and the bytes
-- of each; nil when the value holds none (a plain log).
local function readMembers(raw, n)
  if #raw <= 49 + 8 * n then return nil end
  local members, pos = {}, 50 + 8 * n
  for i = 1, n do
    local len = sunpack('>H', raw, pos)
    members[i] = string.sub(raw, pos + 2, pos + 1 + len)
    pos = pos + 2 + len
  end
  return members
end

-- The stored value when it is of this kind and still live (now < expiresAt), else nil. A value of
-- another kind is deleted (a rule changed algorithm): MemoryStore forgets it the same way, except
-- live failure state met by a window call, which stays: then nil and the time it has left.
local function load(kind, size, fetched)
  local raw = fetched or redis.call('GET', key)
  if not raw then return nil end
  -- Failure state is 'L' (plain) or 'E' (escalating, or a distinct log).
  local stored = string.sub(raw, 1, 1)
  if stored == 'E' then stored = 'L' end
  if stored ~= kind or (size and #raw ~= size) then
    if kind ~= 'L' and stored == 'L' and #raw >= 17 and sunpack('>d', raw, 2) > now then
      return nil, sunpack('>d', raw, 2) - now
    end
    redis.call('DEL', key)
    return nil
  end
  -- A dead value (now >= expiresAt) is forgotten, as MemoryStore forgets it: a clock stepping
  -- back must not bring it back to life.
  if #raw < 9 or sunpack('>d', raw, 2) <= now then
    redis.call('DEL', key)
    return nil
  end
  return raw
end

-- Writes a packed value that expires at exp; a value already worthless is deleted instead.
local function save(value, exp)
  local ttl = exp - now
  if ttl <= 0 then
    redis.call('DEL', key)
    return
  end
  -- With a caller's clock (tests only) virtual time does not pass in Redis: keep the key a minute
  -- so it is not gone in real time before its virtual end (the stored expiresAt still rules).
  if clocked and ttl < 60000 then ttl = 60000 end
  if string.sub(value, 1, 1) == 'F' then
    fixed(value, exp, ttl)
    return
  end
  redis.call('SET', key, value, 'PX', ttl)
end

if code == 'xf' or code == 'xs' or code == 'xt' then
  -- Re-stamps a window under a reconfigured rule (MemoryStore.restamp): ARGV[2] limit, ARGV[3]
  -- windowMs of the new rule. Only a live value of this algorithm changes: it expires when the new
  -- rule says (or goes, when that is now); counts and starts are kept. Replies 1 when it changed.
  local limit, w = tonumber(ARGV[2]), tonumber(ARGV[3])
  local raw = redis.call('GET', key)
  if not raw then return 0 end
  local kind = string.sub(raw, 1, 1)
  if code == 'xf' then
    if kind ~= 'F' or #raw ~= 25 then return 0 end
    local _, exp, start, count = sunpack('>c1ddd', raw)
    if now >= exp then
      redis.call('DEL', key)
      return 1
    end
    save(spack('>c1ddd', 'F', start + w, start, count), start + w)
  elseif code == 'xs' then
    if kind ~= 'S' or #raw ~= 33 then return 0 end
    local _, exp, start, prev, curr = sunpack('>c1dddd', raw)
    if now >= exp then
      redis.call('DEL', key)
      return 1
    end
    save(spack('>c1dddd', 'S', start + 2 * w, start, prev, curr), start + 2 * w)
  else
    if kind ~= 'T' or #raw ~= 25 then return 0 end
    local _, exp, scaled, last = sunpack('>c1ddd', raw)
    if now >= exp then
      redis.call('DEL', key)
      return 1
    end
    -- A bucket fuller than the new capacity holds a full one (as the next read caps it).
    local full = limit * w
    local held = min(scaled, full)
    local untilFull = ceil((full - held) / limit)
    save(spack('>c1ddd', 'T', last + untilFull, scaled, last), last + untilFull)
  end
  return 1
end

if code == 'xl' then
  -- Re-stamps failure state under a reconfigured rule (MemoryStore.restamp): ARGV[3] windowMs and
  -- ARGV[4] lockout of the new rule, ARGV[5] the old windowMs. A lockout keeps its end; failures
  -- that had expired under the old window are forgotten (a wider window counts none of them
  -- again); the log expires by the new rule (its window, and its escalation memory).
  local w, old = tonumber(ARGV[3]), tonumber(ARGV[5])
  local _, factor, maxLockoutMs = lockoutRule(ARGV[4])
  local raw = redis.call('GET', key)
  if not raw then return 0 end
  local kind = string.sub(raw, 1, 1)
  local _, n, at, exp, locked, step, lastEnd
  if kind == 'L' and #raw >= 17 then
    n, at, step, lastEnd = (#raw - 17) / 8, 18, 0, 0
    _, exp, locked = sunpack('>c1dd', raw)
  elseif kind == 'E' and #raw >= 49 then
    _, exp, locked, _, step, lastEnd, n = sunpack('>c1dddddd', raw)
    at = 50
    if #raw < 49 + 8 * n then return 0 end
  else
    return 0
  end
  if n ~= floor(n) then return 0 end
  if now >= exp then
    redis.call('DEL', key)
    return 1
  end
  if locked ~= 0 then return 0 end
  local members
  if kind == 'E' then members = readMembers(raw, n) end
  local log, kept = {}, {}
  for i = 0, n - 1 do
    local t = sunpack('>d', raw, at + 8 * i)
    if t + old > now then
      log[#log + 1] = t
      if members then kept[#kept + 1] = members[i + 1] end
    end
  end
  if #log == 0 then
    redis.call('DEL', key)
    return 1
  end
  local exp2 = log[#log] + w
  if factor and lastEnd > 0 then exp2 = max(exp2, lastEnd + maxLockoutMs) end
  local parts
  if kind == 'L' then
    parts = { spack('>c1dd', 'L', exp2, 0) }
  else
    parts = { spack('>c1dddddd', 'E', exp2, 0, 0, step, lastEnd, #log) }
  end
  for i = 1, #log do parts[#parts + 1] = spack('>d', log[i]) end
  if members then
    for i = 1, #kept do parts[#parts + 1] = spack('>H', #kept[i]) .. kept[i] end
  end
  save(table.concat(parts), exp2)
  return 1
end

if refund then
  -- Gives back ARGV[4] units spent ARGV[5] ms ago, to the window they were spent in, exactly as
  -- MemoryStore.refund does (core's *Refund functions). Only a live value of this algorithm changes:
  -- an absent or dead value and a value of another kind (a lockout) are left as they are. A count
  -- never goes below zero. The comparisons keep core's form, so they agree on every input.
  local w = tonumber(ARGV[3])
  local cost = tonumber(ARGV[4])
  local ago
  if string.sub(ARGV[5], 1, 1) == '@' then
    -- Spent at a time of this clock: how long ago by this clock (never negative).
    ago = max(0, now - tonumber(string.sub(ARGV[5], 2)))
  else
    ago = tonumber(ARGV[5])
  end
  local raw = redis.call('GET', key)
  if not raw then return 0 end
  local kind = string.sub(raw, 1, 1)
  if code == 'gf' then
    if kind ~= 'F' or #raw ~= 25 then return 0 end
    local _, exp, start, count = sunpack('>c1ddd', raw)
    if now >= exp then return 0 end
    -- A window starting in the future (the clock stepped back) starts now, as a peek clamps it.
    local clamped = start > now
    if clamped then start, exp = now, now + w end
    local given = 0
    -- Only the window in force, and only when it started at or before the units were spent.
    if now < start + w and not (now - start < ago) then
      local left = max(0, count - cost)
      if left ~= count then
        -- 2: the window had nothing left, so other processes may hold its refusal locally.
        given = 1
        if count >= tonumber(ARGV[2]) then given = 2 end
        count = left
      end
    end
    if clamped then
      save(spack('>c1ddd', 'F', exp, start, count), exp)
    elseif given ~= 0 then
      -- The window and its expiry stand, only the count (bytes 18–25) changes.
      redis.call('SETRANGE', key, 17, spack('>d', count))
    end
    return given
  end
  if code == 'gs' then
    if kind ~= 'S' or #raw ~= 33 then return 0 end
    local _, exp, start, prev, curr = sunpack('>c1dddd', raw)
    if now >= exp then return 0 end
    local moved = start > now
    if moved then start = now end
    -- Rolled to now first, as slidingWindowRoll does (two stale windows re-anchor at now).
    local steps = floor((now - start) / w)
    if steps == 1 then
      prev, curr, start, moved = curr, 0, start + w, true
    elseif steps >= 2 then
      prev, curr, start, moved = 0, 0, now, true
    end
    local elapsed = now - start
    local given = 0
    -- A unit call was refused before this refund (2, as for the fixed window).
    local blocked = prev * (w - elapsed) + curr * w + w > tonumber(ARGV[2]) * w
    if elapsed >= ago then
      local left = max(0, curr - cost)
      if left ~= curr then curr, given = left, 1 end
    elseif elapsed + w >= ago then
      local left = max(0, prev - cost)
      if left ~= prev then prev, given = left, 1 end
    end
    if moved or given == 1 or exp ~= start + 2 * w then
      save(spack('>c1dddd', 'S', start + 2 * w, start, prev, curr), start + 2 * w)
    end
    if given == 1 and blocked then return 2 end
    return given
  end
  if kind ~= 'T' or #raw ~= 25 then return 0 end
  local limit = tonumber(ARGV[2])
  local full = limit * w
  local _, exp, scaled, last = sunpack('>c1ddd', raw)
  if now >= exp then return 0 end
  -- Changed since the spend (core's tokenBucketRefund): then only what the refill has not replaced.
  local touched = last > now - ago
  -- Refilled to now first (a future last refill is clamped, a bucket over this rule is capped).
  if last > now then
    last = now
  elseif now > last then
    scaled = min(full, scaled + (now - last) * limit)
    last = now
  end
  if scaled > full then scaled = full end
  local before = scaled
  local give = cost * w
  if touched then give = max(0, give - ago * limit) end
  scaled = min(full, scaled + give)
  local untilFull = ceil((full - scaled) / limit)
  save(spack('>c1ddd', 'T', last + untilFull, scaled, last), last + untilFull)
  if scaled > before then return 1 end
  return 0
end

if code == 'cs' or code == 'ps' or code == 'ct' or code == 'pt' then
  local peek = code == 'pf' or code == 'ps' or code == 'pt'
  local limit = tonumber(ARGV[2])
  local w = tonumber(ARGV[3])
  local cost = tonumber(ARGV[4])

  if code == 'cs' or code == 'ps' then
    local raw, held = load('S', 33)
    if held then return { 0, 0, held, held, 2 } end
    local live, exp, start, prev, curr = false, 0, now, 0, 0
    if raw then
      local _
      _, exp, start, prev, curr = sunpack('>c1dddd', raw)
      live = now < exp
    end
    -- A current window starting in the future (the clock stepped back) starts now.
    local clamped = live and start > now
    if clamped then start = now end
    local steps = 0
    if not live then
      if peek then return { 1, limit, 0, 0, 0 } end
      start, prev, curr = now, 0, 0
    else
      steps = floor((now - start) / w)
      if steps == 1 then
        prev, curr, start = curr, 0, start + w
      elseif steps >= 2 then
        -- Both windows are stale (only a shortened windowMs gets here while the value is live):
        -- it re-anchors at now, exactly as an absent key would, as core's slidingWindowRoll does.
        prev, curr, start = 0, 0, now
      end
    end
    local elapsed = now - start
    local total = limit * w
    local used = prev * (w - elapsed) + curr * w
    local c = cost
    if peek then c = 1 end
    local allowed = used + c * w <= total
    if allowed and not peek then curr = curr + cost end
    local reset = 0
    if curr > 0 then reset = 2 * w - elapsed elseif prev > 0 then reset = w - elapsed end
    if not peek then
      if live and steps == 0 and exp == start + 2 * w then
        -- The hot path: same window, same expiry; only curr (bytes 26–33) may change.
        if allowed then redis.call('SETRANGE', key, 25, spack('>d', curr)) end
      elseif live or allowed then
        save(spack('>c1dddd', 'S', start + 2 * w, start, prev, curr), start + 2 * w)
      end
    elseif clamped then
      save(spack('>c1dddd', 'S', start + 2 * w, start, prev, curr), start + 2 * w)
    end
    if allowed then
      if peek then return { 1, max(0, floor((total - used) / w)), 0, reset, 0 } end
      return { 1, floor((total - used - cost * w) / w), 0, reset, 0, now }
    end
    -- Refused: when would a call of this cost pass?
    local retry
    local room = limit - curr - c
    if room >= 0 and prev > 0 then
      -- Within this window: prev × (W − e) ≤ room × W  ⇔  e ≥ W − ⌊room × W / prev⌋.
      retry = w - floor((room * w) / prev) - elapsed
    elseif limit - c < 0 then
      -- A cost above the limit can never pass; advertise one window.
      retry = w
    else
      -- Next window, where curr becomes prev: curr × (W − e) ≤ (limit − c) × W.
      local into = 0
      if curr > 0 then into = max(0, w - floor(((limit - c) * w) / curr)) end
      retry = w - elapsed + into
    end
    return { 0, max(0, floor((total - used) / w)), retry, reset, 0 }
  end

  -- token bucket: tokens scaled by windowMs, refilled by limit per ms
  local raw, held = load('T', 25)
  if held then return { 0, 0, held, held, 2 } end
  local full = limit * w
  local live, exp, scaled, last = false, 0, full, now
  if raw then
    local _
    _, exp, scaled, last = sunpack('>c1ddd', raw)
    live = now < exp
  end
  local clamped = false
  if not live then
    scaled, last = full, now
  elseif last > now then
    -- Last refilled in the future (the clock stepped back): it refills from now on.
    last, clamped = now, true
  elseif now > last then
    scaled = min(full, scaled + (now - last) * limit)
    last = now
  end
  if peek and clamped then
    -- A peek keeps the clamp (MemoryStore does): the state as stored, only its last refill moved.
    local untilFull = ceil((full - scaled) / limit)
    save(spack('>c1ddd', 'T', last + untilFull, scaled, last), last + untilFull)
  end
  -- A bucket filled under a larger rule (a limiter reconfigured) holds at most a full one now.
  if scaled > full then scaled = full end
  if peek then
    local remaining = floor(scaled / w)
    if remaining < 1 then return { 0, 0, ceil((w - scaled) / limit), ceil((full - scaled) / limit), 0 } end
    return { 1, remaining, 0, ceil((full - scaled) / limit), 0 }
  end
  local need = cost * w
  if scaled < need then
    local retry = w
    if cost <= limit then retry = ceil((need - scaled) / limit) end
    local untilFull = ceil((full - scaled) / limit)
    if live then save(spack('>c1ddd', 'T', last + untilFull, scaled, last), last + untilFull) end
    return { 0, floor(scaled / w), retry, untilFull, 0 }
  end
  scaled = scaled - need
  local untilFull = ceil((full - scaled) / limit)
  save(spack('>c1ddd', 'T', last + untilFull, scaled, last), last + untilFull)
  return { 1, floor(scaled / w), 0, untilFull, 0, now }
end

-- failure log (core's algorithms/failure-log.ts, line for line)
local maxAttempts = tonumber(ARGV[2])
local w = tonumber(ARGV[3])
local lockoutMs, factor, maxLockoutMs = lockoutRule(ARGV[4])
local raw = load('L', nil, early)
-- The common call on a plain log (no lockout, no failure stamped in the future): a check, or a
-- failure that starts no lockout, reads only the failures that expired and the newest, and keeps
-- the rest as bytes. The general way below unpacks and packs every failure kept, one Lua call
-- each: a scope budget's log of 10 000 failures cost 2.5 ms of Redis per failure (bench/NOTES.md).
-- Anything else (an empty log after the roll, a lowered maxAttempts, a lockout to start) takes
-- the general way, which this answers exactly as for the calls it takes.
if raw and (code == 'r' or code == 'k') and string.sub(raw, 1, 1) == 'L' then
  local n = (#raw - 17) / 8
  if n >= 1 and n == floor(n) and sunpack('>d', raw, 10) == 0 then
    local newest = sunpack('>d', raw, 10 + 8 * n)
    if newest <= now then
      local drop = 0
      while drop < n and sunpack('>d', raw, 18 + 8 * drop) + w <= now do drop = drop + 1 end
      local kept = n - drop
      local after = kept
      if code == 'r' then after = kept + 1 end
      if kept > 0 and after < maxAttempts then
        if code == 'r' and drop == 0 then
          -- Nothing expired: the failure is appended and the expiry rewritten in place, as save()
          -- would have stored them (w > 0, so the key lives on).
          local ttl = w
          if clocked and ttl < 60000 then ttl = 60000 end
          redis.call('SETRANGE', key, 1, spack('>d', now + w))
          redis.call('APPEND', key, spack('>d', now))
          redis.call('PEXPIRE', key, ttl)
          return { 1, maxAttempts - after, 0, w, 0 }
        end
        local body = string.sub(raw, 18 + 8 * drop)
        if code == 'r' then
          save(spack('>c1dd', 'L', now + w, 0) .. body .. spack('>d', now), now + w)
          return { 1, maxAttempts - after, 0, w, 0 }
        end
        if drop > 0 then save(spack('>c1dd', 'L', newest + w, 0) .. body, newest + w) end
        return { 1, maxAttempts - kept, 0, newest + w - now, 0 }
      end
    end
  end
end
local lockedUntil = 0
-- The lockout end as stored: a reply that ends the lockout sooner says so (a sixth field, 1), and
-- the caller tells other processes to forget what they remember of the longer one.
local storedUntil = 0
-- The length of a ban in force (set by hand, op b), kept after its end time; 0 for a lockout.
local banMs = 0
-- Escalation (core's FailureState.step and lastEnd): the step of the current or last earned
-- lockout, and when the last one ended (0: none remembered).
local step, lastEnd = 0, 0
local log = {}
-- A distinct log (op d): the member of each failure in log, side by side; nil for a plain log.
local members
-- When the stored value expires (MemoryStore's expiresAt): rewritten exactly when MemoryStore
-- rewrites it, so that both forget a key at the same instant.
local expAt = 0
-- State stamped in the future (the clock stepped back) is clamped: a lockout ends at most its own
-- length from now (a ban its ban length, an earned one lockoutMs at its escalation step), a
-- failure logged after now counts as now, an end remembered for escalation is now at the latest.
local clamped = false
if raw then
  local ok, n, at = false, 0, 18
  if string.sub(raw, 1, 1) == 'L' then
    n = (#raw - 17) / 8
    if n == floor(n) then
      local _
      _, expAt, lockedUntil = sunpack('>c1dd', raw)
      ok = true
      if lockedUntil ~= 0 then
        if n >= 1 then banMs = sunpack('>d', raw, 18) end
        n = 0
      end
    end
  elseif #raw >= 49 then
    local _
    _, expAt, lockedUntil, banMs, step, lastEnd, n = sunpack('>c1dddddd', raw)
    at = 50
    ok = n >= 0 and n == floor(n) and #raw >= 49 + 8 * n
  end
  if not ok then
    redis.call('DEL', key)
    raw, lockedUntil, banMs, step, lastEnd, n = nil, 0, 0, 0, 0, 0
  end
  storedUntil = lockedUntil
  -- (One unpack per time: no stack limit on n.)
  for i = 0, n - 1 do log[i + 1] = sunpack('>d', raw, at + 8 * i) end
  if raw and string.sub(raw, 1, 1) == 'E' then members = readMembers(raw, n) end
end

-- A listing's read (RedisStore.lockouts, op n): the index may still name a key whose state is no
-- longer locked (its lockout ended and a failure was counted since, then the clock stepped back).
-- MemoryStore's listing reads only state stored locked past now, so only such state is read here,
-- as a check reads it; anything else is left as it is.
if code == 'n' then
  if storedUntil <= now then return { 1, maxAttempts, 0, 0, 0 } end
  code = 'k'
end

-- core's lockoutLength: an earned lockout's length at escalation step s.
local function length(s)
  if not factor or s == 0 then return lockoutMs end
  return max(lockoutMs, min(lockoutMs * factor ^ s, maxLockoutMs))
end
-- Whether an ended lockout is still remembered for escalation.
local function remembered()
  return factor ~= nil and lastEnd > 0 and now < lastEnd + maxLockoutMs
end
-- core's failureExpiresAt: when the state becomes worthless.
local function expiry()
  if lockedUntil ~= 0 then
    if not factor then return lockedUntil end
    local after = lastEnd
    if banMs == 0 then after = lockedUntil end
    if after > 0 then return max(lockedUntil, after + maxLockoutMs) end
    return lockedUntil
  end
  local at = 0
  if #log > 0 then at = log[#log] + w end
  if factor and lastEnd > 0 then at = max(at, lastEnd + maxLockoutMs) end
  return at
end
local function clearLog()
  log = {}
  if members then members = {} end
end
-- core's startLockout: an earned lockout from now, at the step the key's history gives.
local function startLockout()
  clearLog()
  if remembered() then step = step + 1 else step = 0 end
  lockedUntil = now + length(step)
  banMs = 0
end

-- Whether the state changed (MemoryStore then rewrites expiresAt), and whether it went.
local changed, gone = false, false
-- A lockout the roll started (a lowered maxAttempts): the reply says so (4), to list it.
local rolled = false
if raw then
  -- core's failureClamp
  local bound = banMs
  if bound == 0 then bound = length(step) end
  if lockedUntil ~= 0 and lockedUntil > now + bound then lockedUntil, clamped = now + bound, true end
  for i = #log, 1, -1 do
    if log[i] <= now then break end
    log[i], clamped = now, true
  end
  if lastEnd > now then lastEnd, clamped = now, true end
  changed = clamped
  -- core's failureRoll
  if lockedUntil ~= 0 then
    if now >= lockedUntil then
      -- Over. An earned lockout's end is remembered for escalation (a ban's is not).
      if banMs == 0 then lastEnd = lockedUntil end
      lockedUntil, banMs, changed = 0, 0, true
      clearLog()
      gone = not remembered()
    end
  else
    -- A failure exactly windowMs old has expired.
    local drop = 0
    while drop < #log and log[drop + 1] + w <= now do drop = drop + 1 end
    if drop > 0 then
      local kept, keptMembers = {}, nil
      if members then keptMembers = {} end
      for i = drop + 1, #log do
        kept[#kept + 1] = log[i]
        if members then keptMembers[#keptMembers + 1] = members[i] end
      end
      log, members, changed = kept, keptMembers, true
    end
    if #log == 0 then
      gone = not remembered()
    elseif #log >= maxAttempts and code ~= 'w' then
      -- Only after maxAttempts was lowered (a limiter reconfigured) can a live log hold that many
      -- failures: the subject is over the new limit and locked from this call on.
      startLockout()
      rolled, changed = true, true
    end
  end
  if gone then
    -- Nothing left (the lockout is over, every failure has expired): forgotten, as in MemoryStore.
    redis.call('DEL', key)
    raw, lockedUntil, banMs, step, lastEnd, log, members, changed = nil, 0, 0, 0, 0, {}, nil, false
  elseif changed then
    expAt = expiry()
  end
end

-- The value as stored: the compact 'L' layout while nothing escalates and no member is named, else
-- 'E' (see the layout above).
local function pack()
  local named = false
  if members then
    for i = 1, #members do
      if members[i] ~= '' then
        named = true
        break
      end
    end
  end
  if step == 0 and lastEnd == 0 and not named then
    if lockedUntil ~= 0 then
      if banMs > 0 then return spack('>c1ddd', 'L', expAt, lockedUntil, banMs) end
      return spack('>c1dd', 'L', expAt, lockedUntil)
    end
    local parts = { spack('>c1dd', 'L', expAt, 0) }
    for i = 1, #log do parts[i + 1] = spack('>d', log[i]) end
    return table.concat(parts)
  end
  local parts = { spack('>c1dddddd', 'E', expAt, lockedUntil, banMs, step, lastEnd, #log) }
  for i = 1, #log do parts[i + 1] = spack('>d', log[i]) end
  if named then
    for i = 1, #log do parts[#parts + 1] = spack('>H', #members[i]) .. members[i] end
  end
  return table.concat(parts)
end

-- MemoryStore's #put (after a record, a ban, a write-back): the expiry follows this rule.
-- 'v' is a failure during a lockout the caller saw: counted as nothing either way (a check when
-- Redis holds no lockout), it rewrites the expiry of one in force as a recorded failure does.
local put = code == 'r' or code == 'd' or code == 'w' or code == 'b' or code == 'v'
if code == 'w' then
  -- Write back a lockout the fallback started during an outage, with its remaining time: the
  -- longer of Redis' own lockout and this one stands. It is an earned lockout: its step grows
  -- until its length covers the time written back, so that a clamp never cuts it short.
  local want = now + maxAttempts
  if lockedUntil == 0 or want > lockedUntil then
    lockedUntil, banMs, changed = want, 0, true
    clearLog()
    if factor and factor > 1 and length(step) < maxAttempts then
      step = max(step, floor(math.log(maxAttempts / lockoutMs) / math.log(factor)))
      while length(step) < maxAttempts and length(step + 1) > length(step) do step = step + 1 end
    end
  end
elseif code == 'b' then
  -- A ban of ARGV[5] ms (core's failureBan): a lockout in force that ends later stays; a ban over
  -- an earned lockout ends that one now (its end is what escalation remembers).
  local ms = tonumber(ARGV[5])
  local want = now + ms
  if lockedUntil == 0 or want > lockedUntil then
    if lockedUntil ~= 0 and banMs == 0 then lastEnd = now end
    clearLog()
    lockedUntil, banMs, changed = want, ms, true
  end
end

if lockedUntil ~= 0 then
  if put then
    local e = expiry()
    if changed or e ~= expAt then
      expAt = e
      save(pack(), expAt)
    end
  elseif changed then
    save(pack(), expAt)
  end
  local left = lockedUntil - now
  -- A ban says so (3), so that its wait, which lockoutMs does not bound, is no malformed reply.
  local kind = 0
  if banMs > 0 then kind = 3 elseif rolled and code ~= 'b' then kind = 4 end
  if lockedUntil < storedUntil then return { 0, 0, left, left, kind, 1 } end
  return { 0, 0, left, left, kind }
end

if code == 's' then
  -- A success: no lockout is in force (that returned above), so the history (and the step) goes.
  if raw then redis.call('DEL', key) end
  return { 1, maxAttempts, 0, 0, 0 }
end

if code == 'r' or code == 'd' then
  if code == 'd' then
    -- core's failureRecordDistinct: the member's earlier failure in the window, if any, is
    -- replaced by this one, so the log counts distinct members. A member is bounded by the caller
    -- (256 characters, sent at most 1025 bytes); a longer one is refused here all the same.
    local member = ARGV[5]
    if #member > 1025 then return redis.error_reply('ERR portcullis: member longer than 1025 bytes') end
    if not members then
      members = {}
      for i = 1, #log do members[i] = '' end
    end
    for i = 1, #members do
      if members[i] == member then
        table.remove(members, i)
        table.remove(log, i)
        break
      end
    end
    members[#members + 1] = member
  elseif members then
    members[#members + 1] = ''
  end
  log[#log + 1] = now
  if #log >= maxAttempts then
    startLockout()
    expAt = expiry()
    save(pack(), expAt)
    local len = lockedUntil - now
    return { 0, 0, len, len, 1 }
  end
  expAt = expiry()
  save(pack(), expAt)
  return { 1, maxAttempts - #log, 0, w, 0 }
end
if changed then save(pack(), expAt) end
if #log == 0 then return { 1, maxAttempts, 0, 0, 0 } end
return { 1, maxAttempts - #log, 0, log[#log] + w - now, 0 }
`;

/** SHA1 of {@link SCRIPT}, computed once at module load: what `EVALSHA` sends. */
export const SCRIPT_SHA = createHash('sha1').update(SCRIPT).digest('hex');
