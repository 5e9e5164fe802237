// The opening example of packages/express/README.md (the code between the markers is the
// README's); below them, what the snippet test checks it does.
process.env.PORT ??= '0'; // a free port for the test, 3000 for you
// snippet:start
import express from 'express';
import { authGuard, rateLimit } from '@portcullis/express';

const app = express();
app.use(rateLimit({ limit: 100, windowMs: 60_000 })); // 100 requests a minute per client

// 10 wrong passwords in a minute lock the client out for 5 minutes: 429 and Retry-After.
const verify = (req) => {
  const header = req.get('authorization');
  return !header ? 'missing' : checkPassword(header) ? 'ok' : 'invalid';
};
app.post('/login', authGuard({ scope: 'password', verify }), (_req, res) => res.json({ ok: true }));

const server = app.listen(process.env.PORT ?? 3000);
// snippet:end

import { once } from 'node:events';
import { checkPassword, tryLogins } from './quickstart-check.mjs';

await once(server, 'listening');
await tryLogins(`http://127.0.0.1:${server.address().port}`);
server.close();
