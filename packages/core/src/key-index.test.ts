/*
 * The key index keeps canonical IPv4 texts in an open-addressing number table and every other key
 * in a Map. It must answer exactly as one Map would, whatever the keys: spellings of one address
 * that are not canonical are other keys, and a churning table (the store's flood of new clients)
 * must never lose or confuse an entry through a resize or a backward shift.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KeyIndex } from './key-index.js';

type Op = { t: 'get' | 'delete'; key: string } | { t: 'set'; key: string; value: number };

/**
 * Keys of every kind the store meets; IPv4 texts from a range of 128, so that a run of operations
 * sets, finds and deletes the same keys through a table that grows, shrinks and shifts.
 */
const keyArb = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .tuple(fc.constantFrom(10, 192), fc.constant(0), fc.nat(1), fc.nat(31))
      .map((parts) => parts.join('.')),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '255.255.255.255',
      '0.0.0.0',
      '01.2.3.4',
      '1.2.3.04',
      '1.2.3.4 ',
      '1.2.3',
      '1.2.3.4.5',
      '256.1.1.1',
      '::ffff:1.2.3.4',
      '2001:db8::/64',
      '',
      'hot',
      '4294967296',
      '-1',
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 16 }) },
);

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ t: fc.constant('set' as const), key: keyArb, value: fc.nat() }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('get' as const), key: keyArb }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('delete' as const), key: keyArb }) },
);

/**
 * Hash multipliers: 1 puts every 10.0.x.y and 192.0.x.y in one run of buckets (every delete
 * shifts), the others spread them as a random one does.
 */
const multiplierArb = fc.oneof(fc.constant(1), fc.constant(0x9e37_79b1), fc.nat());

/** Plays `ops` on a KeyIndex and a Map; every answer and the sizes must agree. */
function play(multiplier: number, ops: readonly Op[]): void {
  const index = new KeyIndex<number>(multiplier);
  const model = new Map<string, number>();
  for (const op of ops) {
    if (op.t === 'set') {
      index.set(op.key, op.value);
      model.set(op.key, op.value);
    } else if (op.t === 'get') {
      expect(index.get(op.key)).toBe(model.get(op.key));
    } else {
      expect(index.delete(op.key)).toBe(model.delete(op.key));
    }
    expect(index.size).toBe(model.size);
  }
  for (const [key, value] of model) expect(index.get(key)).toBe(value);
}

describe('KeyIndex', () => {
  it('answers every sequence of operations exactly as a Map', () => {
    fc.assert(fc.property(multiplierArb, fc.array(opArb, { maxLength: 600 }), play), {
      numRuns: 300,
    });
  });

  it('keeps spellings of one address that are not canonical as keys of their own', () => {
    const index = new KeyIndex<string>();
    const spellings = ['1.2.3.4', '01.2.3.4', '1.2.3.04', '1.2.3.4 ', '::ffff:1.2.3.4', '1.2.3.4.'];
    for (const s of spellings) index.set(s, s);
    expect(index.size).toBe(spellings.length);
    for (const s of spellings) expect(index.get(s)).toBe(s);
    // The two ends of the number range, each its own entry.
    index.set('255.255.255.255', 'top');
    index.set('0.0.0.0', 'bottom');
    expect(index.get('255.255.255.255')).toBe('top');
    expect(index.get('0.0.0.0')).toBe('bottom');
    expect(index.delete('255.255.255.255')).toBe(true);
    expect(index.get('255.255.255.255')).toBeUndefined();
    expect(index.get('0.0.0.0')).toBe('bottom');
  });

  it.each([1, 0x9e37_79b1])(
    'keeps every entry through growth, a bounded churn and shrinking (multiplier %i)',
    (multiplier) => {
      const index = new KeyIndex<number>(multiplier);
      const ip = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
      const held = 1000;
      // Every new key evicts the oldest, as the store does when full: 20 000 inserts through 1 000.
      for (let i = 0; i < 20_000; i++) {
        if (i >= held) expect(index.delete(ip(i - held))).toBe(true);
        index.set(ip(i), i);
      }
      expect(index.size).toBe(held);
      for (let i = 0; i < 20_000; i++) expect(index.get(ip(i))).toBe(i >= 19_000 ? i : undefined);
      // Deleting in another order than inserting shifts runs backwards from every position.
      for (let i = 19_000; i < 20_000; i += 2) expect(index.delete(ip(i))).toBe(true);
      for (let i = 19_001; i < 20_000; i += 2) expect(index.get(ip(i))).toBe(i);
      for (let i = 19_999; i > 19_000; i -= 2) expect(index.delete(ip(i))).toBe(true);
      expect(index.size).toBe(0);
      index.set(ip(7), 7);
      expect(index.get(ip(7))).toBe(7);
    },
  );

  it('deletes by a kept number as by the key', () => {
    const index = new KeyIndex<number>();
    for (const key of ['10.0.0.1', 'opaque', '2001:db8::/64']) {
      index.set(key, 1);
      const number = index.numberOf(key);
      index.numberOf('another key');
      expect(index.deleteNumbered(key, number)).toBe(true);
      expect(index.get(key)).toBeUndefined();
    }
    expect(index.size).toBe(0);
  });

  it('forgets everything on clear()', () => {
    const index = new KeyIndex<number>();
    for (let i = 0; i < 100; i++) {
      index.set(`192.168.0.${i}`, i);
      index.set(`user:${i}`, i);
    }
    index.clear();
    expect(index.size).toBe(0);
    expect(index.get('192.168.0.1')).toBeUndefined();
    expect(index.get('user:1')).toBeUndefined();
    index.set('192.168.0.1', 5);
    expect(index.get('192.168.0.1')).toBe(5);
  });
});
