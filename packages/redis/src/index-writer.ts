import { indexKeyOf, indexMembers, REGISTRY_TTL_MS, registryKey } from './lockout-index.js';
import { SCRIPT } from './script.js';
import type { Shared } from './shared.js';
import { keySlot } from './slots.js';

/** How long a process trusts that it named a slot in the registry before it names it again. */
const REGISTERED_FOR_MS = 3_600_000;

/**
 * Writes the lockout index `lockouts()` reads (lockout-index.ts has the layout): a lockout's entry
 * in its slot's sorted set, and the slot's name in the registry of slots that have held one.
 */
export class IndexWriter {
  /** Hash slots this process has named in the registry, and when. */
  readonly #registered = new Map<number, number>();

  constructor(private readonly s: Shared) {}

  /**
   * Lists a lockout of `key` that lasts `leftMs` in its slot's lockout index (one single-key
   * script call on the index, op `i`, sent after the decision and not awaited: a failure call
   * stays one script on one key, which a Cluster can run while it moves the slot), and names the
   * slot in the registry (once per slot per process and hour). A listing reads each entry found as
   * a check does, so an entry lost here only goes unlisted, and one left behind is never listed.
   * Never rejects.
   */
  list(key: string, leftMs: number, ban: boolean): Promise<void> {
    if (leftMs <= 0) return Promise.resolve();
    const s = this.s;
    const redisKey = s.prefix + key;
    const [member, other] = indexMembers(redisKey, ban);
    const args = s.args.raw(indexKeyOf(s.prefix, redisKey), 'i', member, String(leftMs), other);
    const listed = s.transport
      .run(args, SCRIPT, (r): r is 1 => r === 1, false)
      .then(
        () => undefined,
        () => undefined,
      );
    const named = this.#register(keySlot(redisKey));
    if (named === undefined) return listed;
    return Promise.all([listed, named]).then(
      () => undefined,
      () => undefined,
    );
  }

  /** `DEL` of `redisKey` and `ZREM` of its index entries, pipelined: the key is gone, unlisted. */
  erase(redisKey: string): [deleted: Promise<unknown>, unlisted: Promise<unknown>] {
    const { prefix, transport } = this.s;
    const index = indexKeyOf(prefix, redisKey);
    return [
      transport.call(['DEL', redisKey], redisKey),
      transport.call(['ZREM', index, `0${redisKey}`, `1${redisKey}`], index),
    ];
  }

  /** Names `slot` in the registry unless this process did within the hour. */
  #register(slot: number): Promise<unknown> | undefined {
    const { clock, prefix, transport } = this.s;
    const now = clock.now();
    const known = this.#registered.get(slot);
    if (known !== undefined && now >= known && now - known < REGISTERED_FOR_MS) return undefined;
    this.#registered.set(slot, now);
    const registry = registryKey(prefix);
    return transport.call(['SADD', registry, String(slot)], registry).then(
      () => transport.call(['PEXPIRE', registry, String(REGISTRY_TTL_MS)], registry),
      () => {
        this.#registered.delete(slot);
      },
    );
  }
}
