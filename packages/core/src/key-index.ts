import { parseV4 } from './ip.js';

/*
 * Why a table of our own: on a table that churns (a flood of new clients through a bounded store,
 * every call a miss, an eviction and an insert), V8's Map spends about 200 ns per new key on the
 * delete and the insert (bench/NOTES.md#the-key-index), more than the rest of a decision together.
 * Most keys a limiter sees are client IPv4 addresses, and a canonical IPv4 text is a 32-bit number
 * in disguise: an open-addressing table of numbers does the same miss, eviction and insert in
 * about 20 ns. Every other key (IPv6 networks, opaque keys) stays in a Map.
 *
 * Only the canonical spelling (`parseV4`: four parts, no leading zeros) goes to the number table,
 * and that spelling maps to one number and back, so two different texts never share an entry.
 */

/** The fewest buckets of the number table; it doubles past half full and halves below 1/8. */
const MIN_BUCKETS = 16;

/**
 * An open-addressing hash table from 32-bit numbers to values: linear probing, at most half full,
 * deletion by backward shift (no tombstones, so a churning table never degrades or rehashes).
 * The hash is multiply-shift with a random odd multiplier per table: which addresses share a
 * bucket is not known outside the process, so a client cannot choose addresses that collide (and
 * the addresses a client can use at all are few: see SECURITY.md).
 */
class NumberTable<V> {
  /*
   * Bucket b holds its key at 2b and, at 2b + 1, 1 + the index of its value in `#values` (0: the
   * bucket is empty). Buckets are 8 bytes, so a large table stays small enough to stay in cache
   * (a table of JS values, 16 bytes a bucket, took 400 ns per hit at 100 000 keys instead of 240),
   * and values are kept densely in the order they came, as a Map keeps its entries.
   */
  #buckets = new Int32Array(2 * MIN_BUCKETS);
  readonly #values: (V | undefined)[] = [];
  /** Indices of `#values` freed by deletes, reused last freed first (its cache line is warm). */
  readonly #free: number[] = [];
  #mask = MIN_BUCKETS - 1;
  #shift = 32 - Math.log2(MIN_BUCKETS);
  #count = 0;
  readonly #multiplier: number;

  constructor(multiplier: number) {
    this.#multiplier = multiplier;
  }

  get size(): number {
    return this.#count;
  }

  #home(key: number): number {
    // The xor brings the high half's bits down, where the multiplication carries every bit up into
    // the bucket bits; without it, addresses that differ only in their top bits (one host number in
    // many networks) would differ in few bucket bits.
    return Math.imul(key ^ (key >>> 16), this.#multiplier) >>> this.#shift;
  }

  /** The bucket holding `key`, or -1. */
  #find(key: number): number {
    const buckets = this.#buckets;
    const mask = this.#mask;
    for (let i = this.#home(key); ; i = (i + 1) & mask) {
      if (buckets[2 * i + 1] === 0) return -1;
      if (buckets[2 * i] === key) return i;
    }
  }

  get(key: number): V | undefined {
    const i = this.#find(key);
    return i === -1 ? undefined : this.#values[(this.#buckets[2 * i + 1] as number) - 1];
  }

  set(key: number, value: V): void {
    const buckets = this.#buckets;
    const mask = this.#mask;
    let i = this.#home(key);
    for (; buckets[2 * i + 1] !== 0; i = (i + 1) & mask) {
      if (buckets[2 * i] === key) {
        this.#values[(buckets[2 * i + 1] as number) - 1] = value;
        return;
      }
    }
    const ref = this.#free.length > 0 ? (this.#free.pop() as number) : this.#values.length;
    if (ref === this.#values.length) this.#values.push(value);
    else this.#values[ref] = value;
    buckets[2 * i] = key;
    buckets[2 * i + 1] = ref + 1;
    this.#count++;
    if (this.#count * 4 > buckets.length) this.#resize(buckets.length);
  }

  delete(key: number): boolean {
    let i = this.#find(key);
    if (i === -1) return false;
    const buckets = this.#buckets;
    const mask = this.#mask;
    const ref = (buckets[2 * i + 1] as number) - 1;
    this.#values[ref] = undefined;
    this.#free.push(ref);
    // Backward shift: every later entry of the run that may sit at `i` moves up, so that a probe
    // never meets a hole before the key it looks for.
    for (let j = (i + 1) & mask; buckets[2 * j + 1] !== 0; j = (j + 1) & mask) {
      const home = this.#home(buckets[2 * j] as number);
      if (((j - home) & mask) >= ((j - i) & mask)) {
        buckets[2 * i] = buckets[2 * j] as number;
        buckets[2 * i + 1] = buckets[2 * j + 1] as number;
        i = j;
      }
    }
    buckets[2 * i] = 0;
    buckets[2 * i + 1] = 0;
    this.#count--;
    if (buckets.length > 2 * MIN_BUCKETS && this.#count * 16 < buckets.length)
      this.#resize(buckets.length / 4);
    if (this.#count === 0) {
      // Nothing held: the value list starts again, so that it never outgrows the table for good.
      this.#values.length = 0;
      this.#free.length = 0;
    }
    return true;
  }

  clear(): void {
    this.#buckets = new Int32Array(2 * MIN_BUCKETS);
    this.#values.length = 0;
    this.#free.length = 0;
    this.#mask = MIN_BUCKETS - 1;
    this.#shift = 32 - Math.log2(MIN_BUCKETS);
    this.#count = 0;
  }

  /** Rehashes into `buckets` buckets (each value keeps its index). */
  #resize(buckets: number): void {
    const old = this.#buckets;
    const fresh = new Int32Array(2 * buckets);
    const mask = buckets - 1;
    this.#buckets = fresh;
    this.#mask = mask;
    this.#shift = 32 - Math.log2(buckets);
    for (let b = 0; b < old.length; b += 2) {
      if (old[b + 1] === 0) continue;
      const key = old[b] as number;
      let i = this.#home(key);
      while (fresh[2 * i + 1] !== 0) i = (i + 1) & mask;
      fresh[2 * i] = key;
      fresh[2 * i + 1] = old[b + 1] as number;
    }
  }
}

function randomOdd(): number {
  return ((Math.random() * 0x1_0000_0000) | 1) >>> 0;
}

/**
 * A map from key strings to values (the memory store's slots): canonical IPv4 texts in a number
 * table, every other key in a `Map`. The same operations as a `Map` and the same answers.
 * @internal
 */
export class KeyIndex<V> {
  readonly #numbers: NumberTable<V>;
  readonly #texts = new Map<string, V>();
  /*
   * The last key met, where it lives and what it maps to: a store looks a new key up and then
   * inserts it, where a second scan would cost as much as the insert, and a hot key is the last key
   * every time, where the lookup would cost more than the rest of the decision's bookkeeping.
   */
  #lastKey = '';
  #lastIsText = true;
  #lastNumber = 0;
  /** Whether `#lastValue` is what the index holds for `#lastKey` (any delete forgets it). */
  #lastKnown = false;
  #lastValue: V | undefined = undefined;

  /** @param multiplier the number table's hash multiplier (odd); tests choose it, else random */
  constructor(multiplier: number = randomOdd()) {
    this.#numbers = new NumberTable<V>(multiplier | 1);
  }

  /** Parses `key` unless it is the last key met. */
  #parse(key: string): void {
    if (key !== this.#lastKey) this.#parseNew(key);
  }

  /** Parses a key that is not the last key met (comparing two texts costs as much as a probe). */
  #parseNew(key: string): void {
    const n = parseV4(key);
    this.#lastKey = key;
    this.#lastIsText = n === undefined;
    // The table holds signed 32-bit numbers: `| 0` maps 0 … 2^32 − 1 onto them one to one.
    this.#lastNumber = n === undefined ? 0 : n | 0;
    this.#lastKnown = false;
  }

  /**
   * Where `key` lives: its number in the number table (a signed 32-bit number), or `TEXT` (2^32)
   * for the text map. A holder of many keys keeps it to delete a key without reading its text.
   */
  numberOf(key: string): number {
    this.#parse(key);
    return this.#lastIsText ? TEXT : this.#lastNumber;
  }

  get size(): number {
    return this.#numbers.size + this.#texts.size;
  }

  get(key: string): V | undefined {
    // Kept this small so that V8 inlines it: a hot key's lookup is one comparison.
    if (key !== this.#lastKey) return this.#lookup(key, true);
    return this.#lastKnown ? this.#lastValue : this.#lookup(key, false);
  }

  /** Looks `key` up in its table; `isNew`: it is not the last key met (get compared them). */
  #lookup(key: string, isNew: boolean): V | undefined {
    if (isNew) this.#parseNew(key);
    const value = this.#lastIsText ? this.#texts.get(key) : this.#numbers.get(this.#lastNumber);
    this.#lastValue = value;
    this.#lastKnown = true;
    return value;
  }

  set(key: string, value: V): void {
    this.#parse(key);
    if (this.#lastIsText) this.#texts.set(key, value);
    else this.#numbers.set(this.#lastNumber, value);
    this.#lastValue = value;
    this.#lastKnown = true;
  }

  delete(key: string): boolean {
    return this.deleteNumbered(key, this.numberOf(key));
  }

  /** `delete(key)` for a caller that kept `numberOf(key)`. */
  deleteNumbered(key: string, number: number): boolean {
    this.#lastKnown = false;
    return number === TEXT ? this.#texts.delete(key) : this.#numbers.delete(number);
  }

  clear(): void {
    this.#numbers.clear();
    this.#texts.clear();
    this.#lastKnown = false;
  }
}

/** {@link KeyIndex.numberOf} of a key that is not a canonical IPv4 text: no 32-bit number. */
const TEXT = 2 ** 32;
