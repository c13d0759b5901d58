/**
 * Who may use the HTTP API and how decisions are trusted, from the worker's
 * configuration: static tokens (or development tokens made on first start),
 * OIDC/JWT when an issuer is set, and the decision keys the API signs with
 * and the workers verify with (or one made on first start). Files made here
 * are written with mode 0600 in the data folder.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { DecisionTrust } from '../common/decision-signing';
import { AesGcmPayloadCodec } from '../codec/aes-gcm';
import { ConfigError } from '../common/errors';
import type { WorkerConfig } from './config';
import { resolveDecisionKeys, writeOnce } from './decision-keys';
import type { DecisionPolicy } from '../api/decisions';
import type { AgentClient } from '../client/client';
import { createJwtVerifier } from '../api/jwt';
import type { startApiServer } from '../api/server';
import { DEVELOPMENT_TOKENS_FILE, readTokenFile, type ApiPrincipal, type ApiTokenConfig } from '../api/tokens';

/** The API's and the workers' security settings, resolved. */
export interface ApiSecurity {
  tokens: ApiTokenConfig[];
  /** Set when the tokens were made for local development (no `AGENT_API_TOKENS_FILE`): print them. */
  developmentTokensFile?: string;
  /** OIDC/JWT verification, when an issuer is configured. */
  authenticate?: (token: string) => Promise<ApiPrincipal | undefined>;
  /** What the workers hold: every key verifies; unsigned decisions refused unless configured otherwise. */
  decisionTrust: DecisionTrust;
  /** What the API does: sign with the first key, four eyes unless configured otherwise. */
  policy: DecisionPolicy;
  /** Where the decision keys came from, for the banner. */
  decisionKeysOrigin: string;
}

export { DEVELOPMENT_DECISION_KEYS_FILE } from './decision-keys';
export { DEVELOPMENT_TOKENS_FILE };

/**
 * Resolves the API's security from the configuration, making development tokens and a decision key where none are
 * configured.
 */
export function resolveApiSecurity(config: WorkerConfig): ApiSecurity {
  const api = config.api;
  let tokens: ApiTokenConfig[];
  let developmentTokensFile: string | undefined;
  if (api.tokensFile) {
    tokens = readTokenFile(api.tokensFile);
  } else {
    developmentTokensFile = path.join(config.dataDir, DEVELOPMENT_TOKENS_FILE);
    writeOnce(developmentTokensFile, () =>
      JSON.stringify(
        [
          {
            subject: 'local-requester',
            roles: ['requester', 'operator'],
            token: randomBytes(32).toString('base64url'),
          },
          { subject: 'local-approver', roles: ['approver', 'operator'], token: randomBytes(32).toString('base64url') },
          // Sends the events waiting calls take (POST /v1/events), as a payment provider's bridge would.
          { subject: 'local-events', roles: ['events'], token: randomBytes(32).toString('base64url') },
        ],
        null,
        2,
      ),
    );
    tokens = readTokenFile(developmentTokensFile);
  }
  const { keys, origin: decisionKeysOrigin } = resolveDecisionKeys(config, { create: true });
  const oidc = api.oidc;
  if (oidc && !oidc.audience)
    throw new ConfigError(
      'AGENT_OIDC_ISSUER is set without AGENT_OIDC_AUDIENCE: set the audience your identity provider puts in tokens for this API.',
    );
  const jwt = oidc
    ? createJwtVerifier({
        issuer: oidc.issuer,
        audience: oidc.audience!,
        jwksUrl: oidc.jwksUrl,
        rolesClaim: oidc.rolesClaim,
        groupsClaim: oidc.groupsClaim,
        subjectClaim: oidc.subjectClaim,
      })
    : undefined;
  return {
    tokens,
    developmentTokensFile,
    authenticate: jwt ? (token) => jwt.verify(token) : undefined,
    decisionTrust: { keys, requireSigned: api.requireSignedDecisions },
    policy: { signingKey: keys[0], allowSelfApproval: api.allowSelfApproval },
    decisionKeysOrigin,
  };
}

/** Serves the API and inbox page as configured, deciding through `client`. */
export async function serveConfiguredApi(
  config: WorkerConfig,
  security: ApiSecurity,
  client: AgentClient,
): ReturnType<typeof startApiServer> {
  if (config.api.port === 'off') throw new ConfigError('AGENT_API_PORT is "off": set a port for the API to listen on.');
  // Loaded here, so a process without the API never loads the web framework and the routes
  // (about 0.1 s of a start's CPU beyond the worker's own modules).
  const { startApiServer } = await import('../api/server.js');
  return startApiServer({
    client,
    tokens: security.tokens,
    authenticate: security.authenticate,
    decisions: security.policy,
    host: config.api.host,
    port: config.api.port,
    codec: {
      codec: config.payloadKeys ? new AesGcmPayloadCodec(config.payloadKeys) : undefined,
      namespace: config.temporal.namespace,
      corsOrigins: config.api.codecCorsOrigins,
    },
    // The example chat page, once built (npm run build:chat-page).
    ...(fs.existsSync(CHAT_PAGE_BUNDLE) ? { chat: { pageBundle: CHAT_PAGE_BUNDLE } } : {}),
  });
}

/** Where `npm run build:chat-page` writes the example chat page's script. */
const CHAT_PAGE_BUNDLE = path.join(__dirname, '..', '..', 'examples', 'chat-page', 'dist', 'app.js');
