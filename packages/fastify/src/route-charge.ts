import type { FastifyRequest } from 'fastify';

/** What charges a request of one route: its limiter's `charge`. */
export type RouteCharge = (request: FastifyRequest, units: number) => Promise<number>;

/**
 * Where a route's charges ride: a key of its `config`, which Fastify copies into the route's
 * context once, when the route is added. Nothing is written per request, so a route whose
 * handler never charges pays nothing for it. A list: a plugin registered again in a child context
 * puts its limit on the same routes, and a charge spends in both.
 */
const CHARGES = Symbol('portcullis.charges');

type Charged = { readonly [CHARGES]?: readonly RouteCharge[] };

/** The route's config with `charge` added to its charges (a copy: the caller's object stays). */
export function withCharge(config: object | undefined, charge: RouteCharge): object {
  const before = (config as Charged | undefined)?.[CHARGES] ?? [];
  return { ...config, [CHARGES]: [...before, charge] };
}

/** The rejection of a charge on a route no limit of the plugin is on. */
function notLimited(request: FastifyRequest): Error {
  const error = new Error(
    // The route's pattern, never the URL the client sent (the not-found handler has no route).
    `portcullis: request.chargeRateLimit() on ${request.method} ${request.routeOptions.url ?? '(no route)'}, a route the plugin does not limit`,
  ) as Error & { code: string };
  error.code = 'ERR_PORTCULLIS_NOT_LIMITED';
  return error;
}

/**
 * The `request.chargeRateLimit` decorator: one function for every plugin registration, which finds
 * the charges of the route that answers the request. With two limits on the route it resolves to
 * the fewer units spent.
 */
export function chargeRateLimit(this: FastifyRequest, units: number): Promise<number> {
  const charges = (this.routeOptions.config as Charged)[CHARGES];
  if (charges === undefined) return Promise.reject(notLimited(this));
  if (charges.length === 1) return (charges[0] as RouteCharge)(this, units);
  return Promise.all(charges.map((charge) => charge(this, units))).then((spent) =>
    Math.min(...spent),
  );
}
