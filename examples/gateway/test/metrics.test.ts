// GET /metrics: scraped over HTTP after a known sequence of requests, the exposition parsed line by
// line (every line must be a comment or a sample), and the portcullis_* series compared exactly.
// Also who may scrape, and the restart that waits for the HTTP requests in flight.
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { connect } from '../src/client.js';
import { type Harness, HOOK_TOKEN, request, startGateway, TOKEN } from './helpers.js';

let g: Harness | undefined;
afterEach(async () => {
  await g?.close();
  g = undefined;
});

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text format (0.0.4); throws on a line that is neither comment nor sample. */
function parseExposition(text: string): { samples: Sample[]; types: Record<string, string> } {
  const samples: Sample[] = [];
  const types: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type =
      /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type !== null) {
      types[type[1] as string] = type[2] as string;
      continue;
    }
    if (/^# (HELP|UNIT) [a-zA-Z_:][a-zA-Z0-9_:]* .*$/.test(line)) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (sample === null) throw new Error(`not a Prometheus exposition line: ${line}`);
    const labels: Record<string, string> = {};
    const body = sample[2] ?? '';
    const label = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/y;
    let at = 0;
    while (at < body.length) {
      label.lastIndex = at;
      const m = label.exec(body);
      if (m === null) throw new Error(`bad labels: ${body}`);
      labels[m[1] as string] = (m[2] as string).replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
      at = label.lastIndex;
    }
    const value = Number(sample[3]);
    if (Number.isNaN(value) && sample[3] !== 'NaN') throw new Error(`bad value: ${line}`);
    samples.push({ name: sample[1] as string, labels, value });
  }
  return { samples, types };
}

/** The portcullis_* samples as `name{labels sorted}` → value. */
function portcullisSeries(samples: Sample[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples) {
    if (!s.name.startsWith('portcullis_')) continue;
    const labels = Object.entries(s.labels)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k}="${v}"`)
      .join(',');
    out[`${s.name}{${labels}}`] = s.value;
  }
  return out;
}

async function scrape(h: Harness) {
  const res = await request(`${h.url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
  expect(res.headers['cache-control']).toBe('no-store');
  return parseExposition(res.body);
}

/** A wrong bearer on /status.json from a loopback peer that is no direct-local client. */
const wrongStatusBearer = (h: Harness) =>
  request(`${h.url}/status.json`, {
    headers: { authorization: 'Bearer wrong', 'x-forwarded-for': '203.0.113.9' },
  });

/** The Prometheus type of each Portcullis series. */
const SERIES_TYPES = {
  portcullis_decisions_total: 'counter',
  portcullis_lockouts_total: 'counter',
  portcullis_lockouts_active: 'gauge',
};

/** The series of the gateway's failure limiters that the first test's sequence leaves at zero. */
const ZERO_SERIES = {
  'portcullis_decisions_total{portcullis_dry_run="false",portcullis_limiter="auth-browser",portcullis_outcome="allowed"}': 0,
  'portcullis_decisions_total{portcullis_dry_run="false",portcullis_limiter="auth-browser",portcullis_outcome="locked"}': 0,
  'portcullis_decisions_total{portcullis_dry_run="false",portcullis_limiter="webhook",portcullis_outcome="locked"}': 0,
  'portcullis_lockouts_total{portcullis_layer="client",portcullis_limiter="auth-browser"}': 0,
  'portcullis_lockouts_total{portcullis_layer="client",portcullis_limiter="webhook"}': 0,
  'portcullis_lockouts_active{portcullis_limiter="auth-browser"}': 0,
  'portcullis_lockouts_active{portcullis_limiter="webhook"}': 0,
};

describe('GET /metrics', () => {
  it('exports the failure limiters at zero before the first decision', async () => {
    g = await startGateway();
    const { samples, types } = await scrape(g);
    expect(portcullisSeries(samples)).toEqual({
      'portcullis_decisions_total{portcullis_dry_run="false",portcullis_limiter="auth",portcullis_outcome="allowed"}': 0,
      'portcullis_decisions_total{portcullis_dry_run="false",portcullis_limiter="auth",portcullis_outcome="locked"}': 0,
      'portcullis_decisions_total{portcullis_dry_run="false",portcullis_limiter="webhook",portcullis_outcome="allowed"}': 0,
      'portcullis_lockouts_total{portcullis_layer="client",portcullis_limiter="auth"}': 0,
      'portcullis_lockouts_active{portcullis_limiter="auth"}': 0,
      ...ZERO_SERIES,
    });
    expect(types).toMatchObject(SERIES_TYPES);
  });

  it('serves exact counts of decisions and lockouts, and the lockouts in force', async () => {
    g = await startGateway();
    const h = g;
    for (let i = 0; i < 3; i++) {
      const res = await request(`${h.url}/hooks/github`, {
        method: 'POST',
        headers: { 'x-portcullis-token': 'wrong' },
      });
      expect(res.status).toBe(401);
    }
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push((await wrongStatusBearer(h)).status);
    expect(statuses).toEqual([...Array(10).fill(401), 429]);

    const { samples, types } = await scrape(h);
    expect(portcullisSeries(samples)).toEqual({
      'portcullis_decisions_total{portcullis_dry_run="false",portcullis_limiter="auth",portcullis_outcome="allowed"}': 10,
      'portcullis_decisions_total{portcullis_dry_run="false",portcullis_limiter="auth",portcullis_outcome="locked"}': 1,
      // The shared secret's scope budget checks every bearer attempt too (far from spent).
      'portcullis_decisions_total{portcullis_dry_run="false",portcullis_limiter="auth.scope",portcullis_outcome="allowed"}': 11,
      'portcullis_decisions_total{portcullis_dry_run="false",portcullis_limiter="webhook",portcullis_outcome="allowed"}': 3,
      'portcullis_lockouts_total{portcullis_layer="client",portcullis_limiter="auth"}': 1,
      'portcullis_lockouts_active{portcullis_limiter="auth"}': 1,
      // The failure limiters' series exist from the start, at zero until they count.
      ...ZERO_SERIES,
    });
    expect(types).toMatchObject(SERIES_TYPES);
    // No key, address or origin in any label.
    expect(JSON.stringify(samples)).not.toMatch(/127\.0\.0\.1|203\.0\.113/);

    h.clock.advance(299_999);
    expect(portcullisSeries((await scrape(h)).samples)).toMatchObject({
      'portcullis_lockouts_active{portcullis_limiter="auth"}': 1,
    });
    h.clock.advance(1); // the lockout (300 s) has ended
    const after = portcullisSeries((await scrape(h)).samples);
    expect(after).toMatchObject({
      'portcullis_lockouts_active{portcullis_limiter="auth"}': 0,
      'portcullis_lockouts_total{portcullis_layer="client",portcullis_limiter="auth"}': 1,
    });
    expect((await wrongStatusBearer(h)).status).toBe(401);
    expect(portcullisSeries((await scrape(h)).samples)).toMatchObject({
      'portcullis_decisions_total{portcullis_dry_run="false",portcullis_limiter="auth",portcullis_outcome="allowed"}': 11,
    });
  });

  it('counts an operator ban under layer ban, and an unlock takes it out of the lockouts in force', async () => {
    g = await startGateway();
    const h = g;
    const ops = await connect(h.wsUrl, { auth: { token: TOKEN } });
    try {
      const ban = await ops.client.request('ratelimit.ban', {
        limiter: 'webhook',
        key: '203.0.113.9',
        ms: 60_000,
      });
      expect(ban.ok).toBe(true);
      expect(portcullisSeries((await scrape(h)).samples)).toMatchObject({
        'portcullis_lockouts_total{portcullis_layer="ban",portcullis_limiter="webhook"}': 1,
        'portcullis_lockouts_active{portcullis_limiter="webhook"}': 1,
      });
      const unlock = await ops.client.request('ratelimit.unlock', {
        limiter: 'webhook',
        key: '203.0.113.9',
      });
      expect(unlock.payload).toEqual({
        limiter: 'webhook',
        key: '203.0.113.9',
        unlocked: ['default'],
      });
      expect(portcullisSeries((await scrape(h)).samples)).toMatchObject({
        'portcullis_lockouts_total{portcullis_layer="ban",portcullis_limiter="webhook"}': 1,
        'portcullis_lockouts_active{portcullis_limiter="webhook"}': 0,
      });
    } finally {
      ops.client.close();
    }
  });

  it('is for a direct loopback client or the shared token, like /status', async () => {
    g = await startGateway();
    const h = g;
    const proxied = { 'x-forwarded-for': '203.0.113.9' };
    const refused = await request(`${h.url}/metrics`, { headers: proxied });
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'INVALID_REQUEST' });
    const foreignHost = await request(`${h.url}/metrics`, { headers: { host: 'evil.example' } });
    expect(foreignHost.status).toBe(401);
    const withToken = await request(`${h.url}/metrics`, {
      headers: { ...proxied, authorization: `Bearer ${TOKEN}` },
    });
    expect(withToken.status).toBe(200);
    expect(parseExposition(withToken.body).types).toMatchObject({
      portcullis_decisions_total: 'counter',
    });
    const head = await request(`${h.url}/metrics`, { method: 'HEAD' });
    expect([head.status, head.body]).toEqual([200, '']);
    const post = await request(`${h.url}/metrics`, { method: 'POST' });
    expect([post.status, post.headers.allow]).toEqual([405, 'GET, HEAD']);
  });
});

describe('restart and requests in flight', () => {
  it('a due restart waits for the HTTP requests in flight (polled every 500 ms)', async () => {
    g = await startGateway();
    const h = g;
    const t0 = h.clock.now();
    // A webhook whose body has not arrived yet: its request is in flight until the body ends.
    const { port } = new URL(h.url);
    const req = http.request({
      host: '127.0.0.1',
      port,
      path: '/hooks/github',
      method: 'POST',
      agent: false,
      headers: { 'x-portcullis-token': HOOK_TOKEN, 'content-length': '2' },
    });
    const answer = new Promise<number>((resolve, reject) => {
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
    });
    req.write('{');
    while (h.gateway.inFlight() !== 1) await new Promise((resolve) => setImmediate(resolve));

    expect(h.gateway.scheduler.request({ delayMs: 1_000, reason: 'deploy' })).toEqual({
      coalesced: false,
      delayMs: 1_000,
      cooldownMsApplied: 0,
    });
    h.clock.advance(1_000);
    expect(h.gateway.scheduler.lastRestartAt()).toBeUndefined();
    expect(h.gateway.scheduler.pending()).toEqual({
      dueInMs: 0,
      reasons: ['deploy'],
      deferred: true,
    });
    h.clock.advance(700);
    expect(h.gateway.scheduler.lastRestartAt()).toBeUndefined();

    req.end('}');
    expect(await answer).toBe(202);
    while (h.gateway.inFlight() !== 0) await new Promise((resolve) => setImmediate(resolve));
    h.clock.advance(299); // t0 + 1 999: the next poll is at t0 + 2 000
    expect(h.gateway.scheduler.lastRestartAt()).toBeUndefined();
    h.clock.advance(1);
    expect(h.gateway.scheduler.lastRestartAt()).toBe(t0 + 2_000);
    expect(h.logger.entries().filter((e) => e['event'] === 'gateway.restart')).toHaveLength(1);
  });
});
