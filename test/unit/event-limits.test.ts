import { describe, expect, it } from 'vitest';
import { API_ROLES, TokenVerifier } from '../../src/api/tokens';
import { ConfigError } from '../../src/common/errors';
import { EVENT_LIMITS, eventProblem } from '../../src/contract/events';

// What an event may be (src/contract/events.ts): eventProblem says what is
// wrong and the limit, for the API, the client and the CLI alike. And who may
// send one: the `events` role of the API's tokens.

describe('the limits of an event', () => {
  it('takes a name, a key and any JSON payload within the limits', () => {
    expect(eventProblem({ name: 'payment.settled', key: 'ord_1001', payload: { amount: 1500 } })).toBeUndefined();
    expect(eventProblem({ name: 'a', key: 'k' })).toBeUndefined();
    expect(eventProblem({ name: 'shipment:eu-2_v1', key: 'ключ 😀', payload: null })).toBeUndefined();
    const longest = { name: 'n'.repeat(EVENT_LIMITS.nameMaxChars), key: 'k'.repeat(EVENT_LIMITS.keyMaxChars) };
    expect(eventProblem(longest)).toBeUndefined();
  });

  it('says what is wrong with a name: missing, too long, or with characters it may not hold', () => {
    expect(eventProblem({ key: 'k' })).toMatch(/^An event needs a name \(what happened, e.g. "payment.settled"\)/);
    expect(eventProblem({ name: '', key: 'k' })).toMatch(/^An event needs a name/);
    expect(eventProblem({ name: 'n'.repeat(201), key: 'k' })).toBe("The event's name has 201 characters; at most 200.");
    expect(eventProblem({ name: 'payment settled', key: 'k' })).toBe(
      'The event\'s name "payment settled" may hold letters, digits and . _ : - only, starting with a letter or digit.',
    );
    expect(eventProblem({ name: '.settled', key: 'k' })).toMatch(/starting with a letter or digit/);
    expect(eventProblem({ name: 'n'.repeat(EVENT_LIMITS.nameMaxChars), key: 'k' })).toBeUndefined();
  });

  it('says what is wrong with a key: missing, too long in characters (a 😀 is one), or unstorable', () => {
    expect(eventProblem({ name: 'n' })).toMatch(/^An event needs a key \(what it is about/);
    expect(eventProblem({ name: 'n', key: 42 })).toMatch(/^An event needs a key/);
    expect(eventProblem({ name: 'n', key: 'k'.repeat(501) })).toBe("The event's key has 501 characters; at most 500.");
    // Characters are code points, as the API's document counts them: 500 emoji are 1,000 UTF-16 units, and allowed.
    expect(eventProblem({ name: 'n', key: '😀'.repeat(EVENT_LIMITS.keyMaxChars) })).toBeUndefined();
    expect(eventProblem({ name: 'n', key: '😀'.repeat(EVENT_LIMITS.keyMaxChars + 1) })).toBe(
      "The event's key has 501 characters; at most 500.",
    );
    expect(eventProblem({ name: 'n', key: 'ord\u00001' })).toMatch(
      /^The event's key contains U\+0000 \(NUL\) at offset 3 .*which cannot be stored/,
    );
    expect(eventProblem({ name: 'n', key: 'ord\ud800' })).toMatch(/U\+D800 \(an unpaired high surrogate\) at offset 3/);
  });

  it('says how large the payload is as JSON and the limit, 64 KiB', () => {
    expect(EVENT_LIMITS.payloadMaxBytes).toBe(65_536);
    // {"s":"…"} is 8 bytes around the string.
    const fits = { s: 'x'.repeat(EVENT_LIMITS.payloadMaxBytes - 8) };
    expect(eventProblem({ name: 'n', key: 'k', payload: fits })).toBeUndefined();
    expect(eventProblem({ name: 'n', key: 'k', payload: { s: 'x'.repeat(EVENT_LIMITS.payloadMaxBytes) } })).toBe(
      "The event's payload is 65544 bytes as JSON; at most 65536. Send a reference to larger data instead.",
    );
    // Bytes, not characters: an é is two.
    expect(eventProblem({ name: 'n', key: 'k', payload: 'é'.repeat(40_000) })).toMatch(/is 80002 bytes as JSON/);
  });

  it('keeps an event nobody waits for 24 hours by default, 30 days at most', () => {
    expect(EVENT_LIMITS.defaultKeepMs).toBe(24 * 60 * 60 * 1000);
    expect(EVENT_LIMITS.maxKeepMs).toBe(30 * 24 * 60 * 60 * 1000);
  });
});

describe('who may send events', () => {
  it('is a role of its own, events, beside requester, approver and operator', () => {
    expect([...API_ROLES]).toEqual(['requester', 'approver', 'operator', 'events']);
    const verifier = new TokenVerifier([{ subject: 'gateway@example.com', roles: ['events'], token: 'g'.repeat(40) }]);
    expect([...(verifier.verify('g'.repeat(40))?.roles ?? [])]).toEqual(['events']);
  });

  it('refuses a token with a role that does not exist, listing the four', () => {
    const make = () => new TokenVerifier([{ subject: 'x', roles: ['event' as never], token: 'x'.repeat(40) }]);
    expect(make).toThrow(ConfigError);
    expect(make).toThrow('API token 1 (x) needs roles from requester, approver, operator, events; got ["event"].');
  });
});
