/**
 * A call waiting for a person, as the inbox shows it: what, for whom, since
 * when, the approval policy's rule it waits under (who may decide it, its
 * approvals so far), the arguments as the tool receives them, and the form
 * that decides it (approve, reject, and where its tool allows, edit or
 * respond; approve with a standing grant where the rule needs one person),
 * without what the viewer may not decide.
 */
import { DECISION_FIELD_MAX_CHARS, type DecisionKind, type WaitingCall, type WaitingPolicy } from '../contract';
import { html, humanDuration, prettyArguments, visible, type Html } from './html';
import type { Flash, Viewer } from './inbox-frame';
import { grantFields } from './inbox-grants';
import { approvalsSoFar, decisionRefusal, escalationSoFar, whoMayDecide } from './who-decides';

/** One waiting call as the inbox shows it (its age is computed when shown). */
export type ShownCall = Omit<WaitingCall<Date>, 'ageMs'>;

/** The address of a conversation's page. */
export const conversationPath = (id: string): string => `/inbox/conversations/${encodeURIComponent(id)}`;

/** A waiting call: what, for whom, how long, and the form to decide it (for approvers). */
export function callBlock(
  call: ShownCall,
  ctx: { viewer: Viewer; flash?: Flash; back: 'inbox' | 'conversation'; fourEyes: boolean; now: number },
): Html {
  const own = ctx.fourEyes && !call.policy && call.requestedBy.includes(ctx.viewer.subject);
  // A call a rule made wait: what the rule lets the viewer decide (the workflow checks it again).
  const decider = { subject: ctx.viewer.subject, groups: ctx.viewer.groups };
  const noApproving = call.policy && decisionRefusal(decider, call, true, !ctx.fourEyes);
  const noDeciding = call.policy && decisionRefusal(decider, call, false, !ctx.fourEyes);
  const decides = ctx.viewer.canDecide && !noDeciding;
  const reason = ctx.flash?.callKey === call.callKey ? (ctx.flash.reason ?? '') : '';
  // "Fork here": a new conversation up to the message asking for the call (a call inside an agent called as a tool
  // belongs to that agent's conversation, which is not forked).
  const forkable = call.rootConversationId === call.conversationId;
  const forkAction = `${conversationPath(call.conversationId)}/forks`;
  const forkButton = html`<button type="submit" formaction="${forkAction}" formnovalidate name="toolCallId" value="${call.toolCallId}" title="A new conversation up to the message asking for this call, where the call is answered as not run; here it still waits">Fork here</button>`;
  return html`<article class="call" data-call-key="${call.callKey}">
    <div>
      <span class="name">${visible(call.toolName)}</span> <span class="badge waiting">waiting ${humanDuration(ctx.now - call.requestedAt.getTime())}</span>
    </div>
    <dl class="facts">
      <dt>Asked by</dt>
      <dd data-testid="requested-by">${call.requestedBy.length > 0 ? visible(call.requestedBy.join(', ')) : html`<span class="muted">nobody named</span>`}</dd>
      <dt>Since</dt>
      <dd>${call.requestedAt.toISOString().replace('T', ' ').slice(0, 19)} UTC</dd>
      <dt>Call</dt>
      <dd><code>${visible(call.toolCallId)}</code></dd>
      ${
        call.agentPath.length > 0 &&
        html`<dt>Agents</dt>
          <dd data-testid="agent-path">${visible(call.agentPath.join(' › '))}</dd>`
      }
      ${
        call.rootConversationId !== call.conversationId &&
        html`<dt>For</dt>
          <dd data-testid="root-conversation">
            conversation <a href="${conversationPath(call.rootConversationId)}"><code>${visible(call.rootConversationId)}</code></a
            >, inside the agent's own
            <a href="${conversationPath(call.conversationId)}"><code>${visible(call.conversationId)}</code></a>
          </dd>`
      }
      ${
        call.policy
          ? policyFacts(call.policy)
          : html`<dt>Who decides</dt>
            <dd data-testid="policy-deciders">any approver${ctx.fourEyes ? ' but whoever asked' : ''}, one is enough</dd>`
      }
    </dl>
    <pre class="args" data-testid="arguments">${prettyArguments(call.arguments)}</pre>
    ${own && html`<div class="note">You sent the request that asked for this call: another approver has to approve it (four eyes). You may reject it.</div>`}
    ${noApproving && html`<div class="note" data-testid="policy-note">${noApproving.message}</div>`}
    ${
      decides
        ? html`<form method="post" action="${conversationPath(call.conversationId)}/decisions">
            <input type="hidden" name="_csrf" value="${ctx.viewer.csrf}" />
            <input type="hidden" name="callKey" value="${call.callKey}" />
            <input type="hidden" name="back" value="${ctx.back}" />
            <label
              >Reason (recorded with the decision)<textarea name="reason" maxlength="2000" placeholder="Why you approve or reject">${reason}</textarea>
            </label>
            <div class="actions">
              ${
                noApproving
                  ? html`<button class="approve" type="submit" name="decision" value="approve" disabled title="${noApproving.message}">Approve</button>`
                  : html`<button class="approve" type="submit" name="decision" value="approve">Approve</button>`
              }
              <button class="reject" type="submit" name="decision" value="reject">Reject</button>
              ${forkable && forkButton}
            </div>
            ${
              !noApproving &&
              allows(call, 'edit') &&
              html`<details class="alt" data-testid="edit">
                <summary>Edit the arguments, then approve</summary>
                <label
                  >Arguments the call runs with (JSON, checked against the tool before it runs)<textarea name="arguments" rows="6" spellcheck="false">
${editableArguments(call.arguments)}</textarea>
                </label>
                <p class="error-text" data-testid="edit-problem" role="alert"></p>
                <button class="approve" type="submit" name="decision" value="edit">Run with these arguments</button>
              </details>`
            }
            ${
              // A grant lets one person approve later calls alone: not on a call whose rule needs several.
              !own && !noApproving && (call.policy?.approvals ?? 1) <= 1 && grantFields(call)
            }
            ${
              !noApproving &&
              allows(call, 'respond') &&
              html`<details class="alt" data-testid="respond">
                <summary>Answer in the tool's place</summary>
                <label
                  >Your answer becomes the call's result; the tool does not run<textarea
                    name="response"
                    rows="3"
                    maxlength="${DECISION_FIELD_MAX_CHARS.response}"
                  ></textarea>
                </label>
                <button type="submit" name="decision" value="respond">Respond</button>
              </details>`
            }
          </form>`
        : ctx.viewer.canDecide
          ? html`<p class="readonly">Read only for you: the approval policy's rule lets ${whoMayDecide(call.policy!)} decide it.</p>`
          : html`<p class="readonly">Read only: deciding needs the approver role.</p>`
    }
    ${
      !decides &&
      forkable &&
      html`<form method="post" action="${forkAction}" data-testid="fork">
        <input type="hidden" name="_csrf" value="${ctx.viewer.csrf}" />
        ${forkButton}
      </form>`
    }
  </article>`;
}

/** The rule a call waits under, as facts of its block: its name and reason, who may decide it, approvals so far. */
function policyFacts(policy: WaitingPolicy): Html {
  const requester = policy.requesterMayApprove ? ' (whoever asked may approve too)' : '';
  const escalation = escalationSoFar(policy);
  return html`<dt>Rule</dt>
    <dd data-testid="policy-rule"><code>${visible(policy.rule)}</code>${policy.reason && html` · ${visible(policy.reason)}`}</dd>
    <dt>Who decides</dt>
    <dd data-testid="policy-deciders">${visible(whoMayDecide(policy))}${requester}</dd>
    <dt>Approvals</dt>
    <dd data-testid="policy-approvals">${visible(approvalsSoFar(policy))}</dd>
    ${escalation && html`<dt>Escalation</dt><dd data-testid="policy-escalation">${visible(escalation)}</dd>`}`;
}

/**
 * Whether a person may decide `kind` on the call (its tool's `decisions`; approve and reject only when it says none).
 */
function allows(call: ShownCall, kind: DecisionKind): boolean {
  return (call.decisions ?? ['approve', 'reject']).includes(kind);
}

/** The arguments as the editor starts with them: pretty JSON (the raw text when the model's were not JSON). */
function editableArguments(args: unknown): string {
  const text = typeof args === 'string' ? args : (JSON.stringify(args, null, 2) ?? '');
  // Invisible and direction-changing characters as JSON escapes: the person sees them, and the JSON means the same.
  return text.replace(
    /[\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
