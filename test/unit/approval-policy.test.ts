import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pool } from 'pg';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/app/config';
import { pluginOptionsFrom } from '../../src/app/plugin-options';
import { ConfigError } from '../../src/common/errors';
import { logger } from '../../src/common/logger';
import { backofficeAgents, backofficeTools } from '../../src/demo/tools';
import { approvalPolicy, type ApprovalPolicy, type ApprovalRule } from '../../src/policies/approval-policy';
import { evaluatePolicy, type PolicyQuestion } from '../../src/policies/evaluate';
import { readApprovalPolicy } from '../../src/policies/policy-file';
import type { ToolCallContext } from '../../src/tools/call-context';

/** The ConfigError `make` throws (failing the test when it throws none, or another error). */
function configErrorOf(make: () => unknown): string {
  try {
    make();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError, and nothing was thrown');
}

/** A call of `toolName` with `args`, asked by `requestedBy` in a conversation of `agent`. */
function question(
  toolName: string,
  args: unknown,
  context: Partial<Pick<ToolCallContext, 'agent' | 'requestedBy'>> = {},
): PolicyQuestion {
  return {
    toolName,
    args,
    context: {
      conversationId: 'c-1',
      rootConversationId: 'c-1',
      requestedBy: context.requestedBy ?? ['ada'],
      ...(context.agent !== undefined ? { agent: context.agent } : {}),
      toolCallId: 'call_1',
      messages: async () => [],
      signal: new AbortController().signal,
    },
  };
}

const refund = (rule: Partial<ApprovalRule>): ApprovalRule => ({ name: 'r', outcome: 'ask', ...rule }) as ApprovalRule;

describe('approvalPolicy() refuses a rule it cannot apply, naming the rule and what is wrong', () => {
  it('an unknown field, listing the fields there are', () => {
    const message = configErrorOf(() =>
      approvalPolicy([{ name: 'big-refunds', outcome: 'ask', tool: ['issue_refund'] } as unknown as ApprovalRule]),
    );
    expect(message).toContain('Approval policy rule 1 ("big-refunds"): unknown field "tool"');
    expect(message).toContain('fields: name, outcome, tools,');
  });

  it('a name that is not 1 to 64 letters, digits or _ . : -', () => {
    expect(configErrorOf(() => approvalPolicy([refund({ name: 'big refunds' })]))).toBe(
      'Approval policy rule 1 ("big refunds"): "name" must be 1 to 64 letters, digits or _ . : -.',
    );
    expect(configErrorOf(() => approvalPolicy([refund({ name: 'x'.repeat(65) })]))).toContain('"name" must be 1 to 64');
  });

  it('two rules of one name, naming the second', () => {
    expect(
      configErrorOf(() =>
        approvalPolicy([refund({ name: 'same' }), refund({ name: 'other' }), refund({ name: 'same' })]),
      ),
    ).toBe('Approval policy rule 3 ("same"): another rule has this name; give each its own.');
  });

  it('groups, approvals or requesterMayApprove on a rule that does not ask', () => {
    expect(
      configErrorOf(() => approvalPolicy([refund({ name: 'small', outcome: 'allow', groups: ['finance'] })])),
    ).toBe('Approval policy rule 1 ("small"): "groups" go with "outcome": "ask" only.');
    expect(
      configErrorOf(() =>
        approvalPolicy([refund({ name: 'never', outcome: 'deny', approvals: 2, requesterMayApprove: true })]),
      ),
    ).toBe('Approval policy rule 1 ("never"): "approvals", "requesterMayApprove" go with "outcome": "ask" only.');
  });

  it('approvals that are not a whole number from 1 to 10', () => {
    for (const approvals of [0, 11, 1.5]) {
      expect(configErrorOf(() => approvalPolicy([refund({ name: 'n-of-m', approvals })]))).toBe(
        'Approval policy rule 1 ("n-of-m"): "approvals" must be a whole number from 1 to 10.',
      );
    }
    expect(approvalPolicy([refund({ approvals: 10 })]).rules[0].approvals).toBe(10);
  });

  it('an escalation ladder that is not one: out of order, doing nothing, adding groups to a rule without any, too long', () => {
    const ladder = (escalation: unknown, extra: Partial<ApprovalRule> = { groups: ['finance'] }) =>
      configErrorOf(() => approvalPolicy([refund({ name: 'esc', ...extra, escalation } as Partial<ApprovalRule>)]));
    expect(
      ladder([
        { afterMs: 2000, remind: true },
        { afterMs: 1000, remind: true },
      ]),
    ).toBe(
      'Approval policy rule 1 ("esc"): escalation step 2\'s "afterMs" must be a whole number of milliseconds after the call was asked for, later than the step before (2000).',
    );
    expect(ladder([{ afterMs: 1000 }])).toBe(
      'Approval policy rule 1 ("esc"): escalation step 1 does nothing: give it "remind": true or "addGroups".',
    );
    expect(ladder([{ afterMs: 1000, addGroups: ['managers'] }], {})).toBe(
      'Approval policy rule 1 ("esc"): escalation step 1 adds groups, but the rule names none (any approver may decide already): give the rule "groups".',
    );
    expect(ladder([{ afterMs: 1000, remind: true, notify: 'x' }])).toMatch(/escalation step 1 has unknown "notify"/);
    expect(ladder(Array.from({ length: 11 }, (_, i) => ({ afterMs: i + 1, remind: true })))).toMatch(
      /must be a list of 1 to 10 steps/,
    );
    expect(ladder([{ afterMs: 1000, remind: true }], { outcome: 'deny' })).toMatch(
      /"escalation" go with "outcome": "ask" only/,
    );
    const ok = approvalPolicy([
      refund({ groups: ['finance'], escalation: [{ afterMs: 1000, addGroups: ['managers'] }] }),
    ]);
    expect(ok.rules[0].escalation).toEqual([{ afterMs: 1000, addGroups: ['managers'] }]);
  });

  it('a condition that is not one: not a number where one is needed, empty, or with an unknown bound', () => {
    const withCondition = (condition: unknown) =>
      configErrorOf(() => approvalPolicy([refund({ name: 'big', where: { amount_cents: condition } as never })]));
    expect(withCondition({ gt: '50000' })).toBe(
      'Approval policy rule 1 ("big"): the condition on "amount_cents" has "gt" that is not a number.',
    );
    expect(withCondition({})).toContain('the condition on "amount_cents" is empty: give one of eq, ne, gt');
    expect(withCondition({ above: 5 })).toContain('the condition on "amount_cents" has unknown "above"');
    expect(withCondition({ in: [] })).toContain('has "in" that is not a non-empty list');
    expect(withCondition(50000)).toContain('the condition on "amount_cents" must be an object like {"gt": 100000}');
  });

  it('an outcome that is none of ask, allow, deny, and a rule that is not an object, by position', () => {
    expect(configErrorOf(() => approvalPolicy([refund({ name: 'maybe', outcome: 'escalate' as never })]))).toBe(
      'Approval policy rule 1 ("maybe"): "outcome" must be one of ask, allow, deny.',
    );
    expect(configErrorOf(() => approvalPolicy([refund({}), 'ask' as never]))).toContain(
      'Approval policy rule 2: expected an object',
    );
  });
});

describe('evaluatePolicy: the first rule that matches a call decides', () => {
  afterEach(() => vi.restoreAllMocks());

  it('takes the first matching rule, and none when no rule matches (the tool decides)', async () => {
    const policy = approvalPolicy([
      { name: 'small-refunds', outcome: 'allow', tools: ['issue_refund'], where: { amount_cents: { lte: 5000 } } },
      { name: 'refunds', outcome: 'ask', tools: ['issue_refund'] },
      { name: 'everything', outcome: 'deny' },
    ]);
    expect(await evaluatePolicy(policy, question('issue_refund', { amount_cents: 4000 }))).toEqual({
      rule: 'small-refunds',
      outcome: 'allow',
    });
    expect(await evaluatePolicy(policy, question('issue_refund', { amount_cents: 6000 }))).toEqual({
      rule: 'refunds',
      outcome: 'ask',
    });
    expect((await evaluatePolicy(policy, question('find_customer', { query: 'ada' })))?.rule).toBe('everything');
    expect(
      await evaluatePolicy(approvalPolicy([{ name: 'x', outcome: 'deny', tools: ['wire'] }]), question('a', {})),
    ).toBe(undefined);
    expect(await evaluatePolicy(undefined, question('issue_refund', {}))).toBeUndefined();
  });

  it('filters by tool, by agent (a conversation without an agent meets no rule naming agents) and by who asked', async () => {
    const policy = approvalPolicy([
      { name: 'refunds-agent', outcome: 'ask', agents: ['refunds'], tools: ['list_orders'] },
      { name: 'from-bob', outcome: 'deny', requestedBy: ['bob', 'carol'] },
    ]);
    expect((await evaluatePolicy(policy, question('list_orders', {}, { agent: 'refunds' })))?.rule).toBe(
      'refunds-agent',
    );
    expect(await evaluatePolicy(policy, question('list_orders', {}, { agent: 'triage' }))).toBeUndefined();
    expect(await evaluatePolicy(policy, question('list_orders', {}))).toBeUndefined();
    expect((await evaluatePolicy(policy, question('list_orders', {}, { requestedBy: ['ada', 'carol'] })))?.rule).toBe(
      'from-bob',
    );
    expect(await evaluatePolicy(policy, question('list_orders', {}, { requestedBy: [] }))).toBeUndefined();
  });

  it('reads conditions at dotted paths into nested arguments, and at a key that holds the dots itself first', async () => {
    const policy = approvalPolicy([
      {
        name: 'big',
        outcome: 'ask',
        where: { 'refund.amount_cents': { gt: 50000 }, 'refund.currency': { in: ['EUR', 'USD'] } },
      },
    ]);
    expect(
      (await evaluatePolicy(policy, question('pay', { refund: { amount_cents: 60000, currency: 'EUR' } })))?.rule,
    ).toBe('big');
    expect(await evaluatePolicy(policy, question('pay', { refund: { amount_cents: 60000, currency: 'GBP' } }))).toBe(
      undefined,
    );
    // The exact key wins over the path.
    expect(
      await evaluatePolicy(
        policy,
        question('pay', { 'refund.amount_cents': 10, refund: { amount_cents: 60000, currency: 'EUR' } }),
      ),
    ).toBeUndefined();
    const exists = approvalPolicy([{ name: 'with-note', outcome: 'deny', where: { 'meta.note': { exists: true } } }]);
    expect((await evaluatePolicy(exists, question('pay', { meta: { note: 'x' } })))?.rule).toBe('with-note');
    expect(await evaluatePolicy(exists, question('pay', { meta: {} }))).toBeUndefined();
  });

  it('a missing argument, or one of another type, meets no bound', async () => {
    const policy = approvalPolicy([{ name: 'big', outcome: 'deny', where: { amount_cents: { gt: 100 } } }]);
    expect(await evaluatePolicy(policy, question('pay', {}))).toBeUndefined();
    expect(await evaluatePolicy(policy, question('pay', { amount_cents: '500' }))).toBeUndefined();
    expect(await evaluatePolicy(policy, question('pay', null))).toBeUndefined();
    expect((await evaluatePolicy(policy, question('pay', { amount_cents: 101 })))?.rule).toBe('big');
    const notEur = approvalPolicy([{ name: 'not-eur', outcome: 'ask', where: { currency: { ne: 'EUR' } } }]);
    // `ne` holds for a missing argument: pair it with `exists` to require one.
    expect((await evaluatePolicy(notEur, question('pay', {})))?.rule).toBe('not-eur');
  });

  it('a `when` that throws, times out or answers no boolean is a match for ask and deny, and no match for allow; logged', async () => {
    const warn = vi.spyOn(logger, 'warn').mockImplementation(() => undefined);
    const throwing = () => {
      throw new Error('CRM down');
    };
    const hanging = () => new Promise<boolean>(() => undefined);
    let signal: AbortSignal | undefined;
    const watching = (_: unknown, context: ToolCallContext) => {
      signal = context.signal;
      return new Promise<boolean>(() => undefined);
    };
    for (const when of [throwing, hanging, () => 'yes' as unknown as boolean]) {
      for (const outcome of ['ask', 'deny'] as const) {
        const policy = approvalPolicy([{ name: `${outcome}-check`, outcome, when }]);
        expect((await evaluatePolicy(policy, question('pay', {}), 20))?.rule).toBe(`${outcome}-check`);
      }
      const allow = approvalPolicy([{ name: 'allow-check', outcome: 'allow', when }]);
      expect(await evaluatePolicy(allow, question('pay', {}), 20)).toBeUndefined();
    }
    await evaluatePolicy(
      approvalPolicy([{ name: 'watched', outcome: 'ask', when: watching }]),
      question('pay', {}),
      20,
    );
    expect(signal?.aborted).toBe(true);
    expect(warn).toHaveBeenCalledWith(
      expect.objectContaining({ rule: 'allow-check', tool: 'pay', error: 'CRM down' }),
      expect.stringContaining('counts as no match'),
    );
    expect(warn).toHaveBeenCalledWith(
      expect.objectContaining({ rule: 'deny-check', error: 'it took longer than 20 ms' }),
      expect.stringContaining('counts as a match'),
    );
  });

  it('a `when` that answers decides, and gets the checked arguments and the context', async () => {
    const when = vi.fn(
      async (args: { amount_cents: number }, context: ToolCallContext) =>
        args.amount_cents > 100 && context.requestedBy.includes('ada'),
    );
    const policy = approvalPolicy([{ name: 'ada-big', outcome: 'ask', when }]);
    expect((await evaluatePolicy(policy, question('pay', { amount_cents: 200 })))?.rule).toBe('ada-big');
    expect(await evaluatePolicy(policy, question('pay', { amount_cents: 50 }))).toBeUndefined();
    expect(when.mock.calls[0][1]).toMatchObject({ conversationId: 'c-1', requestedBy: ['ada'] });
  });

  it("carries groups, approvals (above 1) and requesterMayApprove for an ask only, and the rule's reason for any", async () => {
    const ask = approvalPolicy([
      {
        name: 'finance',
        outcome: 'ask',
        groups: ['finance', 'finance-leads'],
        approvals: 2,
        requesterMayApprove: true,
        reason: 'Large refunds need two people of finance.',
      },
    ]);
    expect(await evaluatePolicy(ask, question('issue_refund', {}))).toEqual({
      rule: 'finance',
      outcome: 'ask',
      groups: ['finance', 'finance-leads'],
      approvals: 2,
      requesterMayApprove: true,
      reason: 'Large refunds need two people of finance.',
    });
    const one = approvalPolicy([{ name: 'one', outcome: 'ask', approvals: 1, requesterMayApprove: false }]);
    expect(await evaluatePolicy(one, question('issue_refund', {}))).toEqual({ rule: 'one', outcome: 'ask' });
    // A policy built around approvalPolicy()'s checks still gives a deny no asking fields.
    const unchecked: ApprovalPolicy = {
      kind: 'approval-policy',
      rules: [{ name: 'no', outcome: 'deny', groups: ['finance'], approvals: 3, reason: 'Never.' }],
    };
    expect(await evaluatePolicy(unchecked, question('issue_refund', {}))).toEqual({
      rule: 'no',
      outcome: 'deny',
      reason: 'Never.',
    });
  });
});

describe('readApprovalPolicy: a JSON policy for npm start', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'approval-policy-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, content: unknown, mode = 0o644): string => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
    fs.chmodSync(file, mode);
    return file;
  };
  const rules = [
    {
      name: 'big-refunds',
      outcome: 'ask',
      tools: ['issue_refund'],
      where: { amount_cents: { gt: 50000 } },
      groups: ['finance'],
      approvals: 2,
    },
    { name: 'no-wires', outcome: 'deny', tools: ['wire_money'], reason: 'Wires are made by finance.' },
  ];

  it('reads a list of rules, or {"rules": [...]}, from a file (others may read it: a policy is no secret)', () => {
    const listed = readApprovalPolicy({ file: write('list.json', rules) });
    expect(listed?.kind).toBe('approval-policy');
    expect(listed?.rules).toEqual(rules);
    expect(readApprovalPolicy({ file: write('object.json', { rules }, 0o444) })?.rules.map((r) => r.name)).toEqual([
      'big-refunds',
      'no-wires',
    ]);
  });

  it('reads the JSON itself, and nothing when neither is given', () => {
    expect(readApprovalPolicy({ inline: JSON.stringify({ rules }) })?.rules).toEqual(rules);
    expect(readApprovalPolicy({ inline: '[]' })?.rules).toEqual([]);
    expect(readApprovalPolicy({})).toBeUndefined();
  });

  it('refuses a file and JSON at once', () => {
    expect(configErrorOf(() => readApprovalPolicy({ file: write('both.json', rules), inline: '[]' }))).toBe(
      'AGENT_APPROVAL_POLICY_FILE and AGENT_APPROVAL_POLICY are both set: a worker has one approval policy. Unset one of them.',
    );
  });

  it('refuses a rule with `when`, which only code declares, saying to use `where` or a policy in code', () => {
    const message = configErrorOf(() =>
      readApprovalPolicy({ inline: JSON.stringify([rules[1], { name: 'vip', outcome: 'allow', when: 'vip' }]) }),
    );
    expect(message).toContain('AGENT_APPROVAL_POLICY: approval policy rule 2 ("vip") has "when"');
    expect(message).toContain('"where"');
    expect(message).toContain('declare the policy in code');
  });

  it("refuses a missing file, text that is not JSON (with the parser's words), and JSON that is no list of rules", () => {
    const missing = path.join(dir, 'missing.json');
    expect(configErrorOf(() => readApprovalPolicy({ file: missing }))).toBe(
      `AGENT_APPROVAL_POLICY_FILE=${missing}: there is no file ${missing}. Write the policy there, or unset the variable.`,
    );
    expect(configErrorOf(() => readApprovalPolicy({ file: dir }))).toContain('is not a file');
    let parserSays = '';
    try {
      JSON.parse('[{name: "x"}]');
    } catch (err) {
      parserSays = (err as Error).message;
    }
    const bad = write('bad.json', '[{name: "x"}]');
    expect(configErrorOf(() => readApprovalPolicy({ file: bad }))).toBe(
      `AGENT_APPROVAL_POLICY_FILE=${bad}: the approval policy is not valid JSON: ${parserSays}.`,
    );
    expect(configErrorOf(() => readApprovalPolicy({ inline: '{"rule": []}' }))).toContain(
      'AGENT_APPROVAL_POLICY: the approval policy has unknown field "rule"',
    );
    expect(configErrorOf(() => readApprovalPolicy({ inline: '"ask"' }))).toContain(
      'AGENT_APPROVAL_POLICY: the approval policy must be a list of rules or {"rules": [...]}',
    );
  });

  it.skipIf(process.platform === 'win32')(
    'refuses a file anyone may write, which would let anyone decide who approves',
    () => {
      const open = write('open.json', rules, 0o666);
      expect(configErrorOf(() => readApprovalPolicy({ file: open }))).toBe(
        `AGENT_APPROVAL_POLICY_FILE=${open}: anyone on this machine may write ${open} (mode 666), and so decide who approves what. Run \`chmod o-w ${open}\`.`,
      );
    },
  );

  it("hands the rules to approvalPolicy(), its message after the variable's name", () => {
    expect(
      configErrorOf(() => readApprovalPolicy({ inline: '[{"name": "small", "outcome": "allow", "approvals": 2}]' })),
    ).toBe('AGENT_APPROVAL_POLICY: Approval policy rule 1 ("small"): "approvals" go with "outcome": "ask" only.');
  });
});

describe("npm start's configuration of approval policies", () => {
  it('reads where the policy is (the file is read by npm start alone) and the OIDC groups claim', () => {
    expect(loadConfig({}).approvalPolicy).toEqual({});
    expect(
      loadConfig({ AGENT_APPROVAL_POLICY_FILE: 'policy.json', AGENT_APPROVAL_POLICY: ' ' }).approvalPolicy,
    ).toEqual({
      file: 'policy.json',
    });
    expect(loadConfig({ AGENT_APPROVAL_POLICY: '[]' }).approvalPolicy).toEqual({ inline: '[]' });
    const oidc = { AGENT_OIDC_ISSUER: 'https://idp.example.com', AGENT_OIDC_AUDIENCE: 'agent-api' };
    expect(loadConfig({ ...oidc, AGENT_OIDC_GROUPS_CLAIM: 'realm_access.groups' }).api.oidc?.groupsClaim).toBe(
      'realm_access.groups',
    );
  });

  const started = (policy: ApprovalPolicy, from: 'module' | 'variables' = 'variables') => {
    const tools = backofficeTools();
    return {
      pool: {} as Pool,
      model: { name: 'gpt-4o-mini', apiKey: 'sk-test' },
      tools,
      agents: backofficeAgents(tools),
      guardrails: [],
      ...(from === 'module' ? { approvalPolicy: policy } : { configuredPolicy: policy }),
      decisionTrust: { keys: [] },
    };
  };

  it("gives the worker the policy, whose rules may name the demo's tools, agents and agents called as tools", () => {
    const policy = approvalPolicy([
      {
        name: 'big-refunds',
        outcome: 'ask',
        tools: ['issue_refund'],
        where: { amount_cents: { gt: 50000 } },
        groups: ['finance'],
      },
      { name: 'audits', outcome: 'allow', tools: ['audit_order', 'get_order'], agents: ['refunds', 'auditor'] },
    ]);
    const config = loadConfig({ AGENT_APPROVAL_POLICY: '[]' });
    expect(pluginOptionsFrom(config, started(policy)).approvalPolicy).toBe(policy);
    expect(pluginOptionsFrom(config, started(policy, 'module')).approvalPolicy).toBe(policy);
    expect(pluginOptionsFrom(loadConfig({}), { ...started(policy), configuredPolicy: undefined }).approvalPolicy).toBe(
      undefined,
    );
  });

  it('refuses a rule naming a tool or an agent the worker does not have, listing those it has', () => {
    const config = loadConfig({ AGENT_APPROVAL_POLICY_FILE: 'policy.json' });
    const tool = configErrorOf(() =>
      pluginOptionsFrom(
        config,
        started(approvalPolicy([{ name: 'refunds', outcome: 'ask', tools: ['refund_order'] }])),
      ),
    );
    expect(tool).toContain(
      'AGENT_APPROVAL_POLICY_FILE=policy.json: approval policy rule "refunds" names tool "refund_order", which this worker does not have',
    );
    expect(tool).toContain('its tools: audit_order, find_customer, get_order, issue_refund, list_orders');
    const agent = configErrorOf(() =>
      pluginOptionsFrom(config, started(approvalPolicy([{ name: 'vip', outcome: 'deny', agents: ['billing'] }]))),
    );
    expect(agent).toContain(
      'rule "vip" names agent "billing", which this worker does not have (its agents: triage, refunds, auditor)',
    );
    // An MCP server's tools are named server__tool, and listed only once the server answers.
    const withMcp = loadConfig({ AGENT_MCP_SERVERS: '{"crm": {"url": "https://crm.example.com/mcp"}}' });
    const mcpRule = approvalPolicy([{ name: 'crm-writes', outcome: 'ask', tools: ['crm__update_customer'] }]);
    expect(pluginOptionsFrom(withMcp, started(mcpRule)).approvalPolicy).toBe(mcpRule);
  });

  it('refuses a policy from both the tools module and the variables', () => {
    const config = loadConfig({ AGENT_TOOLS_MODULE: 'tools.ts', AGENT_APPROVAL_POLICY: '[]' });
    const policy = approvalPolicy([]);
    expect(
      configErrorOf(() => pluginOptionsFrom(config, { ...started(policy, 'module'), configuredPolicy: policy })),
    ).toBe(
      'AGENT_TOOLS_MODULE=tools.ts exports an approval policy ("policy"), and AGENT_APPROVAL_POLICY gives another: a worker has one. Unset the variable, or drop the export.',
    );
  });
});
