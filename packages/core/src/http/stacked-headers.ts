import type { RawRequest } from '../client.js';
import type { Logger } from '../events.js';
import type { Warnings } from '../warnings.js';
import { warnOnce } from './warn-once.js';

/** What one limiter advertised on a request. */
interface Entry {
  readonly gate: object;
  readonly name: string;
  readonly headers: Readonly<Record<string, string>>;
}

const stacks = new WeakMap<object, Entry[]>();
let liveGates = 0;

/** Counts a request gate in (its `close()` counts it out): stacking costs nothing with one gate. */
export function gateOpened(): () => void {
  liveGates++;
  let open = true;
  return () => {
    if (open) liveGates--;
    open = false;
  };
}

/** True while two or more request gates are open: only then can one request meet several. */
export function stacking(): boolean {
  return liveGates > 1;
}

const LEGACY = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'] as const;

function moreRestrictive(
  a: Readonly<Record<string, string>>,
  b: Readonly<Record<string, string>>,
): boolean {
  const ra = Number(a['X-RateLimit-Remaining']);
  const rb = Number(b['X-RateLimit-Remaining']);
  return ra !== rb ? ra < rb : Number(a['X-RateLimit-Reset']) > Number(b['X-RateLimit-Reset']);
}

/**
 * The headers of a request that several `rateLimit` middlewares limit: every policy advertised as
 * an IETF structured-field list (`RateLimit-Policy: "burst";q=5;w=1, "daily";q=1000;w=86400`, and
 * `RateLimit` likewise, in the order the limiters ran), the legacy `X-RateLimit-*` of the most
 * restrictive policy (fewest remaining, then the latest reset). Two limiters with the same name on
 * one request count it twice under one policy: `warn` is called (it warns once). `gate` identifies
 * the caller, so a gate run again on the same request replaces its own entry.
 */
export function stackHeaders(
  raw: RawRequest,
  gate: object,
  name: string,
  headers: Readonly<Record<string, string>>,
  warn: (() => void) | undefined,
): Readonly<Record<string, string>> {
  if (headers['RateLimit-Policy'] === undefined) return headers;
  let entries = stacks.get(raw);
  if (entries === undefined) {
    stacks.set(raw, [{ gate, name, headers }]);
    return headers;
  }
  entries = entries.filter((e) => e.gate !== gate);
  if (entries.some((e) => e.name === name)) warn?.();
  entries.push({ gate, name, headers });
  stacks.set(raw, entries);
  if (entries.length === 1) return headers;
  return mergePolicies(
    headers,
    entries.map((e) => e.headers),
  );
}

/**
 * `headers` (the answer's own: its `Retry-After` when refused) with the policies of `all` (each a
 * header writer's output, in order) as one structured-field list in `RateLimit-Policy` and
 * `RateLimit`, and the legacy `X-RateLimit-*` of the most restrictive among them.
 */
export function mergePolicies(
  headers: Readonly<Record<string, string>>,
  all: readonly Readonly<Record<string, string>>[],
): Readonly<Record<string, string>> {
  if (headers['RateLimit-Policy'] === undefined) return headers;
  const merged: Record<string, string> = { ...headers };
  merged['RateLimit-Policy'] = all.map((h) => h['RateLimit-Policy']).join(', ');
  merged.RateLimit = all.map((h) => h.RateLimit).join(', ');
  let strictest = headers;
  for (const h of all)
    if (h['X-RateLimit-Remaining'] !== undefined && moreRestrictive(h, strictest)) strictest = h;
  if (headers['X-RateLimit-Remaining'] !== undefined || strictest !== headers)
    for (const name of LEGACY) {
      const v = strictest[name];
      if (v !== undefined) merged[name] = v;
    }
  return merged;
}

/** The one-time warning about a policy name met twice on one request. */
export function duplicateNameWarning(
  name: string,
  logger: Logger | undefined,
  warnings?: Warnings,
): () => void {
  return warnOnce(
    logger,
    warnings,
    { code: 'PORTCULLIS_DUPLICATE_POLICY', limiter: name },
    `Portcullis: two rateLimit middlewares named "${name}" limited one request (it is counted twice); give each a distinct name`,
  );
}
