// The page's drawing functions (status-view.js): whatever a client put in a key, a scope or a
// reason comes out as text, never markup; keys wrap only after their separators; a ban is tagged.
import { describe, expect, it } from 'vitest';
import { clockText, esc, renderMain } from '../src/status-view.js';

const HOSTILE = `"><img src=x onerror=alert(1)><script>alert(2)</script>'`;

function snapshot(key: string) {
  return {
    now: 10_000,
    gateway: { name: HOSTILE, uptimeMs: 1, configHash: 'h', connections: {} },
    sessions: { rule: HOSTILE, limit: 1, used: 0, resetMs: 0, known: 0, maxKnown: 1 },
    restart: {
      rule: 'r',
      restarts: 0,
      pending: { dueInMs: 5, reasons: [HOSTILE] },
      lastAgoMs: null,
      cooldownLeftMs: 0,
    },
    lockouts: [
      {
        limiter: HOSTILE,
        title: HOSTILE,
        rule: HOSTILE,
        size: 1,
        maxEntries: 2,
        activeCount: 1,
        active: [{ scope: HOSTILE, key, untilMs: 61_000, layer: HOSTILE, unlock: true }],
      },
    ],
    quotas: [],
    refused: [
      {
        seq: 1,
        at: 9_000,
        event: HOSTILE,
        limiter: HOSTILE,
        scope: HOSTILE,
        key,
        reason: HOSTILE,
        retryAfterMs: 5_000,
        detail: HOSTILE,
      },
    ],
    rates: {
      nowS: 10,
      windowS: 300,
      limiters: [
        {
          limiter: HOSTILE,
          title: HOSTILE,
          totals: { allowed: 1, refused: 1, lockouts: 0 },
          points: [[9, 1, 1, 0]],
        },
      ],
    },
  };
}

describe('status-view', () => {
  it('escapes everything a client could have written', () => {
    // The unlock token too: the page reads it back from an attribute the server wrote.
    const html = renderMain(snapshot(HOSTILE) as never, HOSTILE);
    expect(html).toContain('<form class="unlock"');
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<script');
    // Every copy of it is the escaped one.
    const copies = html.split('onerror=alert(1)').length - 1;
    expect(copies).toBeGreaterThan(5);
    expect(html.split('&quot;&gt;&lt;img src=x onerror=alert(1)&gt;').length - 1).toBe(copies);
  });

  it('lets a key wrap only after : / | - @ and a . before a letter, and counts time left down in m:ss', () => {
    const html = renderMain(snapshot('config.patch|ops-laptop|127.0.0.1') as never);
    expect(html).toContain(
      '<td class="key">config.<wbr>patch|<wbr>ops-<wbr>laptop|<wbr>127.0.0.1</td><td class="left" data-until="71000" data-over="0:00">1:01</td>',
    );
    // The refusal: 5 s wait told at 9 000, so 4 s left at 10 000.
    expect(html).toContain('<td class="left" data-until="14000" data-over="over">0:04</td>');
    expect([clockText(0), clockText(1), clockText(59_001), clockText(300_000)]).toEqual([
      '0:00',
      '0:01',
      '1:00',
      '5:00',
    ]);
    expect(esc(`<&>"'`)).toBe('&lt;&amp;&gt;&quot;&#39;');
  });

  it('tags a ban and draws no unlock button without a token or for a row no unlock reaches', () => {
    const s = snapshot('203.0.113.7');
    const row = s.lockouts[0]?.active[0] as { layer: string; unlock: boolean };
    row.layer = 'ban';
    expect(renderMain(s as never, 'tok')).toContain(
      `<td class="nowrap">${esc(HOSTILE)} <span class="tag ban" title="set by an operator">ban</span></td>`,
    );
    expect(renderMain(s as never)).toContain('data-over="0:00">1:01</td><td class="act"></td>');
    row.unlock = false;
    expect(renderMain(s as never, 'tok')).toContain(
      'data-over="0:00">1:01</td><td class="act"></td>',
    );
  });
});
