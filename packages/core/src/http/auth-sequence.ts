import type { Decision } from '../decision.js';
import { type FailureLimiter, refusedUncounted } from '../failure-limiter.js';
import { type SubjectSteps, subjectSteps } from '../failure-step.js';
import { isPromise, type MaybePromise, mapMaybe } from '../promise.js';
import type { AuthSubject } from '../subject.js';
import { keepShape, PLACEHOLDER } from '../keep-shape.js';
import type { GateResult } from './answer.js';
import {
  type AuthLayers,
  type LayerAttempt,
  type LayerCheck,
  type LayerCount,
  withLayer,
} from './auth-layers.js';
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
      count(outcome: 'ok' | 'invalid'): MaybePromise<GateResult>;
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
  const subjects: SubjectSteps[] = [];
  for (const c of checks) subjects.push(subjectSteps(c.limiter, c.subject, scope));
  const own = subjects[0] as SubjectSteps;
  if (own.exempt) return undefined;
  const attempt = new LayeredAttempt(
    r,
    layers,
    dryRun,
    subjects,
    layers.attempt(own.key, acct, scope),
  );
  const lay = layers.check(attempt.at, subjects);
  return isPromise(lay) ? checkedLater(attempt, lay) : attempt.checked(lay);
}

/*
 * The asynchronous ways are functions of their own: a closure over a call's variables makes V8
 * allocate their context on entry to the call, which the synchronous way (a memory store) would
 * pay for too.
 */
function checkedLater(attempt: LayeredAttempt, lay: Promise<LayerCheck>): Promise<LayeredCheck> {
  return lay.then((l) => attempt.checked(l));
}

function countLater(
  checked: Promise<LayeredCheck>,
  outcome: 'ok' | 'invalid',
): Promise<GateResult> {
  return checked.then((c) => c.refused ?? c.count(outcome));
}

/** The result of a layered check, sync or not: its refusal, or its outcome counted. */
export function countChecked(
  checked: MaybePromise<LayeredCheck>,
  outcome: 'ok' | 'invalid',
): MaybePromise<GateResult> {
  return isPromise(checked)
    ? countLater(checked, outcome)
    : (checked.refused ?? checked.count(outcome));
}

/*
 * One layered attempt, as an object rather than closures over the check's answers: the sequence
 * runs on every layered login, and each closure that captures a call's variables costs that call
 * an allocation of their context (bench/NOTES.md).
 */
class LayeredAttempt {
  readonly refused = undefined;
  #pairFailures = false;

  constructor(
    readonly r: GateRefusals,
    readonly layers: AuthLayers,
    readonly dryRun: boolean,
    readonly subjects: readonly SubjectSteps[],
    readonly at: LayerAttempt,
  ) {}

  /** The check's answers: a refusal, or this attempt, ready to count its outcome. */
  checked(lay: LayerCheck): LayeredCheck {
    const refused = firstRefusal(lay.base);
    if (refused !== undefined) return { refused: this.r.refuse(withLayer(refused, 'client')) };
    if (lay.refused !== undefined && !this.dryRun) return { refused: this.r.refuse(lay.refused) };
    this.#pairFailures = lay.pairFailures;
    return this;
  }

  count(outcome: 'ok' | 'invalid'): MaybePromise<GateResult> {
    if (outcome === 'ok') {
      const after = this.layers.success(this.at, this.#pairFailures, this.subjects);
      return isPromise(after) ? later(this, after, true) : this.succeeded(after);
    }
    const after = this.layers.failure(this.at, this.subjects);
    return isPromise(after) ? later(this, after, false) : this.failed(after);
  }

  /** A success counted: its answer, or the refusal a lockout that raced it stands for. */
  succeeded({ base: [after], raced }: LayerCount): GateResult {
    const a = after as Decision;
    if (!a.allowed) return this.r.refuse(withLayer(a, 'client'));
    if (raced !== undefined && !this.dryRun) return this.r.refuse(raced);
    return { ok: true, decision: a };
  }

  /** A failure counted: its 401, or the refusal a lockout that raced it stands for. */
  failed({ base: after, raced }: LayerCount): GateResult {
    const lost = after.filter(refusedUncounted);
    if (lost.length > 0) return this.r.refuse(withLayer(firstRefusal(lost) as Decision, 'client'));
    if (raced !== undefined && !this.dryRun) return this.r.refuse(raced);
    return this.r.failed(after[0] as Decision, 'invalid');
  }
}

// An attempt lives for its login only: see keepShape.
keepShape(new LayeredAttempt(PLACEHOLDER, PLACEHOLDER, false, [], PLACEHOLDER));

/** A count answered later (a shared store): see {@link checkedLater}. */
function later(
  attempt: LayeredAttempt,
  after: Promise<LayerCount>,
  success: boolean,
): Promise<GateResult> {
  return after.then((c) => (success ? attempt.succeeded(c) : attempt.failed(c)));
}
