/**
 * @portcullis/fastify — a Fastify plugin and `onRequest` hooks for Portcullis. Each hook compiles
 * a core gate once and translates its ready-made answer into `reply`; no limiter logic lives here.
 * @packageDocumentation
 */
import { portcullis } from './plugin.js';

export { authGuard, concurrency, rateLimit, webhookGuard } from './hooks.js';
export type * from './options.js';
export { type LimitHook, type PortcullisPluginOptions, portcullis } from './plugin.js';

/** The Portcullis Fastify plugin (see {@link portcullis}). */
export default portcullis;
