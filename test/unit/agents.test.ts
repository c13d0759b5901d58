import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agent, AgentRegistry, toolsOfAgents } from '../../src/tools/agents';
import { ToolRegistry } from '../../src/tools/registry';
import { tool } from '../../src/tools/tool';
import { DurableAgentPlugin } from '../../src/worker/plugin';

// The worker's agents, checked before it polls: src/tools/agents.ts.

const lookup = tool({ name: 'lookup', description: 'Looks up.', parameters: z.object({}), execute: () => 'ok' });
const tools = new ToolRegistry([lookup]);

describe('agent registry', () => {
  it("offers an agent's tools and one transfer_to_<agent> tool per handoff, described with the target's handoffDescription", () => {
    const registry = new AgentRegistry(
      [
        agent({ name: 'triage', tools: [lookup], handoffs: ['refunds'] }),
        agent({ name: 'refunds', handoffDescription: 'Issues refunds.' }),
      ],
      tools,
    );
    const triage = registry.get('triage')!;
    expect(registry.names()).toEqual(['triage', 'refunds']);
    expect(registry.toolNames(triage)).toEqual(['lookup']);
    expect(registry.handoffSpecs(triage)).toEqual([
      {
        type: 'function',
        function: {
          name: 'transfer_to_refunds',
          description: 'Hand off to the refunds agent to handle the request. Issues refunds.',
          parameters: { type: 'object', properties: {}, required: [], additionalProperties: false },
          strict: true,
        },
      },
    ]);
    expect(registry.handoffTarget(triage, 'transfer_to_refunds')).toBe('refunds');
    expect(registry.handoffTarget(triage, 'transfer_to_triage')).toBeUndefined(); // not one of its handoffs
    expect(registry.handoffTarget(registry.get('refunds')!, 'transfer_to_refunds')).toBeUndefined();
    expect(toolsOfAgents([triage])).toEqual([lookup]);
  });

  it('refuses, saying what to fix: a bad or repeated name, a handoff to no agent, a tool the worker lacks, a tool named like a handoff', () => {
    expect(() => new AgentRegistry([agent({ name: 'two words' })], tools)).toThrow(
      /Agent name "two words" is not allowed: use 1-52 letters/,
    );
    expect(() => new AgentRegistry([agent({ name: 'a'.repeat(53) })], tools)).toThrow(/is not allowed/);
    expect(() => new AgentRegistry([agent({ name: 'a' }), agent({ name: 'a' })], tools)).toThrow(
      /Two agents are named "a"/,
    );
    expect(() => new AgentRegistry([agent({ name: 'a', handoffs: ['b'] })], tools)).toThrow(
      /hands off to "b", which is not one of the worker's agents \(a\)/,
    );
    expect(() => new AgentRegistry([agent({ name: 'a', tools: ['delete_all'] })], tools)).toThrow(
      /offers tool "delete_all", which the worker does not have \(its tools: lookup\)/,
    );
    expect(() => new AgentRegistry([agent({ name: 'a', tools: ['transfer_to_x'] })], tools)).toThrow(
      /starts with "transfer_to_"/,
    );
    expect(() => new AgentRegistry([{ name: 'plain' } as never], tools)).toThrow(/made with agent\(\{\.\.\.\}\)/);
    expect(() => new AgentRegistry([agent({ name: 'a', tools: ['crm__find'] })], tools)).not.toThrow(); // an MCP tool, discovered per turn
  });

  it('the plugin refuses a default agent it does not have, and a bad agent, before it opens anything', () => {
    const options = {
      tools: [lookup],
      model: { name: 'm', apiKey: 'k' },
      database: { url: 'postgres://127.0.0.1:1/none' },
    };
    expect(() => new DurableAgentPlugin({ ...options, agents: [agent({ name: 'a' })], defaultAgent: 'b' })).toThrow(
      /DurableAgentPlugin: defaultAgent "b" is not one of its agents \(a\)/,
    );
    expect(() => new DurableAgentPlugin({ ...options, agents: [agent({ name: 'a', handoffs: ['c'] })] })).toThrow(
      /Agent "a" hands off to "c"/,
    );
  });
});

describe('agents as tools', () => {
  const auditor = agent({ name: 'auditor', handoffDescription: 'Checks orders.', tools: [lookup] });

  it('offers each agent tool with an {input} task, described by toolDescription or the handoffDescription, apart from the worker tools', () => {
    const desk = agent({
      name: 'desk',
      tools: [
        lookup,
        auditor.asTool({ toolName: 'audit', needsApproval: true, timeoutMs: 60_000 }),
        auditor.asTool({ toolName: 'audit_again', toolDescription: 'Again.' }),
      ],
    });
    const registry = new AgentRegistry([desk, auditor], tools);
    const d = registry.get('desk')!;
    expect(registry.toolNames(d)).toEqual(['lookup']);
    expect(registry.agentToolSpecs(d).map((s) => [s.function.name, s.function.description])).toEqual([
      ['audit', 'Checks orders.'],
      ['audit_again', 'Again.'],
    ]);
    expect(registry.agentToolSpecs(d)[0].function.parameters).toEqual({
      type: 'object',
      properties: {
        input: { type: 'string', description: 'The task for the agent, with everything it needs to know.' },
      },
      required: ['input'],
      additionalProperties: false,
    });
    expect(registry.agentTool(d, 'audit')).toMatchObject({
      kind: 'agent_tool',
      agent: 'auditor',
      toolName: 'audit',
      toolDescription: 'Checks orders.',
      needsApproval: true,
      timeoutMs: 60_000,
    });
    expect(registry.agentTool(d, 'lookup')).toBeUndefined();
    expect(toolsOfAgents([d])).toEqual([lookup]);
    expect(agent({ name: 'plain' }).asTool()).toMatchObject({
      kind: 'agent_tool',
      agent: 'plain',
      toolName: 'plain',
      needsApproval: false,
    });
  });

  it("names an agent tool as the Agents SDK does by default (my-auditor: my_auditor), and still takes a running conversation's call of the agent's own name", () => {
    const mine = agent({ name: 'my-auditor', tools: [lookup] });
    const desk = agent({ name: 'desk', tools: [mine.asTool(), mine.asTool({ toolName: 'named-by-hand' })] });
    const registry = new AgentRegistry([desk, mine], tools);
    const d = registry.get('desk')!;
    expect(registry.agentToolSpecs(d).map((s) => s.function.name)).toEqual(['my_auditor', 'named-by-hand']);
    expect(registry.agentTool(d, 'my_auditor')).toMatchObject({ agent: 'my-auditor', toolName: 'my_auditor' });
    expect(registry.agentTool(d, 'my-auditor')).toMatchObject({ agent: 'my-auditor', toolName: 'my_auditor' });
    expect(registry.agentTool(d, 'my-other')).toBeUndefined();
  });

  it('refuses an agent tool of an unknown agent, a clashing or bad name, and a timeout under a second, saying what to fix', () => {
    const make =
      (...t: Parameters<typeof agent>[0]['tools'][]) =>
      () =>
        new AgentRegistry([agent({ name: 'desk', tools: t[0] }), auditor], tools);
    const stranger = agent({ name: 'stranger' });
    expect(make([stranger.asTool()])).toThrow(
      'Agent "desk" calls agent "stranger" as a tool, which is not one of the worker\'s agents (desk, auditor).',
    );
    expect(make([lookup, auditor.asTool({ toolName: 'lookup' })])).toThrow(
      'Agent "desk" offers two tools named "lookup"; give the agent tool another toolName.',
    );
    expect(make([auditor.asTool({ toolName: 'transfer_to_x' })])).toThrow(
      /agent tool name "transfer_to_x" is not allowed/,
    );
    expect(make([auditor.asTool({ toolName: 'has space' })])).toThrow(/agent tool name "has space" is not allowed/);
    expect(make([auditor.asTool({ timeoutMs: 10 })])).toThrow(
      'Agent "desk": agent tool "auditor" has timeoutMs 10; give whole milliseconds, at least 1000.',
    );
  });
});

describe('agent output types', () => {
  it('resolves a zod output type into a strict schema that checks answers, and a JSON Schema with an optional property into a non-strict one', () => {
    const registry = new AgentRegistry(
      [
        agent({ name: 'typed', outputType: z.object({ n: z.number().int() }) }),
        agent({
          name: 'loose',
          outputType: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, required: ['a'] },
          outputRetries: 0,
        }),
        agent({ name: 'plain' }),
      ],
      tools,
    );
    const typed = registry.outputOf(registry.get('typed')!)!;
    expect(typed).toMatchObject({ name: 'typed_output', strict: true, retries: 2 });
    expect(typed.schema).not.toHaveProperty('$schema');
    expect(typed.check('{"n":2}')).toEqual({ ok: true, value: { n: 2 } });
    expect(typed.check('{"n":2.5}')).toMatchObject({ ok: false, problem: expect.stringContaining('expected int') });
    expect(typed.check('two')).toMatchObject({ ok: false, problem: expect.stringMatching(/^The answer is not JSON/) });
    expect(typed.check('')).toEqual({ ok: false, problem: 'The answer is empty.' });
    const loose = registry.outputOf(registry.get('loose')!)!;
    expect(loose).toMatchObject({ strict: false, retries: 0 });
    expect(loose.check('{"b":"x"}')).toEqual({ ok: false, problem: "output must have required property 'a'" });
    expect(registry.outputOf(registry.get('plain')!)).toBeUndefined();
  });

  it('refuses, naming the agent, an output schema that does not compile and retries out of range', () => {
    expect(() => new AgentRegistry([agent({ name: 'bad', outputType: { type: 'objekt' } })], tools)).toThrow(
      /^Agent "bad": the output schema cannot be compiled as JSON Schema: /,
    );
    expect(
      () => new AgentRegistry([agent({ name: 'many', outputType: z.string(), outputRetries: 11 })], tools),
    ).toThrow('Agent "many": output retries must be an integer from 0 to 10, got 11.');
  });
});
