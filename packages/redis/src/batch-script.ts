import { createHash } from 'node:crypto';
import { SCRIPT } from './script.js';
import { TRUST_SCRIPT } from './trust-script.js';

/**
 * The script behind `RedisStore.batch`: several calls of the store's two scripts (script.ts, the
 * decisions; trust-script.ts, the trust tables) run one after another in one atomic script, so a
 * phase of a layered login is one command where it was one per key. Each script's source runs
 * unchanged, as a function of its own `KEYS` and `ARGV`, so a call answers exactly what it answers
 * alone (and each reads the server clock itself, as alone).
 *
 * KEYS     every call's keys, in call order.
 * ARGV[1]  n, the number of calls; then per call three: `m` (script.ts) or `t` (trust-script.ts),
 *          its number of keys, its number of arguments; then every call's arguments, in call order.
 * Reply    one reply per call, as that script replies (a nil reply as false).
 *
 * A script may touch one Cluster hash slot only: the store sends a batch of keys of several slots
 * only to a Redis that is not a Cluster (which it learns from a `CROSSSLOT` answer).
 */
export const BATCH_SCRIPT = `
local function decide(KEYS, ARGV)
${SCRIPT}
end
local function trust(KEYS, ARGV)
${TRUST_SCRIPT}
end
local n = tonumber(ARGV[1])
local out = {}
local k, a = 1, 2 + 3 * n
for c = 1, n do
  local h = 2 + 3 * (c - 1)
  local nk, na = tonumber(ARGV[h + 1]), tonumber(ARGV[h + 2])
  local keys, args = {}, {}
  for i = 1, nk do keys[i] = KEYS[k]; k = k + 1 end
  for i = 1, na do args[i] = ARGV[a]; a = a + 1 end
  local reply
  if ARGV[h] == 't' then reply = trust(keys, args) else reply = decide(keys, args) end
  if reply == nil then reply = false end
  out[c] = reply
end
return out
`;

/** SHA1 of {@link BATCH_SCRIPT}: what `EVALSHA` sends. */
export const BATCH_SCRIPT_SHA = createHash('sha1').update(BATCH_SCRIPT).digest('hex');

/** One script call of a batch: which script, its keys and its arguments (after the keys). */
export interface BatchedCall {
  readonly script: 'm' | 't';
  readonly keys: readonly string[];
  readonly args: readonly string[];
}

/** The `EVALSHA` of `calls` as one batch script. */
export function batchArgs(calls: readonly BatchedCall[]): string[] {
  const keys: string[] = [];
  const heads: string[] = [];
  const args: string[] = [];
  for (const c of calls) {
    keys.push(...c.keys);
    heads.push(c.script, String(c.keys.length), String(c.args.length));
    args.push(...c.args);
  }
  return [
    'EVALSHA',
    BATCH_SCRIPT_SHA,
    String(keys.length),
    ...keys,
    String(calls.length),
    ...heads,
    ...args,
  ];
}
