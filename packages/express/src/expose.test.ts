import type { Decision } from '@portcullis/core';
import express, { type Request } from 'express';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { exposeDecision } from './expose.js';
import { rateLimit } from './index.js';

const decision: Decision = {
  allowed: true,
  reason: 'allowed',
  limit: 5,
  remaining: 4,
  retryAfterMs: 0,
  resetMs: 60_000,
  key: '127.0.0.1',
};

describe('req.rateLimit without a shape change', () => {
  it('handlers read the decision, yet the request object gains no own property', async () => {
    const app = express();
    app.use(rateLimit({ limit: 5 }));
    app.get('/', (req, res) => {
      res.json({ own: Object.hasOwn(req, 'rateLimit'), remaining: req.rateLimit?.remaining });
    });
    expect((await request(app).get('/')).body).toEqual({ own: false, remaining: 4 });
    expect((await request(app).get('/')).body).toEqual({ own: false, remaining: 3 });
  });

  it('a handler may still assign req.rateLimit; another app is untouched', async () => {
    const app = express();
    app.use(rateLimit({ limit: 5 }));
    app.get('/', (req, res) => {
      req.rateLimit = { ...decision, remaining: 99 };
      res.json({ remaining: req.rateLimit.remaining });
    });
    expect((await request(app).get('/')).body).toEqual({ remaining: 99 });
    const other = express();
    other.get('/', (req, res) => res.json({ has: 'rateLimit' in req }));
    expect((await request(other).get('/')).body).toEqual({ has: false });
  });

  it('never touches a shared prototype: a hand-made request gets a plain property', () => {
    const plain = {} as Request;
    exposeDecision(plain, decision);
    expect(Object.hasOwn(plain, 'rateLimit')).toBe(true);
    expect(Object.hasOwn(Object.prototype, 'rateLimit')).toBe(false);
    expect(({} as { rateLimit?: unknown }).rateLimit).toBeUndefined();
  });
});
