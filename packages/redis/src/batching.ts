import { BATCH_SCRIPT, batchArgs } from './batch-script.js';
import { isCrossSlot, RedisReplyError } from './replies.js';
import type { ScriptCall } from './script-call.js';
import { keySlot } from './slots.js';
import type { Transport } from './transport.js';

/**
 * Sends prepared script calls: one alone, several as one batch script (batch-script.ts) that runs
 * each call's own script in turn. On a Redis Cluster, which refuses a script whose keys hash to
 * several slots, the first such batch is sent again split by slot (one script per slot, all at
 * once), and so is every batch after it. A failed batch fails each of its calls as that call
 * alone would fail (its `onError` answer).
 */
export class Batching {
  /** Whether Redis refused a batch whose keys span slots (a Cluster): batches then go by slot. */
  #cluster = false;

  constructor(private readonly transport: Transport) {}

  /** One script call, behind a re-stamp barrier when it asks. */
  one<T>(call: ScriptCall<T>): Promise<T> {
    return this.transport.script(
      call.args,
      call.source,
      call.valid as (reply: unknown) => reply is unknown,
      call.done,
      call.failed,
      call.barrier,
    ) as Promise<T>;
  }

  /** Sends `calls`: as one batch script, or one per slot on a Cluster; answers in call order. */
  all<T>(calls: readonly ScriptCall<T>[]): Promise<T>[] {
    if (calls.length === 0) return [];
    if (calls.length === 1) return [this.one(calls[0] as ScriptCall<T>)];
    if (!this.#cluster) return this.#batch(calls, true);
    const bySlot = new Map<number, number[]>();
    calls.forEach((c, i) => {
      const slot = keySlot(c.args[3] as string);
      const group = bySlot.get(slot);
      if (group === undefined) bySlot.set(slot, [i]);
      else group.push(i);
    });
    const out: Promise<T>[] = [];
    for (const group of bySlot.values()) {
      const sent =
        group.length === 1
          ? [this.one(calls[group[0] as number] as ScriptCall<T>)]
          : this.#batch(
              group.map((i) => calls[i] as ScriptCall<T>),
              false,
            );
      group.forEach((i, k) => {
        out[i] = sent[k] as Promise<T>;
      });
    }
    return out;
  }

  #batch<T>(calls: readonly ScriptCall<T>[], mayCross: boolean): Promise<T>[] {
    const n = calls.length;
    const settled = this.transport
      .run(
        batchArgs(calls.map((c) => c.batched())),
        BATCH_SCRIPT,
        (r): r is unknown[] => Array.isArray(r) && r.length === n,
      )
      .then(
        (replies): Promise<T>[] =>
          calls.map((c, i) => {
            const reply = replies[i];
            return Promise.resolve(
              c.valid(reply) ? c.done(reply) : c.failed(new RedisReplyError(reply)),
            );
          }),
        (error: unknown): Promise<T>[] => {
          if (mayCross && isCrossSlot(error)) {
            this.#cluster = true;
            return this.all(calls);
          }
          return calls.map((c) => Promise.resolve(c.failed(error)));
        },
      );
    return calls.map((_, i) => settled.then((answers) => answers[i] as Promise<T>));
  }
}
