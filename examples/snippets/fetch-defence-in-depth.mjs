// The Defence in depth section of packages/fetch/README.md (the code between the markers is the
// README's); below them, what the snippet test checks it does. Deno is played by the `info`
// argument Deno.serve passes beside the request.
// snippet:start
import { authGuard } from '@portcullis/fetch';

// Portcullis compares account names as given: normalise them (non-strings share one bucket).
const userOf = (body) =>
  typeof body?.user === 'string' ? body.user.normalize('NFKC').toLowerCase() : body?.user;
const bodyOf = async (request) => {
  try {
    return await request.clone().json(); // a clone: the handler gets the body after the guard
  } catch {
    return {}; // not JSON
  }
};

const login = authGuard({
  scope: 'password',
  clientAddress: (_request, info) => info.remoteAddr.hostname, // Deno.serve's info
  account: async (request) => userOf(await bodyOf(request)), // read before verify
  accountLimits: { pair: { maxAttempts: 3 } }, // default 20 failures of one client per account
  onLockout: (e) => console.log('lockout:', e.layer, e.key, e.account),
  verify: async (request) => {
    const body = await bodyOf(request);
    return checkLogin(userOf(body), body.password);
  },
})(() => Response.json({ ok: true }));
// snippet:end

import { checkLogin, tryDefence } from './defence-check.mjs';

await tryDefence('http://api.test', {
  send: (request, ip) => login(request, { remoteAddr: { hostname: ip, port: 50_000 } }),
});
