import type { AccessListing, AccessRuleInput, Logger, StoredAccessRule } from '@portcullis/core';
import { ACCESS_SCRIPT, ACCESS_SCRIPT_SHA, accessKey } from './access-script.js';
import { type Subscribe, type Unsubscribe, WHERE } from './options.js';
import type { Shared } from './shared.js';

/** A listing reply: `{ now, subject, value, … }`. */
function isListing(reply: unknown): reply is [number, ...string[]] {
  return (
    Array.isArray(reply) &&
    reply.length % 2 === 1 &&
    Number.isSafeInteger(reply[0]) &&
    reply.every((x, i) => i === 0 || typeof x === 'string')
  );
}

const isFlag = (reply: unknown): reply is 0 | 1 => reply === 0 || reply === 1;

/** A stored value (`action \t until \t at \t reason`) as a rule; undefined for a malformed one. */
function decode(subject: string, value: string): StoredAccessRule | undefined {
  const [action, until, at, ...reason] = value.split('\t');
  if (action !== 'allow' && action !== 'deny') return undefined;
  const u = Number(until);
  const a = Number(at);
  if (!Number.isSafeInteger(u) || !Number.isSafeInteger(a)) return undefined;
  return { subject, action, reason: reason.join('\t'), until: u, at: a };
}

/**
 * The access lists on Redis (access-script.ts): one script call per read or change, a `PUBLISH`
 * on `<prefix>access-changes` after each change so that other processes read the list again at
 * once (with `subscribe`), and this process's watchers told directly. Unlike the limits, these
 * calls have no `onError` answer: a failed change rejects (the operator must know), a failed
 * read rejects and the list keeps the rules it last read.
 */
export class AccessCalls {
  readonly #channel: string;
  readonly #watchers = new Map<string, Set<() => void>>();
  #subscribed: Promise<Unsubscribe | undefined> | undefined;

  constructor(
    private readonly s: Shared,
    private readonly subscribe: Subscribe | undefined,
    private readonly logger: Logger | undefined,
  ) {
    this.#channel = `${s.prefix}access-changes`;
  }

  async rules(list: string): Promise<AccessListing> {
    const reply = await this.#call(list, ['l'], isListing);
    const rules: StoredAccessRule[] = [];
    for (let i = 1; i < reply.length; i += 2) {
      const rule = decode(reply[i] as string, reply[i + 1] as string);
      if (rule !== undefined) rules.push(rule);
    }
    return { now: reply[0], rules };
  }

  async put(list: string, rule: AccessRuleInput, maxRules: number): Promise<boolean> {
    const reply = await this.#call(
      list,
      ['p', rule.subject, rule.action, rule.reason, String(rule.ms), String(maxRules)],
      isFlag,
    );
    if (reply === 1) await this.#changed(list);
    return reply === 1;
  }

  async remove(list: string, subject: string): Promise<boolean> {
    const reply = await this.#call(list, ['d', subject], isFlag);
    // Also when nothing was in force: an ended rule may still be in another process's copy.
    await this.#changed(list);
    return reply === 1;
  }

  watch(list: string, changed: () => void): () => void {
    const set = this.#watchers.get(list) ?? new Set<() => void>();
    set.add(changed);
    this.#watchers.set(list, set);
    this.#listen();
    return () => {
      set.delete(changed);
      if (set.size === 0) this.#watchers.delete(list);
    };
  }

  close(): void {
    const subscribed = this.#subscribed;
    this.#subscribed = undefined;
    void subscribed?.then((stop) => {
      try {
        const r = stop?.();
        if (r instanceof Promise) r.catch(() => {});
      } catch {
        // The subscriber connection goes away with the store.
      }
    });
  }

  #call<T>(list: string, args: string[], valid: (r: unknown) => r is T): Promise<T> {
    const s = this.s;
    const key = accessKey(s.prefix, list);
    return s.transport.run(
      [
        'EVALSHA',
        ACCESS_SCRIPT_SHA,
        '1',
        key,
        args[0] as string,
        s.args.trustNow(),
        ...args.slice(1),
      ],
      ACCESS_SCRIPT,
      valid,
      false,
    );
  }

  async #changed(list: string): Promise<void> {
    this.#tell(list);
    try {
      await this.s.transport.call(['PUBLISH', this.#channel, list], accessKey(this.s.prefix, list));
    } catch (error) {
      // The change is made; other processes read it within their refreshMs.
      const text = error instanceof Error ? error.message : String(error);
      this.logger?.warn(
        { code: 'PORTCULLIS_ACCESS_PUBLISH_FAILED', store: WHERE, list, err: error },
        `${WHERE}: telling other processes of a change of access list ${list} failed (${text}); they read it within their refreshMs`,
      );
    }
  }

  #tell(list: string): void {
    for (const w of [...(this.#watchers.get(list) ?? [])]) {
      try {
        w();
      } catch {
        // One watcher's failure is its own.
      }
    }
  }

  /** Subscribes once, on the first watcher, when the store was given `subscribe`. */
  #listen(): void {
    if (this.subscribe === undefined || this.#subscribed !== undefined || this.s.closed) return;
    const failed = (error: unknown): undefined => {
      const text = error instanceof Error ? error.message : String(error);
      this.logger?.warn(
        { code: 'PORTCULLIS_SUBSCRIBE_FAILED', store: WHERE, channel: this.#channel, err: error },
        `${WHERE}: subscribe to ${this.#channel} failed (${text}); access-list changes made in other processes arrive within refreshMs`,
      );
      return undefined;
    };
    try {
      const result = this.subscribe(this.#channel, (message) => this.#tell(String(message)));
      this.#subscribed = Promise.resolve(result).then(
        (stop) => (typeof stop === 'function' ? (stop as Unsubscribe) : undefined),
        failed,
      );
    } catch (error) {
      this.#subscribed = Promise.resolve(failed(error));
    }
  }
}
