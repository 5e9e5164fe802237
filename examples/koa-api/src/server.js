// `npm start`: serves the app on 127.0.0.1 (PORT, default 3002).
import { createApp, DEMO_HOOK_TOKEN } from './app.js';

const host = '127.0.0.1';
const server = createApp().listen(Number(process.env.PORT ?? 3002), host, () => {
  const address = server.address();
  const url = `http://${host}:${typeof address === 'object' && address ? address.port : ''}`;
  const token = process.env.HOOK_TOKEN ? '$HOOK_TOKEN' : DEMO_HOOK_TOKEN;
  console.log(`koa-api listening on ${url}
  GET  ${url}/api/items        10 requests per sliding 10 s per client, then 429 (also /api/quota)
  POST ${url}/hooks/<name>     header X-Hook-Token: ${token}
                               20 wrong or missing tokens a minute → 429 for 60 s`);
});
