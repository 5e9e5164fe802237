import type { Logger, RawRequest, Warnings } from '@portcullis/core';
import { fetchRawRequest, unresolvedAddressWarning } from '@portcullis/core/adapter';
import type { Context, Env } from 'hono';
import type { ClientAddressOption } from './options.js';

/** The part of `@hono/node-server`'s bindings read here: the Node request behind `c.req.raw`. */
interface NodeBindings {
  readonly incoming?: RawRequest & { readonly socket?: unknown };
}

/**
 * The Node request of `@hono/node-server`, found where Hono's own `getConnInfo` for Node looks
 * (`c.env.server ?? c.env`, then `.incoming`); `undefined` on any other runtime.
 */
function nodeIncoming(c: Context): RawRequest | undefined {
  const env = c.env as (NodeBindings & { readonly server?: NodeBindings }) | undefined;
  if (env === null || typeof env !== 'object') return undefined;
  const incoming = (env.server ?? env).incoming;
  return incoming !== undefined && typeof incoming.socket === 'object' && incoming.socket !== null
    ? incoming
    : undefined;
}

/** The options `rawRequestOf` reads: every factory's. */
export type ClientOptions<E extends Env> =
  | (ClientAddressOption<E> & { readonly logger?: Logger; readonly warnings?: Warnings })
  | undefined;

/**
 * Compiles how a middleware finds the `RawRequest` core reads: from `clientAddress(c)` and the
 * request headers when given, else the Node request of `@hono/node-server` as it is (its socket,
 * headers and raw header lines), else the headers with no address (unresolved: one warning).
 */
export function rawRequestOf<E extends Env>(
  options: ClientOptions<E>,
  where: string,
): (c: Context<E>) => RawRequest {
  const clientAddress = options?.clientAddress;
  const warn = unresolvedAddressWarning(
    options?.logger,
    where,
    'Pass clientAddress(c) (see the @portcullis/hono README for Bun, Deno, Cloudflare and Vercel), or serve the app with @hono/node-server.',
    options?.warnings,
  );
  if (clientAddress !== undefined) {
    return function fromClientAddress(c) {
      const address = clientAddress(c);
      if (typeof address !== 'string') warn();
      return fetchRawRequest(c.req.raw, typeof address === 'string' ? address : undefined);
    };
  }
  return function fromRuntime(c) {
    const incoming = nodeIncoming(c);
    if (incoming !== undefined) return incoming;
    warn();
    return fetchRawRequest(c.req.raw, undefined);
  };
}
