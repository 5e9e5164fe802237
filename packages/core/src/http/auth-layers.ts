import { systemClock } from '../clock.js';
import type { Decision } from '../decision.js';
import { type AuthLayer, type FailureLimiter, refusedUncounted } from '../failure-limiter.js';
import { normalizeScope } from '../failure-options.js';
import { type StepsMaker, type SubjectSteps, stepsMaker } from '../failure-step.js';
import { isPromise, type MaybePromise, mapMaybe } from '../promise.js';
import { MemoryStore } from '../memory-store.js';
import type { Store, TrustRule } from '../store.js';
import { type Step, StoreStep, runSteps } from '../store-batch.js';
import type { AuthLayerOptions } from './auth-layer-options.js';
import { siblingOf } from './browser-budget.js';
import {
  buildLayerLimiters,
  type LayerLimiters,
  type LayerSetup,
  type LockoutReport,
  lockoutReporter,
  watchLayerLockouts,
} from './layer-limiters.js';

/** What the layers' check found (see {@link AuthLayers.check}). */
export interface LayerCheck {
  /** The answers of the client's own checks, in order. */
  readonly base: Decision[];
  /** The layer refusal, if any. */
  readonly refused: Decision | undefined;
  /** Whether a success must clear the pair. */
  readonly pairFailures: boolean;
}

/** What counting an outcome in the layers found. */
export interface LayerCount {
  /** The answers of the client's own calls, in order. */
  readonly base: Decision[];
  /** A hard layer's lockout that a concurrent attempt started since the check. */
  readonly raced: Decision | undefined;
}

/**
 * One attempt in the layers: its client (the client limiter's key), the account it names and its
 * scope, with each layer's subject resolved once for the attempt's check and then its failure or
 * success (the pair's key is built, and hashed by the store, once per attempt, not once per call).
 * Undefined where the layer is off or the attempt names no account.
 */
export interface LayerAttempt {
  readonly client: string;
  readonly account: string | undefined;
  readonly scope: string;
  readonly pair: SubjectSteps | undefined;
  readonly spray: SubjectSteps | undefined;
  readonly byAccount: SubjectSteps | undefined;
  readonly inScope: SubjectSteps | undefined;
}

/** A decision with the layer that made it (only the server sees it). */
export function withLayer(d: Decision, layer: AuthLayer): Decision {
  return { ...d, layer };
}

/**
 * The defence-in-depth layers of one auth gate: failure limiters of their own over the client
 * limiter's store (a memory store's sibling, so that their keys neither crowd out clients nor show
 * in the client limiter's lockouts), plus the store's trust table.
 */
export class AuthLayers {
  readonly #l: LayerLimiters;
  /** Each layer's steps maker (undefined: the layer is off), looked up once. */
  readonly #makers: { readonly [K in keyof LayerLimiters]: StepsMaker | undefined };
  readonly #trust: TrustRule;
  readonly #report: LockoutReport | undefined;
  readonly #unwatch: (() => void)[] = [];
  readonly #store: Store;
  /** The layers' store when it is a memory store (its calls answer at once). */
  readonly #memory: MemoryStore | undefined;
  /** The client limiter's store when it is a memory store apart from the layers' (its sibling). */
  readonly #clientMemory: MemoryStore | undefined;
  readonly #table: string;
  readonly #scopeTable: string;
  readonly #tableNames = new Map<string, readonly [string, string]>();
  /** Whether any layer is on (else the gate keeps its plain path). */
  readonly active: boolean;

  constructor(o: AuthLayerOptions<unknown>, setup: LayerSetup) {
    const client = setup.client;
    const name = client.config.name;
    const store = siblingOf(client.store, 'layers');
    this.#store = store;
    this.#memory = store instanceof MemoryStore ? store : undefined;
    this.#clientMemory =
      client.store instanceof MemoryStore && client.store !== store ? client.store : undefined;
    // Account trust and scope trust are two tables: in one, the scope's group (every trusted
    // client) would always be the largest and give its trusts first to any account's new one.
    this.#table = `${name}.trust:`;
    this.#scopeTable = `${name}.scope-trust:`;
    this.#l = buildLayerLimiters(o, setup, store);
    const maker = (l: FailureLimiter | undefined) => (l === undefined ? undefined : stepsMaker(l));
    this.#makers = {
      pair: maker(this.#l.pair),
      account: maker(this.#l.account),
      spray: maker(this.#l.spray),
      scope: maker(this.#l.scope),
    };
    this.#trust = {
      trustMs: o.trustMs ?? 2_592_000_000,
      maxTrusted: o.maxTrusted ?? 10_000,
    };
    this.active = Object.values(this.#l).some((l) => l !== undefined);
    this.#report =
      o.onLockout === undefined
        ? undefined
        : lockoutReporter(o.onLockout, setup.clock ?? systemClock, setup.logger);
    if (this.#report !== undefined)
      this.#unwatch.push(...watchLayerLockouts(client, this.#l, this.#report));
  }

  /** The layer limiters that exist (for listing and closing). */
  get limiters(): FailureLimiter[] {
    return Object.values(this.#l).filter((l): l is FailureLimiter => l !== undefined);
  }

  /** Follows the client limiter's extra listener for another limiter (a gate's browser limiter). */
  watch(limiter: FailureLimiter): void {
    const report = this.#report;
    if (report === undefined) return;
    this.#unwatch.push(limiter.watchLockouts((s) => report(s)));
  }

  /**
   * `client`'s attempt (its limiter key) on `account` in `scope` (see {@link LayerAttempt}). The
   * scope is the caller's (a per-call override included), normalized here once for the layers'
   * keys and the trust tables alike: a blank scope is `default` in both, and a huge one is the
   * same digest in both, never a table name of its own length.
   */
  attempt(client: string, account: string | undefined, callerScope: string): LayerAttempt {
    const withAccount = account !== undefined;
    const scope = normalizeScope(callerScope);
    const m = this.#makers;
    return {
      client,
      account,
      scope,
      pair:
        withAccount && m.pair !== undefined
          ? m.pair(`${client}\u0000${account}`, scope)
          : undefined,
      spray: withAccount && m.spray !== undefined ? m.spray(client, scope) : undefined,
      byAccount: withAccount && m.account !== undefined ? m.account(account, scope) : undefined,
      inScope: m.scope !== undefined ? m.scope('*', scope) : undefined,
    };
  }

  /**
   * Before the credential counts: the layers' state for attempt `at`, read in one batch with
   * `base` (the client limiter's own checks), whose answers come back as they are. Hard layers
   * (pair, spray) refuse outright; soft ones (account, scope) refuse only a client without trust,
   * read in a second batch only then. `pairFailures` says whether a success must clear the pair.
   * `base` holds the client's subjects (its own first), whose checks are made in the same batch.
   */
  check(at: LayerAttempt, base: readonly SubjectSteps[]): MaybePromise<LayerCheck> {
    const n = base.length;
    const answers = runSteps(this.#steps(at, base, 'check', false));
    return isPromise(answers) ? this.#checkedLater(at, n, answers) : this.#checked(at, n, answers);
  }

  /*
   * The asynchronous ways are functions of their own: an arrow over a call's variables makes V8
   * allocate their context on entry to the call, which the synchronous way would pay for too.
   */
  #checkedLater(at: LayerAttempt, n: number, answers: Promise<unknown[]>): Promise<LayerCheck> {
    return answers.then((got) => this.#checked(at, n, got));
  }

  /** The check's answers (`base`'s `n` first, then the layers'): refused or not, and why. */
  #checked(at: LayerAttempt, n: number, answers: unknown[]): MaybePromise<LayerCheck> {
    const baseAnswers = answers.slice(0, n) as Decision[];
    // A layer store full of lockouts cannot take a new key ('overflow'): that layer is open for
    // it (nothing is held against it), and the client layer still limits the client. Refusing
    // would let a botnet that filled the layers' store with its own lockouts refuse everyone.
    const p = openOnOverflow(answers[n] as Decision);
    const spray = openOnOverflow(answers[n + 1] as Decision);
    const a = openOnOverflow(answers[n + 2] as Decision);
    const sc = openOnOverflow(answers[n + 3] as Decision);
    // An escalating pair may hold no failures but the step of its last lockout, which a success
    // must forget too: the check cannot show it, so a success then always clears the pair.
    const pairFailures =
      p.allowed && (p.remaining < p.limit || this.#l.pair?.escalate !== undefined);
    const hard = worst(p, 'pair', spray, 'spray');
    if (hard !== undefined || (a.allowed && sc.allowed))
      return { base: baseAnswers, refused: hard, pairFailures };
    return this.#underAttack(at, { base: baseAnswers, refused: undefined, pairFailures }, a, sc);
  }

  /**
   * A soft layer refused (`a`, the account's answer, or `sc`, the scope's): the refusal stands
   * for a client without trust. Trust is read only now, from the tables a refusal depends on: an
   * attack costs one store operation more, an ordinary login nothing.
   */
  #underAttack(
    at: LayerAttempt,
    open: LayerCheck,
    a: Decision,
    sc: Decision,
  ): MaybePromise<LayerCheck> {
    return mapMaybe(runSteps(this.#trustReads(at, !sc.allowed)), (trust): LayerCheck => {
      const forAccount = (trust[0] as readonly boolean[])[0] === true;
      const inScope = (trust[1] as readonly boolean[])[0] === true;
      const refused = worst(
        a.allowed || forAccount ? OPEN : a,
        'account',
        sc.allowed || inScope || forAccount ? OPEN : sc,
        'scope',
      );
      return { ...open, refused };
    });
  }

  /**
   * The trust reads a soft refusal depends on: the account's trust (it lets a client through both
   * soft layers) and the scope's; a table not asked for reads as no trust.
   */
  #trustReads(at: LayerAttempt, inScope: boolean): Step<unknown>[] {
    const l = this.#l;
    const [accountTable, scopeTable] = this.#tables(at.scope);
    return [
      at.account !== undefined && (l.account !== undefined || l.scope !== undefined)
        ? this.#trusted(accountTable, at.client, at.account)
        : NO_TRUST,
      inScope && l.scope !== undefined ? this.#trusted(scopeTable, at.client, 's') : NO_TRUST,
    ];
  }

  /**
   * The account and scope trust tables of `scope`, named once per scope: a name built per call is
   * a new string, which every map lookup of it must hash again.
   */
  #tables(scope: string): readonly [string, string] {
    let names = this.#tableNames.get(scope);
    if (names === undefined) {
      names = [this.#table + scope, this.#scopeTable + scope];
      if (this.#tableNames.size < 64) this.#tableNames.set(scope, names);
    }
    return names;
  }

  /** Whether `client` holds a trust of `group` (an account's key, or `s`) in `table`. */
  #trusted(table: string, client: string, group: string): Step<boolean[]> {
    if (this.#memory !== undefined)
      return this.#memory.trusted(table, client, [group], this.#trust);
    return new StoreStep(
      this.#store,
      {
        op: 'trusted',
        table,
        member: client,
        groups: [group],
        rule: this.#trust,
      },
      (answer) => answer as boolean[],
    );
  }

  /**
   * A wrong credential: counted in every layer at once, in one batch with `base` (the client
   * limiter's own failures). `raced` is the refusal of a hard layer whose lockout a concurrent
   * attempt started since `check` (refused like any attempt during it). `base`: the client's
   * subjects, as in {@link check}; a failure counts in each.
   */
  failure(at: LayerAttempt, base: readonly SubjectSteps[]): MaybePromise<LayerCount> {
    const n = base.length;
    const answers = runSteps(this.#steps(at, base, 'failure', false));
    return isPromise(answers) ? later(failureCount, n, answers) : failureCount(n, answers);
  }

  /**
   * A right credential, in one batch with the client's own success (`base`'s first subject: a
   * success resets only the client's own budget): the pair's failures go (when it had any), and
   * the client is trusted for the account and in the scope. `raced` is the pair's lockout if a
   * concurrent attempt started one.
   */
  success(
    at: LayerAttempt,
    pairFailures: boolean,
    base: readonly SubjectSteps[],
  ): MaybePromise<LayerCount> {
    const answers = runSteps(this.#steps(at, base, 'success', pairFailures));
    return isPromise(answers) ? later(successCount, 1, answers) : successCount(1, answers);
  }

  /**
   * The batch of `phase` for `at`: the steps of the client's subjects `base` (a success: of the
   * first only), then the layers' (a success clears the pair only with `pairFailures`), all made
   * while the memory stores hold one time. Built by pushing: `concat` with steps that are objects
   * looks up `Symbol.isConcatSpreadable` on each and leaves V8's fast path (a quarter of a layered
   * login's own time, bench/NOTES.md).
   */
  #steps(
    at: LayerAttempt,
    base: readonly SubjectSteps[],
    phase: 'check' | 'failure' | 'success',
    pairFailures: boolean,
  ): Step<unknown>[] {
    const out: Step<unknown>[] = [];
    const pinned = this.#pin();
    try {
      if (phase === 'check') {
        for (const s of base) out.push(s.step('check'));
        out.push(
          at.pair?.step('check') ?? OPEN,
          at.spray?.step('check') ?? OPEN,
          at.byAccount?.step('check') ?? OPEN,
          at.inScope?.step('check') ?? OPEN,
        );
      } else if (phase === 'failure') {
        for (const s of base) out.push(s.step('recordFailure'));
        out.push(
          at.pair?.step('recordFailure') ?? OPEN,
          at.spray?.step('recordDistinct', at.account) ?? OPEN,
          at.byAccount?.step('recordFailure') ?? OPEN,
          at.inScope?.step('recordFailure') ?? OPEN,
        );
      } else {
        const [accountTable, scopeTable] = this.#tables(at.scope);
        out.push(
          (base[0] as SubjectSteps).step('recordSuccess'),
          pairFailures && at.pair !== undefined ? at.pair.step('recordSuccess') : OPEN,
          this.#earn(scopeTable, 's', at.client),
          at.account === undefined ? OPEN : this.#earn(accountTable, at.account, at.client),
        );
      }
      return out;
    } finally {
      this.#unpin(pinned);
    }
  }

  /*
   * A phase's calls are made at one time of the client's memory store and of the layers' (one
   * clock read for the phase, as one script on Redis reads one TIME for the client's keys and the
   * layers'). Pinned and unpinned around the calls rather than through a closure: each closure
   * over a call's variables costs the call an allocation of their context, and these run on every
   * layered login (bench/NOTES.md). Returns which stores this call pinned (1: the client's, 2:
   * the layers'), for {@link #unpin}.
   */
  #pin(): number {
    const client = this.#clientMemory;
    let pinned = client?.pinTime() === true ? 1 : 0;
    if (this.#memory?.pinTime(client?.pinnedTime) === true) pinned |= 2;
    return pinned;
  }

  #unpin(pinned: number): void {
    if ((pinned & 1) !== 0) this.#clientMemory?.unpinTime();
    if ((pinned & 2) !== 0) this.#memory?.unpinTime();
  }

  /** `client` authenticated for `group` (an account's key, or `s`) of `table`. */
  #earn(table: string, group: string, client: string): Step<undefined> {
    // In memory the call is made at once: nothing to batch, and a step per trust cost more than
    // the trust itself.
    if (this.#memory !== undefined) {
      this.#memory.trust(table, group, client, this.#trust);
      return undefined;
    }
    return new StoreStep(
      this.#store,
      { op: 'trust', table, group, member: client, rule: this.#trust },
      () => undefined,
    );
  }

  close(): MaybePromise<void> {
    for (const stop of this.#unwatch.splice(0)) stop();
    const closing = this.limiters.map((l) => l.close());
    return closing.some(isPromise) ? Promise.all(closing).then(() => undefined) : undefined;
  }
}

/** The trust answer of a table that need not be read. */
const NO_TRUST: readonly boolean[] = Object.freeze([false]);

/** An allowed answer standing for a layer that is off. */
const OPEN: Decision = Object.freeze({
  allowed: true,
  reason: 'allowed',
  limit: 1,
  remaining: 1,
  retryAfterMs: 0,
  resetMs: 0,
  key: '',
});

/** A layer's answer with an overflow (no room for a new key) read as open. */
function openOnOverflow(d: Decision): Decision {
  return d.reason === 'overflow' ? OPEN : d;
}

/** A hard layer's lockout that a concurrent attempt started since the check (never an overflow). */
function raced(d: Decision): Decision {
  return refusedUncounted(d) && d.reason === 'locked' ? d : OPEN;
}

/**
 * The refusal of two layer answers that waits longer (the first on a tie), marked with its layer.
 * Two arguments, not a list: this runs on every layered login.
 */
function worst(
  a: Decision,
  layerA: AuthLayer,
  b: Decision,
  layerB: AuthLayer,
): Decision | undefined {
  if (!b.allowed && (a.allowed || b.retryAfterMs > a.retryAfterMs)) return withLayer(b, layerB);
  return a.allowed ? undefined : withLayer(a, layerA);
}

/** A failure's answers (`n` of the client's, then the layers'): see {@link AuthLayers.failure}. */
function failureCount(n: number, answers: unknown[]): LayerCount {
  return {
    base: answers.slice(0, n) as Decision[],
    raced: worst(raced(answers[n] as Decision), 'pair', raced(answers[n + 1] as Decision), 'spray'),
  };
}

/** A success's answers (`n` of the client's, then the pair's first): see {@link AuthLayers.success}. */
function successCount(n: number, answers: unknown[]): LayerCount {
  const p = answers[n] as Decision;
  return {
    base: answers.slice(0, n) as Decision[],
    raced: p.allowed ? undefined : withLayer(p, 'pair'),
  };
}

/** `count(n, answers)` once a shared store answers (see {@link AuthLayers.check} on why apart). */
function later(
  count: (n: number, answers: unknown[]) => LayerCount,
  n: number,
  answers: Promise<unknown[]>,
): Promise<LayerCount> {
  return answers.then((got) => count(n, got));
}
