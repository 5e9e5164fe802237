import { keepShape, PLACEHOLDER } from './keep-shape.js';
import { isPromise, type MaybePromise } from './promise.js';
import type { Store, StoreAnswer, StoreCall } from './store.js';

/** `call` made on its own, through the store method it names. */
export function callStore(store: Store, call: StoreCall): MaybePromise<StoreAnswer> {
  switch (call.op) {
    case 'checkFailures':
      return store.checkFailures(call.key, call.rule);
    case 'recordFailure':
      return store.recordFailure(call.key, call.rule);
    case 'recordSuccess':
      return store.recordSuccess(call.key, call.rule);
    case 'recordDistinct':
      return needs(store, 'recordDistinct').call(store, call.key, call.member, call.rule);
    case 'trust': {
      const done = needs(store, 'trust').call(
        store,
        call.table,
        call.group,
        call.member,
        call.rule,
      );
      return isPromise(done) ? done.then(() => undefined) : undefined;
    }
    case 'trusted':
      return needs(store, 'trusted').call(store, call.table, call.member, call.groups, call.rule);
  }
}

function needs<K extends 'recordDistinct' | 'trust' | 'trusted'>(
  store: Store,
  method: K,
): NonNullable<Store[K]> {
  const fn = store[method];
  if (typeof fn !== 'function')
    throw new TypeError(
      `Portcullis: this store has no ${method}() (MemoryStore and RedisStore have it)`,
    );
  return fn as NonNullable<Store[K]>;
}

/**
 * `calls` as one operation of `store`: its `batch` when it has one, else each call on its own, all
 * issued at once (a store that pipelines still sends them together). Also for store authors whose
 * `batch` handles some calls itself and leaves the rest to their methods.
 */
export function batchCalls(store: Store, calls: readonly StoreCall[]): MaybePromise<StoreAnswer[]> {
  if (typeof store.batch === 'function') return store.batch(calls);
  const out = calls.map((c) => callStore(store, c));
  return out.some(isPromise) ? Promise.all(out) : (out as StoreAnswer[]);
}

/**
 * One store call of a phase that several limiters share: made with the other steps on the same
 * store in one batch, then turned into its limiter's answer by `finish` (events, logs, dry run).
 * Not exported from an entry point: the auth gate's plumbing.
 */
export class StoreStep<T> {
  constructor(
    readonly store: Store,
    readonly call: StoreCall,
    readonly finish: (answer: StoreAnswer) => T,
  ) {}
}

// A step lives for its phase of a login only: see keepShape.
keepShape(new StoreStep(PLACEHOLDER, PLACEHOLDER, PLACEHOLDER));

/** A step's answer: known already (exempt, a private table, a foreign limiter) or a store call. */
export type Step<T> = MaybePromise<T> | StoreStep<T>;

/**
 * The answers of `steps`, in order: the store calls grouped into one batch per store (the
 * layers' and the client's are one store on Redis; on memory the client's private table answers
 * at once, and a loopback browser's budgets have stores of their own), the rest as they are.
 * Synchronous when every answer is.
 * @internal for the auth gate
 */
export function runSteps(steps: readonly Step<unknown>[]): MaybePromise<unknown[]> {
  // In memory every step answered already (private tables, direct calls): nothing to group.
  let calls = false;
  let pending = false;
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i];
    if (step instanceof StoreStep) calls = true;
    else if (isPromise(step)) pending = true;
  }
  if (!calls) return pending ? Promise.all(steps) : (steps as unknown[]);
  return batchSteps(steps);
}

/** {@link runSteps} with store calls among the steps: one batch per store. */
function batchSteps(steps: readonly Step<unknown>[]): MaybePromise<unknown[]> {
  const stores: Store[] = [];
  const calls: StoreCall[][] = [];
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i];
    if (!(step instanceof StoreStep)) continue;
    const j = stores.indexOf(step.store);
    if (j >= 0) (calls[j] as StoreCall[]).push(step.call);
    else {
      stores.push(step.store);
      calls.push([step.call]);
    }
  }
  let pending = false;
  const batches: MaybePromise<StoreAnswer[]>[] = [];
  for (let j = 0; j < stores.length; j++) {
    const answers = batchCalls(stores[j] as Store, calls[j] as StoreCall[]);
    if (isPromise(answers)) pending = true;
    batches.push(answers);
  }
  return pending
    ? Promise.all(batches).then((answers) => settle(steps, stores, answers))
    : settle(steps, stores, batches as StoreAnswer[][]);
}

/** Each step's answer: a store call's through its `finish`, from its store's batch. */
function settle(
  steps: readonly Step<unknown>[],
  stores: readonly Store[],
  answers: readonly StoreAnswer[][],
): MaybePromise<unknown[]> {
  const next: number[] = [];
  for (let j = 0; j < stores.length; j++) next.push(0);
  let pending = false;
  const out: unknown[] = [];
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i];
    if (step instanceof StoreStep) {
      const j = stores.length === 1 ? 0 : stores.indexOf(step.store);
      const k = next[j] as number;
      next[j] = k + 1;
      out.push(step.finish((answers[j] as StoreAnswer[])[k]));
    } else {
      if (isPromise(step)) pending = true;
      out.push(step);
    }
  }
  return pending ? Promise.all(out) : out;
}
