/**
 * The HTTP API and inbox page for requesters, approvers and operators, to
 * serve from a team's own process: `startApiServer({ client, tokens, decisions })`,
 * with `createJwtVerifier` for an identity provider, and `signDecision` for
 * a service of your own that signs the decisions it sends.
 *
 * @packageDocumentation
 */
export { startApiServer, type StartApiOptions } from './server';
export { createJwtVerifier } from './jwt';
export { signDecision } from '../common/decision-signing';
