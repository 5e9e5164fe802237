// Access lists: how subjects are spelt and refused, which rule decides a request, how rules end,
// that a full list refuses a new subject, and that two lists over one store see each other's changes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cidrContains, parseCidr, parseIp } from '../ip.js';
import { MemoryStore } from '../memory-store.js';
import type { AccessListing, AccessRuleInput, Store } from '../store.js';
import { manualClock } from '../testing/manual-clock.js';
import { accessMatchOf, createAccessList } from './access-list.js';
import { accessSubject } from './subject.js';

const setup = (start = 1_000_000) => {
  const clock = manualClock(start);
  const store = new MemoryStore({ clock, timers: clock });
  const list = createAccessList({ store, clock, timers: clock });
  return { clock, store, list };
};

describe('accessSubject', () => {
  it.each([
    ['203.0.113.7', 'ip:203.0.113.7'],
    ['ip:203.0.113.7', 'ip:203.0.113.7'],
    ['10.1.2.3/8', 'ip:10.0.0.0/8'],
    ['203.0.113.7/32', 'ip:203.0.113.7'],
    ['::ffff:10.0.0.1', 'ip:10.0.0.1'],
    ['::ffff:10.0.0.0/104', 'ip:10.0.0.0/8'],
    ['2001:DB8:0:0:1::/48', 'ip:2001:db8::/48'],
    ['2001:db8::1', 'ip:2001:db8::1'],
    ['account:alice', 'account:alice'],
    ['origin:HTTPS://App.Example:443', 'origin:https://app.example'],
    ['origin:null', 'origin:null'],
  ])('%s is %s', (input, text) => {
    expect(accessSubject(input).text).toBe(text);
  });

  it('takes the object forms', () => {
    expect(accessSubject({ ip: '10.0.0.0/8' }).text).toBe('ip:10.0.0.0/8');
    expect(accessSubject({ account: 'ip:1.2.3.4' }).text).toBe('account:ip:1.2.3.4');
    expect(accessSubject({ origin: 'https://a.example' }).text).toBe('origin:https://a.example');
  });

  it.each([
    ['', 'is not an IP address'],
    ['0.0.0.0/0', 'is not an IP address'],
    ['10.0.0.1/33', 'is not an IP address'],
    ['127.1', 'is not an IP address'],
    ['0x7f.0.0.1', 'is not an IP address'],
    ['account:', 'an account must be'],
    [`account:${'a'.repeat(257)}`, 'an account must be'],
    ['account:a\nb', 'an account must be'],
    ['origin:not a url', 'is not an origin'],
    ['origin:', 'is not an origin'],
  ])('refuses %j', (input, message) => {
    expect(() => accessSubject(input)).toThrow(
      expect.objectContaining({
        code: 'ERR_PORTCULLIS_ACCESS_RULE',
        message: expect.stringContaining(message),
      }),
    );
  });

  it('refuses objects that are no subject', () => {
    for (const bad of [null, [], {}, { ip: 1 }, { ip: '1.2.3.4', account: 'a' }, { host: 'x' }])
      expect(() => accessSubject(bad as never)).toThrow(
        expect.objectContaining({ code: 'ERR_PORTCULLIS_ACCESS_RULE' }),
      );
  });

  it('never throws anything but its config error, whatever the text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (text) => {
        try {
          const s = accessSubject(text);
          // A canonical text reads back as itself.
          expect(accessSubject(s.text).text).toBe(s.text);
        } catch (error) {
          expect((error as { code?: string }).code).toBe('ERR_PORTCULLIS_ACCESS_RULE');
        }
      }),
    );
  });
});

describe('createAccessList', () => {
  it('denies and allows by address, network, account and origin', async () => {
    const { list } = setup();
    await list.deny('10.0.0.0/8', { reason: 'abuse from this network' });
    await list.allow('10.1.2.3');
    await list.deny('account:mallory', { reason: 'fraud' });
    await list.deny('origin:https://evil.example');
    await list.allow('2001:db8::/32');
    expect(list.check({ ip: '10.9.9.9' })).toEqual({
      subject: 'ip:10.0.0.0/8',
      kind: 'ip',
      action: 'deny',
      reason: 'abuse from this network',
      until: undefined,
    });
    // The most specific network decides within a kind.
    expect(list.check({ ip: '10.1.2.3' })?.action).toBe('allow');
    expect(list.check({ ip: '::ffff:10.1.2.3' })?.action).toBe('allow');
    // Across kinds a deny wins: an allowed address does not let a denied account in.
    expect(list.check({ ip: '10.1.2.3', account: 'mallory' })).toMatchObject({
      subject: 'account:mallory',
      action: 'deny',
      reason: 'fraud',
    });
    expect(list.check({ ip: '192.0.2.1', origin: 'https://EVIL.example:443' })?.subject).toBe(
      'origin:https://evil.example',
    );
    expect(list.check({ ip: '2001:db8:5::1' })?.action).toBe('allow');
    expect(list.check({ ip: '192.0.2.1', account: 'alice', origin: 'https://a.example' })).toBe(
      undefined,
    );
    expect(list.check({ ip: 'junk' })).toBe(undefined);
    expect(list.check({})).toBe(undefined);
  });

  it('meets an IPv4 rule with the IPv6 spellings that carry the address', async () => {
    const { list } = setup();
    await list.deny('192.0.2.1');
    // NAT64 (64:ff9b::/96), 6to4 (2002::/16) and Teredo (2001::/32, inverted) of 192.0.2.1.
    expect(list.check({ ip: '64:ff9b::c000:201' })?.subject).toBe('ip:192.0.2.1');
    expect(list.check({ ip: '2002:c000:201::1' })?.subject).toBe('ip:192.0.2.1');
    expect(list.check({ ip: '2001:0:4136:e378:8000:63bf:3fff:fdfe' })?.subject).toBe(
      'ip:192.0.2.1',
    );
    expect(list.check({ ip: '2001:db8::1' })).toBe(undefined);
  });

  it('replaces the rule of a subject, removes it, and lists denies first', async () => {
    const { list } = setup();
    await list.deny('account:bob', { reason: 'first' });
    await list.allow('account:bob', { reason: 'second' });
    await list.deny('10.0.0.0/8');
    expect((await list.rules()).map((r) => [r.subject, r.action, r.reason])).toEqual([
      ['ip:10.0.0.0/8', 'deny', ''],
      ['account:bob', 'allow', 'second'],
    ]);
    expect(await list.remove('account:bob')).toBe(true);
    expect(await list.remove({ account: 'bob' })).toBe(false);
    expect(list.check({ account: 'bob' })).toBe(undefined);
  });

  it('ends a rule after its ms, on the store clock and its own', async () => {
    const { list, clock } = setup();
    const rule = await list.deny('203.0.113.7', { ms: 60_000, reason: 'cool off' });
    expect(rule.until).toBe(1_060_000);
    clock.advance(59_999);
    expect(list.check({ ip: '203.0.113.7' })?.until).toBe(1_060_000);
    clock.advance(1);
    expect(list.check({ ip: '203.0.113.7' })).toBe(undefined);
    expect(await list.rules()).toEqual([]);
  });

  it('an ended specific rule leaves the wider one in force', async () => {
    const { list, clock } = setup();
    await list.deny('10.0.0.0/8');
    await list.allow('10.0.0.1', { ms: 1000 });
    expect(list.check({ ip: '10.0.0.1' })?.action).toBe('allow');
    clock.advance(1000);
    expect(list.check({ ip: '10.0.0.1' })?.action).toBe('deny');
  });

  it('refuses a new subject when maxRules are in force, never an update', async () => {
    const clock = manualClock(0);
    const list = createAccessList({ clock, timers: clock, maxRules: 2 });
    await list.deny('10.0.0.1');
    await list.deny('10.0.0.2', { ms: 10 });
    await expect(list.deny('10.0.0.3')).rejects.toMatchObject({ code: 'ERR_PORTCULLIS_MAX_RULES' });
    await list.allow('10.0.0.1', { reason: 'changed my mind' });
    clock.advance(10);
    await list.deny('10.0.0.3');
    expect((await list.rules()).length).toBe(2);
    await list.close();
  });

  it('refuses bad rule options and bad list options', async () => {
    const { list } = setup();
    for (const opts of [
      { ms: 0 },
      { ms: 1.5 },
      { ms: -1 },
      { ms: 315_360_000_001 },
      { reason: 'x'.repeat(201) },
      { reason: 'a\u0000b' },
      { reason: 7 },
      { why: 'typo' },
    ])
      await expect(list.deny('10.0.0.1', opts as never)).rejects.toMatchObject({
        code: 'ERR_PORTCULLIS_ACCESS_RULE',
      });
    expect(await list.rules()).toEqual([]);
    expect(() => createAccessList({ name: 'a b' })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_NAME' }),
    );
    expect(() => createAccessList({ maxRules: 0 })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_MAX_RULES' }),
    );
    expect(() => createAccessList({ refreshMs: 10 })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_REFRESH_MS' }),
    );
    expect(() => createAccessList({ store: {} as never })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_STORE' }),
    );
    expect(() => createAccessList({ rules: [] } as never)).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_UNKNOWN_OPTION' }),
    );
  });

  it('two lists of one name over one store share their rules; other names do not', async () => {
    const { store, clock } = setup();
    const a = createAccessList({ store, clock, timers: clock });
    const b = createAccessList({ store, clock, timers: clock });
    const other = createAccessList({ store, clock, timers: clock, name: 'other' });
    await a.deny('account:eve');
    expect(b.check({ account: 'eve' })?.action).toBe('deny');
    expect(other.check({ account: 'eve' })).toBe(undefined);
    await b.remove('account:eve');
    expect(a.check({ account: 'eve' })).toBe(undefined);
  });

  it('logs a denied subject at most once a minute, with the count between', async () => {
    const clock = manualClock(0);
    const lines: Array<[object, string | undefined]> = [];
    const logger = { warn: (o: object, m?: string) => lines.push([o, m]), error: () => {} };
    const list = createAccessList({ clock, timers: clock, logger });
    await list.deny('10.0.0.1', { reason: 'abuse' });
    const m = accessMatchOf(list);
    const rule = list.check({ ip: '10.0.0.1' });
    if (m === undefined || rule === undefined) throw new Error('no rule');
    m.denied(rule, 'rateLimit default');
    m.denied(rule, 'rateLimit default');
    m.denied(rule, 'rateLimit default');
    clock.advance(60_000);
    m.denied(rule, 'rateLimit default');
    expect(lines).toEqual([
      [
        {
          code: 'PORTCULLIS_ACCESS_DENIED',
          list: 'default',
          subject: 'ip:10.0.0.1',
          reason: 'abuse',
          where: 'rateLimit default',
        },
        'access list default: denied ip:10.0.0.1 at rateLimit default (abuse)',
      ],
      [
        {
          code: 'PORTCULLIS_ACCESS_DENIED',
          list: 'default',
          subject: 'ip:10.0.0.1',
          reason: 'abuse',
          where: 'rateLimit default',
          alsoDenied: 2,
        },
        'access list default: denied ip:10.0.0.1 at rateLimit default (abuse); 2 more denied since the last line',
      ],
    ]);
  });

  /** A store whose access calls are promises that the test settles, and that can fail. */
  function slowStore() {
    const inner = new MemoryStore();
    const pending: Array<() => void> = [];
    let failing = false;
    const store = {
      ...({} as Store),
      accessRules(list: string): Promise<AccessListing> {
        return new Promise((resolve, reject) =>
          pending.push(() =>
            failing ? reject(new Error('ECONNREFUSED')) : resolve(inner.accessRules(list)),
          ),
        );
      },
      putAccessRule: (list: string, rule: AccessRuleInput, max: number) =>
        Promise.resolve(inner.putAccessRule(list, rule, max)),
      removeAccessRule: (list: string, s: string) =>
        Promise.resolve(inner.removeAccessRule(list, s)),
      close: () => undefined,
    } as unknown as Store;
    return {
      store,
      inner,
      settle: () => {
        for (const p of pending.splice(0)) p();
      },
      fail: (on: boolean) => {
        failing = on;
      },
    };
  }

  it('a request before the first read waits for it; a failed read keeps the last rules', async () => {
    const clock = manualClock(0);
    const s = slowStore();
    s.inner.putAccessRule(
      'default',
      { subject: 'ip:10.0.0.1', action: 'deny', reason: '', ms: 0 },
      10,
    );
    const errors: object[] = [];
    const list = createAccessList({
      store: s.store,
      clock,
      timers: clock,
      refreshMs: 1000,
      logger: { warn: () => {}, error: (o) => errors.push(o) },
    });
    const m = accessMatchOf(list);
    const early = m?.match({ ip: parseIp('10.0.0.1') });
    expect(early).toBeInstanceOf(Promise);
    s.settle();
    expect((await early)?.action).toBe('deny');
    s.fail(true);
    clock.advance(1000);
    s.settle();
    await list.ready();
    await Promise.resolve();
    await Promise.resolve();
    expect(errors).toEqual([expect.objectContaining({ code: 'PORTCULLIS_ACCESS_READ_FAILED' })]);
    // Still denied from the copy this process holds, with no round trip.
    expect(list.check({ ip: '10.0.0.1' })?.action).toBe('deny');
    await list.close();
  });
});

describe('matching against the networks', () => {
  it('agrees with cidrContains for every address and network', () => {
    const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((p) => p.join('.'));
    fc.assert(
      fc.property(v4, fc.integer({ min: 1, max: 32 }), v4, (net, prefix, addr) => {
        const clock = manualClock(0);
        const store = new MemoryStore({ clock });
        const list = createAccessList({ store, clock, timers: clock });
        store.putAccessRule(
          'default',
          { subject: accessSubject(`${net}/${prefix}`).text, action: 'deny', reason: '', ms: 0 },
          10,
        );
        void list.refresh();
        const inside = cidrContains(parseCidr(`${net}/${prefix}`) as never, parseIp(addr) as never);
        expect(list.check({ ip: addr }) !== undefined).toBe(inside);
      }),
      { numRuns: 300 },
    );
  });
});
