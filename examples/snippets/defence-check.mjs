// What every adapter's defence-in-depth example (<package>-defence-in-depth.mjs) is checked to
// do: three wrong passwords for alice from one address lock that pair (429, Retry-After: 3600,
// even with the right password); the same address still logs bob in, another address alice.
import assert from 'node:assert/strict';
import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (value) => createHash('sha256').update(String(value)).digest();
const PASSWORDS = new Map([
  ['alice', 'correct horse'],
  ['bob', 'battery staple'],
]);

/**
 * The login check the examples leave to you (your user table): constant time, and an unknown user
 * costs the same comparison as a known one.
 * @param {unknown} user
 * @param {unknown} password
 * @returns {'ok' | 'invalid' | 'missing'}
 */
export function checkLogin(user, password) {
  if (typeof password !== 'string') return 'missing';
  const stored = typeof user === 'string' ? PASSWORDS.get(user) : undefined;
  const same = timingSafeEqual(digest(password), digest(stored ?? '\u0000no such user'));
  return same && stored !== undefined ? 'ok' : 'invalid';
}

/**
 * The user and password of an `Authorization: Basic …` header (`undefined` without one).
 * @param {string | undefined} header
 */
export function basicCredentials(header) {
  if (!header?.startsWith('Basic ')) return undefined;
  const text = Buffer.from(header.slice(6), 'base64').toString('utf8');
  const colon = text.indexOf(':');
  return colon < 0 ? undefined : { user: text.slice(0, colon), password: text.slice(colon + 1) };
}

/**
 * The logins, against `url` through `send` (default: `fetch`, with `X-Forwarded-For: ip` as the
 * proxy in front of the app would add it).
 * @param {string} url
 * @param {{ send?: (request: Request, ip: string) => Promise<Response>, basic?: boolean }} [how]
 *   `send` without the header (a fetch handler called with the peer); `basic`: credentials in
 *   `Authorization: Basic` instead of a JSON body
 */
export async function tryDefence(url, { send, basic = false } = {}) {
  const login = (ip, user, password) => {
    const headers = send === undefined ? { 'x-forwarded-for': ip } : {};
    const init = basic
      ? {
          headers: {
            ...headers,
            authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
          },
        }
      : {
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ user, password }),
        };
    const request = new Request(`${url}/login`, { method: 'POST', ...init });
    return send === undefined ? fetch(request) : send(request, ip);
  };
  const statuses = [];
  for (let i = 0; i < 3; i++) statuses.push((await login('203.0.113.7', 'alice', 'guess')).status);
  const locked = await login('203.0.113.7', 'Alice', 'correct horse'); // normalised: alice
  console.log(
    'alice from 203.0.113.7:',
    statuses.join(' '),
    locked.status,
    locked.headers.get('retry-after'),
  );
  assert.deepEqual(statuses, [401, 401, 401]);
  assert.equal(locked.status, 429);
  const bob = await login('203.0.113.7', 'bob', 'battery staple');
  console.log('bob from 203.0.113.7:', bob.status);
  assert.equal(bob.status, 200);
  const elsewhere = await login('198.51.100.9', 'alice', 'correct horse');
  console.log('alice from 198.51.100.9:', elsewhere.status);
  assert.equal(elsewhere.status, 200);
}
