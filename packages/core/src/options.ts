import {
  FACTORY_NOT_CALLED,
  INVALID_OPTIONS,
  optionErrorCode,
  PortcullisConfigError,
  UNKNOWN_OPTION,
} from './errors.js';

/**
 * Checks one option value. Returns the value to use, or throws via `fail`. Validators never
 * coerce: a wrong value is an error, not a default.
 */
export type OptionCheck<T> = (value: unknown, fail: (expected: string) => never) => T;

/** A table of option name → check; `undefined` values are skipped (the factory applies defaults). */
export type OptionSpec = Record<string, OptionCheck<unknown>>;

type Parsed<S extends OptionSpec> = {
  [K in keyof S]?: S[K] extends OptionCheck<infer T> ? T : never;
};

function describe(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value == null)
    return String(value);
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

// `Request` is read only for what has a URL and a method: on Node the global is a lazy getter that
// loads the whole Fetch implementation (1.6 MB of heap, measured), which options never need.
const isFetchRequest = (value: unknown): boolean =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as { url?: unknown }).url === 'string' &&
  typeof (value as { method?: unknown }).method === 'string' &&
  typeof Request === 'function' &&
  value instanceof Request;

/**
 * True for what a framework passes a middleware or plugin (a Node request, an Express/Fastify
 * request, a Koa context, a Fastify instance, a Fetch `Request` or a Hono context): the sign that
 * a factory was mounted itself instead of its result.
 */
function looksLikeRequest(input: unknown): boolean {
  if (input === null || typeof input !== 'object') return false;
  const o = input as Record<string, unknown>;
  // A Fastify instance: `app.register(rateLimit)` calls the factory as a plugin.
  if (typeof o['register'] === 'function' && typeof o['addHook'] === 'function') return true;
  // A Fetch `Request` (`fetch: rateLimit`), or a context holding one as `req.raw` (Hono).
  if (isFetchRequest(o) || isFetchRequest((o['req'] as { raw?: unknown } | undefined)?.raw))
    return true;
  if (typeof o['headers'] !== 'object' || o['headers'] === null) return false;
  return 'socket' in o || 'raw' in o || ('req' in o && 'res' in o) || 'httpVersion' in o;
}

/** Edit distance between two option names (case differences cost half), for "did you mean". */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const x = a[i - 1] as string;
      const y = b[j - 1] as string;
      const swap = x === y ? 0 : x.toLowerCase() === y.toLowerCase() ? 0.5 : 1;
      const next = Math.min((row[j] as number) + 1, (row[j - 1] as number) + 1, diagonal + swap);
      diagonal = row[j] as number;
      row[j] = next;
    }
  }
  return row[b.length] as number;
}

/** The valid name closest to `name`, when one is close enough to be a likely typo. */
export function closestName(name: string, valid: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of valid) {
    const d = distance(name, candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best !== undefined && bestDistance <= Math.max(1, Math.floor(name.length / 3))
    ? best
    : undefined;
}

/**
 * Validates `input` against `spec` for the factory named `where`. Unknown names and bad values
 * throw {@link PortcullisConfigError}; `undefined` values are left out so defaults apply.
 */
export function parseOptions<S extends OptionSpec>(
  input: unknown,
  spec: S,
  where: string,
): Parsed<S> {
  if (input === undefined) return {};
  if (looksLikeRequest(input)) {
    const factory = where.split('.')[0] as string;
    throw new PortcullisConfigError(
      FACTORY_NOT_CALLED,
      'options',
      `${where}: received a request instead of options. ${factory} is a factory: mount its result, ${factory}(options), not ${factory} itself (app.use(${factory}({ … })), onRequest: ${factory}({ … }))`,
    );
  }
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new PortcullisConfigError(
      INVALID_OPTIONS,
      'options',
      `${where}: options must be an object, got ${describe(input)}`,
    );
  }
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(input)) {
    const check = Object.hasOwn(spec, name) ? spec[name] : undefined;
    if (!check) {
      const valid = Object.keys(spec).filter((n) => !hidden.has(spec[n] as OptionCheck<unknown>));
      const hint = closestName(name, valid);
      throw new PortcullisConfigError(
        UNKNOWN_OPTION,
        name,
        `${where}: unknown option "${name}"${hint === undefined ? '' : ` (did you mean "${hint}"?)`}. Valid options: ${valid.sort().join(', ')}`,
      );
    }
    const value = (input as Record<string, unknown>)[name];
    if (value === undefined) continue;
    out[name] = check(value, (expected) => {
      throw new PortcullisConfigError(
        optionErrorCode(name),
        name,
        `${where}: option "${name}" must be ${expected}, got ${describe(value)}`,
      );
    });
  }
  return out as Parsed<S>;
}

const hidden = new WeakSet<OptionCheck<unknown>>();

/**
 * Marks a check that only refuses (a name kept to explain a removed option): it is left out of
 * the valid names an unknown-option error lists and suggests.
 */
export function hiddenOption<T>(check: OptionCheck<T>): OptionCheck<T> {
  hidden.add(check as OptionCheck<unknown>);
  return check;
}

/** An integer within `[min, max]` (inclusive). `NaN`, fractions and infinities are rejected. */
export function integer(min: number, max = Number.MAX_SAFE_INTEGER): OptionCheck<number> {
  const expected =
    max === Number.MAX_SAFE_INTEGER ? `an integer ≥ ${min}` : `an integer from ${min} to ${max}`;
  return (value, fail) =>
    typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max
      ? value
      : fail(expected);
}

/**
 * The longest time span an option may hold: 10 years. Longer spans are refused because they make
 * `now + span` or `limit × windowMs` pass 2^53, where arithmetic silently stops being exact (a
 * lockout that ends early, a bucket that holds one token less than its limit).
 */
export const MAX_DURATION_MS = 315_360_000_000;

/** The longest delay a Node timer holds; a longer one fires after 1 ms instead. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A time span in milliseconds within `[min, MAX_DURATION_MS]`. */
export function duration(min: number): OptionCheck<number> {
  return integer(min, MAX_DURATION_MS);
}

/** A timer delay in milliseconds within `[min, MAX_TIMER_MS]` (Node cannot wait longer). */
export function timerDelay(min: number): OptionCheck<number> {
  return integer(min, MAX_TIMER_MS);
}

/**
 * Refuses a `limit` so large that `limit × windowMs` passes 2^53 (the token bucket counts in
 * units of `1 / windowMs` token).
 */
export function checkLimitSpan(limit: number, windowMs: number, where: string): void {
  if (limit * windowMs <= Number.MAX_SAFE_INTEGER) return;
  throw new PortcullisConfigError(
    optionErrorCode('limit'),
    'limit',
    `${where}: limit × windowMs must stay below 2^53 for exact counting; got ${limit} × ${windowMs}`,
  );
}

/** A boolean; truthy strings and numbers are rejected. */
export const boolean: OptionCheck<boolean> = (value, fail) =>
  typeof value === 'boolean' ? value : fail('a boolean');

/** A function. */
export const func: OptionCheck<(...args: never[]) => unknown> = (value, fail) =>
  typeof value === 'function' ? (value as (...args: never[]) => unknown) : fail('a function');

/** A non-empty string. */
export const nonEmptyString: OptionCheck<string> = (value, fail) =>
  typeof value === 'string' && value.length > 0 ? value : fail('a non-empty string');

/** One of a fixed set of values. */
export function oneOf<T extends string | number | boolean>(values: readonly T[]): OptionCheck<T> {
  const expected = `one of ${values.map((v) => JSON.stringify(v)).join(', ')}`;
  return (value, fail) => (values.includes(value as T) ? (value as T) : fail(expected));
}

/** An object that has every one of the named methods. */
export function withMethods<T>(...methods: string[]): OptionCheck<T> {
  const expected = `an object with ${methods.map((m) => `${m}()`).join(', ')}`;
  return (value, fail) => {
    if (value === null || (typeof value !== 'object' && typeof value !== 'function'))
      return fail(expected);
    for (const m of methods)
      if (typeof (value as Record<string, unknown>)[m] !== 'function') return fail(expected);
    return value as T;
  };
}

/**
 * A plain object (not null, not an array), whose contents the caller checks; `expected` is what
 * the error says was expected.
 */
export function objectOption<T>(
  value: unknown,
  fail: (expected: string) => never,
  expected = 'an object',
): T {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as T)
    : fail(expected);
}

/** Accepts either of two checks (tried in order). */
export function either<A, B>(
  a: OptionCheck<A>,
  b: OptionCheck<B>,
  expected: string,
): OptionCheck<A | B> {
  return (value, fail) => {
    const soft = (): never => {
      throw soft;
    };
    for (const check of [a, b] as OptionCheck<A | B>[]) {
      try {
        return check(value, soft);
      } catch (error) {
        if (error !== soft) throw error;
      }
    }
    return fail(expected);
  };
}

/** Returns a required option's value, or throws the option's config error when it is missing. */
export function required<T>(
  value: T | undefined,
  option: string,
  expected: string,
  where: string,
): T {
  if (value === undefined) {
    throw new PortcullisConfigError(
      optionErrorCode(option),
      option,
      `${where}: option "${option}" is required (${expected})`,
    );
  }
  return value;
}

/**
 * Refuses a shared `limiter` given together with options that would configure a limiter built
 * here (`names`, those present in the parsed options `o`): the limiter you pass already has its
 * numbers, so they would be silently ignored. Every factory that takes a `limiter` checks it so.
 * @throws {PortcullisConfigError} `ERR_PORTCULLIS_LIMITER`, naming the first such option
 */
export function exclusiveLimiter(
  o: Readonly<Record<string, unknown>>,
  names: readonly string[],
  where: string,
): void {
  if (o.limiter === undefined) return;
  const clash = names.find((name) => o[name] !== undefined);
  if (clash === undefined) return;
  throw new PortcullisConfigError(
    'ERR_PORTCULLIS_LIMITER',
    'limiter',
    `${where}: pass either "limiter" or limiter options such as "${clash}", not both ("${clash}" belongs to the limiter you pass; set it there)`,
  );
}
