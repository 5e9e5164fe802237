// The opening example of packages/fetch/README.md (the code between the markers is the
// README's); below them, what the snippet test checks it does. Bun is played by the `server`
// argument Bun.serve passes beside the request.
// snippet:start
import { authGuard, rateLimit } from '@portcullis/fetch';

// Bun.serve passes its server beside the request: the peer's address is server.requestIP().
const clientAddress = (request, server) => server.requestIP(request)?.address;
const limit = rateLimit({ limit: 100, windowMs: 60_000, clientAddress }); // 100 a minute

// 10 wrong passwords in a minute lock the client out for 5 minutes: 429 and Retry-After.
const verify = (request) => {
  const header = request.headers.get('authorization');
  return !header ? 'missing' : checkPassword(header) ? 'ok' : 'invalid';
};
const login = authGuard({ scope: 'password', verify, clientAddress })(() => new Response('ok'));
const other = limit(() => new Response('hello'));

const app = {
  fetch: (request, server) =>
    new URL(request.url).pathname === '/login' ? login(request, server) : other(request, server),
};
export default app; // `bun run server.mjs` serves it (or Bun.serve(app))
// snippet:end

import { checkPassword, tryLogins } from './quickstart-check.mjs';

const bun = { requestIP: () => ({ address: '203.0.113.9', family: 'IPv4', port: 50_000 }) };
await tryLogins('http://api.test', (request) => app.fetch(request, bun));
