import type { OptionCheck } from '@portcullis/core/adapter';

/**
 * A compiled list of method patterns: exact names, and `prefix.*` patterns that match every method
 * starting with `prefix.` followed by at least one character (`worktrees.*` matches
 * `worktrees.create` and `worktrees.a.b`, not `worktrees` nor `worktrees.`). Case-sensitive.
 */
export type MethodMatcher = (method: string) => boolean;

/** Why `pattern` is not a valid method pattern, or `undefined` when it is. */
export function patternProblem(pattern: unknown): string | undefined {
  if (typeof pattern !== 'string' || pattern.length === 0) return 'a non-empty string';
  const star = pattern.indexOf('*');
  if (star === -1) return undefined;
  if (star !== pattern.length - 1 || !pattern.endsWith('.*') || pattern.length < 3) {
    return 'an exact name or a name followed by ".*"';
  }
  return undefined;
}

/** How a method matched a pattern list: by an exact name, by a `.*` pattern, or not at all. */
export type Match = 'exact' | 'pattern' | undefined;

/**
 * Compiles validated patterns into a classifier: one `Set` lookup, then the (few) prefixes. Only
 * own entries of a `Set` count, so `__proto__` or `constructor` match nothing unless listed.
 */
export function classifyMethods(patterns: readonly string[]): (method: string) => Match {
  const exact = new Set<string>();
  const prefixes: string[] = [];
  for (const p of patterns) {
    if (p.endsWith('.*')) prefixes.push(p.slice(0, -1));
    else exact.add(p);
  }
  return (method) => {
    if (exact.has(method)) return 'exact';
    for (const prefix of prefixes) {
      if (method.length > prefix.length && method.startsWith(prefix)) return 'pattern';
    }
    return undefined;
  };
}

/** Compiles validated patterns into a matcher. */
export function compileMethodPatterns(patterns: readonly string[]): MethodMatcher {
  const classify = classifyMethods(patterns);
  return (method) => classify(method) !== undefined;
}

/** How many entries of a validated list are exact names (not `.*` patterns). */
export function exactCount(patterns: readonly string[]): number {
  return new Set(patterns.filter((p) => !p.endsWith('.*'))).size;
}

/** The `methods` option: a non-empty array of valid patterns (copied, so later edits do nothing). */
export const methodList: OptionCheck<readonly string[]> = (value, fail) => {
  const expected = 'a non-empty array of method names (a trailing ".*" matches a namespace)';
  if (!Array.isArray(value) || value.length === 0) return fail(expected);
  value.forEach((p: unknown, i: number) => {
    const problem = patternProblem(p);
    if (problem !== undefined) {
      fail(`${expected}; entry ${i} (${JSON.stringify(p) ?? String(p)}) must be ${problem}`);
    }
  });
  return Object.freeze([...(value as string[])]);
};
