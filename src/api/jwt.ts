/**
 * OIDC/JWT bearer tokens of the HTTP API: a token signed by the configured
 * identity provider (IdP) for the configured audience names a subject, a
 * claim of it names roles, mapped to the API's roles, and another its groups
 * (which approval policy rules let it decide). Keys come from the IdP's
 * JWKS, fetched lazily and cached (with a cooldown) by `jose`.
 */
import { createRemoteJWKSet, decodeJwt, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { AgentError, ConfigError } from '../common/errors';
import { POLICY_GROUP_NAME } from '../contract/policies';
import { API_ROLES, type ApiPrincipal, type ApiRole } from './tokens';

/** How a {@link createJwtVerifier} checks tokens and reads their subject and roles. */
export interface JwtVerifierOptions {
  /**
   * The IdP's issuer URL, compared exactly with the token's `iss`; https, or http only for localhost, 127.0.0.1 or
   * [::1].
   */
  issuer: string;
  /** The value the token's `aud` must hold (the API's client id or resource name). */
  audience: string;
  /**
   * The IdP's JWKS URL. Default: the `jwks_uri` of `${issuer}/.well-known/openid-configuration`, fetched on the first
   * verify.
   */
  jwksUrl?: string;
  /**
   * The claim holding the caller's IdP roles or groups (default `roles`). A dotted path such as
   * `realm_access.roles` is followed when no claim has that exact name. Its value is an array of
   * strings or a space-separated string.
   */
  rolesClaim?: string;
  /** IdP role/group names to API roles. Without it, claim values that are API role names are taken as they are. */
  roleMap?: Record<string, ApiRole[]>;
  /**
   * The claim holding the caller's groups (default `groups`), which an approval policy's rule may require of whoever
   * decides a call. A dotted path such as `realm_access.groups` is followed when no claim has that exact name. Its value
   * is an array of strings or a space-separated string; a token without it has no groups. Values that are not valid
   * group names (`POLICY_GROUP_NAME`: 1 to 128 letters, digits and `_ . : @ / -`) are left out.
   */
  groupsClaim?: string;
  /** The claim naming the caller (default `sub`; e.g. `email`). A token without it is refused. */
  subjectClaim?: string;
  /** Leeway for `exp`/`nbf`/`iat` against clock skew, in seconds (default 30). */
  clockToleranceSeconds?: number;
  /** Signature algorithms accepted (default RS256, ES256, EdDSA, PS256); asymmetric ones only, never `none` or HS*. */
  algorithms?: string[];
}

/** Checks bearer tokens against one IdP; made by {@link createJwtVerifier}. */
export interface JwtVerifier {
  /**
   * The principal a token names, with its roles and groups, or undefined when it is not a valid JWT of this issuer and audience
   * (not a JWT at all, bad signature, disallowed algorithm, expired or no `exp`, wrong `iss`/`aud`,
   * unknown key id, no subject). A principal whose claim names no API role is returned with empty
   * roles, so the caller can answer 403 rather than 401. Strings that are not JWTs, or whose `iss`
   * is another issuer, are refused without any network access.
   *
   * Rejects with {@link IdentityProviderUnavailableError} (answer 503) when the IdP's discovery
   * document or key set could not be fetched or used; a later call tries again.
   */
  verify(token: string): Promise<ApiPrincipal | undefined>;
}

/**
 * The IdP's discovery document or key set could not be fetched or used, so no token could be
 * checked: the API should answer 503. `url` is the address that failed; `cause` the underlying error.
 */
export class IdentityProviderUnavailableError extends AgentError {
  constructor(
    readonly url: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(
      `The identity provider at ${url} could not be reached: ${detail}. Tokens cannot be checked until it answers.`,
    );
    if (options && 'cause' in options) this.cause = options.cause;
  }
}

/** Asymmetric JWS algorithms that may be configured; `none` and HMAC (HS*) are never accepted. */
const ALLOWED_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];
const DEFAULT_ALGORITHMS = ['RS256', 'ES256', 'EdDSA', 'PS256'];
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const FETCH_TIMEOUT_MS = 5_000;
/** After a failed discovery, calls within this time fail at once instead of asking the IdP again. */
const DISCOVERY_RETRY_MS = 5_000;

/** `value` as a URL the IdP may be reached at (https, or http on this machine), or a ConfigError naming `option`. */
function idpUrl(option: string, value: unknown): URL {
  let url: URL | undefined;
  try {
    url = new URL(String(value));
  } catch {
    url = undefined;
  }
  const local = url?.hostname === 'localhost' || url?.hostname === '127.0.0.1' || url?.hostname === '[::1]';
  if (typeof value !== 'string' || !url || !(url.protocol === 'https:' || (url.protocol === 'http:' && local))) {
    throw new ConfigError(
      `JWT option ${option} must be an https:// URL (http:// only for localhost or 127.0.0.1); got ${JSON.stringify(value)}. Use the URL your identity provider publishes, e.g. https://login.example.com/realms/main.`,
    );
  }
  return url;
}

function nonEmpty(option: string, value: unknown, example: string): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new ConfigError(
      `JWT option ${option} must be a non-empty string; got ${JSON.stringify(value)}. Set it to e.g. ${example}.`,
    );
  }
  return value;
}

type Settings = Required<Omit<JwtVerifierOptions, 'jwksUrl' | 'roleMap'>> & {
  jwksUrl?: URL;
  roleMap?: Record<string, ApiRole[]>;
};

function validate(options: JwtVerifierOptions): Settings {
  idpUrl('issuer', options?.issuer);
  const audience = nonEmpty(
    'audience',
    options.audience,
    '"agent-api" (the client id or resource the IdP issues tokens for)',
  );
  const jwksUrl = options.jwksUrl === undefined ? undefined : idpUrl('jwksUrl', options.jwksUrl);
  const rolesClaim = nonEmpty('rolesClaim', options.rolesClaim ?? 'roles', '"roles" or "realm_access.roles"');
  const groupsClaim = nonEmpty('groupsClaim', options.groupsClaim ?? 'groups', '"groups" or "realm_access.groups"');
  const subjectClaim = nonEmpty('subjectClaim', options.subjectClaim ?? 'sub', '"sub" or "email"');
  const clockToleranceSeconds = options.clockToleranceSeconds ?? 30;
  if (
    typeof clockToleranceSeconds !== 'number' ||
    !Number.isFinite(clockToleranceSeconds) ||
    clockToleranceSeconds < 0
  ) {
    throw new ConfigError(
      `JWT option clockToleranceSeconds must be a number of seconds, 0 or more; got ${JSON.stringify(clockToleranceSeconds)}. Leave it out for 30.`,
    );
  }
  const algorithms = options.algorithms ?? DEFAULT_ALGORITHMS;
  if (
    !Array.isArray(algorithms) ||
    algorithms.length === 0 ||
    algorithms.some((a) => !ALLOWED_ALGORITHMS.includes(a))
  ) {
    throw new ConfigError(
      `JWT option algorithms must list some of ${ALLOWED_ALGORITHMS.join(', ')} ('none' and HS* are never accepted); got ${JSON.stringify(algorithms)}. Leave it out for ${DEFAULT_ALGORITHMS.join(', ')}.`,
    );
  }
  const roleMap = options.roleMap;
  const isRoleList = (roles: unknown) =>
    Array.isArray(roles) && roles.every((r) => (API_ROLES as readonly string[]).includes(r));
  if (
    roleMap !== undefined &&
    (typeof roleMap !== 'object' || roleMap === null || !Object.values(roleMap).every(isRoleList))
  ) {
    throw new ConfigError(
      `JWT option roleMap must map IdP role names to lists of ${API_ROLES.join(', ')}; got ${JSON.stringify(roleMap)}. E.g. {"support-leads": ["approver"]}.`,
    );
  }
  return {
    issuer: options.issuer,
    audience,
    jwksUrl,
    rolesClaim,
    groupsClaim,
    subjectClaim,
    clockToleranceSeconds,
    algorithms,
    roleMap,
  };
}

/** The claim named `name`, or else the value at its dotted path (`realm_access.roles`). */
function claim(payload: JWTPayload, name: string): unknown {
  if (Object.hasOwn(payload, name)) return payload[name];
  let value: unknown = payload;
  for (const part of name.split('.')) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** The names a roles or groups claim holds: an array of strings (others left out) or a space-separated string. */
function claimNames(value: unknown): string[] {
  if (typeof value === 'string') return value.split(' ').filter((name) => name !== '');
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** The IdP's discovery document's `jwks_uri`, or an IdentityProviderUnavailableError. */
async function discoverJwksUrl(issuer: string): Promise<URL> {
  const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  let body: unknown;
  try {
    const response = await fetch(url, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    body = await response.json();
  } catch (err) {
    const reason =
      (err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message;
    throw new IdentityProviderUnavailableError(url, reason, { cause: err });
  }
  const jwksUri = (body as { jwks_uri?: unknown } | null)?.jwks_uri;
  try {
    return idpUrl('jwks_uri', jwksUri);
  } catch (err) {
    throw new IdentityProviderUnavailableError(
      url,
      `its discovery document names no usable jwks_uri (${JSON.stringify(jwksUri)})`,
      { cause: err },
    );
  }
}

/**
 * A verifier of the IdP's tokens. Throws a `ConfigError` naming the bad option and its fix
 * (issuer not https, empty audience, unknown algorithm, roleMap naming no API role…). Nothing is
 * fetched here: the key set (and, without `jwksUrl`, the discovery document) is fetched on the first
 * {@link JwtVerifier.verify} of a token that claims this issuer.
 */
export function createJwtVerifier(options: JwtVerifierOptions): JwtVerifier {
  const o = validate(options);

  let keySet: Promise<{ url: URL; keys: JWTVerifyGetKey }> | undefined;
  let retryAt = 0;
  const getKeySet = () => {
    if (!keySet || (retryAt !== 0 && Date.now() >= retryAt)) {
      retryAt = 0;
      keySet = (o.jwksUrl ? Promise.resolve(o.jwksUrl) : discoverJwksUrl(o.issuer)).then(
        (url) => ({ url, keys: createRemoteJWKSet(url, { timeoutDuration: FETCH_TIMEOUT_MS }) }),
        (err: unknown) => {
          retryAt = Date.now() + DISCOVERY_RETRY_MS;
          throw err;
        },
      );
    }
    return keySet;
  };

  // Key lookup failures are the IdP's (unreachable, not 200, not a key set); the token's are jose's own codes.
  const getKey: JWTVerifyGetKey = async (header, token) => {
    const { url, keys } = await getKeySet();
    try {
      return await keys(header, token);
    } catch (err) {
      const idpFault =
        !(err instanceof errors.JOSEError) ||
        ['ERR_JOSE_GENERIC', 'ERR_JWKS_TIMEOUT', 'ERR_JWKS_INVALID'].includes(err.code);
      if (idpFault) throw new IdentityProviderUnavailableError(url.href, (err as Error).message, { cause: err });
      throw err;
    }
  };

  const toRoles = (value: unknown): Set<ApiRole> => {
    const roles = new Set<ApiRole>();
    for (const name of claimNames(value)) {
      if (o.roleMap) for (const role of Object.hasOwn(o.roleMap, name) ? o.roleMap[name] : []) roles.add(role);
      else if ((API_ROLES as readonly string[]).includes(name)) roles.add(name as ApiRole);
    }
    return roles;
  };

  return {
    async verify(token) {
      if (typeof token !== 'string' || !COMPACT_JWS.test(token)) return undefined;
      try {
        // An unverified look, only to skip the network for tokens of other issuers.
        if (decodeJwt(token).iss !== o.issuer) return undefined;
        const { payload } = await jwtVerify(token, getKey, {
          issuer: o.issuer,
          audience: o.audience,
          algorithms: o.algorithms,
          clockTolerance: o.clockToleranceSeconds,
          requiredClaims: ['exp'],
        });
        const subject = claim(payload, o.subjectClaim);
        if (typeof subject !== 'string' || subject.trim() === '') return undefined;
        return {
          subject,
          roles: toRoles(claim(payload, o.rolesClaim)),
          groups: new Set(claimNames(claim(payload, o.groupsClaim)).filter((g) => POLICY_GROUP_NAME.test(g))),
        };
      } catch (err) {
        if (err instanceof errors.JOSEError) return undefined;
        throw err;
      }
    },
  };
}
