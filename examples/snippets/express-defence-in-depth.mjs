// The Defence in depth section of packages/express/README.md (the code between the markers is
// the README's); below them, what the snippet test checks it does.
// snippet:start
import express from 'express';
import { authGuard } from '@portcullis/express';

// Portcullis compares account names as given: normalise them (non-strings share one bucket).
const userOf = (body) =>
  typeof body?.user === 'string' ? body.user.normalize('NFKC').toLowerCase() : body?.user;

const app = express();
app.use(express.json());
app.post(
  '/login',
  authGuard({
    scope: 'password',
    trustedProxies: ['127.0.0.1'], // the reverse proxy on this host
    account: (req) => userOf(req.body), // read before verify
    accountLimits: { pair: { maxAttempts: 3 } }, // default 20 failures of one client per account
    onLockout: (e) => console.log('lockout:', e.layer, e.key, e.account),
    verify: (req) => checkLogin(userOf(req.body), req.body?.password),
  }),
  (_req, res) => res.json({ ok: true }),
);

const server = app.listen(0, '127.0.0.1');
// snippet:end

import { once } from 'node:events';
import { checkLogin, tryDefence } from './defence-check.mjs';

await once(server, 'listening');
await tryDefence(`http://127.0.0.1:${server.address().port}`);
server.close();
