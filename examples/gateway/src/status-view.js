// How the /status page draws a snapshot of the status board (status.js): plain functions from the
// snapshot to HTML text. The server uses them for the first paint, so the page arrives with its
// data in it; the page's own script is this same source, inlined (http.js), and redraws with it on
// every live update. Everything that came from a request (keys, origins, reasons, names) goes
// through `esc`. No dependency: the chart is inline SVG.
//
// Kept to what a browser script can run too: no imports, and one `export` list at the end (http.js
// drops that line when it inlines the file).

/**
 * @typedef {object} Snapshot what `board.snapshot()` returns (status.js); only what is drawn here
 * @property {number} now the gateway's clock (ms)
 * @property {any} gateway
 * @property {any} sessions
 * @property {any} restart
 * @property {any[]} lockouts
 * @property {any} [underAttack] the soft lockouts (account and scope layers)
 * @property {any[]} quotas
 * @property {any[]} refused
 * @property {Rates} rates
 */

/**
 * @typedef {object} Rates decisions per second per limiter over the last `windowS` seconds
 * @property {number} nowS the current second (gateway clock, ms / 1000, floored)
 * @property {number} windowS how many seconds the chart spans
 * @property {{ limiter: string, title: string, totals: { allowed: number, refused: number, lockouts: number }, points: Array<[number, number, number, number]> }[]} limiters
 *   `points`: `[second, allowed, refused, lockouts started]`, only seconds with something in them
 */

/** @param {unknown} value */
function esc(value) {
  return String(value ?? '')
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/**
 * A key (IP, `browser-origin:…`, `method|device|ip`) that may wrap only after its separators
 * (`:` `/` `|` `@` `-`, and a `.` before a letter), never inside a word or an IPv4 address.
 * @param {unknown} key
 */
function keyHtml(key) {
  return esc(key).replace(/[:/|@-]+|\.(?=[A-Za-z])/g, '$&<wbr>');
}

/** `m:ss` of the time left (rounded up, so 0:00 means it is over). @param {number} ms */
function clockText(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const m = Math.floor(s / 60);
  return `${m}:${String(s % 60).padStart(2, '0')}`;
}

/** A duration in words: `250 ms`, `42 s`, `3 min 5 s`, `2 h 4 min`. @param {number} ms */
function duration(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** @param {number} n */
const num = (n) => n.toLocaleString('en');

/**
 * A cell that counts down to `until` (gateway clock, ms); the page ticks it between updates.
 * @param {string} tag
 * @param {number} until
 * @param {number} now
 * @param {string} [over] what to show once it is over
 */
function countdown(tag, until, now, over = '0:00') {
  const left = until - now;
  return `<${tag} class="left" data-until="${until}" data-over="${esc(over)}">${left > 0 ? clockText(left) : esc(over)}</${tag}>`;
}

/** @param {number} size @param {number} max @param {string} label */
function meter(size, max, label) {
  const pct = max > 0 ? Math.min(100, (size / max) * 100) : 0;
  return `<div class="meter"><span class="meter-label">${esc(label)} ${num(size)} / ${num(max)}</span><svg class="bar${size >= max ? ' full' : ''}" viewBox="0 0 100 6" preserveAspectRatio="none" aria-hidden="true"><rect class="track" width="100" height="6" rx="3"></rect><rect class="fill" width="${pct.toFixed(1)}" height="6" rx="3"></rect></svg></div>`;
}

/** @param {string[]} headers @param {string[]} rows @param {string} [cls] */
function table(headers, rows, cls = '') {
  if (rows.length === 0) return '<div class="none">none</div>';
  return `<table${cls ? ` class="${cls}"` : ''}><thead><tr>${headers.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

/** @param {string} title @param {number} count */
function heading(title, count) {
  return `<h3>${esc(title)}<span class="count${count > 0 ? ' hot' : ''}">${num(count)}</span></h3>`;
}

/** The auth layers whose lockouts live in a limiter of their own, `auth.<layer>` (admin.js). */
const LAYER_LIMITERS = new Set(['pair', 'account', 'spray', 'scope']);

/**
 * The unlock button of one lockout: a form posting to /status/unlock (it works without JavaScript;
 * the page's script sends it with fetch and stays live). `token` is the page's unlock token.
 * @param {string} limiter @param {any} a @param {string} token
 */
function unlockForm(limiter, a, token) {
  const field = (/** @type {string} */ name, /** @type {unknown} */ value) =>
    `<input type="hidden" name="${name}" value="${esc(value)}">`;
  // A layer's lockout names its own limiter (`auth.pair`), and the account when it has one; a
  // soft layer's has no client key (an account under attack, the whole scope).
  const key = a.layer === 'account' || a.layer === 'scope' ? '' : field('key', a.key);
  const account = a.account === undefined ? '' : field('account', a.account);
  return `<form class="unlock" method="post" action="/status/unlock">${field('token', token)}${field('limiter', LAYER_LIMITERS.has(a.layer) ? `auth.${a.layer}` : limiter)}${field('scope', a.scope)}${key}${account}<button type="submit" title="lift this lockout now">unlock</button></form>`;
}

/** What the tag of a hard layer's row says (the client layer's rows have none). */
const LAYER_TAGS = /** @type {Record<string, string>} */ ({
  pair: 'this client, this account only (20 failures in a row)',
  spray: 'this client failed against too many accounts: every account',
});

/** @param {any} a a lockout row */
function layerTag(a) {
  if (a.layer === 'ban') return ' <span class="tag ban" title="set by an operator">ban</span>';
  const title = LAYER_TAGS[a.layer];
  return title === undefined
    ? ''
    : ` <span class="tag layer" title="${esc(title)}">${esc(a.layer)}</span>`;
}

/** @param {any} l @param {number} now @param {string | undefined} token */
function lockoutCard(l, now, token) {
  const rows = l.active.map(
    (/** @type {any} */ a) =>
      `<tr data-limiter="${esc(l.limiter)}" data-scope="${esc(a.scope)}" data-key="${esc(a.key)}" data-layer="${esc(a.layer)}"${a.account === undefined ? '' : ` data-account="${esc(a.account)}"`}><td class="nowrap">${esc(a.scope)}${layerTag(a)}</td><td class="key">${keyHtml(a.key)}${a.account === undefined ? '' : ` → ${keyHtml(a.account)}`}</td>${countdown('td', now + a.untilMs, now)}<td class="act">${a.unlock && token !== undefined ? unlockForm(l.limiter, a, token) : ''}</td></tr>`,
  );
  const more =
    l.activeCount > l.active.length
      ? `<div class="none">… and ${num(l.activeCount - l.active.length)} more</div>`
      : '';
  return `<section class="card" data-limiter="${esc(l.limiter)}">${heading(l.title, l.activeCount)}<div class="rule">${esc(l.rule)}</div>${meter(l.size, l.maxEntries, 'buckets in use')}${table(['scope', 'key', 'time left', ''], rows)}${more}</section>`;
}

/**
 * The soft lockouts: an account or a whole credential class under attack. They refuse only
 * clients that never logged in and end on their own (README.md#defence-in-depth); an operator who
 * knows the attack is over lifts one with its button.
 * @param {any} u @param {number} now @param {string | undefined} token
 */
function underAttackCard(u, now, token) {
  const rows = u.active.map(
    (/** @type {any} */ a) =>
      `<tr data-layer="${esc(a.layer)}" data-scope="${esc(a.scope)}"${a.account === undefined ? '' : ` data-account="${esc(a.account)}"`}><td class="nowrap"><span class="tag soft">${esc(a.layer)}</span></td><td class="nowrap">${esc(a.scope)}</td><td class="key">${a.account === undefined ? 'every account' : keyHtml(a.account)}</td>${countdown('td', now + a.untilMs, now)}<td class="act">${token !== undefined ? unlockForm('', a, token) : ''}</td></tr>`,
  );
  const more =
    u.activeCount > u.active.length
      ? `<div class="none">… and ${num(u.activeCount - u.active.length)} more</div>`
      : '';
  return `<section class="card soft" data-limiter="under-attack">${heading(u.title, u.activeCount)}<div class="rule">${esc(u.rule)}</div>${table(['layer', 'scope', 'account', 'time left', ''], rows)}${more}</section>`;
}

/** @param {any} q @param {number} now */
function quotaCard(q, now) {
  const rows = q.blocked.map(
    (/** @type {any} */ b) =>
      `<tr data-limiter="${esc(q.limiter)}" data-key="${esc(b.key)}"><td class="key">${keyHtml(b.key)}</td>${countdown('td', now + b.untilMs, now)}</tr>`,
  );
  return `<section class="card" data-limiter="${esc(q.limiter)}">${heading(q.title, q.blockedCount)}<div class="rule">${esc(q.rule)}</div>${meter(q.size, q.maxEntries, 'buckets in use')}${table(['blocked bucket (method | device | ip)', 'time left'], rows)}</section>`;
}

/** @param {Array<[string, string]>} pairs values are HTML */
function kv(pairs) {
  return `<dl class="kv">${pairs.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join('')}</dl>`;
}

/** @param {any} ses @param {number} now */
function sessionCard(ses, now) {
  return `<section class="card" data-limiter="session-creation"><h3>Session creation</h3><div class="rule">${esc(ses.rule)}</div>${meter(ses.used, ses.limit, 'this window')}${kv(
    [
      ['window resets in', ses.used > 0 ? countdown('span', now + ses.resetMs, now) : '—'],
      ['known sessions', `${num(ses.known)} / ${num(ses.maxKnown)}`],
    ],
  )}</section>`;
}

/** @param {any} r @param {number} now */
function restartCard(r, now) {
  const pending = r.pending
    ? `in ${countdown('span', now + r.pending.dueInMs, now)} (${esc(r.pending.reasons.join(', ') || 'no reason')})`
    : 'none';
  return `<section class="card" data-limiter="restart"><h3>Restart</h3><div class="rule">${esc(r.rule)}</div>${kv(
    [
      ['restarts', num(r.restarts)],
      ['pending', pending],
      ['last restart', r.lastAgoMs === null ? 'never' : `${esc(duration(r.lastAgoMs))} ago`],
      [
        'cooldown left',
        r.cooldownLeftMs > 0 ? countdown('span', now + r.cooldownLeftMs, now, 'none') : 'none',
      ],
    ],
  )}</section>`;
}

/** The last refused decisions, newest first, each with the time left of the wait it was told. */
function refusedTable(/** @type {any[]} */ refused, /** @type {number} */ now) {
  if (refused.length === 0) return '<tr><td colspan="8" class="none">nothing refused yet</td></tr>';
  return refused
    .map(
      (e) =>
        `<tr data-event="${esc(e.event)}" data-limiter="${esc(e.limiter)}" data-key="${esc(e.key)}"><td class="nowrap">${esc(duration(now - e.at))} ago</td><td><span class="tag ${esc(e.event)}">${esc(e.event)}</span></td><td class="nowrap">${esc(e.limiter)}</td><td class="nowrap">${esc(e.scope ?? '')}</td><td class="key">${keyHtml(e.key)}</td><td class="nowrap">${esc(e.reason)}</td>${
          e.retryAfterMs > 0
            ? countdown('td', e.at + e.retryAfterMs, now, 'over')
            : '<td class="left">—</td>'
        }<td class="detail">${esc(e.detail ?? '')}</td></tr>`,
    )
    .join('');
}

/** Height of one limiter's chart, in SVG units (the width is one unit per second). */
const CHART_H = 40;

/** The least height of a bar that is not zero, so one refusal among many allowed shows. */
const MIN_BAR = 3;

/**
 * One limiter's decisions per second as stacked bars (allowed below, refused above, each at least
 * MIN_BAR high when not zero) with a mark where a lockout started, on its own scale (the peak is
 * written beside it), and a faint line at each minute.
 * @param {Rates['limiters'][number]} row
 * @param {Rates} rates
 */
function rateRow(row, rates) {
  const from = rates.nowS - rates.windowS + 1;
  const inWindow = row.points.filter(([s]) => s >= from && s <= rates.nowS);
  const peak = Math.max(1, ...inWindow.map(([, a, r]) => a + r));
  const room = CHART_H - 6; // the top 6 units are for lockout marks
  const scale = room / peak;
  const minutes = Array.from({ length: rates.windowS / 60 - 1 }, (_, i) => (i + 1) * 60)
    .map((x) => `<line class="minute" x1="${x}" y1="0" x2="${x}" y2="${CHART_H}"></line>`)
    .join('');
  const bars = inWindow
    .map(([s, a, r, l]) => {
      const x = s - from;
      const hr = r > 0 ? Math.max(MIN_BAR, r * scale) : 0;
      const ha = a > 0 ? Math.max(MIN_BAR, Math.min(a * scale, room - hr)) : 0;
      const ago = rates.nowS - s;
      const when = ago === 0 ? 'this second' : `${ago} s ago`;
      const locks = l > 0 ? `, ${l} lockout${l > 1 ? 's' : ''} started` : '';
      const what = `${when}: ${a} allowed, ${r} refused${locks}`;
      return `<g><title>${esc(what)}</title>${a > 0 ? `<rect class="allowed" x="${x}" y="${(CHART_H - ha).toFixed(2)}" width="1" height="${ha.toFixed(2)}"></rect>` : ''}${r > 0 ? `<rect class="refused" x="${x}" y="${(CHART_H - ha - hr).toFixed(2)}" width="1" height="${hr.toFixed(2)}"></rect>` : ''}${l > 0 ? `<rect class="lockout" x="${x}" y="0" width="1" height="4"></rect>` : ''}</g>`;
    })
    .join('');
  const t = row.totals;
  const label = `${row.title}: ${t.allowed} allowed, ${t.refused} refused, ${t.lockouts} lockouts started in the last ${rates.windowS / 60} minutes`;
  return `<div class="rate-row" data-limiter="${esc(row.limiter)}" data-allowed="${t.allowed}" data-refused="${t.refused}" data-lockouts="${t.lockouts}"><div class="rate-label"><b>${esc(row.title)}</b><span>${num(t.allowed)} allowed · <em class="r">${num(t.refused)} refused</em> · <em class="l">${num(t.lockouts)} lockout${t.lockouts === 1 ? '' : 's'}</em></span></div><svg class="rate" viewBox="0 0 ${rates.windowS} ${CHART_H}" preserveAspectRatio="none" role="img" aria-label="${esc(label)}">${minutes}<line class="base" x1="0" y1="${CHART_H}" x2="${rates.windowS}" y2="${CHART_H}"></line>${bars}</svg><div class="peak">peak ${num(peak)}/s</div></div>`;
}

/** @param {Rates} rates */
function rateChart(rates) {
  const minutes = rates.windowS / 60;
  const ticks = Array.from({ length: minutes + 1 }, (_, i) =>
    i === minutes ? 'now' : `−${minutes - i} min`,
  );
  return `${rates.limiters.map((row) => rateRow(row, rates)).join('')}<div class="rate-axis"><span></span><div>${ticks.map((t) => `<span>${t}</span>`).join('')}</div><span></span></div>`;
}

/**
 * The text of the header line under the name.
 * @param {Snapshot} s
 */
function metaText(s) {
  const g = s.gateway;
  return `up ${duration(g.uptimeMs)} · ${num(g.connections.authenticated)} connected, ${num(g.connections.awaitingConnect)} awaiting connect · config ${g.configHash}`;
}

/**
 * Everything in <main> but the footer, as HTML.
 * @param {Snapshot} s
 * @param {string} [unlockToken] the page's unlock token: lockout rows get an unlock button
 */
function renderMain(s, unlockToken) {
  const now = s.now;
  return [
    '<h2>Decisions per second, last 5 minutes <span class="legend"><i class="allowed"></i>allowed <i class="refused"></i>refused <i class="lockout"></i>lockout started</span></h2>',
    `<div class="card rates" id="rates">${rateChart(s.rates)}</div>`,
    '<h2>Active lockouts</h2>',
    `<div class="grid" id="lockouts">${s.lockouts.map((l) => lockoutCard(l, now, unlockToken)).join('')}</div>`,
    ...(s.underAttack === undefined
      ? []
      : [
          '<h2>Under attack</h2>',
          `<div class="grid" id="under-attack">${underAttackCard(s.underAttack, now, unlockToken)}</div>`,
        ]),
    '<h2>Control-plane quotas, session creation, restart</h2>',
    `<div class="grid" id="quotas">${s.quotas.map((q) => quotaCard(q, now)).join('')}${sessionCard(s.sessions, now)}${restartCard(s.restart, now)}</div>`,
    `<h2>Last refused decisions <span class="count" id="refused-count">${num(s.refused.length)}</span></h2>`,
    `<div class="card"><table id="refused" class="refused"><thead><tr><th>when</th><th>event</th><th>limiter</th><th>scope</th><th>key</th><th>reason</th><th>time left</th><th>detail</th></tr></thead><tbody>${refusedTable(s.refused, now)}</tbody></table></div>`,
  ].join('\n');
}

export { clockText, duration, esc, metaText, renderMain };
