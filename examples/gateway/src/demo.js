#!/usr/bin/env node
// `npm run demo`: a guided tour of every limit, one line per step with what was sent and what came
// back (colour on a terminal; `--json` prints the exact frames and bodies instead). By default it
// starts its own gateway in-process (gateway.json, a free port, the lockout shortened to 5 s so
// the tour can show one ending), which stops with the demo; `--url` points it at a running gateway
// instead. Exit code 0 when every step showed what it should, 1 otherwise (CI runs it).
import { randomBytes } from 'node:crypto';
import { relative, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  authRateLimitedError,
  methodRateLimitedError,
  presets,
  sessionRateLimitMessage,
} from '@portcullis/core';
import { connect } from './client.js';
import { loadConfig } from './config.js';
import { createGateway, SESSION_METHOD } from './gateway.js';
import { SCOPE_BUDGET } from './limits.js';
import { createMemoryLogger } from './logger.js';
import { DEFAULT_CONFIG } from './main.js';

/** @import { GatewayConfig } from './config.js' */

/** The lockout of the in-process gateway: short, so the tour can show one end. */
export const DEMO_LOCKOUT_MS = 5_000;

/** A step did not show what it should. */
class Mismatch extends Error {}

/**
 * @param {boolean} condition
 * @param {string} what what was expected, in words
 * @param {unknown} [got]
 * @returns {asserts condition}
 */
function expect(condition, what, got) {
  if (!condition)
    throw new Mismatch(`expected ${what}${got === undefined ? '' : `, got ${show(got)}`}`);
}

/** @param {unknown} value */
function show(value) {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** @param {number} ms */
const seconds = (ms) => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;

/**
 * What a step says: `text` for people (what was sent → what came back), `json` with the exact
 * frames and bodies (`--json`).
 * @typedef {{ text: string, json: string }} Said
 */

/** ANSI colours, or none. */
function palette(/** @type {boolean} */ on) {
  const c = (/** @type {string} */ code) => (/** @type {string} */ t) =>
    on ? `\x1b[${code}m${t}\x1b[0m` : t;
  return { green: c('32'), red: c('31'), yellow: c('33'), dim: c('2'), bold: c('1') };
}

/**
 * @typedef {object} StepResult
 * @property {string} title
 * @property {'pass' | 'fail' | 'skip'} outcome
 * @property {string} line the printed line
 */

/**
 * Runs the tour.
 * @param {{
 *   url?: string,
 *   configPath?: string,
 *   write?: (text: string) => void,
 *   verbose?: boolean,
 *   lockoutMs?: number,
 *   json?: boolean,
 *   colour?: boolean,
 * }} [options] `url`: a running gateway (`http://127.0.0.1:18789`); without it one is started
 *   in-process from `configPath` (default gateway.json) with `lockoutMs` (default 5 s). `json`:
 *   each step with the exact frames and bodies; `colour`: ANSI colours (for a terminal)
 * @returns {Promise<{ ok: boolean, steps: StepResult[], elapsedMs: number }>}
 */
export async function runDemo(options = {}) {
  const write = options.write ?? ((text) => process.stdout.write(text));
  const json = options.json === true;
  const paint = palette(options.colour === true && !json);
  const arrow = paint.dim('→');
  /** `sent → got`, for people. */
  const said = (/** @type {string} */ sent, /** @type {string} */ got) => `${sent} ${arrow} ${got}`;
  const started = performance.now();
  const configPath = options.configPath ?? DEFAULT_CONFIG;
  /** @type {GatewayConfig} */
  const fileConfig = loadConfig(configPath);
  const inProcess = options.url === undefined;
  const logger = createMemoryLogger(
    options.verbose ? { echo: (line) => write(`      log ${line}`) } : {},
  );

  /** @type {GatewayConfig} */
  let config = fileConfig;
  let gateway;
  let httpUrl;
  if (inProcess) {
    config = structuredClone(fileConfig);
    config.gateway.auth.rateLimit.lockoutMs = options.lockoutMs ?? DEMO_LOCKOUT_MS;
    gateway = createGateway({ config, logger });
    httpUrl = (await gateway.listen({ port: 0 })).url;
  } else {
    httpUrl = String(options.url).replace(/\/+$/, '').replace(/^ws/, 'http');
  }
  const wsUrl = `${httpUrl.replace(/^http/, 'ws')}/`;
  const rl = config.gateway.auth.rateLimit;
  const token = config.gateway.auth.token;
  const max = rl.maxAttempts;
  const run = randomBytes(3).toString('hex');
  // Pages as a browser on this machine presents them: a hostile site, fresh on every run (a site
  // shares one failure budget across its origins), a page of the same site, and a local app.
  const evil = `https://evil-${run}.example`;
  const sameSite = `https://login.evil-${run}.example`;
  const app = `http://app-${run}.localhost:3000`;
  /** Every loopback page shares 3 × maxAttempts failures per window: earlier runs may have spent them. */
  const allPagesSpent = `all local pages share ${3 * max} failures per ${seconds(rl.windowMs)} and earlier runs spent them: wait for the lockout to end or restart the gateway`;
  const deviceId = `demo-${run}`;

  write(
    json
      ? `Portcullis demo — gateway ${wsUrl} (${inProcess ? `in-process from ${configPath}, lockout shortened to ${rl.lockoutMs / 1000} s` : 'running elsewhere'})\n`
      : `${paint.bold('Portcullis demo')} against ${
          inProcess
            ? `its own in-process gateway (${relative(process.cwd(), configPath) || configPath}, lockout shortened to ${rl.lockoutMs / 1000} s; it stops with the demo)`
            : `the gateway at ${httpUrl}`
        }\n`,
  );

  /** @type {StepResult[]} */
  const steps = [];
  const TOTAL = 12;

  /**
   * @param {string} title
   * @param {() => Promise<Said | { skip: string }>} fn resolves to what was sent and what came back
   */
  async function step(title, fn) {
    const n = `${String(steps.length + 1).padStart(2)}/${TOTAL}`;
    const name = json ? title : paint.bold(title);
    /** @type {StepResult} */
    let result;
    try {
      const out = await fn();
      result =
        'skip' in out
          ? {
              title,
              outcome: 'skip',
              line: `${n} ${paint.yellow('-')} ${name}: skipped (${out.skip})`,
            }
          : {
              title,
              outcome: 'pass',
              line: `${n} ${paint.green('✓')} ${name}: ${json ? out.json : out.text}`,
            };
    } catch (error) {
      const why =
        error instanceof Mismatch
          ? error.message
          : `error: ${/** @type {Error} */ (error).message}`;
      result = { title, outcome: 'fail', line: `${n} ${paint.red('✗')} ${name}: ${why}` };
    }
    steps.push(result);
    write(`${result.line}\n`);
  }

  /** @type {import('./client.js').GatewayClient | undefined} */
  let cli;
  /** When the page's lockout ends (performance.now() time) and how long it lasts. */
  let lockoutEndsAt = 0;
  let lastLockoutMs = 0;

  try {
    await step('brute force from a browser page', async () => {
      for (let i = 1; i <= max; i++) {
        const r = await connect(wsUrl, {
          origin: evil,
          auth: { token: `wrong-${i}` },
          id: `bf${i}`,
        });
        if (i === 1 && r.frame.error?.details?.code === 'AUTH_RATE_LIMITED')
          throw new Mismatch(
            `the first attempt of a new site to be counted, but it was refused: ${allPagesSpent}`,
          );
        expect(
          !r.frame.ok && r.frame.error?.details?.code === 'AUTH_INVALID' && r.close?.code === 1008,
          `attempt ${i}: AUTH_INVALID and close 1008`,
          r.frame,
        );
      }
      const r = await connect(wsUrl, { origin: evil, auth: { token }, id: 'bf-right' });
      const retryAfterMs = r.frame.error?.retryAfterMs;
      const exact = {
        type: 'res',
        id: 'bf-right',
        ok: false,
        error: authRateLimitedError(retryAfterMs),
      };
      expect(
        JSON.stringify(r.frame) === JSON.stringify(exact) &&
          retryAfterMs > 0 &&
          retryAfterMs <= rl.lockoutMs,
        'the exact authRateLimitedError frame',
        r.frame,
      );
      expect(r.close?.code === 1008, 'close 1008', r.close);
      lastLockoutMs = retryAfterMs;
      return {
        json: `sent ${max} wrong tokens as a page (Origin ${evil}), then the right one → ${max} × AUTH_INVALID (close 1008), then ${show(r.frame)} + close ${r.close?.code}`,
        text: said(
          `${max} wrong tokens, then the right one, as page ${evil}`,
          `${max} × AUTH_INVALID, then AUTH_RATE_LIMITED: retry in ${seconds(retryAfterMs)} (close ${r.close?.code})`,
        ),
      };
    });

    await step('lockout logged', async () => {
      if (!inProcess) return { skip: "the gateway's log is in its own output" };
      const line = logger.lines.find((l) => {
        const e = JSON.parse(l);
        return (
          e.level === 'warn' &&
          e.code === 'AUTH_RATE_LIMITED' &&
          e.scope === 'shared-secret' &&
          e.key === `browser-origin:${evil}`
        );
      });
      expect(
        line !== undefined,
        `a warn line with AUTH_RATE_LIMITED, scope and key browser-origin:${evil}`,
      );
      const { time: _, ...entry } = JSON.parse(line);
      const site = logger.lines.some(
        (l) => JSON.parse(l).key === `browser-site:evil-${run}.example`,
      );
      return {
        json: `gateway log ← ${show(entry)}`,
        text: said(
          'the lockout',
          `a warning in the gateway's log: ${entry.code} ${entry.limiter} scope=${entry.scope} key=${entry.key} for ${seconds(entry.lockoutMs)}${site ? ', and one for its site' : ''}`,
        ),
      };
    });

    await step('loopback CLI unaffected', async () => {
      if (!rl.exemptLoopback) return { skip: 'gateway.auth.rateLimit.exemptLoopback is off' };
      const tries = max + 2;
      for (let i = 1; i <= tries; i++) {
        const r = await connect(wsUrl, { auth: { token: `cli-typo-${i}` } });
        expect(
          !r.frame.ok && r.frame.error?.details?.code === 'AUTH_INVALID',
          `attempt ${i}: AUTH_INVALID`,
          r.frame,
        );
      }
      const r = await connect(wsUrl, { auth: { token } });
      expect(
        r.frame.ok && r.frame.payload?.auth?.exempt === true,
        'hello-ok with auth.exempt true',
        r.frame,
      );
      r.client.close();
      return {
        json: `sent ${tries} wrong tokens from 127.0.0.1 without Origin (a direct-local CLI), then the right one → ${tries} × AUTH_INVALID, never locked; then hello-ok ${show(r.frame.payload.auth)}`,
        text: said(
          `${tries} wrong tokens, then the right one, from 127.0.0.1 without Origin (a local CLI)`,
          `${tries} × AUTH_INVALID, never locked out, then hello-ok (exempt)`,
        ),
      };
    });

    await step('another site unaffected, the same site refused', async () => {
      const ok = await connect(wsUrl, { origin: app, auth: { token } });
      if (ok.frame.error?.details?.code === 'AUTH_RATE_LIMITED')
        throw new Mismatch(`hello-ok for ${app}, a site that never failed, but: ${allPagesSpent}`);
      expect(ok.frame.ok === true, `hello-ok for ${app}`, ok.frame);
      ok.client.close();
      const sibling = await connect(wsUrl, { origin: sameSite, auth: { token } });
      expect(
        sibling.frame.error?.details?.code === 'AUTH_RATE_LIMITED',
        `${sameSite} refused: its site's budget is spent`,
        sibling.frame,
      );
      const still = await connect(wsUrl, { origin: evil, auth: { token } });
      expect(
        still.frame.error?.details?.code === 'AUTH_RATE_LIMITED',
        `${evil} still locked out`,
        still.frame,
      );
      lastLockoutMs = still.frame.error.retryAfterMs;
      lockoutEndsAt = performance.now() + lastLockoutMs;
      return {
        json: `right token from Origin ${app} → hello-ok; from ${sameSite} (same site) → AUTH_RATE_LIMITED; from ${evil} → still AUTH_RATE_LIMITED (retryAfterMs ${lastLockoutMs})`,
        text: `${said(`the right token from page ${app}`, 'hello-ok')}; ${said(`from ${sameSite}, the same site`, 'AUTH_RATE_LIMITED')}; ${said(`from ${evil}`, `still AUTH_RATE_LIMITED (${seconds(lastLockoutMs)} left)`)}`,
      };
    });

    await step('credential classes are independent', async () => {
      const password = config.gateway.auth.password;
      if (password === undefined) return { skip: 'no gateway.auth.password configured' };
      const r = await connect(wsUrl, { origin: evil, auth: { password } });
      expect(
        r.frame.ok === true && r.frame.payload?.auth?.scope === 'password',
        'hello-ok in scope password',
        r.frame,
      );
      r.client.close();
      return {
        json: `the locked-out page (${evil}) sends the password instead → hello-ok ${show(r.frame.payload.auth)}: its shared-secret lockout does not touch the password class`,
        text: said(
          `the password from the locked-out page ${evil}`,
          'hello-ok: its token lockout does not touch the password',
        ),
      };
    });

    await step('webhook 429 with Retry-After', async () => {
      const hookToken = config.hooks.token;
      if (hookToken === undefined) throw new Mismatch('hooks.token to be configured');
      const url = `${httpUrl}/hooks/demo-${run}`;
      /** @param {string} t */
      const post = (t) =>
        fetch(url, {
          method: 'POST',
          headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
          body: '{"event":"demo"}',
        });
      const first = await post(hookToken);
      expect(first.status === 202, 'the right token → 202', first.status);
      const limit = presets.webhookAuth.maxAttempts;
      // Every counted failure gets 401, the one that starts the lockout too (docs/design.md#webhooks).
      for (let i = 1; i <= limit; i++) {
        const r = await post(`bad-${i}`);
        expect(r.status === 401, `wrong token ${i} → 401`, r.status);
      }
      const limited = await post(`bad-${limit + 1}`);
      const body = await limited.text();
      const retryAfter = limited.headers.get('retry-after');
      expect(
        limited.status === 429 &&
          retryAfter === String(presets.webhookAuth.lockoutMs / 1000) &&
          body === 'Too Many Requests' &&
          (limited.headers.get('content-type') ?? '').startsWith('text/plain'),
        `429 Retry-After: ${presets.webhookAuth.lockoutMs / 1000} "Too Many Requests" (text/plain)`,
        `${limited.status} Retry-After: ${retryAfter} ${show(body)}`,
      );
      const again = await post(hookToken);
      expect(again.status === 202, 'the right token still → 202 (and resets)', again.status);
      const path = url.slice(httpUrl.length);
      return {
        json: `POST ${path}: right token → 202 (resets), ${limit} wrong → 401 each, wrong #${limit + 1} → ${limited.status} Retry-After: ${retryAfter} "${body}"; right token again → ${again.status}`,
        text: said(
          `POST ${path} with the right token, ${limit} wrong ones, 1 more wrong, the right one`,
          `202, ${limit} × 401, ${limited.status} Too Many Requests (Retry-After: ${retryAfter}), ${again.status}`,
        ),
      };
    });

    await step('config.patch × 31', async () => {
      const r = await connect(wsUrl, { auth: { token }, device: { id: deviceId } });
      expect(r.frame.ok === true, 'hello-ok', r.frame);
      cli = r.client;
      const { limit, windowMs } = presets.controlPlaneWrites;
      for (let i = 1; i <= limit; i++) {
        const res = await cli.request('config.patch', {
          patch: { gateway: { name: `demo-${run}-${i}` } },
        });
        expect(res.ok === true, `config.patch ${i} → ok`, res);
      }
      const res = await cli.request('config.patch', {
        patch: { gateway: { name: `demo-${run}-x` } },
      });
      const exact = methodRateLimitedError('config.patch', res.error?.retryAfterMs, {
        limit,
        windowMs,
      });
      expect(
        !res.ok &&
          JSON.stringify(res.error) === JSON.stringify(exact) &&
          res.error.retryAfterMs <= windowMs,
        'the exact UNAVAILABLE shape',
        res,
      );
      const other = await cli.request('plugins.setEnabled', { id: 'voice-call', enabled: true });
      expect(other.ok === true, 'plugins.setEnabled (its own bucket) → ok', other);
      return {
        json: `sent ${limit + 1} × config.patch {"patch":{"gateway":{"name":…}}} as device ${deviceId} → ${limit} × ok, then ${show(res.error)}; plugins.setEnabled (own bucket) → ok`,
        text: `${said(`${limit + 1} × config.patch as device ${deviceId}`, `${limit} × ok, then UNAVAILABLE "${res.error.message}"`)}; ${said('plugins.setEnabled', 'ok (its own bucket)')}`,
      };
    });

    await step('session-creation burst', async () => {
      if (cli === undefined) throw new Mismatch('the connection from the previous step');
      const c = cli;
      const { limit } = presets.sessionCreation;
      let created = 0;
      let next = 1;
      /** @type {import('./client.js').ResFrame | undefined} */
      let refused;
      const burst = async () => {
        for (let i = 0; i <= limit && refused === undefined; i++) {
          const res = await c.request(SESSION_METHOD, { sessionId: `s-${run}-${next++}` });
          if (res.ok) created += 1;
          else refused = res;
        }
      };
      await burst();
      if (!inProcess && created === 0 && refused !== undefined) {
        // A running gateway whose window an earlier burst spent: wait for it, then burst again.
        const wait = Number(/retry after (\d+)s\.$/.exec(refused.error?.message ?? '')?.[1] ?? 10);
        await sleep(wait * 1000 + 50);
        refused = undefined;
        next = 1;
        await burst();
      }
      expect(refused !== undefined, `a refusal within ${limit + 1} new sessions`);
      const msg = refused.error?.message ?? '';
      const n = /retry after (\d+)s\.$/.exec(msg)?.[1];
      expect(
        n !== undefined &&
          msg === sessionRateLimitMessage(SESSION_METHOD, Number(n) * 1000) &&
          refused.error.retryAfterMs === undefined &&
          refused.error.details === undefined,
        'the exact session-creation message, with no structured retry field',
        refused.error,
      );
      if (inProcess) expect(created === limit, `${limit} sessions created first`, created);
      const reopen = await c.request(SESSION_METHOD, { sessionId: `s-${run}-1` });
      expect(
        reopen.ok === true && reopen.payload?.created === false,
        're-opening a known id → ok, created false',
        reopen,
      );
      return {
        json: `sent ${created + 1} × ${SESSION_METHOD} with new ids → ${created} created, then ${show(refused.error)}; re-opening s-${run}-1 → ok ${show(reopen.payload)} (free)`,
        text: `${said(`${created + 1} × ${SESSION_METHOD} with new ids`, `${created} created, then UNAVAILABLE "${msg}"`)}; ${said(`re-opening s-${run}-1`, 'ok (free)')}`,
      };
    });

    await step('restart requests coalesce, then the cooldown', async () => {
      if (cli === undefined) throw new Mismatch('the connection from a previous step');
      const c = cli;
      const delayMs = 250;
      const ask = (/** @type {number} */ i) =>
        c.request('gateway.restart.request', { delayMs, reason: `demo-${run}-${i}` });
      const answers = [await ask(1), await ask(2), await ask(3)];
      expect(
        answers.every((a) => a.ok),
        'three ok answers',
        answers,
      );
      const [a1, a2, a3] = answers.map((a) => a.payload);
      if (inProcess)
        expect(
          show(a1) === show({ coalesced: false, delayMs, cooldownMsApplied: 0 }),
          `{"coalesced":false,"delayMs":${delayMs},"cooldownMsApplied":0}`,
          a1,
        );
      expect(a2.coalesced === true && a3.coalesced === true, 'requests 2 and 3 coalesced', [
        a2,
        a3,
      ]);
      if (!inProcess && a1.delayMs > 5_000) {
        // An earlier restart's cooldown is in force: that is the limit; do not wait it out.
        expect(a1.coalesced || a1.cooldownMsApplied > 0, 'the cooldown applied', a1);
        return {
          json: `sent 3 × gateway.restart.request {"delayMs":${delayMs}} → ${show(a1)}, then coalesced:true twice: one restart, due after the cooldown of an earlier restart (not waited for)`,
          text: said(
            `3 × gateway.restart.request (delay ${delayMs} ms)`,
            `one restart, due in ${seconds(a1.delayMs)} after an earlier restart's cooldown (not waited for); 2 coalesced`,
          ),
        };
      }
      const event = await c.nextEvent('gateway.restarted', a1.delayMs + 5_000);
      const reasons = event.payload.reasons;
      expect(
        [1, 2, 3].every((i) => reasons.includes(`demo-${run}-${i}`)),
        'one restart carrying all three reasons',
        event.payload,
      );
      const a4 = await ask(4);
      expect(
        a4.ok &&
          a4.payload.cooldownMsApplied > 0 &&
          a4.payload.delayMs >= a4.payload.cooldownMsApplied,
        'a 4th request scheduled after the cooldown',
        a4,
      );
      return {
        json: `sent 3 × gateway.restart.request {"delayMs":${delayMs}} → ${show(a1)}, then coalesced:true twice; one gateway.restarted event (restart #${event.payload.restarts}, ${reasons.length} reasons); a 4th → ${show(a4.payload)} (cooldown)`,
        text: `${said(`3 × gateway.restart.request (delay ${delayMs} ms)`, `one restart, 2 coalesced into it, done with ${reasons.length} reasons`)}; ${said('a 4th', `scheduled in ${seconds(a4.payload.delayMs)} (cooldown ${seconds(a4.payload.cooldownMsApplied)})`)}`,
      };
    });

    await step('status page data', async () => {
      const res = await fetch(`${httpUrl}/status.json`);
      expect(res.status === 200, '/status.json → 200', res.status);
      const s = /** @type {any} */ (await res.json());
      /** @param {string} name */
      const lim = (name) =>
        s.lockouts.find((/** @type {{ limiter: string }} */ l) => l.limiter === name);
      const browser = lim('auth-browser')?.active.find(
        (/** @type {{ key: string }} */ a) => a.key === `browser-origin:${evil}`,
      );
      const started = s.refused.find(
        (/** @type {{ limiter: string, event: string, key: string }} */ e) =>
          e.limiter === 'auth-browser' &&
          e.event === 'lockout' &&
          e.key === `browser-origin:${evil}`,
      );
      expect(
        browser !== undefined && started !== undefined,
        `the auth-browser lockout of browser-origin:${evil}, active and among the refused decisions`,
        { lockouts: s.lockouts, refused: s.refused },
      );
      const hook = s.refused.find(
        (/** @type {{ limiter: string, event: string, key: string }} */ e) =>
          e.limiter === 'webhook' && e.event === 'lockout' && e.key === '127.0.0.1',
      );
      expect(
        hook !== undefined,
        'the webhook lockout of 127.0.0.1 among the refused decisions',
        s.refused,
      );
      const blockedKey = `config.patch|${deviceId}|127.0.0.1`;
      const quota = s.quotas[0]?.blocked.find(
        (/** @type {{ key: string }} */ b) => b.key === blockedKey,
      );
      expect(quota !== undefined, `a blocked control-plane bucket ${blockedKey}`, s.quotas);
      // The in-process gateway stops with the demo: no link to it.
      const live = inProcess ? '' : `; live at ${httpUrl}/status`;
      return {
        json: `GET /status.json → lockouts auth-browser ${browser.key} (${browser.untilMs} ms left), webhook lockout of 127.0.0.1 in the refused list; blocked ${blockedKey}; ${s.refused.length} refused decisions listed${live}`,
        text: said(
          'GET /status.json',
          `the page's lockout (${seconds(browser.untilMs)} left), the webhook lockout, the blocked config.patch bucket, ${s.refused.length} refusals${live}`,
        ),
      };
    });

    await step('a botnet through a proxy, a trusted client still in', async () => {
      // Its own gateway, behind a reverse proxy on this machine (trustedProxies 127.0.0.1, so the
      // demo's connects from 127.0.0.1 speak for the address in X-Forwarded-For): the soft lock it
      // earns lasts an hour, and would refuse every new client of the gateway it ran against.
      if (!inProcess)
        return {
          skip: `it would put the shared secret of ${httpUrl} under attack for an hour (new clients refused); it runs with the demo's own gateway`,
        };
      const behind = structuredClone(config);
      behind.gateway.trustedProxies = ['127.0.0.1'];
      const proxied = createGateway({ config: behind, logger: createMemoryLogger() });
      try {
        const base = (await proxied.listen({ port: 0 })).url;
        const proxiedWs = `${base.replace(/^http/, 'ws')}/`;
        const via = (/** @type {string} */ ip) => ({ 'x-forwarded-for': `${ip}, 127.0.0.1` });
        const operator = '203.0.113.50';
        const first = await connect(proxiedWs, { headers: via(operator), auth: { token } });
        expect(first.frame.ok === true, `hello-ok for ${operator} before the attack`, first.frame);
        first.client.close();
        // One wrong guess per address: the client limiter never sees a second one.
        const bots = SCOPE_BUDGET.maxAttempts;
        const bot = (/** @type {number} */ n) => `198.18.${Math.floor(n / 250)}.${(n % 250) + 1}`;
        let invalid = 0;
        for (let n = 0; n < bots; n += 25) {
          const batch = [];
          for (let i = n; i < Math.min(n + 25, bots); i++)
            batch.push(connect(proxiedWs, { headers: via(bot(i)), auth: { token: `guess-${i}` } }));
          for (const r of await Promise.all(batch)) {
            expect(
              r.frame.error?.details?.code === 'AUTH_INVALID' && r.close?.code === 1008,
              'every guess AUTH_INVALID and close 1008',
              r.frame,
            );
            invalid += 1;
          }
        }
        const newcomer = '198.51.100.77';
        const fresh = await connect(proxiedWs, { headers: via(newcomer), auth: { token } });
        const waitMs = fresh.frame.error?.retryAfterMs;
        expect(
          JSON.stringify(fresh.frame) ===
            JSON.stringify({
              type: 'res',
              id: 'c1',
              ok: false,
              error: authRateLimitedError(waitMs),
            }) &&
            waitMs > SCOPE_BUDGET.lockoutMs - 60_000 &&
            waitMs <= SCOPE_BUDGET.lockoutMs &&
            fresh.close?.code === 1008,
          `the right token from ${newcomer}, never seen before: the exact authRateLimitedError frame and close 1008`,
          fresh.frame,
        );
        const again = await connect(proxiedWs, { headers: via(operator), auth: { token } });
        expect(again.frame.ok === true, `hello-ok for ${operator}, trusted`, again.frame);
        again.client.close();
        const res = await fetch(`${base}/status.json`, {
          headers: { authorization: `Bearer ${token}`, ...via(operator) },
        });
        expect(res.status === 200, `/status.json → 200 for ${operator}`, res.status);
        const s = /** @type {any} */ (await res.json());
        const row = s.underAttack?.active.find(
          (/** @type {{ layer: string, scope: string }} */ a) =>
            a.layer === 'scope' && a.scope === 'shared-secret',
        );
        expect(row !== undefined, 'shared-secret under attack on the status page', s.underAttack);
        const minutes = (/** @type {number} */ ms) => `${Math.round(ms / 60_000)} min`;
        const budget = `${bots} / ${minutes(SCOPE_BUDGET.windowMs)}`;
        return {
          json: `gateway behind a proxy on 127.0.0.1 (trustedProxies ["127.0.0.1"]): ${operator} logs in; ${bots} addresses × 1 wrong token (X-Forwarded-For) → ${invalid} × AUTH_INVALID, the scope budget (${budget}) spent; the right token from ${newcomer} → ${show(fresh.frame)} + close ${fresh.close?.code}; from ${operator} → hello-ok ${show(again.frame.payload.auth)}; /status.json underAttack ${show(row)}`,
          text: `${said(`${bots} addresses × 1 wrong token through a proxy on 127.0.0.1`, `${invalid} × AUTH_INVALID: its budget (${budget}) spent, the shared secret is under attack for ${minutes(row.untilMs)}`)}; ${said(`the right token from a new address`, 'AUTH_RATE_LIMITED (close 1008)')}; ${said('from one that logged in before', 'hello-ok')}`,
        };
      } finally {
        await proxied.close();
      }
    });

    await step('a lockout ends', async () => {
      if (lastLockoutMs === 0) return { skip: 'no lockout was shown to wait for' };
      if (lastLockoutMs > 10_000)
        return { skip: `this gateway's lockout lasts ${Math.ceil(lastLockoutMs / 1000)} s` };
      const waitMs = Math.max(0, Math.ceil(lockoutEndsAt - performance.now()) + 50);
      await sleep(waitMs);
      const r = await connect(wsUrl, { origin: evil, auth: { token } });
      expect(r.frame.ok === true, `hello-ok for ${evil} once its lockout is over`, r.frame);
      r.client.close();
      return {
        json: `waited ${waitMs} ms more for the ${lastLockoutMs} ms lockout to end, right token from ${evil} → hello-ok`,
        text: said(
          `after waiting ${seconds(waitMs)} for the lockout to end, the right token from ${evil}`,
          'hello-ok',
        ),
      };
    });
  } finally {
    cli?.close();
    await gateway?.close();
  }

  const failed = steps.filter((s) => s.outcome === 'fail').length;
  const skipped = steps.filter((s) => s.outcome === 'skip').length;
  const elapsedMs = Math.round(performance.now() - started);
  const verdict = failed === 0 ? paint.green('demo passed') : paint.red('demo FAILED');
  write(
    `${verdict}: ${steps.length - failed - skipped} passed, ${failed} failed, ${skipped} skipped in ${(elapsedMs / 1000).toFixed(1)} s\n`,
  );
  if (!json)
    write(
      inProcess
        ? `its gateway has stopped; to watch the limits on a page, run ${paint.bold('npm start')}, open http://127.0.0.1:18789/status and run ${paint.bold('npm run demo -- --url http://127.0.0.1:18789')}\n`
        : `watch it live: ${httpUrl}/status\n`,
    );
  return { ok: failed === 0, steps, elapsedMs };
}

async function main() {
  let values;
  try {
    ({ values } = parseArgs({
      args: process.argv.slice(2),
      options: {
        url: { type: 'string' },
        config: { type: 'string' },
        verbose: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
      strict: true,
    }));
  } catch (error) {
    process.stderr.write(`demo: ${/** @type {Error} */ (error).message}\n`);
    process.exit(2);
  }
  if (values.help) {
    process.stdout.write(
      'usage: npm run demo -- [--url http://127.0.0.1:18789] [--config path] [--verbose] [--json]\n' +
        '  without --url the demo starts its own gateway in-process (lockout shortened to 5 s)\n' +
        '  --json prints the exact frames and bodies of each step\n',
    );
    return;
  }
  const result = await runDemo({
    ...(values.url !== undefined && { url: values.url }),
    ...(values.config !== undefined && { configPath: resolve(values.config) }),
    verbose: values.verbose === true,
    json: values.json === true,
    colour: process.stdout.isTTY === true && !process.env.NO_COLOR,
  });
  process.exitCode = result.ok ? 0 : 1;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main();
}
