import { accessMatchOf, type AccessMatch } from '../access/access-list.js';
import type { AccessRule } from '../access/matcher.js';
import type { RawRequest } from '../client.js';
import { decision, type Decision } from '../decision.js';
import { accessDeniedError, retryAfterSeconds } from '../error-shapes.js';
import { func, type OptionCheck } from '../options.js';
import { isPromise, type MaybePromise } from '../promise.js';
import { type HttpAnswer, jsonAnswer } from './answer.js';
import type { ClientAddressOf } from './request-keys.js';

/** The options every gate that consults an access list takes (docs/design.md#access-lists). */
export const accessSpec = {
  access: ((value, fail) =>
    accessMatchOf(value) !== undefined
      ? value
      : fail('an access list (createAccessList())')) as OptionCheck<unknown>,
  account: func,
};

/** A gate's access check: the rule deciding a request, or undefined (also when there is no list). */
export type AccessCheck<Req> = (raw: RawRequest, req: Req) => MaybePromise<AccessRule | undefined>;

/** The access check of a gate's options, or undefined without `access`. */
export function accessCheck<Req>(
  o: { readonly access?: unknown; readonly account?: unknown },
  address: ClientAddressOf,
): { readonly check: AccessCheck<Req>; readonly list: AccessMatch } | undefined {
  const list = accessMatchOf(o.access);
  if (list === undefined) return undefined;
  const accountOf = o.account as ((req: Req) => MaybePromise<unknown>) | undefined;
  const check: AccessCheck<Req> = (raw, req) => {
    const ip = address(raw)?.ip;
    const header = raw.headers.origin;
    const origin = typeof header === 'string' ? header : undefined;
    if (accountOf === undefined) return list.match({ ip, origin });
    const account = accountOf(req);
    const withAccount = (a: unknown) =>
      list.match({ ip, origin, account: typeof a === 'string' ? a : undefined });
    return isPromise(account) ? account.then(withAccount) : withAccount(account);
  };
  return { check, list };
}

/** What a denied request is answered: the decision (reason `denied`) and the 403. */
export interface Denial {
  readonly decision: Decision;
  readonly answer: HttpAnswer;
}

/**
 * The refusal of a request a deny rule matched: 403 `ACCESS_DENIED` with the rule's reason; a
 * rule that ends in `left` ms sends `Retry-After` (and is retryable), one until removed (0) does not.
 */
export function denial(rule: AccessRule, key: string, limit: number, left: number): Denial {
  const headers: Record<string, string> =
    left === 0 ? {} : { 'Retry-After': String(retryAfterSeconds(left)) };
  return {
    decision: decision(false, 'denied', limit, 0, left, left, key),
    answer: jsonAnswer(403, accessDeniedError(rule.reason, left), headers),
  };
}

/**
 * `run` behind the access rules (when there are any): an allow rule lets the request through
 * uncounted (undefined, as `skip`), a deny rule is logged and answered by `deny`, no rule runs it.
 */
export function accessFirst<Req, R>(
  access: { readonly check: AccessCheck<Req>; readonly list: AccessMatch } | undefined,
  where: string,
  run: (raw: RawRequest, req: Req, signal?: AbortSignal) => MaybePromise<R | undefined>,
  deny: (rule: AccessRule, raw: RawRequest, leftMs: number) => R,
): (raw: RawRequest, req: Req, signal?: AbortSignal) => MaybePromise<R | undefined> {
  if (access === undefined) return run;
  const { check, list } = access;
  const ruled = (
    rule: AccessRule | undefined,
    raw: RawRequest,
    req: Req,
    signal: AbortSignal | undefined,
  ): MaybePromise<R | undefined> => {
    if (rule === undefined) return run(raw, req, signal);
    if (rule.action === 'allow') return undefined;
    list.denied(rule, where);
    // Time left on the list's clock, which the rule's end is on: 0 for a rule until removed.
    return deny(rule, raw, rule.until === undefined ? 0 : Math.max(1, rule.until - list.now()));
  };
  return (raw, req, signal) => {
    const rule = check(raw, req);
    return isPromise(rule)
      ? rule.then((r) => ruled(r, raw, req, signal))
      : ruled(rule, raw, req, signal);
  };
}
