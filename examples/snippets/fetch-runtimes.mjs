// The "Runtimes" section of packages/fetch/README.md: `clientAddress` for each runtime. Each one
// is played here by the arguments it passes a handler, or by the header its platform sets.
// snippet:start
import { decisionOf, rateLimit } from '@portcullis/fetch';

const handler = (request) => Response.json({ key: decisionOf(request)?.key });

// Bun: Bun.serve({ fetch: onBun }) passes its server.
const onBun = rateLimit({ clientAddress: (req, server) => server.requestIP(req)?.address })(
  handler,
);

// Deno: Deno.serve(onDeno) passes the connection info.
const onDeno = rateLimit({ clientAddress: (_req, info) => info.remoteAddr.hostname })(handler);

// Cloudflare Workers (export default { fetch: onCloudflare }): the address Cloudflare saw. Only
// when every request comes through Cloudflare: a direct client can write this header itself.
const onCloudflare = rateLimit({ clientAddress: (req) => req.headers.get('cf-connecting-ip') })(
  handler,
);

// Next.js route handler on Vercel (export const GET = onVercel): Vercel's edge sets X-Real-IP
// and overwrites any value the client sent.
const onVercel = rateLimit({ clientAddress: (req) => req.headers.get('x-real-ip') })(handler);

// Next.js self-hosted behind your proxy at 10.0.0.5 (and reachable only through it): the handler
// sees no socket, so name the proxy as the peer and trust it; X-Forwarded-For names the client.
const behindProxy = rateLimit({ clientAddress: () => '10.0.0.5', trustedProxies: ['10.0.0.5'] })(
  handler,
);
// snippet:end

const get = (headers = {}) => new Request('http://app.test/api', { headers });
const keyOf = async (response) => (await (await response).json()).key;
const bun = { requestIP: () => ({ address: '203.0.113.1', family: 'IPv4', port: 50_000 }) };
const deno = { remoteAddr: { transport: 'tcp', hostname: '2001:db8:1:2::7', port: 50_000 } };
console.log('bun:', await keyOf(onBun(get(), bun)));
console.log('deno:', await keyOf(onDeno(get(), deno)));
console.log('cloudflare:', await keyOf(onCloudflare(get({ 'cf-connecting-ip': '198.51.100.2' }))));
console.log('vercel:', await keyOf(onVercel(get({ 'x-real-ip': '192.0.2.3' }))));
console.log('proxied:', await keyOf(behindProxy(get({ 'x-forwarded-for': '6.6.6.6, 192.0.2.4' }))));
