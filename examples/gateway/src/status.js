// The status board behind /status, /status.json and /status/events: active lockouts per limiter
// with time left and whether an operator set them (FailureLimiter#lockouts), buckets in use against their caps, the last 50
// refused decisions (from core's diagnostics channels and the gateway's own refusals), and the
// decisions per second of each limiter over the last 5 minutes: allowed (counted by the parts of
// the gateway that let a request through), refused and lockouts started (the refusals above).
import { subscribe, unsubscribe } from 'node:diagnostics_channel';

/** @import { Clock, FailureLimiter, LockoutInfo, MemoryStore, PortcullisEvent, Timers } from '@portcullis/core' */
/** @import { ServerResponse } from 'node:http' */

/** How many refused decisions the board remembers. */
export const REFUSED_CAPACITY = 50;

/** Most rows of one table in a snapshot (counts stay exact). */
const MAX_ROWS = 100;

/** How often connected pages get a fresh snapshot even when nothing happened (time left moves). */
const HEARTBEAT_MS = 1_000;

/** Most aggregate lockouts (per-site, all-origins) the board remembers. */
const MAX_AGGREGATE_LOCKOUTS = 10_000;

/** Most lockouts read from one layer limiter per snapshot (the count shown is exact up to it). */
const MAX_LAYER_LIST = 10_000;

/** The layers whose lockout refuses only untrusted clients (docs/design.md#defence-in-depth). */
const SOFT_LAYERS = new Set(['account', 'scope']);

/** How many seconds of decisions the chart spans. */
export const RATE_WINDOW_S = 300;

/** The limiters the chart shows, in its order, and their titles when the board has none. */
const RATE_LIMITERS = ['auth', 'auth-browser', 'webhook', 'control-plane', 'session-creation'];
const RATE_TITLES = /** @type {Record<string, string>} */ ({
  'session-creation': 'Session creation',
});

/**
 * @typedef {object} RefusedEntry
 * @property {number} seq increasing number
 * @property {number} at clock time (ms)
 * @property {string} event `lockout` (a lockout started), `limited`, `overflow` (from core's
 *   channels) or `refused` (the gateway turned a request away during a lockout or limit)
 * @property {string} limiter the limiter's name
 * @property {string} [scope] the credential class, for failure limiters
 * @property {string} key the bucket key (client IP, `browser-origin:…`, `method|device|ip`)
 * @property {string} reason the decision's reason
 * @property {number} retryAfterMs how long the client was told to wait
 * @property {string} [detail] what was refused, in words
 */

/**
 * @typedef {object} FailureBoardLimiter
 * @property {string} name
 * @property {string} title
 * @property {string} rule
 * @property {FailureLimiter} limiter its lockouts are listed, and an operator can lift them
 * @property {MemoryStore} store
 * @property {string[]} [aggregates] limiters core builds around this one whose stores the board
 *   cannot read (the browser limiter's per-site and all-origins budgets): their lockouts are
 *   learnt from the lockout channel and shown, charted and listed with this limiter
 */

/**
 * @typedef {object} WindowBoardLimiter
 * @property {string} name
 * @property {string} title
 * @property {string} rule
 * @property {MemoryStore} store
 */

/** Channels the board listens to (core publishes refusals there). */
const CHANNELS = /** @type {const} */ ([
  ['portcullis:lockout', 'lockout'],
  ['portcullis:limited', 'limited'],
  ['portcullis:overflow', 'overflow'],
]);

/**
 * What a layer lockout in the refused list means, by the layer limiter's name (`auth.scope`).
 * @param {string} limiter
 */
function layerDetail(limiter) {
  const layer = limiter.slice(limiter.lastIndexOf('.') + 1);
  if (layer === 'scope') return 'the credential class is under attack: untrusted clients refused';
  if (layer === 'account') return 'the account is under attack: its untrusted clients refused';
  if (layer === 'pair') return 'this client is locked out of this account';
  if (layer === 'spray') return 'this client failed against too many accounts: locked out of all';
  return `${layer} layer`;
}

/**
 * Milliseconds in words: `300 s`, `1.5 s`, `250 ms`.
 * @param {number} ms
 */
export function formatMs(ms) {
  if (ms >= 1000 && ms % 1000 === 0) return `${ms / 1000} s`;
  if (ms >= 1000) return `${(ms / 1000).toFixed(1)} s`;
  return `${ms} ms`;
}

/**
 * Creates the status board.
 * @template {Record<string, unknown>} Extra
 * @param {{
 *   clock: Clock,
 *   timers: Timers,
 *   failureLimiters: FailureBoardLimiter[],
 *   windowLimiters: WindowBoardLimiter[],
 *   layers?: () => readonly FailureLimiter[],
 *   extra: () => Extra,
 * }} options `extra` adds the gateway's own sections (sessions, restart, connections); `layers`
 *   are the defence-in-depth layer limiters of the auth gates (pair, account, spray, scope, named
 *   `auth.<layer>`): their hard lockouts (pair, spray) are listed with the client's limiter, their
 *   soft ones (account, scope) apart, as under attack
 */
export function createStatusBoard(options) {
  const { clock, timers, failureLimiters, windowLimiters, extra } = options;
  const layers = options.layers ?? (() => []);
  /** Each limiter the board follows → the card and chart row it shows in. */
  const rowOf = new Map([...failureLimiters, ...windowLimiters].map((l) => [l.name, l.name]));
  for (const l of failureLimiters) for (const a of l.aggregates ?? []) rowOf.set(a, l.name);
  /**
   * The lockouts of aggregate limiters, learnt from the channel: `limiter|scope|key` → when it ends
   * (an aggregate's lockout is never lifted early: only the origin's own bucket resets).
   * @type {Map<string, { row: string, scope: string, key: string, until: number }>}
   */
  const aggregateLockouts = new Map();
  /** @type {RefusedEntry[]} */
  let refused = [];
  let seq = 0;
  /** @type {Set<ServerResponse>} */
  const streams = new Set();
  let pushQueued = false;
  /** @type {unknown} */
  let heartbeat;
  let closed = false;

  /**
   * Per limiter, per second (gateway clock): `[allowed, refused, lockouts started]`, seconds in
   * increasing order, none older than the chart's window.
   * @type {Map<string, Map<number, [number, number, number]>>}
   */
  const rates = new Map(RATE_LIMITERS.map((name) => [name, new Map()]));
  const titles = new Map(
    [...failureLimiters, ...windowLimiters].map((l) => [l.name, l.title.replace(/ \(.*\)$/, '')]),
  );

  /**
   * @param {string} limiter
   * @param {0 | 1 | 2} which allowed, refused, lockout started
   */
  function bump(limiter, which) {
    const perSecond = rates.get(rowOf.get(limiter) ?? limiter);
    if (perSecond === undefined) return;
    const second = Math.floor(clock.now() / 1000);
    let counts = perSecond.get(second);
    if (counts === undefined) {
      counts = [0, 0, 0];
      perSecond.set(second, counts);
      for (const s of perSecond.keys()) {
        if (s > second - RATE_WINDOW_S) break;
        perSecond.delete(s);
      }
    }
    counts[which] += 1;
  }

  /** The chart's data: only the seconds that saw a decision. */
  function rateSnapshot() {
    const nowS = Math.floor(clock.now() / 1000);
    const from = nowS - RATE_WINDOW_S + 1;
    return {
      nowS,
      windowS: RATE_WINDOW_S,
      limiters: RATE_LIMITERS.map((limiter) => {
        /** @type {Array<[number, number, number, number]>} */
        const points = [];
        const totals = { allowed: 0, refused: 0, lockouts: 0 };
        for (const [second, [a, r, l]] of rates.get(limiter) ?? []) {
          if (second < from || second > nowS) continue;
          points.push([second, a, r, l]);
          totals.allowed += a;
          totals.refused += r;
          totals.lockouts += l;
        }
        return {
          limiter,
          title: titles.get(limiter) ?? RATE_TITLES[limiter] ?? limiter,
          totals,
          points,
        };
      }),
    };
  }

  /**
   * A request one of the gateway's limiters let through (for the chart; refusals and lockouts are
   * counted by `record`). Pushes nothing by itself: the caller's `changed()` does.
   * @param {string} limiter
   */
  function allowed(limiter) {
    bump(limiter, 0);
  }

  /** @param {Omit<RefusedEntry, 'seq' | 'at'>} entry */
  function record(entry) {
    bump(entry.limiter, entry.event === 'lockout' ? 2 : 1);
    refused.push({ seq: ++seq, at: clock.now(), ...entry });
    if (refused.length > REFUSED_CAPACITY) refused = refused.slice(-REFUSED_CAPACITY);
    changed();
  }

  /** @type {Array<[string, (message: unknown) => void]>} */
  const listeners = CHANNELS.map(([channel, event]) => {
    /** @param {unknown} message */
    const onMessage = (message) => {
      const m = /** @type {PortcullisEvent} */ (message);
      // The channels are process-wide: keep only this gateway's limiters.
      const row = rowOf.get(m.limiter);
      if (row === undefined) {
        // A layer's lockout goes in the list (its limiter has no card or chart row of its own).
        if (event === 'lockout' && isLayer(m.limiter))
          record({
            event,
            limiter: m.limiter,
            ...(m.scope !== undefined && { scope: m.scope }),
            key: m.decision.key,
            reason: m.decision.reason,
            retryAfterMs: m.decision.retryAfterMs,
            detail: layerDetail(m.limiter),
          });
        return;
      }
      if (event === 'lockout' && row !== m.limiter) {
        const scope = m.scope ?? 'default';
        // Bounded like the stores (a flood of sites is also capped by the all-origins budget).
        if (aggregateLockouts.size >= MAX_AGGREGATE_LOCKOUTS)
          aggregateLockouts.delete(/** @type {string} */ (aggregateLockouts.keys().next().value));
        const until = clock.now() + m.decision.retryAfterMs;
        aggregateLockouts.set(`${m.limiter}|${scope}|${m.decision.key}`, {
          row,
          scope,
          key: m.decision.key,
          until,
        });
      }
      record({
        event,
        limiter: m.limiter,
        ...(m.scope !== undefined && { scope: m.scope }),
        key: m.decision.key,
        reason: m.decision.reason,
        retryAfterMs: m.decision.retryAfterMs,
      });
    };
    subscribe(channel, onMessage);
    return [channel, onMessage];
  });

  /**
   * @param {MemoryStore} store
   * @returns {{ key: string, untilMs: number }[]}
   */
  function protectedOf(store) {
    const out = [];
    for (const p of store.protectedKeys()) out.push({ key: p.key, untilMs: p.untilMs });
    out.sort((a, b) => b.untilMs - a.untilMs || (a.key < b.key ? -1 : 1));
    return out;
  }

  /** @param {string} name */
  function isLayer(name) {
    return layers().some((l) => l.config.name === name);
  }

  /**
   * The layers' lockouts in force: hard ones (pair, spray) by the card of the client's limiter
   * (a browser client's key starts with `browser-`), soft ones (account, scope) apart.
   */
  function layerLockouts() {
    /** @type {Map<string, Array<{ scope: string, key: string, untilMs: number, layer: string, unlock: boolean, account?: string }>>} */
    const hard = new Map();
    /** @type {Array<{ layer: string, scope: string, account?: string, untilMs: number }>} */
    const soft = [];
    for (const limiter of layers()) {
      // The layers' memory store answers at once.
      const listed = /** @type {LockoutInfo[]} */ (limiter.lockouts({ limit: MAX_LAYER_LIST }));
      for (const x of listed) {
        if (SOFT_LAYERS.has(x.layer)) {
          soft.push({
            layer: x.layer,
            scope: x.scope,
            ...(x.layer === 'account' && { account: x.key.slice('account:'.length) }),
            untilMs: x.retryAfterMs,
          });
          continue;
        }
        // A pair's key is `<client>\0account:<name>`.
        const nul = x.key.indexOf('\u0000');
        const client = nul < 0 ? x.key : x.key.slice(0, nul);
        const card = client.startsWith('browser-') ? 'auth-browser' : 'auth';
        const rows = hard.get(card) ?? [];
        hard.set(card, rows);
        rows.push({
          scope: x.scope,
          key: client,
          untilMs: x.retryAfterMs,
          layer: x.layer,
          // Its button posts the layer's limiter (`auth.pair`: admin.js reaches the layers too).
          unlock: true,
          ...(nul >= 0 && { account: x.key.slice(nul + 1 + 'account:'.length) }),
        });
      }
    }
    soft.sort(
      (a, b) =>
        b.untilMs - a.untilMs ||
        (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0) ||
        ((a.account ?? '') < (b.account ?? '') ? -1 : 1),
    );
    return { hard, soft };
  }

  function snapshot() {
    const layered = layerLockouts();
    const lockouts = failureLimiters.map((l) => {
      // A memory store answers at once; its bound (maxEntries) bounds the listing too.
      const listed = /** @type {LockoutInfo[]} */ (
        l.limiter.lockouts({ limit: Math.min(l.store.maxEntries, 100_000) })
      );
      /** @type {Array<{ scope: string, key: string, untilMs: number, layer: string, unlock: boolean }>} */
      const active = listed.map((x) => ({
        scope: x.scope,
        key: x.key,
        untilMs: x.retryAfterMs,
        layer: x.layer,
        unlock: true,
      }));
      const now = clock.now();
      // Lifted only by their own end (admin.js reaches the gateway's limiters, not these).
      for (const [id, a] of aggregateLockouts) {
        if (a.until <= now) aggregateLockouts.delete(id);
        else if (a.row === l.name)
          active.push({
            scope: a.scope,
            key: a.key,
            untilMs: a.until - now,
            layer: 'client',
            unlock: false,
          });
      }
      active.push(...(layered.hard.get(l.name) ?? []));
      active.sort((a, b) => b.untilMs - a.untilMs || (a.key < b.key ? -1 : 1));
      return {
        limiter: l.name,
        title: l.title,
        rule: l.rule,
        size: l.store.size(),
        maxEntries: l.store.maxEntries,
        activeCount: active.length,
        active: active.slice(0, MAX_ROWS),
      };
    });
    const quotas = windowLimiters.map((l) => {
      const blocked = protectedOf(l.store);
      return {
        limiter: l.name,
        title: l.title,
        rule: l.rule,
        size: l.store.size(),
        maxEntries: l.store.maxEntries,
        blockedCount: blocked.length,
        blocked: blocked.slice(0, MAX_ROWS),
      };
    });
    const soft = layered.soft;
    return {
      now: clock.now(),
      ...extra(),
      lockouts,
      underAttack: {
        title: 'Under attack (soft lockouts)',
        rule: 'too many failures against one account or a whole credential class from all clients: clients that never logged in are refused, clients that did (trusted for 30 days) still get in; ends on its own',
        activeCount: soft.length,
        active: soft.slice(0, MAX_ROWS),
      },
      quotas,
      refused: [...refused].reverse(),
      rates: rateSnapshot(),
    };
  }

  function push() {
    if (streams.size === 0) return;
    const data = `data: ${JSON.stringify(snapshot())}\n\n`;
    for (const res of streams) res.write(data);
  }

  /** Something changed: push a snapshot to open pages, once per burst. */
  function changed() {
    if (pushQueued || streams.size === 0 || closed) return;
    pushQueued = true;
    setImmediate(() => {
      pushQueued = false;
      if (!closed) push();
    });
  }

  function beat() {
    heartbeat = undefined;
    if (closed || streams.size === 0) return;
    push();
    heartbeat = timers.setTimeout(beat, HEARTBEAT_MS);
  }

  /**
   * Serves `/status/events`: a Server-Sent Events stream, one snapshot per change and per second.
   * @param {ServerResponse} res
   */
  function stream(res) {
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Content-Type-Options': 'nosniff',
    });
    res.write(`retry: 1000\ndata: ${JSON.stringify(snapshot())}\n\n`);
    streams.add(res);
    res.on('close', () => streams.delete(res));
    if (heartbeat === undefined) heartbeat = timers.setTimeout(beat, HEARTBEAT_MS);
  }

  function close() {
    closed = true;
    for (const [channel, onMessage] of listeners) unsubscribe(channel, onMessage);
    if (heartbeat !== undefined) timers.clearTimeout(heartbeat);
    heartbeat = undefined;
    for (const res of streams) res.end();
    streams.clear();
  }

  return { record, allowed, snapshot, changed, stream, close, streams: () => streams.size };
}

/** @typedef {ReturnType<typeof createStatusBoard>} StatusBoard */
