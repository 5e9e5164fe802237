// The Defence in depth section of packages/koa/README.md (the code between the markers is the
// README's); below them, what the snippet test checks it does.
// snippet:start
import Koa from 'koa';
import { authGuard } from '@portcullis/koa';

// Portcullis compares account names as given: normalise them.
const credentials = (req) => basicCredentials(req.get('authorization')); // { user, password }
const userOf = (req) => credentials(req)?.user.normalize('NFKC').toLowerCase();

const app = new Koa();
app.use(
  authGuard({
    scope: 'password',
    trustedProxies: ['127.0.0.1'], // the reverse proxy on this host
    account: userOf, // read before verify
    accountLimits: { pair: { maxAttempts: 3 } }, // default 20 failures of one client per account
    onLockout: (e) => console.log('lockout:', e.layer, e.key, e.account),
    verify: (req) => checkLogin(userOf(req), credentials(req)?.password),
  }),
);
app.use((ctx) => {
  ctx.body = { ok: true };
});

const server = app.listen(0, '127.0.0.1');
// snippet:end

import { once } from 'node:events';
import { basicCredentials, checkLogin, tryDefence } from './defence-check.mjs';

await once(server, 'listening');
await tryDefence(`http://127.0.0.1:${server.address().port}`, { basic: true });
server.close();
