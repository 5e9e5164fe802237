import type { Decision } from './decision.js';
import type { FailureKeys, ResolvedSubject } from './failure-keys.js';
import type { FailureLimiter, Subject } from './failure-limiter.js';
import { normalizeScope } from './failure-options.js';
import { keepShape, PLACEHOLDER } from './keep-shape.js';
import type { FailureDecision } from './store.js';
import { type Step, StoreStep } from './store-batch.js';

/** What a failure limiter can do as a step of a batch (see {@link SubjectSteps}). */
export type StepOp = 'check' | 'recordFailure' | 'recordSuccess' | 'recordDistinct';

/** The per-key state ops of each limiter made here: what lets it give its store calls to a batch. */
const keysOf = new WeakMap<FailureLimiter, FailureKeys>();

/** Records that `limiter` runs on `keys`, so that {@link subjectSteps} can batch its store calls. */
export function stepsThrough(limiter: FailureLimiter, keys: FailureKeys): void {
  keysOf.set(limiter, keys);
}

/**
 * One subject of one limiter in one scope, resolved once for the several steps of an attempt (its
 * check, then its failure or success): an IP parsed once, not once per step.
 */
export interface SubjectSteps {
  /** The key the subject is counted under, and whether it is exempt (see `FailureLimiter.keyOf`). */
  readonly key: string;
  readonly exempt: boolean;
  /**
   * `op` for the subject as a step of a gate's batch (store-batch.ts): a limiter made here gives
   * its store call, to be made together with the other limiters' on the same store; any other
   * limiter (one a caller built by hand) is simply called. `member`: what `recordDistinct` counts.
   */
  step(op: StepOp, member?: string): Step<Decision>;
}

/** The steps of `subject` on `limiter` in `scope` (see {@link SubjectSteps}). */
export function subjectSteps(
  limiter: FailureLimiter,
  subject: Subject,
  scope: string | undefined,
): SubjectSteps {
  const keys = keysOf.get(limiter);
  if (keys === undefined) return foreignSteps(limiter, subject, scope);
  const s = keys.subjectOf(subject);
  return new KeyedSteps(keys, s.key, s.exempt, normalizeScope(scope));
}

/** Makes the steps of a subject of one limiter in a normalized scope (see {@link stepsMaker}). */
export type StepsMaker = (subject: Subject, scope: string) => SubjectSteps;

/**
 * {@link subjectSteps} of one limiter, its per-key ops looked up once: for a caller that makes
 * steps of the same limiters on every attempt (the auth layers), where the lookup cost as much as
 * the rest of the steps' making. `scope` must be normalized (`normalizeScope`) already.
 */
export function stepsMaker(limiter: FailureLimiter): StepsMaker {
  const keys = keysOf.get(limiter);
  if (keys === undefined) return (subject, scope) => foreignSteps(limiter, subject, scope);
  return (subject, scope) => {
    const s = keys.subjectOf(subject);
    return new KeyedSteps(keys, s.key, s.exempt, scope);
  };
}

/** The steps of a limiter not made here (one a caller built by hand): each simply called. */
function foreignSteps(
  limiter: FailureLimiter,
  subject: Subject,
  scope: string | undefined,
): SubjectSteps {
  const { key, exempt } = limiter.keyOf(subject);
  return {
    key,
    exempt,
    step: (op, member) =>
      op === 'recordDistinct'
        ? limiter.recordDistinct(subject, member ?? '', scope)
        : limiter[op](subject, scope),
  };
}

/**
 * The steps of a subject of a limiter made here: its store calls, batched. It is its own resolved
 * subject, so that an attempt's five subjects are five objects, not ten.
 */
class KeyedSteps implements SubjectSteps, ResolvedSubject {
  constructor(
    readonly keys: FailureKeys,
    readonly key: string,
    readonly exempt: boolean,
    readonly scope: string,
  ) {}

  step(op: StepOp, member?: string): Step<Decision> {
    return keyStep(this.keys, op, this, this.scope, member);
  }
}

// A login's steps live for that login only: see keepShape.
keepShape(new KeyedSteps(PLACEHOLDER, '', false, ''));

/**
 * `op` of `subject` as a step of a gate's batch: a store call with what turns its answer into
 * the limiter's decision, or the decision itself when no shared store call is needed (an exempt
 * subject, a private table).
 */
function keyStep(
  keys: FailureKeys,
  op: StepOp,
  s: ResolvedSubject,
  sc: string,
  member = '',
): Step<Decision> {
  if (s.exempt || keys.tableOf(sc) !== undefined)
    return op === 'recordDistinct' ? keys.recordDistinct(s, member, sc) : keys[op](s, sc);
  return storeStep(keys, op, s, sc, member);
}

/**
 * {@link keyStep} through a shared store: apart, since its closures over the arguments would make
 * every call allocate their context, a table's answer included (bench/NOTES.md).
 */
function storeStep(
  keys: FailureKeys,
  op: StepOp,
  s: ResolvedSubject,
  sc: string,
  member: string,
): Step<Decision> {
  const { store, rule } = keys;
  const key = keys.storeKey(sc, s.key);
  switch (op) {
    case 'check':
      return new StoreStep(store, { op: 'checkFailures', key, rule }, (r) =>
        keys.checked(sc, s.key, r as Decision),
      );
    case 'recordFailure':
      return new StoreStep(store, { op, key, rule }, (r) =>
        keys.afterFailure(sc, s.key, r as FailureDecision),
      );
    case 'recordSuccess':
      return new StoreStep(store, { op, key, rule }, (r) =>
        keys.reports.finish(sc, s.key, r as Decision),
      );
    case 'recordDistinct':
      keys.distinctOf();
      return new StoreStep(store, { op, key, member, rule }, (r) =>
        keys.afterFailure(sc, s.key, r as FailureDecision),
      );
  }
}
