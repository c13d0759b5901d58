import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type GenerateKeyPairResult, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJwtVerifier, IdentityProviderUnavailableError, type JwtVerifierOptions } from '../../src/api/jwt';
import { ConfigError } from '../../src/common/errors';

// OIDC bearer tokens against a real identity provider on 127.0.0.1: a
// discovery document and a JWKS served over HTTP, tokens signed with jose.
// Every request the provider gets is counted, so "no network" is checked.

const AUDIENCE = 'agent-api';
let server: http.Server;
let issuer: string;
let key: GenerateKeyPairResult; // published in the JWKS as kid k1
let otherKey: GenerateKeyPairResult; // published nowhere
const requests: string[] = [];

beforeAll(async () => {
  key = await generateKeyPair('RS256');
  otherKey = await generateKeyPair('RS256');
  const second = await generateKeyPair('ES256');
  const jwks = {
    keys: [
      { ...(await exportJWK(key.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' },
      { ...(await exportJWK(second.publicKey)), kid: 'k2', alg: 'ES256', use: 'sig' },
    ],
  };
  server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    const body =
      req.url === '/.well-known/openid-configuration'
        ? { issuer, jwks_uri: `${issuer}/jwks` }
        : req.url === '/jwks'
          ? jwks
          : undefined;
    res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(body ?? {}));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
});

const verifier = (options: Partial<JwtVerifierOptions> = {}) =>
  createJwtVerifier({ issuer, audience: AUDIENCE, ...options });

interface SignOptions {
  signWith?: GenerateKeyPairResult;
  kid?: string;
  iss?: string;
  aud?: string;
  expiresIn?: string | number;
  noExp?: boolean;
}
function sign(claims: JWTPayload, o: SignOptions = {}): Promise<string> {
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: o.kid ?? 'k1' })
    .setIssuer(o.iss ?? issuer)
    .setAudience(o.aud ?? AUDIENCE)
    .setIssuedAt();
  if (!o.noExp) jwt.setExpirationTime(o.expiresIn ?? '5m');
  return jwt.sign((o.signWith ?? key).privateKey);
}
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const sorted = (roles: ReadonlySet<string> | undefined) => [...(roles ?? [])].sort();

describe('JWT bearer tokens', () => {
  it('a valid token gives its subject and the API roles of an array claim, ignoring names that are not API roles', async () => {
    const principal = await verifier().verify(await sign({ sub: 'alice', roles: ['requester', 'approver', 'admin'] }));
    expect(principal?.subject).toBe('alice');
    expect(sorted(principal?.roles)).toEqual(['approver', 'requester']);
  });

  it('reads a space-separated string claim', async () => {
    const principal = await verifier({ rolesClaim: 'scope' }).verify(
      await sign({ sub: 'bob', scope: 'openid approver operator' }),
    );
    expect(sorted(principal?.roles)).toEqual(['approver', 'operator']);
  });

  it('follows a dotted claim path and maps IdP roles through roleMap (unmapped names, API role names included, give nothing)', async () => {
    const v = verifier({
      rolesClaim: 'realm_access.roles',
      roleMap: { 'support-lead': ['approver', 'requester'], ops: ['operator'] },
    });
    const principal = await v.verify(
      await sign({ sub: 'carol', realm_access: { roles: ['support-lead', 'requester', 'offline_access'] } }),
    );
    expect(principal?.subject).toBe('carol');
    expect(sorted(principal?.roles)).toEqual(['approver', 'requester']);
  });

  it('takes a claim whose own name has dots before following a path', async () => {
    const principal = await verifier({ rolesClaim: 'https://example.com/roles' }).verify(
      await sign({ sub: 'dan', 'https://example.com/roles': ['operator'] }),
    );
    expect(sorted(principal?.roles)).toEqual(['operator']);
  });

  it('names the subject by subjectClaim, and refuses a token without it', async () => {
    const v = verifier({ subjectClaim: 'email' });
    expect((await v.verify(await sign({ sub: 'u-1', email: 'erin@example.com', roles: ['requester'] })))?.subject).toBe(
      'erin@example.com',
    );
    expect(await v.verify(await sign({ sub: 'u-1', roles: ['requester'] }))).toBeUndefined();
    expect(await verifier().verify(await sign({ roles: ['requester'] }))).toBeUndefined();
  });

  it('returns a principal with empty roles when the token names no API role, so the API can answer 403', async () => {
    const v = verifier();
    const none = await v.verify(await sign({ sub: 'frank' }));
    expect(none?.subject).toBe('frank');
    expect(none?.roles.size).toBe(0);
    const unknown = await v.verify(await sign({ sub: 'frank', roles: ['admin', 'viewer'] }));
    expect(unknown?.subject).toBe('frank');
    expect(unknown?.roles.size).toBe(0);
  });

  it('reads groups from the groups claim: an array or a space-separated string, none when absent, names that are not group names left out', async () => {
    const v = verifier();
    const array = await v.verify(
      await sign({ sub: 'gina', roles: ['approver'], groups: ['finance', 'support-leads', 42, 'no spaces', ''] }),
    );
    expect(sorted(array?.groups)).toEqual(['finance', 'support-leads']);
    expect(sorted(array?.roles)).toEqual(['approver']);
    const text = await v.verify(await sign({ sub: 'gina', groups: 'finance  legal' }));
    expect(sorted(text?.groups)).toEqual(['finance', 'legal']);
    const none = await v.verify(await sign({ sub: 'gina', roles: ['approver'] }));
    expect(none?.groups.size).toBe(0);
    const notAList = await v.verify(await sign({ sub: 'gina', groups: { finance: true } }));
    expect(notAList?.groups.size).toBe(0);
  });

  it('reads groups from groupsClaim, following a dotted path as rolesClaim does, or a claim whose own name has dots', async () => {
    const v = verifier({ groupsClaim: 'realm_access.groups' });
    const principal = await v.verify(
      await sign({
        sub: 'hal',
        roles: ['approver'],
        groups: ['ignored'],
        realm_access: { groups: ['/finance', 'legal'] },
      }),
    );
    expect(sorted(principal?.groups)).toEqual(['/finance', 'legal']);
    const named = await verifier({ groupsClaim: 'https://example.com/groups' }).verify(
      await sign({ sub: 'hal', 'https://example.com/groups': ['finance'] }),
    );
    expect(sorted(named?.groups)).toEqual(['finance']);
  });

  it('refuses an expired token (beyond the clock tolerance) and one without exp, and accepts one just expired within it', async () => {
    const v = verifier();
    const now = Math.floor(Date.now() / 1000);
    expect(await v.verify(await sign({ sub: 'gina', roles: ['requester'] }, { expiresIn: now - 120 }))).toBeUndefined();
    expect(await v.verify(await sign({ sub: 'gina', roles: ['requester'] }, { noExp: true }))).toBeUndefined();
    expect((await v.verify(await sign({ sub: 'gina', roles: ['requester'] }, { expiresIn: now - 10 })))?.subject).toBe(
      'gina',
    );
  });

  it('refuses a token for another audience', async () => {
    expect(
      await verifier().verify(await sign({ sub: 'h', roles: ['requester'] }, { aud: 'some-other-app' })),
    ).toBeUndefined();
  });

  it('refuses a token of another issuer', async () => {
    expect(
      await verifier().verify(await sign({ sub: 'i', roles: ['requester'] }, { iss: 'https://evil.example.com' })),
    ).toBeUndefined();
    expect(
      await verifier().verify(await sign({ sub: 'i', roles: ['requester'] }, { iss: `${issuer}/other` })),
    ).toBeUndefined();
  });

  it('refuses a token signed by another key, whether it claims a published kid or an unknown one', async () => {
    const v = verifier();
    expect(await v.verify(await sign({ sub: 'j', roles: ['requester'] }, { signWith: otherKey }))).toBeUndefined();
    expect(
      await v.verify(await sign({ sub: 'j', roles: ['requester'] }, { signWith: otherKey, kid: 'k9' })),
    ).toBeUndefined();
    expect(await v.verify(await sign({ sub: 'j', roles: ['requester'] }, { kid: 'k9' }))).toBeUndefined();
  });

  it("refuses alg 'none' and HS256 tokens, even with a secret known to anyone (the JWKS key's modulus)", async () => {
    const v = verifier();
    const payload = {
      sub: 'k',
      roles: ['operator'],
      iss: issuer,
      aud: AUDIENCE,
      exp: Math.floor(Date.now() / 1000) + 300,
    };
    expect(await v.verify(`${b64({ alg: 'none', typ: 'JWT' })}.${b64(payload)}.`)).toBeUndefined();
    expect(await v.verify(`${b64({ alg: 'none', typ: 'JWT' })}.${b64(payload)}.c2ln`)).toBeUndefined();
    const published = await exportJWK(key.publicKey);
    const hs256 = await new SignJWT(payload)
      .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
      .sign(new TextEncoder().encode(published.n));
    expect(await v.verify(hs256)).toBeUndefined();
    // The same claims, properly signed, pass: the refusals above are the algorithm's.
    expect((await v.verify(await sign(payload)))?.subject).toBe('k');
  });

  it('refuses strings that are not JWTs without any request reaching the identity provider', async () => {
    const v = verifier(); // never used: any key lookup would have to fetch discovery first
    const before = requests.length;
    for (const token of [
      'a'.repeat(64),
      '',
      'Bearer abc',
      'a.b',
      'a.b.c.d',
      'x.y.z',
      'not a jwt.at.all',
      `${b64({ alg: 'RS256' })}.e30.`,
    ]) {
      expect(await v.verify(token)).toBeUndefined();
    }
    expect(requests.length).toBe(before);
    // The counter does count: a real token makes this new verifier fetch discovery and keys.
    expect(await v.verify(await sign({ sub: 'l', roles: ['requester'] }))).toBeDefined();
    expect(requests.slice(before)).toEqual(['/.well-known/openid-configuration', '/jwks']);
  });

  it('fetches nothing when built, discovers the JWKS on the first verify and then works from its cache; a given jwksUrl skips discovery', async () => {
    const before = requests.length;
    const v = verifier();
    expect(requests.length).toBe(before);
    await Promise.all(
      [1, 2, 3].map(async () => expect(await v.verify(await sign({ sub: 'm', roles: ['requester'] }))).toBeDefined()),
    );
    await v.verify(await sign({ sub: 'm', roles: ['requester'] }));
    expect(requests.slice(before)).toEqual(['/.well-known/openid-configuration', '/jwks']);

    const direct = verifier({ jwksUrl: `${issuer}/jwks` });
    const mark = requests.length;
    expect((await direct.verify(await sign({ sub: 'n', roles: ['operator'] })))?.subject).toBe('n');
    expect(requests.slice(mark)).toEqual(['/jwks']);
  });

  it('rejects with IdentityProviderUnavailableError naming the URL when the identity provider cannot be reached', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const deadIssuer = `http://127.0.0.1:${port}`;
    const v = createJwtVerifier({ issuer: deadIssuer, audience: AUDIENCE });
    const token = await sign({ sub: 'o', roles: ['requester'] }, { iss: deadIssuer });
    const error = await v.verify(token).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(IdentityProviderUnavailableError);
    expect((error as Error).message).toContain(
      `The identity provider at ${deadIssuer}/.well-known/openid-configuration could not be reached`,
    );

    const noKeys = createJwtVerifier({ issuer: deadIssuer, audience: AUDIENCE, jwksUrl: `${deadIssuer}/jwks` });
    await expect(noKeys.verify(token)).rejects.toThrow(IdentityProviderUnavailableError);
    await expect(noKeys.verify(token)).rejects.toThrow(
      `The identity provider at ${deadIssuer}/jwks could not be reached`,
    );
  });

  it('refuses bad options with a ConfigError naming the option', () => {
    const bad: [Partial<JwtVerifierOptions>, RegExp][] = [
      [{ issuer: 'http://idp.example.com' }, /issuer must be an https:\/\/ URL/],
      [{ issuer: 'idp.example.com' }, /issuer must be an https:\/\/ URL/],
      [{ audience: '' }, /audience must be a non-empty string/],
      [{ audience: undefined }, /audience must be a non-empty string/],
      [{ jwksUrl: 'http://keys.example.com/jwks' }, /jwksUrl must be an https:\/\/ URL/],
      [{ algorithms: ['HS256'] }, /algorithms must list/],
      [{ algorithms: ['none'] }, /algorithms must list/],
      [{ algorithms: [] }, /algorithms must list/],
      [{ roleMap: { admins: ['admin' as never] } }, /roleMap must map/],
      [{ rolesClaim: '' }, /rolesClaim must be a non-empty string/],
      [{ subjectClaim: ' ' }, /subjectClaim must be a non-empty string/],
      [{ groupsClaim: '' }, /groupsClaim must be a non-empty string/],
      [{ clockToleranceSeconds: -1 }, /clockToleranceSeconds must be/],
    ];
    for (const [options, message] of bad) {
      expect(() => createJwtVerifier({ issuer: 'https://idp.example.com', audience: AUDIENCE, ...options })).toThrow(
        ConfigError,
      );
      expect(() => createJwtVerifier({ issuer: 'https://idp.example.com', audience: AUDIENCE, ...options })).toThrow(
        message,
      );
    }
    expect(() => createJwtVerifier({ issuer: 'http://localhost:8080/realms/main', audience: AUDIENCE })).not.toThrow();
  });
});
