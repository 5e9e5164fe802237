// `npm start`: serves the app on 127.0.0.1 (PORT, default 3004) with @hono/node-server.
import { serve } from '@hono/node-server';
import { createApp, DEMO_HOOK_TOKEN, DEMO_PASSWORD } from './app.js';

const hostname = '127.0.0.1';
serve({ fetch: createApp().fetch, port: Number(process.env.PORT ?? 3004), hostname }, (info) => {
  const url = `http://${hostname}:${info.port}`;
  const password = process.env.PASSWORD ? '$PASSWORD' : DEMO_PASSWORD;
  const token = process.env.HOOK_TOKEN ? '$HOOK_TOKEN' : DEMO_HOOK_TOKEN;
  console.log(`hono-api listening on ${url}
  POST ${url}/login            JSON {"user": …, "password": "${password}"}
                               5 wrong passwords a minute → 429 for 10 min (per browser origin on loopback)
  GET  ${url}/api/items        10 requests per 10 s per client, then 429 (also /api/quota)
  POST ${url}/hooks/<name>     header X-Hook-Token: ${token}
                               20 wrong or missing tokens a minute → 429 for 60 s`);
});
