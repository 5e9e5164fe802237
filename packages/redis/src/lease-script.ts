import { createHash } from 'node:crypto';
import { luaNow } from './lua-now.js';

/**
 * The script behind `RedisStore.acquire` and `RedisStore.release`: a line-for-line port of
 * `@portcullis/core`'s `LeaseTable` (the memory store's), so that Redis and memory hold and refuse
 * the same leases. One atomic call on the Redis clock (`TIME`) per acquire or release.
 *
 * KEYS[1]  the key's leases, `<prefix>~leases:<key>`: a sorted set, each lease id by when it
 *          expires (ms). Its TTL is its latest lease's expiry, so a set whose holders all died goes.
 * ARGV[1]  `a` acquire, `r` release; ARGV[2] the lease id; ARGV[3] now in ms (tests) or '' (TIME).
 * `a`      ARGV[4] max, ARGV[5] leaseMs. Expired leases go first, and ones stamped beyond now +
 *          leaseMs (a clock that stepped back) are clamped to it. A lease held is renewed; a new
 *          one is added when fewer than max are held. Replies `{ acquired (0|1), held }`.
 * `r`      forgets the lease; replies 0.
 */
export const LEASE_SCRIPT = `
local key, op, lease = KEYS[1], ARGV[1], ARGV[2]
if op == 'r' then
  redis.call('ZREM', key, lease)
  return 0
end
${luaNow(3)}
local max, leaseMs = tonumber(ARGV[4]), tonumber(ARGV[5])
local latest = now + leaseMs
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
local ahead = redis.call('ZRANGEBYSCORE', key, '(' .. latest, '+inf')
for i = 1, #ahead do redis.call('ZADD', key, latest, ahead[i]) end
local held = redis.call('ZCARD', key)
local mine = redis.call('ZSCORE', key, lease)
if not mine and held >= max then return { 0, held } end
redis.call('ZADD', key, latest, lease)
if not mine then held = held + 1 end
local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
redis.call('PEXPIRE', key, math.max(1, tonumber(last[2]) - now))
return { 1, held }
`;

/** The SHA1 `EVALSHA` names the lease script by. */
export const LEASE_SCRIPT_SHA = createHash('sha1').update(LEASE_SCRIPT).digest('hex');

/** Where the leases of `key` live: beside the lockout index, apart from every limiter's keys. */
export function leaseKey(prefix: string, key: string): string {
  return `${prefix}~leases:${key}`;
}
