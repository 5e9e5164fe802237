import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { controlPlaneWriteMethods } from './method-quotas.js';
import { compileMethodPatterns, patternProblem } from './patterns.js';

const segment = fc.stringMatching(/^[A-Za-z][A-Za-z0-9_-]{0,8}$/);
const name = fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => parts.join('.'));

describe('method patterns', () => {
  const writes = compileMethodPatterns(controlPlaneWriteMethods);

  it.each([
    ['config.apply', true],
    ['config.patch', true],
    ['plugins.install', true],
    ['plugins.setEnabled', true],
    ['plugins.uninstall', true],
    ['update.run', true],
    ['gateway.restart.request', true],
    ['worktrees.create', true],
    ['worktrees.remove', true],
    ['worktrees.a.b', true],
    ['worktrees', false],
    ['worktrees.', false],
    ['worktreesX.create', false],
    ['config.get', false],
    ['config', false],
    ['plugins.setenabled', false],
    ['gateway.restart', false],
    ['', false],
  ])('the write set: %j → %s', (method, expected) => {
    expect(writes(method)).toBe(expected);
  });

  it.each(['config.patch', 'worktrees.*', 'a.b.*', 'session/new', 'x'])('accepts %j', (p) => {
    expect(patternProblem(p)).toBeUndefined();
  });

  it.each(['', '*', '.*', 'a*', 'a.*.b', 'a.**', '*.create', 'a.b*', 3, null])(
    'rejects %j',
    (p) => {
      expect(patternProblem(p)).toBeTypeOf('string');
    },
  );

  it('property: an exact name matches itself and nothing else', () => {
    fc.assert(
      fc.property(name, name, (pattern, method) => {
        expect(compileMethodPatterns([pattern])(method)).toBe(method === pattern);
      }),
    );
  });

  it('property: "ns.*" matches exactly the methods below ns, never ns itself', () => {
    fc.assert(
      fc.property(name, fc.string(), (ns, rest) => {
        const match = compileMethodPatterns([`${ns}.*`]);
        expect(match(`${ns}.${rest}`)).toBe(rest.length > 0);
        expect(match(ns)).toBe(false);
        expect(match(`${ns}${rest}`)).toBe(rest.length > 1 && rest.startsWith('.'));
      }),
    );
  });

  it('property: a list matches a method iff one of its patterns does', () => {
    const pattern = fc.oneof(
      name,
      name.map((n) => `${n}.*`),
    );
    fc.assert(
      fc.property(fc.array(pattern, { minLength: 1, maxLength: 6 }), name, (patterns, method) => {
        const any = patterns.some((p) => compileMethodPatterns([p])(method));
        expect(compileMethodPatterns(patterns)(method)).toBe(any);
      }),
    );
  });
});
