import { PortcullisConfigError } from '@portcullis/core';
import type { RequestGate } from '@portcullis/core/adapter';
import type {
  FastifyInstance,
  FastifyPluginCallback,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
  RouteOptions,
} from 'fastify';
import fp from 'fastify-plugin';
import { createRateLimitHook } from './hooks.js';
import type { ConcurrencyOptions, RateLimitOptions } from './options.js';
import { chargeRateLimit, withCharge } from './route-charge.js';
import { RouteConcurrency } from './route-concurrency.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** This route's `rateLimit` options, merged over the plugin's; `false` leaves the route unlimited. */
    rateLimit?: (RateLimitOptions & { hook?: LimitHook }) | false;
    /** This route's `concurrency` options: at most `max` of its requests per key in flight. */
    concurrency?: ConcurrencyOptions;
  }
}

/** The request lifecycle hooks the limiter can run in. */
export type LimitHook = 'onRequest' | 'preParsing' | 'preValidation' | 'preHandler';

const HOOKS: readonly LimitHook[] = ['onRequest', 'preParsing', 'preValidation', 'preHandler'];

/** Options of the {@link portcullis} plugin: `rateLimit` options for every route, plus `global`. */
export interface PortcullisPluginOptions extends RateLimitOptions {
  /**
   * The lifecycle hook the limiter runs in, globally and per route (`config.rateLimit.hook`).
   * `onRequest` refuses before anything else runs; `preHandler` (or `preValidation`) runs after
   * authentication hooks, for limits keyed by the authenticated user. In `onRequest` the limiter
   * runs before the route's own hooks; in the later hooks, after them.
   * @default 'onRequest'
   */
  hook?: LimitHook;
  /**
   * Limit every route registered after the plugin (one shared bucket per client); `false` limits
   * only routes that carry a `config.rateLimit` object.
   * @default true
   */
  global?: boolean;
}

type Hook = ReturnType<typeof createRateLimitHook>;

function badHook(value: unknown, where: string): PortcullisConfigError {
  return new PortcullisConfigError(
    'ERR_PORTCULLIS_HOOK',
    'hook',
    `portcullis: option "hook" of ${where} must be one of ${HOOKS.map((h) => `"${h}"`).join(', ')}, got ${JSON.stringify(value)}`,
  );
}

/** A route's hooks of one kind as a list (Fastify takes one function or an array). */
function listOf(own: unknown): unknown[] {
  return own === undefined ? [] : Array.isArray(own) ? own : [own];
}

function isOptionsObject(value: unknown): value is RateLimitOptions {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function portcullisPlugin(
  fastify: FastifyInstance,
  options: PortcullisPluginOptions,
  done: (err?: Error) => void,
): void {
  // `prefix`, `logLevel` and `logSerializers` are Fastify's own register options, not ours.
  const {
    global: limitAll = true,
    hook: globalHook = 'onRequest',
    prefix: _p,
    logLevel: _l,
    logSerializers: _s,
    ...globals
  } = options as PortcullisPluginOptions & {
    prefix?: unknown;
    logLevel?: unknown;
    logSerializers?: unknown;
  };
  if (typeof limitAll !== 'boolean') {
    done(
      new PortcullisConfigError(
        'ERR_PORTCULLIS_GLOBAL',
        'global',
        `portcullis: option "global" must be a boolean, got ${typeof limitAll}`,
      ),
    );
    return;
  }
  if (!HOOKS.includes(globalHook)) {
    done(badHook(globalHook, 'plugin options'));
    return;
  }
  const gates: RequestGate<FastifyRequest, FastifyReply>[] = [];
  const ownsLimiter = globals.limiter === undefined;
  function build(opts: RateLimitOptions): Hook {
    const built = createRateLimitHook(opts);
    if (ownsLimiter && opts.limiter === undefined) gates.push(built.gate);
    return built;
  }
  let shared: Hook;
  try {
    shared = build(globals); // validates the global options at registration
  } catch (error) {
    done(error as Error);
    return;
  }
  // A GET route and its automatic HEAD twin share one options object and one URL: one gate.
  const perRoute = new WeakMap<object, Map<string, Hook>>();

  function hookFor(route: RouteOptions): { limit: Hook['hook']; hook: LimitHook } | undefined {
    const config: unknown = route.config?.rateLimit;
    if (config === false) return undefined;
    if (config === undefined)
      return limitAll ? { limit: shared.hook, hook: globalHook } : undefined;
    if (!isOptionsObject(config)) {
      throw new PortcullisConfigError(
        'ERR_PORTCULLIS_RATE_LIMIT',
        'rateLimit',
        `portcullis: config.rateLimit of ${route.url} must be an options object or false, got ${typeof config}`,
      );
    }
    const { hook = globalHook, ...routeOptions } = config as RateLimitOptions & {
      hook?: LimitHook;
    };
    if (!HOOKS.includes(hook)) throw badHook(hook, `config.rateLimit of ${route.url}`);
    let byUrl = perRoute.get(config);
    if (byUrl === undefined) {
      byUrl = new Map();
      perRoute.set(config, byUrl);
    }
    let built = byUrl.get(route.url);
    if (built === undefined) {
      built = build({ ...globals, ...routeOptions });
      byUrl.set(route.url, built);
    }
    return { limit: built.hook, hook };
  }

  if (!fastify.hasRequestDecorator('rateLimit')) fastify.decorateRequest('rateLimit', undefined);
  if (!fastify.hasRequestDecorator('chargeRateLimit'))
    fastify.decorateRequest('chargeRateLimit', chargeRateLimit);
  const slots = new RouteConcurrency();
  fastify.addHook('onRoute', function portcullisOnRoute(route: RouteOptions): void {
    const hooks = route as unknown as Record<LimitHook, unknown>;
    const held = slots.hookFor(route);
    // Before the route's own onRequest hooks; the limit below goes before it (refused first).
    if (held !== undefined) hooks.onRequest = [held, ...listOf(hooks.onRequest)];
    const found = hookFor(route);
    if (found === undefined) return;
    const { limit, hook } = found;
    const handler: onRequestHookHandler = limit;
    route.config = withCharge(route.config, limit.charge) as NonNullable<typeof route.config>;
    const fn: unknown =
      hook === 'preParsing'
        ? function portcullisPreParsing(
            request: FastifyRequest,
            reply: FastifyReply,
            payload: unknown,
            next: (err?: Error | null, payload?: unknown) => void,
          ): void {
            handler.call(fastify, request, reply, (err?: Error) => next(err ?? null, payload));
          }
        : handler;
    const list = listOf(hooks[hook]);
    // First in onRequest (refuse before anything else); after the route's own later hooks, so a
    // preHandler limit keyed by the user runs after the route's authentication.
    hooks[hook] = hook === 'onRequest' ? [fn, ...list] : [...list, fn];
  });
  fastify.addHook(
    'onClose',
    function portcullisOnClose(_instance: FastifyInstance, closed: (err?: Error) => void): void {
      Promise.all([...gates.map((gate) => gate.close()), slots.close()]).then(
        () => closed(),
        closed,
      );
    },
  );
  done();
}

/**
 * The Portcullis Fastify plugin: `rateLimit` on every route registered after it (sharing one
 * bucket per client), per-route `config.rateLimit` options merged over the plugin's (one gate per
 * route, built when the route is added), `config.rateLimit: false` to opt a route out,
 * `request.rateLimit` decorated, and `request.chargeRateLimit(units)` to spend more from a handler.
 * @throws {PortcullisConfigError} (as a registration error) for a wrong or unknown option
 */
export const portcullis: FastifyPluginCallback<PortcullisPluginOptions> = fp(portcullisPlugin, {
  fastify: '5.x',
  name: '@portcullis/fastify',
});
