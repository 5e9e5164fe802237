// `npm start`: serves the app on 127.0.0.1 (PORT, default 3001).
import { createApp, DEMO_PASSWORD } from './app.js';

const host = '127.0.0.1';
const server = createApp().listen(Number(process.env.PORT ?? 3001), host, (error) => {
  if (error) throw error;
  const address = server.address();
  const url = `http://${host}:${typeof address === 'object' && address ? address.port : ''}`;
  const password = process.env.LOGIN_PASSWORD ? '$LOGIN_PASSWORD' : JSON.stringify(DEMO_PASSWORD);
  console.log(`express-login listening on ${url}
  POST ${url}/login      body {"password": …}; the password is ${password}
                         5 wrong passwords in a minute → 429 for a minute, even with the right one
  GET  ${url}/api/hello  10 requests a minute per client, then 429 (also /api/quota)`);
});
