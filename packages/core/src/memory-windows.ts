import {
  fixedWindowBlockedUntil,
  fixedWindowConsume,
  fixedWindowExpiresAt,
  fixedWindowPeek,
  fixedWindowRefund,
  fixedWindowRoll,
  type FixedWindowState,
} from './algorithms/fixed-window.js';
import {
  slidingWindowBlockedUntil,
  slidingWindowConsume,
  slidingWindowExpiresAt,
  slidingWindowPeek,
  slidingWindowRefund,
  slidingWindowRoll,
  type SlidingWindowState,
} from './algorithms/sliding-window.js';
import {
  tokenBucketBlockedUntil,
  tokenBucketConsume,
  tokenBucketExpiresAt,
  tokenBucketPeek,
  tokenBucketRefund,
  tokenBucketRoll,
  type TokenBucketState,
} from './algorithms/token-bucket.js';
import { type Decision, decision } from './decision.js';
import { KeyIndex } from './key-index.js';
import { type Kind, Slot, type SlotPool, type State } from './slot-pool.js';
import {
  clampSlot,
  copyState,
  freshBucket,
  freshFixed,
  freshSliding,
  overflowDecision,
  putState,
} from './slot-state.js';
import type { WindowRule } from './store.js';

/**
 * What a window call gets instead of a key's failure state (see `live`): its start lies in the
 * future, so the hot path's window test never passes and the call goes where it is refused.
 */
export const HELD = new Slot(new KeyIndex<Slot>(), 'fixed-window', {
  algorithm: 'fixed-window',
  limit: 1,
  windowMs: 1,
});
HELD.start = Number.POSITIVE_INFINITY;

/**
 * The memory store's windows: which algorithm reads and writes a key's window and what that means
 * for its slot, on the store's own table. The store keeps the fixed window's hot path itself (it
 * must stay small enough for V8 to inline into the limiter) and hands everything else here. Every
 * call takes the store's time.
 * @internal
 */
export class WindowSlots {
  readonly #pool: SlotPool;
  readonly #slots: KeyIndex<Slot>;
  /** Scratch state for a new key's first call, so that a refused first call allocates nothing. */
  readonly #scratchFixed: FixedWindowState = { start: 0, count: 0 };
  readonly #scratchSliding: SlidingWindowState = { start: 0, prev: 0, curr: 0 };
  readonly #scratchBucket: TokenBucketState = { scaled: 0, last: 0 };
  /** The end of the failure state {@link HELD} stands for, set by the call that met it. */
  #heldUntil = 0;

  /** @param pool the store's slots; @param slots the store's own table */
  constructor(pool: SlotPool, slots: KeyIndex<Slot>) {
    this.#pool = pool;
    this.#slots = slots;
  }

  /** `key`'s live slot of `kind`; {@link HELD} when it holds live failure state instead. */
  live(key: string, kind: Kind, now: number): Slot | undefined {
    const slot = this.#slots.get(key);
    if (slot === undefined) return undefined;
    // The rest goes out of line: the hot path stays small enough for V8 to inline.
    if (slot.kind !== kind || now >= slot.expiresAt) return this.#notLive(slot, kind, now);
    return slot;
  }

  /** Every consume but a live fixed window's plain count: a new key, a roll, the other algorithms. */
  consume(
    key: string,
    rule: WindowRule,
    cost: number,
    now: number,
    slot: Slot | undefined,
  ): Decision {
    if (slot === HELD) return this.#held(key, rule, now);
    // Each algorithm rolls (or starts) the state and spends; #store then keeps what it must.
    let kind: Kind;
    let state: State;
    let d: Decision;
    let expiresAt: number;
    let protectedUntil: number;
    switch (rule.algorithm) {
      case 'fixed-window': {
        const s =
          slot === undefined
            ? freshFixed(this.#scratchFixed, now)
            : fixedWindowRoll(slot, now, rule);
        d = fixedWindowConsume(s, now, rule, cost, key);
        kind = 'fixed-window';
        state = s;
        expiresAt = fixedWindowExpiresAt(s, rule);
        protectedUntil = fixedWindowBlockedUntil(s, rule);
        break;
      }
      case 'sliding-window': {
        const s =
          slot === undefined
            ? freshSliding(this.#scratchSliding, now)
            : slidingWindowRoll(slot, now, rule);
        d = slidingWindowConsume(s, now, rule, cost, key);
        kind = 'sliding-window';
        state = s;
        expiresAt = slidingWindowExpiresAt(s, rule);
        protectedUntil = slidingWindowBlockedUntil(s, now, rule);
        break;
      }
      default: {
        const s =
          slot === undefined
            ? freshBucket(this.#scratchBucket, now, rule)
            : tokenBucketRoll(slot, now, rule);
        d = tokenBucketConsume(s, now, rule, cost, key);
        kind = 'token-bucket';
        state = s;
        expiresAt = tokenBucketExpiresAt(s, rule);
        protectedUntil = tokenBucketBlockedUntil(s, rule);
      }
    }
    return this.#store(key, slot, kind, state, d, now, expiresAt, protectedUntil, rule);
  }

  refund(key: string, rule: WindowRule, cost: number, agoMs: number, now: number): void {
    const slot = this.#slots.get(key);
    // Nothing to give back to a key that is gone or holds another kind of state (a lockout).
    if (slot === undefined || slot.kind !== rule.algorithm || now >= slot.expiresAt) return;
    clampSlot(this.#pool, slot, rule, now);
    let state: State = slot;
    let expiresAt: number;
    let protectedUntil: number;
    switch (rule.algorithm) {
      case 'fixed-window': {
        fixedWindowRefund(slot, now, rule, cost, agoMs);
        expiresAt = slot.expiresAt;
        protectedUntil = fixedWindowBlockedUntil(slot, rule);
        break;
      }
      case 'sliding-window': {
        const s = slidingWindowRoll(slot, now, rule);
        slidingWindowRefund(s, now, rule, cost, agoMs);
        state = s;
        expiresAt = slidingWindowExpiresAt(s, rule);
        protectedUntil = slidingWindowBlockedUntil(s, now, rule);
        break;
      }
      default: {
        const touched = slot.last > now - agoMs;
        const s = tokenBucketRoll(slot, now, rule);
        tokenBucketRefund(s, rule, cost, agoMs, touched);
        state = s;
        expiresAt = tokenBucketExpiresAt(s, rule);
        protectedUntil = tokenBucketBlockedUntil(s, rule);
      }
    }
    putState(this.#pool, slot, state, now, expiresAt, protectedUntil, rule);
  }

  peek(key: string, rule: WindowRule, now: number): Decision {
    const slot = this.live(key, rule.algorithm, now);
    if (slot === HELD) return this.#held(key, rule, now);
    if (slot === undefined && !this.#pool.hasRoom(now))
      return overflowDecision(this.#pool, key, rule.limit, now);
    // A state stamped in the future is clamped and kept clamped, as the Redis script does.
    if (slot !== undefined) clampSlot(this.#pool, slot, rule, now);
    switch (rule.algorithm) {
      case 'fixed-window':
        return fixedWindowPeek(slot, now, rule, key);
      case 'sliding-window':
        return slidingWindowPeek(slot, now, rule, key);
      default:
        return tokenBucketPeek(slot, now, rule, key);
    }
  }

  /** A slot of another kind, or one that has expired: dropped, or {@link HELD} (see below). */
  #notLive(slot: Slot, kind: Kind, now: number): Slot | undefined {
    // A window call never erases live failure state: its key may be the client's to choose, and
    // a failure limiter sharing the store and the name would lose a lockout to it. The window
    // call is answered from the sentinel instead (refused until the failure state ends). Another
    // window algorithm (a rule changed algorithm), or a window under a failure key, means nothing
    // under this rule and goes.
    if (now < slot.expiresAt && slot.kind === 'failure' && kind !== 'failure') {
      this.#heldUntil = slot.expiresAt;
      return HELD;
    }
    this.#pool.drop(slot);
    return undefined;
  }

  /** A window call on a key that holds failure state: refused, nothing changed or stored. */
  #held(key: string, rule: WindowRule, now: number): Decision {
    const wait = this.#heldUntil - now;
    return decision(false, 'limited', rule.limit, 0, wait, wait, key);
  }

  #store(
    key: string,
    slot: Slot | undefined,
    kind: Kind,
    state: State,
    d: Decision,
    now: number,
    expiresAt: number,
    protectedUntil: number,
    rule: WindowRule,
  ): Decision {
    if (slot === undefined) {
      // A refused first call changes nothing, so there is nothing to remember.
      if (!d.allowed) return d;
      if (expiresAt <= now) return d;
      if (!this.#pool.admit(now)) return overflowDecision(this.#pool, key, d.limit, now);
      const fresh = this.#pool.claim(this.#slots, '', key, kind, rule);
      copyState(kind, state, fresh);
      putState(this.#pool, fresh, fresh, now, expiresAt, protectedUntil, rule);
      return d;
    }
    putState(this.#pool, slot, state, now, expiresAt, protectedUntil, rule);
    return d;
  }
}
