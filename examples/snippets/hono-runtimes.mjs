// The "Runtimes" section of packages/hono/README.md: where the client address comes from off Node.
// Each runtime is played here by what it hands Hono as `c.env` (Bun: its server; Deno: the
// connection info) or by the header its platform sets.
// snippet:start
import { rateLimit } from '@portcullis/hono';

// Bun (Bun.serve({ fetch: app.fetch })): Hono's c.env is Bun's server.
const onBun = rateLimit({ clientAddress: (c) => c.env.requestIP(c.req.raw)?.address });

// Deno (Deno.serve(app.fetch)): c.env is the connection info.
const onDeno = rateLimit({ clientAddress: (c) => c.env.remoteAddr.hostname });

// Cloudflare Workers: the address Cloudflare saw. Only when every request comes through
// Cloudflare: a client that reaches your origin directly can write this header itself.
const onCloudflare = rateLimit({ clientAddress: (c) => c.req.header('cf-connecting-ip') });

// Vercel: its edge sets X-Real-IP and overwrites any value the client sent.
const onVercel = rateLimit({ clientAddress: (c) => c.req.header('x-real-ip') });
// snippet:end

import { Hono } from 'hono';

const keyOf = async (limiter, headers, env) => {
  const app = new Hono();
  app.get('/', limiter, (c) => c.json(c.get('rateLimit')));
  return (await (await app.request('/', { headers }, env)).json()).key;
};
const bun = { requestIP: () => ({ address: '203.0.113.1', family: 'IPv4', port: 50_000 }) };
const deno = { remoteAddr: { transport: 'tcp', hostname: '2001:db8:1:2::7', port: 50_000 } };
console.log('bun:', await keyOf(onBun, {}, bun));
console.log('deno:', await keyOf(onDeno, {}, deno));
console.log('cloudflare:', await keyOf(onCloudflare, { 'cf-connecting-ip': '198.51.100.2' }));
console.log('vercel:', await keyOf(onVercel, { 'x-real-ip': '192.0.2.3' }));
