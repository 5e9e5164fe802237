import { createHash } from 'node:crypto';
import type { Clock, FailureRule } from '@portcullis/core';
import { SCRIPT_SHA } from './script.js';

/** The script's op of each algorithm's consume, peek, refund and re-stamp (see script.ts). */
export const CONSUME = {
  'fixed-window': 'cf',
  'sliding-window': 'cs',
  'token-bucket': 'ct',
} as const;
export const PEEK = { 'fixed-window': 'pf', 'sliding-window': 'ps', 'token-bucket': 'pt' } as const;
export const REFUND = {
  'fixed-window': 'gf',
  'sliding-window': 'gs',
  'token-bucket': 'gt',
} as const;
export const RESTAMP = {
  'fixed-window': 'xf',
  'sliding-window': 'xs',
  'token-bucket': 'xt',
} as const;

/**
 * A failure rule's lockout as the script reads it (ARGV[4]): `lockoutMs`, or
 * `lockoutMs,factor,maxLockoutMs` for a rule that escalates (a plain rule costs nothing more).
 */
export function lockoutArg(rule: FailureRule): string {
  const e = rule.escalate;
  return e === undefined
    ? String(rule.lockoutMs)
    : `${rule.lockoutMs},${e.factor},${e.maxLockoutMs}`;
}

/** A lone surrogate: a string that UTF-8 (what Redis receives) cannot carry as it is. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * A distinct log's member as sent to the script, one-to-one with the caller's: Redis compares
 * UTF-8 bytes, where every lone surrogate becomes U+FFFD, so such a member (and one that starts
 * like an escaped one, U+0001 or U+0002) goes as U+0001 and the hex of its UTF-16 code units. A
 * member past the 256 characters the contract allows goes as U+0002 and its SHA-256, so it stays
 * distinct without growing the log. The empty member stays empty: it is what a plain recorded
 * failure counts as in a distinct log, in memory as in Redis.
 */
export function memberArg(member: string): string {
  if (member.length > 256)
    return `\u0002${createHash('sha256').update(member, 'utf16le').digest('hex')}`;
  const first = member.charCodeAt(0);
  if (first !== 1 && first !== 2 && !LONE_SURROGATE.test(member)) return member;
  let hex = '\u0001';
  for (let i = 0; i < member.length; i++) hex += member.charCodeAt(i).toString(16).padStart(4, '0');
  return hex;
}

/**
 * Builds the store script's calls: `EVALSHA sha 1 <prefixed key> <op> <three numbers> [agoMs]
 * [now]` (see script.ts for the layout; only a refund and a failure re-stamp send the fifth
 * argument; `now` only under a test clock, else the script reads Redis' `TIME`).
 */
export class ScriptArgs {
  readonly #prefix: string;
  readonly #clock: Clock | undefined;

  constructor(prefix: string, scriptClock: Clock | undefined) {
    this.#prefix = prefix;
    this.#clock = scriptClock;
  }

  /** The call of `op` on `key`, with its three numbers (and `ago` when given). */
  of(
    key: string,
    op: string,
    a: string,
    b: string,
    c: string,
    ago?: string,
    at?: number,
  ): string[] {
    const args = ['EVALSHA', SCRIPT_SHA, '1', this.#prefix + key, op, a, b, c];
    if (ago !== undefined) args.push(ago);
    if (this.#clock !== undefined) args.push(String(at ?? this.#clock.now()));
    return args;
  }

  /** The call of `op` on the raw Redis key `redisKey` (the lockout index's own keys). */
  raw(redisKey: string, op: string, ...rest: string[]): string[] {
    const args = ['EVALSHA', SCRIPT_SHA, '1', redisKey, op, ...rest];
    if (this.#clock !== undefined) args.push(String(this.#clock.now()));
    return args;
  }

  /** The time a trust call sends: the test clock's now, or `''` for Redis' own. */
  trustNow(): string {
    return this.#clock === undefined ? '' : String(this.#clock.now());
  }
}
