import type { MaybePromise } from '@portcullis/core';
import { keepShape } from '@portcullis/core/adapter';
import type { BatchedCall } from './batch-script.js';
import { TRUST_SCRIPT } from './trust-script.js';

/**
 * One store call ready to go: its `EVALSHA` (`EVALSHA <sha> <n> <n keys> <arguments>`), the source
 * `EVAL` sends on `NOSCRIPT`, and what turns its reply (or a failure) into the call's answer. A
 * method sends it alone; `RedisStore.batch` sends several in one script.
 */
export class ScriptCall<T> {
  constructor(
    readonly args: string[],
    readonly source: string,
    /** Whether it waits for a re-stamp walk in progress (the failure calls do). */
    readonly barrier: boolean,
    readonly valid: (reply: unknown) => boolean,
    readonly done: (reply: unknown) => MaybePromise<T>,
    readonly failed: (error: unknown) => T,
  ) {}

  /** The call as one part of a batch script. */
  batched(): BatchedCall {
    const n = Number(this.args[2]);
    return {
      script: this.source === TRUST_SCRIPT ? 't' : 'm',
      keys: this.args.slice(3, 3 + n),
      args: this.args.slice(3 + n),
    };
  }
}

// A call lives until its reply only: see keepShape.
keepShape(
  new ScriptCall<undefined>(
    [],
    '',
    false,
    () => true,
    () => undefined,
    () => undefined,
  ),
);
