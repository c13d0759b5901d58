/**
 * Standing grants on the inbox's pages (docs/approval-policies.md#standing-grants):
 * the "approve and grant" part of a waiting call's form, and the list of a
 * conversation's grants with their limits, use and state, with a Revoke
 * button for approvers (its route, and the reading of the grant fields, are
 * in `inbox-grant-route.ts`).
 */
import { createHash } from 'node:crypto';
import { GRANT_MAX_CALLS, type GrantRequest, type GrantView } from '../contract';
import { html, visible, type Html } from './html';
import type { Viewer } from './inbox-frame';
import { GRANT_ARGUMENT_MAX_CHARS, REASON_MAX_CHARS } from './schemas';

/** The address of a conversation's page (as `inbox-call.ts` makes it). */
const conversationPath = (id: string): string => `/inbox/conversations/${encodeURIComponent(id)}`;

/** Milliseconds in one unit of the grant form's duration: minutes, hours, days. */
export const GRANT_UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * The "approve and grant" part of a waiting call's form: how many later calls, an amount summed over an argument (the
 * call's numeric arguments are offered), and how long. Its button sends `decision=grant`.
 */
export function grantFields(call: {
  callKey: string;
  toolName: string;
  arguments: unknown;
  policy?: { rule: string };
}): Html {
  const numeric =
    call.arguments && typeof call.arguments === 'object' && !Array.isArray(call.arguments)
      ? Object.entries(call.arguments as Record<string, unknown>)
          .filter(([, v]) => typeof v === 'number')
          .map(([k]) => k)
      : [];
  const listId = `grant-args-${createHash('sha256').update(call.callKey).digest('hex').slice(0, 16)}`;
  const under = call.policy ? html` under the rule <code>${visible(call.policy.rule)}</code>` : '';
  return html`<details class="alt" data-testid="grant">
    <summary>Approve, and let later calls run without asking</summary>
    <p class="muted">
      A standing grant: later calls of <strong>${visible(call.toolName)}</strong> in this conversation${under} run
      without asking, in your name, while it lasts. Give it at least one limit; it ends after 30 days whatever else is left,
      and an approver may revoke it on the conversation's page.
    </p>
    <div class="grant-fields">
      <label>Later calls, at most<input type="number" name="grantCalls" min="1" max="${GRANT_MAX_CALLS}" step="1" inputmode="numeric" /></label>
      <label>Amount: the argument<input type="text" name="grantArgument" maxlength="${GRANT_ARGUMENT_MAX_CHARS}" list="${listId}" spellcheck="false" /></label>
      <datalist id="${listId}">${numeric.map((k) => html`<option value="${k}"></option>`)}</datalist>
      <label>adds up to at most<input type="number" name="grantTotal" min="0" step="any" /></label>
      <label
        >For<span class="duration"
          ><input type="number" name="grantFor" min="1" step="1" inputmode="numeric" /><select name="grantUnit">
            <option value="m">minutes</option>
            <option value="h">hours</option>
            <option value="d">days</option>
          </select></span
        ></label
      >
    </div>
    <button class="approve" type="submit" name="decision" value="grant">Run it and grant</button>
  </details>`;
}

/** What a grant asked for, in words: "up to 2 later calls, up to 5000 of amount_cents, for 30 min". */
export function grantRequestWords(grant: GrantRequest): string {
  const parts = [
    grant.maxCalls !== undefined && `up to ${grant.maxCalls} later call${grant.maxCalls === 1 ? '' : 's'}`,
    grant.maxAmount && `up to ${grant.maxAmount.total} of ${grant.maxAmount.argument} in all`,
    grant.expiresInMs !== undefined && `for ${durationWords(grant.expiresInMs)}`,
  ].filter((p): p is string => typeof p === 'string');
  return parts.join(', ');
}

function durationWords(ms: number): string {
  for (const [unit, size] of [
    ['day', GRANT_UNIT_MS.d],
    ['hour', GRANT_UNIT_MS.h],
    ['minute', GRANT_UNIT_MS.m],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size} ${unit}${ms / size === 1 ? '' : 's'}`;
  }
  return `${Math.round(ms / 1000)} s`;
}

/** Where a grant stands: live, revoked, expired, or used up (its calls or amount spent). */
export function grantStatus(g: GrantView, now: number): 'live' | 'revoked' | 'expired' | 'used up' {
  if (g.revokedAt !== undefined) return 'revoked';
  if (g.live) return 'live';
  return Date.parse(g.expiresAt) <= now ? 'expired' : 'used up';
}

/** A UTC time as the inbox shows it. */
const utc = (iso: string) => `${iso.replace('T', ' ').slice(0, 19)} UTC`;

/** The conversation's standing grants: tool, rule, who gave them, limits and use, expiry and state; Revoke for approvers. */
export function grantsBlock(
  conversationId: string,
  grants: readonly GrantView[] | undefined,
  ctx: { viewer: Viewer; now: number },
): Html {
  if (!grants || grants.length === 0) return html``;
  const live = grants.filter((g) => g.live).length;
  return html`<section class="card" data-testid="grants">
    <header>
      <h2>Standing grants</h2>
      <span class="meta">${live} live of ${grants.length}</span>
    </header>
    <div class="grants">
      ${[...grants].reverse().map((g) => grantItem(conversationId, g, ctx))}
    </div>
  </section>`;
}

function grantItem(conversationId: string, g: GrantView, ctx: { viewer: Viewer; now: number }): Html {
  const status = grantStatus(g, ctx.now);
  const use = [
    g.maxCalls !== undefined
      ? `${g.callsUsed} of ${g.maxCalls} calls`
      : `${g.callsUsed} call${g.callsUsed === 1 ? '' : 's'}`,
    g.amount && `${g.amount.used} of ${g.amount.total} of ${g.amount.argument}`,
  ].filter((p): p is string => typeof p === 'string');
  const revokeAction = `${conversationPath(conversationId)}/grants/${encodeURIComponent(g.id)}/revoke`;
  return html`<article class="grant" data-grant-id="${g.id}">
    <div>
      <span class="name">${visible(g.toolName)}</span>
      <span class="badge ${status.replace(' ', '-')}" data-testid="grant-status">${status}</span>
    </div>
    <dl class="facts">
      <dt>Rule</dt>
      <dd>${g.rule ? html`<code>${visible(g.rule)}</code>` : html`<span class="muted">none (the tool asks)</span>`}</dd>
      <dt>Granted by</dt>
      <dd data-testid="grant-by">
        ${g.grantedBy ? visible(g.grantedBy) : html`<span class="muted">nobody named</span>`}${g.authenticated === false ? html` <span class="muted">(not signed)</span>` : ''}
        · ${utc(g.grantedAt)}
      </dd>
      <dt>Used</dt>
      <dd data-testid="grant-use">${visible(use.join('; '))}</dd>
      <dt>Until</dt>
      <dd data-testid="grant-expiry">${utc(g.expiresAt)}</dd>
      ${
        g.revokedAt !== undefined &&
        html`<dt>Revoked</dt>
          <dd data-testid="grant-revoked">${g.revokedBy ? html`by ${visible(g.revokedBy)} · ` : ''}${utc(g.revokedAt)}</dd>`
      }
      <dt>Id</dt>
      <dd><code>${visible(g.id)}</code></dd>
    </dl>
    ${
      ctx.viewer.canDecide &&
      g.live &&
      html`<form method="post" action="${revokeAction}" class="revoke">
        <input type="hidden" name="_csrf" value="${ctx.viewer.csrf}" />
        <label>Reason (recorded)<input type="text" name="reason" maxlength="${REASON_MAX_CHARS}" /></label>
        <button class="reject" type="submit">Revoke</button>
      </form>`
    }
  </article>`;
}
