/**
 * Static bearer tokens of the HTTP API: who a token is (its subject), what
 * it may do (its roles) and the groups it belongs to (which approval policy
 * rules let it decide). Tokens are kept as SHA-256 digests and compared in
 * constant time; the subject, never a field of the request, is who decided.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { ConfigError } from '../common/errors';
import { readPrivateFile } from '../common/private-file';
import { POLICY_GROUP_NAME } from '../contract/policies';

/**
 * What a caller may do: send messages and cancel (`requester`), decide (`approver`), read everything (`operator`),
 * send the events waiting calls take as their result (`events`: the systems that report what happened, e.g. a
 * payment provider's webhook bridge).
 */
export const API_ROLES = ['requester', 'approver', 'operator', 'events'] as const;
/** One of {@link API_ROLES}. */
export type ApiRole = (typeof API_ROLES)[number];

/** A token as configured: the secret itself, whom it names, its roles and its groups. */
export interface ApiTokenConfig {
  /** Who the token is, recorded with every decision made with it (e.g. an email address). */
  subject: string;
  roles: ApiRole[];
  /**
   * The groups the token's subject belongs to, e.g. `["finance"]`: an approval policy's rule may let only members of
   * some groups decide a call (docs/approval-policies.md). Names as {@link POLICY_GROUP_NAME} allows; default none.
   */
  groups?: string[];
  /** The bearer token; at least 32 characters. */
  token: string;
}

/** The caller a request was authenticated as. */
export interface ApiPrincipal {
  subject: string;
  roles: ReadonlySet<ApiRole>;
  /** The groups the caller belongs to (a static token's `groups`, an OIDC token's groups claim); empty when none. */
  groups: ReadonlySet<string>;
}

/** The most groups one token may name. */
export const MAX_TOKEN_GROUPS = 100;

/** The development tokens' file in the data folder, made when no token file is configured. */
export const DEVELOPMENT_TOKENS_FILE = 'api-tokens.json';

/** The shortest token accepted: long enough that guessing is hopeless. */
export const MIN_TOKEN_CHARS = 32;

const digest = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();

/** Checks tokens against their configuration and keeps only their digests. */
export class TokenVerifier {
  private readonly entries: { digest: Buffer; principal: ApiPrincipal }[];

  /**
   * Throws a `ConfigError` naming what is wrong with a token (short, no subject, unknown role, a group name that is not
   * valid, used twice).
   */
  constructor(tokens: readonly ApiTokenConfig[]) {
    const seen = new Set<string>();
    this.entries = tokens.map((t, i) => {
      const where = `API token ${i + 1}${t?.subject ? ` (${t.subject})` : ''}`;
      if (!t || typeof t.subject !== 'string' || t.subject.trim() === '')
        throw new ConfigError(`${where} has no subject: name whom it belongs to.`);
      if (typeof t.token !== 'string' || t.token.length < MIN_TOKEN_CHARS) {
        throw new ConfigError(
          `${where} is shorter than ${MIN_TOKEN_CHARS} characters: make one with \`openssl rand -hex 32\`.`,
        );
      }
      if (
        !Array.isArray(t.roles) ||
        t.roles.length === 0 ||
        t.roles.some((r) => !(API_ROLES as readonly string[]).includes(r))
      ) {
        throw new ConfigError(`${where} needs roles from ${API_ROLES.join(', ')}; got ${JSON.stringify(t.roles)}.`);
      }
      const groups = t.groups ?? [];
      if (!Array.isArray(groups) || groups.length > MAX_TOKEN_GROUPS) {
        throw new ConfigError(
          `${where} has "groups" ${JSON.stringify(t.groups)}: give a list of at most ${MAX_TOKEN_GROUPS} group names, e.g. ["finance", "support-leads"], or leave it out.`,
        );
      }
      const badGroup = groups.find((g) => typeof g !== 'string' || !POLICY_GROUP_NAME.test(g));
      if (badGroup !== undefined) {
        throw new ConfigError(
          `${where} names the group ${JSON.stringify(badGroup)}, which is not a valid group name: use 1 to 128 letters, digits and _ . : @ / - (e.g. "finance").`,
        );
      }
      const hex = digest(t.token).toString('hex');
      if (seen.has(hex)) throw new ConfigError(`${where} uses a token another entry uses: give each its own.`);
      seen.add(hex);
      return {
        digest: digest(t.token),
        principal: { subject: t.subject, roles: new Set(t.roles), groups: new Set(groups) },
      };
    });
  }

  /** The principal of `token`, or undefined when no configured token matches. */
  verify(token: string): ApiPrincipal | undefined {
    const given = digest(token);
    let found: ApiPrincipal | undefined;
    // Every entry is compared, so the time taken does not tell which one matched.
    for (const entry of this.entries) if (timingSafeEqual(entry.digest, given)) found = entry.principal;
    return found;
  }
}

/**
 * Reads tokens from a JSON file (`[{ "subject", "roles", "groups"?, "token" }]`) that
 * only its owner may read: a file others can read is refused, since whoever
 * reads it can decide as anyone in it.
 */
export function readTokenFile(file: string): ApiTokenConfig[] {
  const text = readPrivateFile(file, 'The API token file');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`The API token file ${file} is not valid JSON: ${(err as Error).message}.`);
  }
  if (!Array.isArray(parsed))
    throw new ConfigError(`The API token file ${file} must hold a list: [{"subject": …, "roles": […], "token": …}].`);
  return parsed as ApiTokenConfig[];
}
