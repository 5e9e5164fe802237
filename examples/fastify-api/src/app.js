// A Fastify 5 API with the @portcullis/fastify plugin: one budget per client for every route, a
// stricter budget of its own on /api/search (`config.rateLimit`), and /health left alone
// (`config.rateLimit: false`). src/server.js listens; the tests use `app.inject`.
import portcullis from '@portcullis/fastify';
import Fastify from 'fastify';

const BOOKS = ['Dune', 'Neuromancer', 'Snow Crash', 'The Dispossessed', 'Hyperion'];

/**
 * @param {object} [options]
 * @param {import('@portcullis/core').Clock & import('@portcullis/core').Timers} [options.clock]
 *   injected time, for tests (`manualClock()` from `@portcullis/core/testing`)
 * @param {boolean} [options.logger] Fastify's request log
 */
export async function createApp({ clock, logger = false } = {}) {
  const app = Fastify({ logger });

  // Every route registered after the plugin: 30 requests a minute per client IP, one shared bucket.
  await app.register(portcullis, {
    name: 'api',
    limit: 30,
    windowMs: 60_000,
    ...(clock && { clock, timers: clock }),
  });

  app.get('/api/books', async () => ({ books: BOOKS }));

  // Searching is expensive: 5 a minute, in a bucket of its own (the other options are inherited).
  app.get(
    '/api/search',
    { config: { rateLimit: { name: 'search', limit: 5 } } },
    async (request) => {
      const { q = '' } = /** @type {{ q?: string }} */ (request.query);
      return { results: BOOKS.filter((b) => b.toLowerCase().includes(q.toLowerCase())) };
    },
  );

  app.get('/api/quota', async (request) => request.rateLimit); // this request's Decision

  // Load balancers poll this: never limited, no headers.
  app.get('/health', { config: { rateLimit: false } }, async () => ({ status: 'ok' }));

  return app;
}
