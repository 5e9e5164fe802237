// The lockout index `lockouts()` reads (docs/design.md#operators): per Redis Cluster hash slot a
// sorted set `<prefix>~lockouts{<tag>}` (member: `0` for a lockout or `1` for a ban, then the
// key; score: its end), and a set `<prefix>~lockouts-slots` naming the slots that have held one.
import { keySlot, SLOTS, slotTag } from './slots.js';

/**
 * How long the registry of slots holding lockouts lives after it was last written: the longest
 * lockout a limiter can set (10 years), so it never ends before a lockout it names.
 */
export const REGISTRY_TTL_MS = 315_360_000_000;

/** How many slots' lockout indexes a listing reads at once. */
export const LISTING_BATCH = 512;

/** The lockout index of hash slot `slot`. */
export const slotIndexKey = (prefix: string, slot: number): string =>
  `${prefix}~lockouts{${slotTag(slot)}}`;

/** The lockout index holding `redisKey`'s entry: a sorted set of the same hash slot. */
export const indexKeyOf = (prefix: string, redisKey: string): string =>
  slotIndexKey(prefix, keySlot(redisKey));

/** The registry of slots that have held a lockout. */
export const registryKey = (prefix: string): string => `${prefix}~lockouts-slots`;

/** `redisKey`'s member as a lockout or a ban, and the member of the other kind (which goes). */
export function indexMembers(redisKey: string, ban: boolean): [string, string] {
  return ban ? [`1${redisKey}`, `0${redisKey}`] : [`0${redisKey}`, `1${redisKey}`];
}

/** The slots a registry reply (`SMEMBERS`) names, dropping anything that is no slot. */
export function registeredSlots(members: unknown[]): number[] {
  return members
    .map((m) => Number(String(m)))
    .filter((n) => Number.isInteger(n) && n >= 0 && n < SLOTS);
}

/**
 * The entries of a `ZRANGEBYSCORE … WITHSCORES` reply whose key starts with `wanted`, as store keys
 * (without `prefix`) and their ends. RESP2 answers member, score, member, score…; RESP3
 * (node-redis 5) pairs of them.
 */
export function indexEntries(
  reply: unknown[],
  wanted: string,
  prefix: string,
): { key: string; until: number }[] {
  const flat = reply.every(Array.isArray) ? (reply as unknown[][]).flat() : reply;
  const out: { key: string; until: number }[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const member = String(flat[i]).slice(1);
    const until = Number(String(flat[i + 1]));
    if (member.startsWith(wanted) && Number.isSafeInteger(until))
      out.push({ key: member.slice(prefix.length), until });
  }
  return out;
}
