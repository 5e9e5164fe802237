// The opening example of packages/fastify/README.md (the code between the markers is the
// README's); below them, what the snippet test checks it does.
process.env.PORT ??= '0'; // a free port for the test, 3000 for you
// snippet:start
import Fastify from 'fastify';
import portcullis, { authGuard } from '@portcullis/fastify';

const app = Fastify();
await app.register(portcullis, { limit: 100, windowMs: 60_000 }); // 100 a minute per client

// 10 wrong passwords in a minute lock the client out for 5 minutes: 429 and Retry-After.
const verify = (request) => {
  const header = request.headers.authorization;
  return !header ? 'missing' : checkPassword(header) ? 'ok' : 'invalid';
};
app.post('/login', { onRequest: authGuard({ scope: 'password', verify }) }, async () => 'ok');
app.get('/other', async () => 'hello');

await app.listen({ port: Number(process.env.PORT ?? 3000) });
// snippet:end

import { checkPassword, tryLogins } from './quickstart-check.mjs';

await tryLogins(`http://127.0.0.1:${app.server.address().port}`);
await app.close();
