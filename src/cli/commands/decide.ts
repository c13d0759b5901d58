/**
 * `approve`, `reject` and `respond`: deciding waiting tool calls, saying what
 * was decided, as whom, and whether it was queued for a worker; `approve`
 * of one call may also give a standing grant (`--grant-calls`,
 * `--grant-amount`, `--grant-for`).
 */
import type { Command } from 'commander';
import { CLI_DECISION_WAIT_MS, decideCalls, parseEdit, type CliDecision } from '../decide';
import { policyLine } from '../format';
import { grantLimitsText, grantOfOptions, type GrantOptions } from '../grant-lines';

/** Adds `approve`, `reject` and `respond` to the program. */
export function addDecisionCommands(program: Command): void {
  for (const decision of ['approve', 'reject'] as const) {
    const command = program
      .command(decision)
      .description(`${decision} one pending tool call, or all of them with --all`)
      .argument('<conversationId>')
      .argument('[toolCallId]', 'the call to decide (see "pending")')
      .option('--all', `${decision} every call waiting for approval`)
      .option(
        '--key <callKey>',
        'the key of the call meant (see "pending"): refused if another call with the same id waits now',
      )
      .option('--reason <text>', 'why (sent to the model with a rejection)')
      .option(
        '--edit <json>',
        'approve only: run the call with these arguments instead of the model\'s, e.g. \'{"order_id":"ord_1001","amount_cents":12000}\' (checked against the tool first)',
      )
      .option(
        '--by <name>',
        'who decides, for the records (only without the HTTP API; through it, the token names who decides)',
        process.env.USER,
      )
      .option(
        '--json',
        'print what was decided as JSON (the calls with their decision ids, as whom, queued or not) for scripts',
      );
    if (decision === 'approve') {
      command
        .option(
          '--grant-calls <n>',
          'also let up to n later calls of the same tool in this conversation (under the same approval policy rule) run without asking: a standing grant, 1 to 1000',
        )
        .option(
          '--grant-amount <argument=total>',
          'a grant whose covered calls add up to at most total over a numeric argument, e.g. amount_cents=50000',
        )
        .option('--grant-for <duration>', 'a grant lasting this long, e.g. 30m, 2h, 1d (at most and by default 30d)');
    }
    command.action(
      async (
        conversationId: string,
        toolCallId: string | undefined,
        options: {
          all?: boolean;
          key?: string;
          reason?: string;
          by?: string;
          json?: boolean;
          edit?: string;
        } & GrantOptions,
      ) => {
        if (!toolCallId && !options.key && !options.all)
          throw new Error(`Name the tool call to ${decision} (see "pending"), or pass --all.`);
        if ((toolCallId || options.key) && options.all)
          throw new Error('Give a tool call id or key, or --all, not both.');
        const edited = options.edit === undefined ? undefined : parseEdit(decision, options.edit, options.all);
        const grant = grantOfOptions(options);
        if (grant && (options.all || edited))
          throw new Error(
            'A grant goes with the approval of one call as the model asked for it: name the call (a tool call id or --key), without --all or --edit.',
          );
        const result = await decideCalls(conversationId, {
          decision: edited ? 'edit' : decision,
          toolCallId,
          callKey: options.key,
          reason: options.reason,
          decidedBy: options.by,
          ...(edited ? { arguments: edited } : {}),
          ...(grant ? { grant } : {}),
        });
        if (options.json) {
          const calls = result.calls.map(({ decisionId, toolCallId: id, callKey, toolName, policy, grant: given }) => ({
            decisionId,
            toolCallId: id,
            callKey,
            toolName,
            ...(policy ? { policy } : {}),
            ...(given ? { grant: given } : {}),
          }));
          process.stdout.write(
            `${JSON.stringify({ decision, decidedBy: result.decidedBy, queued: result.queued, unsigned: result.unsigned, calls })}\n`,
          );
          return;
        }
        const as = result.decidedBy ? ` as ${result.decidedBy}` : '';
        const decided = result.calls
          .map((call) => `${call.toolName}(${JSON.stringify(call.arguments)}) [${call.toolCallId}]`)
          .join(', ');
        const verb = edited
          ? `Approved with edited arguments ${JSON.stringify(edited)}`
          : decision === 'approve'
            ? 'Approved'
            : 'Rejected';
        const follow = `Follow the turn: npm run cli -- show ${conversationId}`;
        const short = decision === 'approve' && !result.queued ? waitingForMore(result) : [];
        if (!result.queued) {
          const next =
            decision !== 'approve'
              ? 'the model is told'
              : short.length === 0
                ? 'it runs now'
                : short.length === result.calls.length
                  ? 'its approval policy rule needs more approvals before it runs'
                  : 'each runs now unless its approval policy rule needs more approvals';
          process.stdout.write(`${verb}${as}: ${decided}; ${next}. ${follow}\n`);
          for (const call of result.calls) if (call.policy) printRule(call, short.includes(call), result.decidedBy);
          for (const call of result.calls) if (call.grant) printGrant(conversationId, call, false);
          return;
        }
        process.stdout.write(
          `Queued${as}: ${decision} ${decided}. No worker answered for conversation ${conversationId} within ${CLI_DECISION_WAIT_MS / 1000} s, ` +
            `so the decision waits in the conversation's history and applies when a worker runs (npm start), if the call still waits then. ${follow}\n`,
        );
        for (const call of result.calls) if (call.policy) printRule(call, false, undefined);
        for (const call of result.calls) if (call.grant) printGrant(conversationId, call, true);
        if (result.unsigned) {
          process.stdout.write(
            `It was sent without the HTTP API, unsigned: a worker that requires signed decisions will refuse it. ${result.howToSign}\n`,
          );
        }
      },
    );
  }

  program
    .command('respond')
    .description(
      "answer one pending tool call in the tool's place: your text becomes its result and the tool does not run (where its tool allows it)",
    )
    .argument('<conversationId>')
    .argument('[toolCallId]', 'the call to answer (see "pending")')
    .requiredOption('--text <text>', "the answer, which the model reads as the call's result (marked as a person's)")
    .option(
      '--key <callKey>',
      'the key of the call meant (see "pending"): refused if another call with the same id waits now',
    )
    .option('--reason <text>', 'why, for the records')
    .option(
      '--by <name>',
      'who decides, for the records (only without the HTTP API; through it, the token names who decides)',
      process.env.USER,
    )
    .action(
      async (
        conversationId: string,
        toolCallId: string | undefined,
        options: { text: string; key?: string; reason?: string; by?: string },
      ) => {
        if (!toolCallId && !options.key) throw new Error('Name the tool call to answer (see "pending").');
        const result = await decideCalls(conversationId, {
          decision: 'respond',
          toolCallId,
          callKey: options.key,
          reason: options.reason,
          decidedBy: options.by,
          response: options.text,
        });
        const as = result.decidedBy ? ` as ${result.decidedBy}` : '';
        const answered = result.calls.map((call) => `${call.toolName} [${call.toolCallId}]`).join(', ');
        process.stdout.write(
          `${result.queued ? 'Queued' : 'Answered'}${as}: ${answered}; the tool does not run and the model reads your answer. Follow the turn: npm run cli -- show ${conversationId}\n`,
        );
      },
    );
}

type DecidedCall = CliDecision['calls'][number];

/** The standing grant given with an approval: what it covers, its limits, its id and how to revoke it. */
function printGrant(conversationId: string, call: DecidedCall, queued: boolean): void {
  const { id, ...limits } = call.grant!;
  const rule = call.policy ? ` under the rule ${call.policy.rule}` : '';
  process.stdout.write(
    `  ${queued ? 'Grant asked for' : 'Granted'}: later calls of ${call.toolName} in this conversation${rule} run without asking, ${grantLimitsText(limits)} (grant ${id}${queued ? ', given when the approval applies' : ''}). ` +
      `See them: npm run cli -- grants ${conversationId}; revoke: npm run cli -- revoke-grant ${conversationId} ${id}\n`,
  );
}

/** The approved calls whose approval policy rule needs more approvals than they have now, with this one. */
function waitingForMore(result: CliDecision): DecidedCall[] {
  return result.calls.filter((c) => c.policy && c.policy.approvedBy.length + 1 < c.policy.approvals);
}

/**
 * The rule a decided call waited under, with its approvals: counting the one just given (`approvedNow`, by `decider`)
 * when the call still waits for more.
 */
function printRule(call: DecidedCall, approvedNow: boolean, decider: string | undefined): void {
  const policy = call.policy!;
  const approvedBy = approvedNow ? [...policy.approvedBy, decider ?? 'you'] : policy.approvedBy;
  const waits = approvedNow ? '; it still waits' : '';
  process.stdout.write(`  ${call.toolCallId}: ${policyLine({ ...policy, approvedBy })}${waits}\n`);
}
