// The Defence in depth section of packages/hono/README.md (the code between the markers is the
// README's); below them, what the snippet test checks it does.
// snippet:start
import { serve } from '@hono/node-server';
import { authGuard } from '@portcullis/hono';
import { Hono } from 'hono';

// Portcullis compares account names as given: normalise them (non-strings share one bucket).
const userOf = (body) =>
  typeof body?.user === 'string' ? body.user.normalize('NFKC').toLowerCase() : body?.user;
const bodyOf = (c) => c.req.json().catch(() => ({})); // Hono keeps it for the handler

const app = new Hono();
app.post(
  '/login',
  authGuard({
    scope: 'password',
    trustedProxies: ['127.0.0.1'], // the reverse proxy on this host
    account: async (c) => userOf(await bodyOf(c)), // read before verify
    accountLimits: { pair: { maxAttempts: 3 } }, // default 20 failures of one client per account
    onLockout: (e) => console.log('lockout:', e.layer, e.key, e.account),
    verify: async (c) => {
      const body = await bodyOf(c);
      return checkLogin(userOf(body), body.password);
    },
  }),
  (c) => c.json({ ok: true }),
);

const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
// snippet:end

import { once } from 'node:events';
import { checkLogin, tryDefence } from './defence-check.mjs';

await once(server, 'listening');
await tryDefence(`http://127.0.0.1:${server.address().port}`);
server.close();
