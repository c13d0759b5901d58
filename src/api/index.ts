/**
 * The HTTP API and inbox page for requesters, approvers and operators, to
 * serve from a team's own process: `startApiServer({ client, tokens, decisions })`.
 *
 * @packageDocumentation
 */
export { API_ERROR_CODES, ApiError, buildApiServer, startApiServer, type ApiErrorCode, type ApiServerOptions, type StartApiOptions } from './server';
export { DECISION_WORKER_WAIT_MS, decideCalls, DecisionProblem, type CallDecision, type DecideRequest, type DecisionOutcome, type DecisionPolicy } from './decisions';
export { API_ROLES, MIN_TOKEN_CHARS, readTokenFile, TokenVerifier, type ApiPrincipal, type ApiRole, type ApiTokenConfig } from './tokens';
export { createJwtVerifier, IdentityProviderUnavailableError, type JwtVerifier, type JwtVerifierOptions } from './jwt';
export { followTurn, TURN_EVENTS_POLL_MS, type TurnEvent } from './turn-events';
export {
  checkDecisionSignature,
  parseDecisionKeys,
  readDecisionKeyFile,
  signDecision,
  verifyDecision,
  type DecisionKey,
  type DecisionTrust,
  type DecisionVerification,
} from '../activities/decision-signing';
