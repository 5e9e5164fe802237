// The plugin's per-route `config.concurrency` (docs/design.md#concurrency): a route that names
// concurrency options gets its own `concurrency` hook, built once when the route is added (a GET
// and its automatic HEAD share it), first among the route's own onRequest hooks after the limit.
import { PortcullisConfigError } from '@portcullis/core';
import type { onRequestHookHandler, RouteOptions } from 'fastify';
import { concurrency } from './hooks.js';
import type { ConcurrencyOptions } from './options.js';

/** The concurrency hooks of one plugin registration, by route, and how to close their stores. */
export class RouteConcurrency {
  readonly #built = new WeakMap<object, Map<string, ReturnType<typeof concurrency>>>();
  readonly #all: ReturnType<typeof concurrency>[] = [];

  /**
   * The hook of `route`'s `config.concurrency`, or `undefined` when it has none.
   * @throws {PortcullisConfigError} for a `config.concurrency` that is not an options object, or a
   * wrong option in it (the route's registration fails)
   */
  hookFor(route: RouteOptions): onRequestHookHandler | undefined {
    const config: unknown = route.config?.concurrency;
    if (config === undefined) return undefined;
    if (config === null || typeof config !== 'object' || Array.isArray(config))
      throw new PortcullisConfigError(
        'ERR_PORTCULLIS_CONCURRENCY',
        'concurrency',
        `portcullis: config.concurrency of ${route.url} must be an options object, got ${config === null ? 'null' : typeof config}`,
      );
    let byUrl = this.#built.get(config);
    if (byUrl === undefined) {
      byUrl = new Map();
      this.#built.set(config, byUrl);
    }
    let hook = byUrl.get(route.url);
    if (hook === undefined) {
      hook = concurrency(config as ConcurrencyOptions);
      byUrl.set(route.url, hook);
      this.#all.push(hook);
    }
    return hook;
  }

  /** Closes the stores the hooks built (a `limiter` or `store` you passed is yours). */
  close(): Promise<unknown> {
    return Promise.all(this.#all.map((hook) => hook.close()));
  }
}
