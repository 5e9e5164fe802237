import { describe, expect, expectTypeOf, it } from 'vitest';
import { withoutUndefined } from './without-undefined.js';

describe('withoutUndefined', () => {
  it('drops exactly the undefined properties and keeps falsy ones', () => {
    const out = withoutUndefined({ a: 1, b: undefined, c: 0, d: null, e: false, f: '' });
    expect(out).toStrictEqual({ a: 1, c: 0, d: null, e: false, f: '' });
    expect(Object.keys(out)).toEqual(['a', 'c', 'd', 'e', 'f']);
  });

  it('makes maybe-undefined properties optional in the type', () => {
    const given: { x: number; y: string | undefined } = { x: 1, y: undefined };
    const out = withoutUndefined(given);
    expectTypeOf(out).toEqualTypeOf<{ x: number } & { y?: string }>();
    expect(out).toStrictEqual({ x: 1 });
  });

  it('copies: the input is left as it was', () => {
    const input = { a: undefined, b: 2 };
    withoutUndefined(input);
    expect(input).toStrictEqual({ a: undefined, b: 2 });
  });
});
