// `npm start`: serves the app on 127.0.0.1 (PORT, default 3003).
import { createApp } from './app.js';

const app = await createApp();
const url = await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 3003) });
console.log(`fastify-api listening on ${url}
  GET ${url}/api/books          30 requests a minute per client, one bucket for every route without its own
  GET ${url}/api/search?q=dune  a budget of its own: 5 a minute
  GET ${url}/api/quota          this request's decision
  GET ${url}/health             never limited`);
for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM']))
  process.once(signal, () => void app.close());
