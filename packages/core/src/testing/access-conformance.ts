import { expect, it } from 'vitest';
import type { WithStore } from './with-store.js';
import type { AccessListing, Store } from '../store.js';

type AccessStore = Required<Pick<Store, 'accessRules' | 'putAccessRule' | 'removeAccessRule'>>;

/** The store's access-list methods, which every store the suite checks implements. */
function access(s: Store): AccessStore {
  expect(
    [typeof s.accessRules, typeof s.putAccessRule, typeof s.removeAccessRule],
    'Store access-list methods',
  ).toEqual(['function', 'function', 'function']);
  return s as AccessStore;
}

/** A listing with each rule's end and start relative to the listing's now. */
function relative(l: AccessListing) {
  return l.rules
    .map((r) => ({
      subject: r.subject,
      action: r.action,
      reason: r.reason,
      left: r.until === 0 ? 'forever' : r.until - l.now,
      age: l.now - r.at,
    }))
    .sort((a, b) => (a.subject < b.subject ? -1 : 1));
}

/** The access-list part of the store conformance suite (docs/design.md#access-lists). */
export function accessConformance(withStore: WithStore): void {
  it('access lists: a rule set is read back as set, and replaced by its subject', () =>
    withStore(async (store, advance) => {
      const s = access(store);
      expect(relative(await s.accessRules('a'))).toEqual([]);
      expect(
        await s.putAccessRule(
          'a',
          { subject: 'ip:10.0.0.0/8', action: 'deny', reason: 'abuse ✋', ms: 0 },
          10,
        ),
      ).toBe(true);
      await advance(5);
      expect(
        await s.putAccessRule(
          'a',
          { subject: 'account:bob', action: 'allow', reason: '', ms: 1000 },
          10,
        ),
      ).toBe(true);
      expect(relative(await s.accessRules('a'))).toEqual([
        { subject: 'account:bob', action: 'allow', reason: '', left: 1000, age: 0 },
        { subject: 'ip:10.0.0.0/8', action: 'deny', reason: 'abuse ✋', left: 'forever', age: 5 },
      ]);
      await advance(10);
      expect(
        await s.putAccessRule(
          'a',
          { subject: 'ip:10.0.0.0/8', action: 'allow', reason: 'ok now', ms: 0 },
          10,
        ),
      ).toBe(true);
      expect(relative(await s.accessRules('a'))).toEqual([
        { subject: 'account:bob', action: 'allow', reason: '', left: 990, age: 10 },
        { subject: 'ip:10.0.0.0/8', action: 'allow', reason: 'ok now', left: 'forever', age: 0 },
      ]);
      // Lists are apart by name.
      expect(relative(await s.accessRules('b'))).toEqual([]);
    }));

  it('access lists: a rule ends after its ms, exactly', () =>
    withStore(async (store, advance) => {
      const s = access(store);
      await s.putAccessRule(
        't',
        { subject: 'ip:203.0.113.7', action: 'deny', reason: '', ms: 1000 },
        10,
      );
      await advance(999);
      expect((await s.accessRules('t')).rules.map((r) => r.subject)).toEqual(['ip:203.0.113.7']);
      await advance(1);
      expect((await s.accessRules('t')).rules).toEqual([]);
      expect(await s.removeAccessRule('t', 'ip:203.0.113.7')).toBe(false);
    }));

  it('access lists: a new subject beyond maxRules is refused; an update or an ended rule is not', () =>
    withStore(async (store, advance) => {
      const s = access(store);
      const rule = (subject: string, ms = 0) => ({
        subject,
        action: 'deny' as const,
        reason: '',
        ms,
      });
      expect(await s.putAccessRule('m', rule('account:a'), 2)).toBe(true);
      expect(await s.putAccessRule('m', rule('account:b', 100), 2)).toBe(true);
      expect(await s.putAccessRule('m', rule('account:c'), 2)).toBe(false);
      expect(await s.putAccessRule('m', rule('account:a', 150), 2)).toBe(true);
      await advance(100);
      expect(await s.putAccessRule('m', rule('account:c'), 2)).toBe(true);
      expect((await s.accessRules('m')).rules.map((r) => r.subject).sort()).toEqual([
        'account:a',
        'account:c',
      ]);
      // a (150 ms from its update) ends now: only c is left.
      await advance(50);
      expect((await s.accessRules('m')).rules.map((r) => r.subject)).toEqual(['account:c']);
    }));

  it('access lists: remove says whether a rule was in force; watchers hear of each change', () =>
    withStore(async (store) => {
      const s = access(store);
      const heard: string[] = [];
      const stop = store.watchAccess?.('w', () => heard.push('w'));
      await s.putAccessRule(
        'w',
        { subject: 'origin:https://evil.example', action: 'deny', reason: '', ms: 0 },
        10,
      );
      expect(await s.removeAccessRule('w', 'origin:https://evil.example')).toBe(true);
      expect(await s.removeAccessRule('w', 'origin:https://evil.example')).toBe(false);
      expect((await s.accessRules('w')).rules).toEqual([]);
      if (stop !== undefined) {
        expect(heard.length).toBeGreaterThanOrEqual(2);
        stop();
        const before = heard.length;
        await s.putAccessRule('w', { subject: 'account:x', action: 'deny', reason: '', ms: 0 }, 10);
        expect(heard.length).toBe(before);
      }
    }));
}
