// The Defence in depth section of packages/fastify/README.md (the code between the markers is
// the README's); below them, what the snippet test checks it does.
// snippet:start
import Fastify from 'fastify';
import { authGuard } from '@portcullis/fastify';

// Portcullis compares account names as given: normalise them (non-strings share one bucket).
const userOf = (body) =>
  typeof body?.user === 'string' ? body.user.normalize('NFKC').toLowerCase() : body?.user;

const app = Fastify();
const guard = authGuard({
  scope: 'password',
  trustedProxies: ['127.0.0.1'], // the reverse proxy on this host
  account: (request) => userOf(request.body), // read before verify
  accountLimits: { pair: { maxAttempts: 3 } }, // default 20 failures of one client per account
  onLockout: (e) => console.log('lockout:', e.layer, e.key, e.account),
  verify: (request) => checkLogin(userOf(request.body), request.body?.password),
});
// A preHandler: Fastify has parsed the body by then (in onRequest it has not).
app.post('/login', { preHandler: guard }, async () => ({ ok: true }));

await app.listen({ port: 0, host: '127.0.0.1' });
// snippet:end

import { checkLogin, tryDefence } from './defence-check.mjs';

await tryDefence(`http://127.0.0.1:${app.server.address().port}`);
await app.close();
