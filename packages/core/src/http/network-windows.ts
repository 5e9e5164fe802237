import { compileClientRules, type RawRequest } from '../client.js';
import type { Decision } from '../decision.js';
import type { Logger } from '../events.js';
import { createHeaderWriter, type HeaderMode } from '../headers.js';
import { type Ipv6Network, networkKeysOf } from '../ipv6-networks.js';
import { isPromise, type MaybePromise } from '../promise.js';
import type { Store } from '../store.js';
import { createWindowLimiter, type WindowLimiter } from '../window-limiter.js';
import { siblingOf } from './browser-budget.js';
import { type GateClientOptions, gateClientRules } from './gate-options.js';
import { mergePolicies } from './stacked-headers.js';

/** What a network spent for an allowed request, to give back with the client's own units. */
export interface NetworkSpend {
  readonly limiter: WindowLimiter;
  readonly key: string;
  readonly made: Decision;
  readonly deletions: number | undefined;
}

/** A request's answer once its networks have been asked too. */
export interface NetworkAnswer {
  /** The decision the request gets: the first refusal, else the client's own. */
  readonly decision: Decision;
  readonly headers: Readonly<Record<string, string>>;
  /** What each network counted (allowed answers only). */
  readonly spent: readonly NetworkSpend[];
}

type Writer = (d: Decision) => Readonly<Record<string, string>>;

/**
 * The IPv6 network budgets of a request gate (docs/design.md#ipv6-networks): a window limiter per
 * network with `factor` times the client limiter's limit, its window and algorithm, in a store of
 * its own where stores are bounded. A request the client's own budget allows then spends in each
 * network, narrowest first; the first network that refuses refuses the request, and the wider ones
 * count nothing. Every policy asked is advertised, as stacked limiters are.
 */
export class NetworkWindows {
  readonly #client: WindowLimiter;
  readonly #networks: readonly Ipv6Network[];
  readonly #mode: HeaderMode;
  readonly #address: ReturnType<typeof compileClientRules>['address'];
  /** One limiter per network, narrowest first. */
  readonly limiters: readonly WindowLimiter[];
  #writers: readonly Writer[];
  #rule: WindowLimiter['rule'];

  constructor(
    client: WindowLimiter,
    networks: readonly Ipv6Network[],
    o: GateClientOptions & { readonly store?: Store | undefined },
    mode: HeaderMode,
  ) {
    this.#client = client;
    this.#networks = networks;
    this.#mode = mode;
    this.#address = compileClientRules(gateClientRules(o)).address;
    this.#rule = client.rule;
    this.limiters = networks.map((n) =>
      createWindowLimiter({
        limit: n.factor * client.rule.limit,
        windowMs: client.rule.windowMs,
        algorithm: client.rule.algorithm,
        dryRun: client.dryRun,
        name: `${client.name}-ipv6-${n.prefix}`,
        store: siblingOf(client.store, `ipv6-${n.prefix}`),
        ...(o.logger !== undefined && { logger: o.logger as Logger }),
      }),
    );
    this.#writers = this.#writersNow();
  }

  #writersNow(): readonly Writer[] {
    return [this.#client, ...this.limiters].map((l) =>
      createHeaderWriter({ windowMs: l.rule.windowMs, name: l.name, mode: this.#mode }),
    );
  }

  /** The client limiter was reconfigured (through the gate or directly): the networks follow. */
  #follow(): void {
    const rule = this.#client.rule;
    if (rule === this.#rule) return;
    this.#rule = rule;
    this.limiters.forEach((l, i) => {
      l.reconfigure({
        limit: (this.#networks[i] as Ipv6Network).factor * rule.limit,
        windowMs: rule.windowMs,
        algorithm: rule.algorithm,
        dryRun: this.#client.dryRun,
      });
    });
    this.#writers = this.#writersNow();
  }

  /** The network keys of a request's client; undefined when it has none (IPv4, unresolved). */
  keysOf(raw: RawRequest): string[] | undefined {
    return networkKeysOf(this.#address(raw)?.ip, this.#networks);
  }

  /**
   * Spends `cost` in each network after the client's own decision `own` allowed it (a refused
   * one spends nothing more), and merges the policies into one set of headers.
   */
  spend(own: Decision, keys: readonly string[], cost: number): MaybePromise<NetworkAnswer> {
    this.#follow();
    const decisions: Decision[] = [own];
    const spent: NetworkSpend[] = [];
    const step = (i: number): MaybePromise<NetworkAnswer> => {
      const last = decisions[decisions.length - 1] as Decision;
      if (!last.allowed || i === keys.length) return this.#answer(decisions, spent);
      const limiter = this.limiters[i] as WindowLimiter;
      const key = keys[i] as string;
      const deletions = limiter.store.deletions;
      const next = (d: Decision): MaybePromise<NetworkAnswer> => {
        decisions.push(d);
        spent.push({ limiter, key, made: d, deletions });
        return step(i + 1);
      };
      const d = limiter.consume(key, cost);
      return isPromise(d) ? d.then(next) : next(d);
    };
    return step(0);
  }

  #answer(decisions: readonly Decision[], spent: NetworkSpend[]): NetworkAnswer {
    const all = decisions.map((d, i) => (this.#writers[i] as Writer)(d));
    const refused = decisions.findIndex((d) => !d.allowed);
    const at = refused === -1 ? 0 : refused;
    return {
      decision: decisions[at] as Decision,
      headers: mergePolicies(all[at] as Readonly<Record<string, string>>, all),
      spent: refused === -1 ? spent : [],
    };
  }
}
