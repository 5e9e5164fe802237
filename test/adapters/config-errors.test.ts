import { PortcullisConfigError } from '@portcullis/core';
import { describe, expect, it } from 'vitest';
import { type AppSpec, frameworks } from './harness.js';

const verify = () => 'ok' as const;

/** Options a user might get wrong, each with the stable code and option it must be reported as. */
// biome-ignore format: one case per line reads as a table
const cases: [string, unknown, string, string][] = [
  ['rateLimit: unknown option', { rateLimit: { limt: 3 } }, 'ERR_PORTCULLIS_UNKNOWN_OPTION', 'limt'],
  ['rateLimit: limit 0', { rateLimit: { limit: 0 } }, 'ERR_PORTCULLIS_LIMIT', 'limit'],
  ['rateLimit: limit NaN', { rateLimit: { limit: Number.NaN } }, 'ERR_PORTCULLIS_LIMIT', 'limit'],
  ['rateLimit: windowMs -1', { rateLimit: { windowMs: -1 } }, 'ERR_PORTCULLIS_WINDOW_MS', 'windowMs'],
  ['rateLimit: algorithm', { rateLimit: { algorithm: 'leaky-bucket' } }, 'ERR_PORTCULLIS_ALGORITHM', 'algorithm'],
  ['rateLimit: headers "yes"', { rateLimit: { headers: 'yes' } }, 'ERR_PORTCULLIS_HEADERS', 'headers'],
  ['rateLimit: cost 0', { rateLimit: { cost: 0 } }, 'ERR_PORTCULLIS_COST', 'cost'],
  ['rateLimit: onLimited not a function', { rateLimit: { onLimited: 'send 429' } }, 'ERR_PORTCULLIS_ON_LIMITED', 'onLimited'],
  ['rateLimit: trustedProxies true', { rateLimit: { trustedProxies: true } }, 'ERR_PORTCULLIS_TRUSTED_PROXIES', 'trustedProxies'],
  ['rateLimit: trustedProxies hop count', { rateLimit: { trustedProxies: 1 } }, 'ERR_PORTCULLIS_TRUSTED_PROXIES', 'trustedProxies'],
  ['rateLimit: trustedProxies 0.0.0.0/0', { rateLimit: { trustedProxies: ['0.0.0.0/0'] } }, 'ERR_PORTCULLIS_TRUSTED_PROXIES', 'trustedProxies'],
  ['rateLimit: trustedProxies ::/0', { rateLimit: { trustedProxies: ['::/0'] } }, 'ERR_PORTCULLIS_TRUSTED_PROXIES', 'trustedProxies'],
  ['rateLimit: trustedProxies "127.1"', { rateLimit: { trustedProxies: ['127.1'] } }, 'ERR_PORTCULLIS_TRUSTED_PROXIES', 'trustedProxies'],
  ['authGuard: no verify', { auth: {} }, 'ERR_PORTCULLIS_VERIFY', 'verify'],
  ['authGuard: unknown option', { auth: { verify, lockout: 5 } }, 'ERR_PORTCULLIS_UNKNOWN_OPTION', 'lockout'],
  ['authGuard: maxAttempts 0', { auth: { verify, maxAttempts: 0 } }, 'ERR_PORTCULLIS_MAX_ATTEMPTS', 'maxAttempts'],
  ['authGuard: onLimited is not an authGuard option', { auth: { verify, onLimited: () => {} } }, 'ERR_PORTCULLIS_UNKNOWN_OPTION', 'onLimited'],
  ['authGuard: trustedProxies true', { auth: { verify, trustedProxies: true } }, 'ERR_PORTCULLIS_TRUSTED_PROXIES', 'trustedProxies'],
  ['authGuard: trustedProxies 0.0.0.0/0', { auth: { verify, trustedProxies: ['0.0.0.0/0'] } }, 'ERR_PORTCULLIS_TRUSTED_PROXIES', 'trustedProxies'],
  ['webhookGuard: no verify', { webhook: {} }, 'ERR_PORTCULLIS_VERIFY', 'verify'],
  ['webhookGuard: unknown option', { webhook: { verify, scope: 'x' } }, 'ERR_PORTCULLIS_UNKNOWN_OPTION', 'scope'],
  ['webhookGuard: lockoutMs 1.5', { webhook: { verify, lockoutMs: 1.5 } }, 'ERR_PORTCULLIS_LOCKOUT_MS', 'lockoutMs'],
  ['webhookGuard: trustedProxies true', { webhook: { verify, trustedProxies: true } }, 'ERR_PORTCULLIS_TRUSTED_PROXIES', 'trustedProxies'],
];

describe.each(frameworks)('configuration errors — $name', (fw) => {
  it.each(cases)('%s → %s', async (_label, spec, code, option) => {
    const error = await fw.build(spec as AppSpec).then(
      async (app) => {
        await app.close();
        throw new Error('expected a configuration error');
      },
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PortcullisConfigError);
    expect(error).toMatchObject({ name: 'PortcullisConfigError', code, option });
  });
});
