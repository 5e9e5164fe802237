import { createHash } from 'node:crypto';
import { luaNow } from './lua-now.js';

/**
 * The script behind `RedisStore.trust` and `RedisStore.trusted`: one trust table per call, a
 * line-for-line port of `@portcullis/core`'s `TrustTable` (the memory store's), so that Redis and
 * memory keep and forget the same trusts. One atomic call on the Redis clock (`TIME`) per trust
 * written or read; the five keys of a table share one hash tag (one Cluster slot).
 *
 * KEYS     1 order: a sorted set, each trust (id = `>I4` length of the group, the group, the
 *            member) by its sequence number (insertion order; a refresh moves it to the end);
 *          2 times: a hash, id → when it was trusted (ms);
 *          3 entries: a sorted set of equal scores, ordered by member: the group's id prefix, then
 *            the trust's sequence number (`>d`), then the member: a group's trusts in order, its
 *            size a ZLEXCOUNT;
 *          4 groups: a sorted set of equal scores, one member per group, ordered by size (largest
 *            first), then by its latest change (core's `#bySize` sets, each in the order its
 *            groups last changed): the first is the group to evict from;
 *          5 meta: a hash, `n` the sequence counter, and `g<group>` the group's member in 4.
 * ARGV[1]  `a` trust (add), `q` query; ARGV[2] trustMs; ARGV[3] now in ms (tests) or '' (TIME).
 * `a`      ARGV[4] maxTrusted, ARGV[5] group, ARGV[6] member; replies 1. Every key then expires
 *          trustMs from now (an idle table goes away with its newest trust).
 * `q`      ARGV[4] member, ARGV[5…] groups; replies one 0 or 1 per group.
 *
 * Numbers in member strings are positive IEEE doubles packed big-endian, whose bytes sort as the
 * numbers do (sizes as 2^52 − size).
 */
export const TRUST_SCRIPT = `
local order, times, entries, groups, meta = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local op = ARGV[1]
local trustMs = tonumber(ARGV[2])
local clocked = ARGV[3] ~= ''
${luaNow(3)}
local spack, sunpack = struct.pack, struct.unpack

-- A trust stamped in the future (the clock stepped back) counts as earned now.
local function live(at)
  return now - math.min(at, now) < trustMs
end
local function prefixOf(group)
  return spack('>I4', #group) .. group
end

if op == 'q' then
  local member = ARGV[4]
  local ids = {}
  for i = 5, #ARGV do ids[#ids + 1] = prefixOf(ARGV[i]) .. member end
  local at = redis.call('HMGET', times, unpack(ids))
  local out = {}
  for i = 1, #ids do
    if at[i] and live(tonumber(at[i])) then out[i] = 1 else out[i] = 0 end
  end
  return out
end

local BIG = 2 ^ 52
local maxTrusted = tonumber(ARGV[4])
local group, member = ARGV[5], ARGV[6]
local high = string.char(128)

local function size(g)
  local p = prefixOf(g)
  return redis.call('ZLEXCOUNT', entries, '[' .. p, '(' .. p .. high)
end
-- The member of g's oldest trust (first in its order), or nil.
local function firstOf(g)
  local p = prefixOf(g)
  local e = redis.call('ZRANGEBYLEX', entries, '[' .. p, '(' .. p .. high, 'LIMIT', 0, 1)[1]
  if not e then return nil end
  return string.sub(e, #p + 9)
end
-- g changed (a trust earned, refreshed or forgotten) and holds s trusts now: it goes last among
-- the groups of its size (core's #resize and #touch).
local function changed(g, s)
  local field = 'g' .. g
  local old = redis.call('HGET', meta, field)
  if old then redis.call('ZREM', groups, old) end
  if s == 0 then
    redis.call('HDEL', meta, field)
    return
  end
  local m = spack('>d', BIG - s) .. spack('>d', redis.call('HINCRBY', meta, 'n', 1)) .. g
  redis.call('ZADD', groups, 0, m)
  redis.call('HSET', meta, field, m)
end
local function forget(g, m)
  local id = prefixOf(g) .. m
  local seq = redis.call('ZSCORE', order, id)
  if not seq then return end
  redis.call('ZREM', order, id)
  redis.call('HDEL', times, id)
  redis.call('ZREM', entries, prefixOf(g) .. spack('>d', tonumber(seq)) .. m)
  changed(g, size(g))
end
-- The group holding the most trusts (ties: the one changed longest ago), and its size.
local function largest()
  local top = redis.call('ZRANGE', groups, 0, 0)[1]
  if not top then return nil, 0 end
  return string.sub(top, 17), BIG - sunpack('>d', top, 1)
end

local p = prefixOf(group)
local id = p .. member
local seq = redis.call('ZSCORE', order, id)
if seq then
  -- A refresh: the trust moves to the end of both orders, with this time.
  local n = redis.call('HINCRBY', meta, 'n', 1)
  redis.call('ZREM', entries, p .. spack('>d', tonumber(seq)) .. member)
  redis.call('ZADD', entries, 0, p .. spack('>d', n) .. member)
  redis.call('ZADD', order, n, id)
  redis.call('HSET', times, id, now)
  changed(group, size(group))
else
  -- Expired trusts go first, oldest first (up to the first live one in order).
  while true do
    local oldest = redis.call('ZRANGE', order, 0, 0)[1]
    if not oldest then break end
    if live(tonumber(redis.call('HGET', times, oldest))) then break end
    local len = sunpack('>I4', oldest)
    forget(string.sub(oldest, 5, 4 + len), string.sub(oldest, 5 + len))
  end
  while redis.call('ZCARD', order) >= maxTrusted do
    local own = size(group)
    local top, most = largest()
    if not top then break end
    -- A group as large as the largest makes room from its own trusts: it cannot grow past the
    -- others by taking theirs. Else the largest group (of those, the one changed longest ago)
    -- gives its least recently earned trust.
    if own > 0 and own >= most then top = group end
    forget(top, firstOf(top))
  end
  local n = redis.call('HINCRBY', meta, 'n', 1)
  redis.call('ZADD', order, n, id)
  redis.call('HSET', times, id, now)
  redis.call('ZADD', entries, 0, p .. spack('>d', n) .. member)
  changed(group, size(group))
end
local ttl = trustMs
if clocked and ttl < 60000 then ttl = 60000 end
for i = 1, 5 do redis.call('PEXPIRE', KEYS[i], ttl) end
return 1
`;

/** SHA1 of {@link TRUST_SCRIPT}: what `EVALSHA` sends. */
export const TRUST_SCRIPT_SHA = createHash('sha1').update(TRUST_SCRIPT).digest('hex');

/** The suffixes of a trust table's keys, in the script's KEYS order. */
const SUFFIXES = [':o', ':t', ':e', ':g', ':m'] as const;

/**
 * The five keys of trust table `table` under `prefix`: `{<prefix><table>}:o` and so on, one hash
 * tag (one Cluster slot) per table. `}` and `%` in the name are escaped, so that the tag is the
 * whole name and two tables never share a key.
 */
export function trustKeys(prefix: string, table: string): string[] {
  const name = prefix + table;
  const tag =
    name.includes('}') || name.includes('%')
      ? name.replace(/%/g, '%25').replace(/\}/g, '%7D')
      : name;
  return SUFFIXES.map((suffix) => `{${tag}}${suffix}`);
}
