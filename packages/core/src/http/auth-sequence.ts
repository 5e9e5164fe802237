import type { Decision } from '../decision.js';
import { type FailureLimiter, refusedUncounted } from '../failure-limiter.js';
import { type SubjectSteps, subjectSteps } from '../failure-step.js';
import { type MaybePromise, mapMaybe } from '../promise.js';
import type { AuthSubject } from '../subject.js';
import type { GateResult } from './answer.js';
import { type AuthLayers, withLayer } from './auth-layers.js';
import { type BudgetCheck, eachMaybe, firstRefusal } from './browser-budget.js';
import type { GateRefusals } from './refusals.js';

/**
 * The lockout sequence on one limiter (non-browser clients): check, then count or reset. A
 * lockout that a concurrent request started since `check` stands: the attempt is refused as
 * `check` would have refused it, a right credential included.
 */
export function decideOne(
  r: GateRefusals,
  lim: FailureLimiter,
  subject: AuthSubject,
  outcome: 'ok' | 'invalid',
  scope: string,
): MaybePromise<GateResult> {
  return mapMaybe(lim.check(subject, scope), (d): MaybePromise<GateResult> => {
    if (!d.allowed) return r.refuse(d);
    if (outcome === 'ok')
      return mapMaybe(lim.recordSuccess(subject, scope), (after) =>
        after.allowed ? { ok: true, decision: after } : r.refuse(after),
      );
    return mapMaybe(lim.recordFailure(subject, scope), (after) =>
      refusedUncounted(after) ? r.refuse(after) : r.failed(after, 'invalid'),
    );
  });
}

/**
 * The same sequence over several budgets (a loopback browser: its origin, its site, all local
 * origins): every one must allow; a failure counts in each; a success resets only the origin's own
 * bucket, so a right credential from one page never refunds what other pages spent.
 */
function decideAll(
  r: GateRefusals,
  checks: readonly BudgetCheck[],
  outcome: 'ok' | 'invalid',
  scope: string,
): MaybePromise<GateResult> {
  const own = checks[0] as BudgetCheck;
  return mapMaybe(
    eachMaybe(checks, (c) => c.limiter.check(c.subject, scope)),
    (before): MaybePromise<GateResult> => {
      const refused = firstRefusal(before);
      if (refused !== undefined) return r.refuse(refused);
      if (outcome === 'ok')
        return mapMaybe(own.limiter.recordSuccess(own.subject, scope), (after) =>
          after.allowed ? { ok: true, decision: after } : r.refuse(after),
        );
      return mapMaybe(
        eachMaybe(checks, (c) => c.limiter.recordFailure(c.subject, scope)),
        (after) => {
          const raced = after.filter(refusedUncounted);
          return raced.length > 0
            ? r.refuse(firstRefusal(raced) as Decision)
            : r.failed(after[0] as Decision, 'invalid');
        },
      );
    },
  );
}

/** The sequence without layers: one limiter, or a loopback browser's budgets. */
export function plainSequence(
  r: GateRefusals,
  checks: readonly BudgetCheck[],
  outcome: 'ok' | 'invalid',
  scope: string,
): MaybePromise<GateResult> {
  const first = checks[0] as BudgetCheck;
  return checks.length === 1
    ? decideOne(r, first.limiter, first.subject, outcome, scope)
    : decideAll(r, checks, outcome, scope);
}

/** The layers' check of one attempt: its refusal, or what counts its outcome. */
export type LayeredCheck =
  | { readonly refused: GateResult; readonly count?: undefined }
  | {
      readonly refused?: undefined;
      readonly count: (outcome: 'ok' | 'invalid') => MaybePromise<GateResult>;
    };

/**
 * The layered sequence (docs/design.md#defence-in-depth), first half: the client's budgets and
 * every layer are checked together, before the credential is compared; a refusal of any is the
 * one answer. The second half (`count`) counts a failure everywhere, or resets the client's own
 * budget and the pair and earns trust for a success. In `dryRun` a layer's refusal is reported by
 * its limiter but not enforced. A loopback-exempt client is not layered (undefined: take the plain
 * way).
 */
export function checkLayered(
  r: GateRefusals,
  layers: AuthLayers,
  dryRun: boolean,
  checks: readonly BudgetCheck[],
  scope: string,
  acct: string | undefined,
): MaybePromise<LayeredCheck> | undefined {
  const subjects = checks.map((c) => subjectSteps(c.limiter, c.subject, scope));
  const own = subjects[0] as SubjectSteps;
  if (own.exempt) return undefined;
  const at = layers.attempt(own.key, acct, scope);
  const before = subjects.map((s) => s.step('check'));
  return mapMaybe(layers.check(at, before), (lay): LayeredCheck => {
    const refused = firstRefusal(lay.base);
    if (refused !== undefined) return { refused: r.refuse(withLayer(refused, 'client')) };
    if (lay.refused !== undefined && !dryRun) return { refused: r.refuse(lay.refused) };
    const success = (): MaybePromise<GateResult> =>
      mapMaybe(
        layers.success(at, lay.pairFailures, [own.step('recordSuccess')]),
        ({ base: [after], raced }) => {
          const a = after as Decision;
          if (!a.allowed) return r.refuse(withLayer(a, 'client'));
          if (raced !== undefined && !dryRun) return r.refuse(raced);
          return { ok: true, decision: a };
        },
      );
    const failure = (): MaybePromise<GateResult> =>
      mapMaybe(
        layers.failure(
          at,
          subjects.map((s) => s.step('recordFailure')),
        ),
        ({ base: after, raced }): GateResult => {
          const lost = after.filter(refusedUncounted);
          if (lost.length > 0) return r.refuse(withLayer(firstRefusal(lost) as Decision, 'client'));
          if (raced !== undefined && !dryRun) return r.refuse(raced);
          return r.failed(after[0] as Decision, 'invalid');
        },
      );
    // Not `then`: an object with a then() method would pass for a promise.
    return { count: (outcome) => (outcome === 'ok' ? success() : failure()) };
  });
}
