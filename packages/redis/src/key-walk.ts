import type { FailureRule, WindowRule } from '@portcullis/core';
import { isRestampReply, isScanReply } from './replies.js';
import { lockoutArg, RESTAMP } from './script-args.js';
import { SCRIPT } from './script.js';
import { eachScanPage, globEscape, type ScanPage } from './scan.js';
import type { Shared } from './shared.js';

/**
 * The store's walks over its keys with `SCAN` (O(keys in the database), so never on a hot path):
 * counting them for `size()`, and re-stamping them after a limiter was reconfigured.
 */
export class KeyWalk {
  constructor(private readonly s: Shared) {}

  /** How many limiter keys the store holds in Redis (rejects on a Redis failure). */
  async count(): Promise<number> {
    let count = 0;
    await eachScanPage(this.#scan(this.s.prefix), this.s.prefix, (keys) => {
      count += keys.length;
    });
    return count;
  }

  /**
   * Re-stamps every key under `prefix` from `before` to `after` (one script call each); script
   * calls made meanwhile wait for it, at most half of `timeoutMs`. Never rejects: a failure is a
   * store error, and each key is then re-stamped when it is next written under the new rule.
   */
  restamp(
    prefix: string,
    before: WindowRule | FailureRule,
    after: WindowRule | FailureRule,
  ): Promise<void> {
    const { outage, scriptClock, transport } = this.s;
    // A test clock's time of the reconfigure: every key is re-stamped as of then (the server
    // clock, in production, moves on by itself while the walk runs).
    const at = scriptClock?.now();
    const walk = this.#walk(prefix, before, after, at).then(
      () => outage.up(),
      (error: unknown) => outage.fail(error),
    );
    // A walk that failed ends the barrier too (its error reaches the caller through `walk`).
    transport.hold(walk, Math.floor(transport.timeoutMs / 2));
    return walk;
  }

  async #walk(
    prefix: string,
    before: WindowRule | FailureRule,
    after: WindowRule | FailureRule,
    at: number | undefined,
  ): Promise<void> {
    const s = this.s;
    const failure = !('algorithm' in after);
    const op = 'algorithm' in after ? RESTAMP[after.algorithm] : 'xl';
    const numbers =
      'algorithm' in after
        ? [String(after.limit), String(after.windowMs), String(before.windowMs)]
        : [String(after.maxAttempts), String(after.windowMs), lockoutArg(after)];
    const [a, b, c] = numbers as [string, string, string];
    await eachScanPage(this.#scan(s.prefix + prefix), s.prefix, (keys) =>
      Promise.all(
        keys.map((redisKey) => {
          const key = redisKey.slice(s.prefix.length);
          const ago = failure ? String(before.windowMs) : undefined;
          return s.transport.run(
            s.args.of(key, op, a, b, c, ago, at),
            SCRIPT,
            isRestampReply,
            false,
          );
        }),
      ),
    );
  }

  /** `SCAN` pages of the keys starting with `keyPrefix`, each within `timeoutMs`. */
  #scan(keyPrefix: string): ScanPage {
    const { transport } = this.s;
    const match = `${globEscape(keyPrefix)}*`;
    return (cursor) =>
      transport.deadline(
        () => transport.call(['SCAN', cursor, 'MATCH', match, 'COUNT', '1000'], undefined),
        isScanReply,
      );
  }
}
