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
      [agent({ name: 'triage', tools: [lookup], handoffs: ['refunds'] }), agent({ name: 'refunds', handoffDescription: 'Issues refunds.' })],
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
          parameters: { type: 'object', properties: {}, additionalProperties: false },
        },
      },
    ]);
    expect(registry.handoffTarget(triage, 'transfer_to_refunds')).toBe('refunds');
    expect(registry.handoffTarget(triage, 'transfer_to_triage')).toBeUndefined(); // not one of its handoffs
    expect(registry.handoffTarget(registry.get('refunds')!, 'transfer_to_refunds')).toBeUndefined();
    expect(toolsOfAgents([triage])).toEqual([lookup]);
  });

  it('refuses, saying what to fix: a bad or repeated name, a handoff to no agent, a tool the worker lacks, a tool named like a handoff', () => {
    expect(() => new AgentRegistry([agent({ name: 'two words' })], tools)).toThrow(/Agent name "two words" is not allowed: use 1-52 letters/);
    expect(() => new AgentRegistry([agent({ name: 'a'.repeat(53) })], tools)).toThrow(/is not allowed/);
    expect(() => new AgentRegistry([agent({ name: 'a' }), agent({ name: 'a' })], tools)).toThrow(/Two agents are named "a"/);
    expect(() => new AgentRegistry([agent({ name: 'a', handoffs: ['b'] })], tools)).toThrow(/hands off to "b", which is not one of the worker's agents \(a\)/);
    expect(() => new AgentRegistry([agent({ name: 'a', tools: ['delete_all'] })], tools)).toThrow(
      /offers tool "delete_all", which the worker does not have \(its tools: lookup\)/,
    );
    expect(() => new AgentRegistry([agent({ name: 'a', tools: ['transfer_to_x'] })], tools)).toThrow(/starts with "transfer_to_"/);
    expect(() => new AgentRegistry([{ name: 'plain' } as never], tools)).toThrow(/made with agent\(\{\.\.\.\}\)/);
    expect(() => new AgentRegistry([agent({ name: 'a', tools: ['crm__find'] })], tools)).not.toThrow(); // an MCP tool, discovered per turn
  });

  it('the plugin refuses a default agent it does not have, and a bad agent, before it opens anything', () => {
    const options = { tools: [lookup], model: { name: 'm', apiKey: 'k' }, database: { url: 'postgres://127.0.0.1:1/none' } };
    expect(() => new DurableAgentPlugin({ ...options, agents: [agent({ name: 'a' })], defaultAgent: 'b' })).toThrow(
      /DurableAgentPlugin: defaultAgent "b" is not one of its agents \(a\)/,
    );
    expect(() => new DurableAgentPlugin({ ...options, agents: [agent({ name: 'a', handoffs: ['c'] })] })).toThrow(/Agent "a" hands off to "c"/);
  });
});
