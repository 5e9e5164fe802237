import type { AccessListing, AccessRuleInput, StoredAccessRule } from '../store.js';

/**
 * The access lists of a memory store: rules by subject, per list, and who watches each list.
 * Ended rules are dropped when read or when a write needs their room.
 */
export class AccessTable {
  readonly #lists = new Map<string, Map<string, StoredAccessRule>>();
  readonly #watchers = new Map<string, Set<() => void>>();

  /** The rules of `list` in force at `now`. */
  rules(list: string, now: number): AccessListing {
    return { now, rules: [...this.#live(list, now).values()] };
  }

  /** Sets `input` at `now`; false when `list` is full and the subject is new. */
  put(list: string, input: AccessRuleInput, maxRules: number, now: number): boolean {
    const rules = this.#live(list, now);
    if (!rules.has(input.subject) && rules.size >= maxRules) return false;
    rules.set(input.subject, {
      subject: input.subject,
      action: input.action,
      reason: input.reason,
      until: input.ms === 0 ? 0 : now + input.ms,
      at: now,
    });
    this.#lists.set(list, rules);
    this.#changed(list);
    return true;
  }

  /** Removes the rule of `subject`; false when there was none in force. */
  remove(list: string, subject: string, now: number): boolean {
    const removed = this.#live(list, now).delete(subject);
    if (removed) this.#changed(list);
    return removed;
  }

  /** Calls `changed` after each change of `list`; returns what stops it. */
  watch(list: string, changed: () => void): () => void {
    const set = this.#watchers.get(list) ?? new Set();
    set.add(changed);
    this.#watchers.set(list, set);
    return () => {
      set.delete(changed);
      if (set.size === 0) this.#watchers.delete(list);
    };
  }

  clear(): void {
    this.#lists.clear();
  }

  #live(list: string, now: number): Map<string, StoredAccessRule> {
    const rules = this.#lists.get(list) ?? new Map<string, StoredAccessRule>();
    for (const [subject, rule] of rules)
      if (rule.until !== 0 && rule.until <= now) rules.delete(subject);
    return rules;
  }

  #changed(list: string): void {
    for (const w of [...(this.#watchers.get(list) ?? [])]) {
      try {
        w();
      } catch {
        // A watcher's failure is its own: the others still hear of the change.
      }
    }
  }
}
