// The two entry points hold exactly what they promise (docs/design.md#public-names): the root
// what users call, `./adapter` what adapter and store authors need besides. A name added to either
// must be added here on purpose; a name that leaks from one into the other fails.
import { describe, expect, it } from 'vitest';
import * as adapter from './adapter.js';
import * as root from './index.js';

describe('the entry points', () => {
  it('the root exports exactly the public names, at runtime', () => {
    expect(Object.keys(root).sort()).toEqual(
      [
        'createAccessList',
        'accessDeniedError',
        'createConcurrencyLimiter',
        'createFailureLimiter',
        'createWindowLimiter',
        'createSessionCreationLimiter',
        'createRestartScheduler',
        'MemoryStore',
        'resolveClient',
        'authSubject',
        'normalizeIp',
        'isLoopback',
        'normalizeOrigin',
        'ipKey',
        'authRateLimitedError',
        'methodRateLimitedError',
        'sessionRateLimitMessage',
        'storeUnavailableError',
        'rateLimitHeaders',
        'presets',
        'PortcullisConfigError',
        'systemClock',
        'channels',
      ].sort(),
    );
  });

  it('the adapter entry exports exactly the adapter plumbing, none of it also at the root', () => {
    const names = Object.keys(adapter).sort();
    expect(names).toEqual(
      [
        'authFailedError',
        'answerResponse',
        'batchCalls',
        'booleanOption',
        'byEnd',
        'callStore',
        'callSafely',
        'clientAddressSpec',
        'concurrencyControls',
        'concurrencyMiddleware',
        'controlsOf',
        'createAuthGate',
        'createClientResolver',
        'createConcurrencyGate',
        'createRequestGate',
        'createWebhookGate',
        'eitherOption',
        'exclusiveLimiter',
        'fetchConcurrency',
        'fetchGuard',
        'fetchRateLimit',
        'fetchRawRequest',
        'functionOption',
        'guardMiddleware',
        'HOOK_ERROR',
        'integerOption',
        'isPromise',
        'keepShape',
        'LinkedDecision',
        'knownOutcome',
        'mapMaybe',
        'methodsOption',
        'nonEmptyStringOption',
        'oneOfOption',
        'onLimitedSpec',
        'outcomeOnce',
        'parseOptions',
        'rateLimitMiddleware',
        'reportHookError',
        'requestRateLimitedError',
        'requiredOption',
        'retryAfterSeconds',
        'safeLogger',
        'sessionCreationLimiterSpec',
        'systemTimers',
        'timeStoreCall',
        'unresolvedAddressWarning',
        'warningsOption',
        'windowLimiterSpec',
        'withControls',
        'withResponseHeaders',
        'withoutUndefined',
        'WARNING_CODES',
      ].sort(),
    );
    expect(names.filter((name) => name in root)).toEqual([]);
  });
});
