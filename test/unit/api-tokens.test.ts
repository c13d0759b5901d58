import { describe, expect, it } from 'vitest';
import { TokenVerifier, type ApiTokenConfig } from '../../src/api/tokens';
import { ConfigError } from '../../src/common/errors';

// Static bearer tokens: the principal a token names carries its roles and its
// groups (which approval policy rules let it decide); a token whose groups
// are not a list of valid group names is refused when the API starts.

const token = (over: Partial<ApiTokenConfig> & Record<string, unknown> = {}): ApiTokenConfig => ({
  subject: 'ada@example.com',
  roles: ['approver'],
  token: 'a'.repeat(40),
  ...over,
});

describe('API tokens', () => {
  it('gives the principal its groups, and no groups when the token names none', () => {
    const verifier = new TokenVerifier([
      token({ groups: ['finance', 'support-leads', '/org/eu', 'ada@finance'] }),
      token({ subject: 'bob@example.com', token: 'b'.repeat(40) }),
      token({ subject: 'cy@example.com', token: 'c'.repeat(40), groups: [] }),
    ]);
    const ada = verifier.verify('a'.repeat(40));
    expect(ada?.subject).toBe('ada@example.com');
    expect([...(ada?.groups ?? [])].sort()).toEqual(['/org/eu', 'ada@finance', 'finance', 'support-leads']);
    expect([...(ada?.roles ?? [])]).toEqual(['approver']);
    expect(verifier.verify('b'.repeat(40))?.groups.size).toBe(0);
    expect(verifier.verify('c'.repeat(40))?.groups.size).toBe(0);
    expect(verifier.verify('d'.repeat(40))).toBeUndefined();
  });

  it('refuses groups that are not a list of valid group names, naming the token and what a name may hold', () => {
    const bad: [unknown, RegExp][] = [
      ['finance', /API token 1 \(ada@example.com\) has "groups" "finance": give a list of at most 100 group names/],
      [{ finance: true }, /has "groups" \{"finance":true\}: give a list/],
      [Array.from({ length: 101 }, (_, i) => `g${i}`), /give a list of at most 100 group names/],
      [['finance', ''], /names the group "", which is not a valid group name: use 1 to 128 letters, digits/],
      [['support leads'], /names the group "support leads", which is not a valid group name/],
      [['x'.repeat(129)], /which is not a valid group name/],
      [[42], /names the group 42, which is not a valid group name/],
    ];
    for (const [groups, message] of bad) {
      const make = () => new TokenVerifier([token({ groups: groups as string[] })]);
      expect(make).toThrow(ConfigError);
      expect(make).toThrow(message);
    }
  });
});
