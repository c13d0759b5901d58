import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/app/config';

describe('configuration from the environment', () => {
  it('defaults to embedded services and the offline demo model when nothing is set', () => {
    const config = loadConfig({});
    expect(config.temporal).toMatchObject({ address: undefined, namespace: 'default', taskQueue: 'agent' });
    expect(config.databaseUrl).toBeUndefined();
    expect(config.openai).toEqual({ apiKey: undefined, baseUrl: undefined, model: 'gpt-4o-mini' });
  });

  it('treats empty values as unset, as docker-compose passes them', () => {
    expect(loadConfig({ OPENAI_API_KEY: '', OPENAI_BASE_URL: ' ' }).openai.apiKey).toBeUndefined();
  });

  it('takes AGENT_DEFAULT_AGENT as an agent name or none, and refuses anything else naming the variable', () => {
    expect(loadConfig({}).defaultAgent).toBeUndefined();
    expect(loadConfig({ AGENT_DEFAULT_AGENT: 'refunds' }).defaultAgent).toBe('refunds');
    expect(loadConfig({ AGENT_DEFAULT_AGENT: 'none' }).defaultAgent).toBe('none');
    expect(() => loadConfig({ AGENT_DEFAULT_AGENT: 'two words' })).toThrow(/AGENT_DEFAULT_AGENT.*must be the name of one of the agents/);
  });

  it("forwards the SDK core's log at warn (error with LOG_LEVEL=error) unless AGENT_CORE_LOG_LEVEL says otherwise, and refuses a level LOG_LEVEL would drop, saying what to set", () => {
    expect(loadConfig({})).toMatchObject({ logLevel: 'info', coreLogLevel: 'warn' });
    expect(loadConfig({ LOG_LEVEL: 'debug', AGENT_CORE_LOG_LEVEL: 'debug' })).toMatchObject({ logLevel: 'debug', coreLogLevel: 'debug' });
    expect(loadConfig({ AGENT_CORE_LOG_LEVEL: 'error' }).coreLogLevel).toBe('error');
    expect(loadConfig({ LOG_LEVEL: 'error' })).toMatchObject({ logLevel: 'error', coreLogLevel: 'error' });
    expect(() => loadConfig({ AGENT_CORE_LOG_LEVEL: 'debug' })).toThrow(
      "AGENT_CORE_LOG_LEVEL=debug is more verbose than LOG_LEVEL=info: the core's lines go through the worker's log, which would drop them. Set LOG_LEVEL=debug too.",
    );
    expect(() => loadConfig({ AGENT_CORE_LOG_LEVEL: 'verbose' })).toThrow(/AGENT_CORE_LOG_LEVEL: Invalid option: expected one of "trace"\|"debug"/);
  });

  it('refuses a DATABASE_URL that is not a PostgreSQL URL, naming the variable and the expected shape', () => {
    expect(() => loadConfig({ DATABASE_URL: 'mysql://localhost/agent' })).toThrow(ConfigError);
    expect(() => loadConfig({ DATABASE_URL: 'mysql://localhost/agent' })).toThrow(
      /DATABASE_URL: must look like postgres:\/\/user:password@host:5432\/database/,
    );
  });

  it('serves metrics on 127.0.0.1:9464 unless told another host:port or off, and refuses anything else', () => {
    expect(loadConfig({}).metricsAddress).toBe('127.0.0.1:9464');
    expect(loadConfig({ AGENT_METRICS_ADDRESS: '0.0.0.0:9100' }).metricsAddress).toBe('0.0.0.0:9100');
    expect(loadConfig({ AGENT_METRICS_ADDRESS: 'off' }).metricsAddress).toBe('off');
    expect(() => loadConfig({ AGENT_METRICS_ADDRESS: '9464' })).toThrow(
      /AGENT_METRICS_ADDRESS: must be host:port such as 127.0.0.1:9464, or "off" for no metrics endpoint/,
    );
  });

  it("lets the embedded dev server's UI call the codec server by default, a configured Temporal's UI only when named, and refuses what is no origin", () => {
    expect(loadConfig({}).api.codecCorsOrigins).toEqual(['http://127.0.0.1:8233', 'http://localhost:8233']);
    expect(loadConfig({ TEMPORAL_UI_PORT: '9233' }).api.codecCorsOrigins).toEqual(['http://127.0.0.1:9233', 'http://localhost:9233']);
    expect(loadConfig({ TEMPORAL_ADDRESS: 'temporal.example.com:7233' }).api.codecCorsOrigins).toEqual([]);
    expect(
      loadConfig({ TEMPORAL_ADDRESS: 'temporal.example.com:7233', AGENT_CODEC_CORS_ORIGINS: 'https://temporal-ui.example.com, http://127.0.0.1:8080' }).api
        .codecCorsOrigins,
    ).toEqual(['https://temporal-ui.example.com', 'http://127.0.0.1:8080']);
    expect(() => loadConfig({ AGENT_CODEC_CORS_ORIGINS: 'https://temporal-ui.example.com/namespaces' })).toThrow(
      /AGENT_CODEC_CORS_ORIGINS: must be origins separated by commas, each scheme:\/\/host\[:port\] with no path/,
    );
  });

  it('reads MCP servers as JSON with ${NAME} taken from the environment, and refuses a bad server or a missing variable, saying which', () => {
    const servers =
      '{"crm": {"url": "https://crm.example.com/mcp", "headers": {"Authorization": "Bearer ${CRM_TOKEN}"}}, "files": {"command": "node", "args": ["files-mcp.js"]}}';
    expect(loadConfig({ AGENT_MCP_SERVERS: servers, CRM_TOKEN: 'secret-1' }).mcpServers).toEqual({
      crm: { url: 'https://crm.example.com/mcp', headers: { Authorization: 'Bearer secret-1' } },
      files: { command: 'node', args: ['files-mcp.js'] },
    });
    expect(loadConfig({}).mcpServers).toBeUndefined();
    expect(() => loadConfig({ AGENT_MCP_SERVERS: servers })).toThrow('AGENT_MCP_SERVERS names ${CRM_TOKEN}, and CRM_TOKEN is not set.');
    expect(() => loadConfig({ AGENT_MCP_SERVERS: '{"crm": {"url": "https://crm.example.com/mcp", "command": "node"}}' })).toThrow(
      /AGENT_MCP_SERVERS: the value: server "crm" needs exactly one of "command" \(a program the worker starts\) and "url"/,
    );
    expect(() => loadConfig({ AGENT_MCP_SERVERS: '{"crm_tools": {"url": "https://crm.example.com/mcp"}}' })).toThrow(
      /server "crm_tools": a name is 1-24 letters, digits or "-"/,
    );
    expect(() => loadConfig({ AGENT_MCP_SERVERS: 'crm=https://x' })).toThrow(/AGENT_MCP_SERVERS: must be JSON such as/);
    expect(
      loadConfig({ AGENT_MCP_SERVERS: '{"crm": {"url": "https://crm.example.com/mcp", "reconnect": {"attempts": 2, "delayMs": 100}}}' }).mcpServers,
    ).toEqual({
      crm: { url: 'https://crm.example.com/mcp', reconnect: { attempts: 2, delayMs: 100 } },
    });
    expect(() => loadConfig({ AGENT_MCP_SERVERS: '{"crm": {"url": "https://crm.example.com/mcp", "reconnect": {"attempts": 0, "delayMs": -1}}}' })).toThrow(
      /server "crm": reconnect.attempts must be a whole number from 1 to 20; .*server "crm": reconnect.delayMs must be a whole number of milliseconds from 0 to 60000/,
    );
  });

  it('reads model prices as JSON and refuses a table that is not one, with an example', () => {
    expect(loadConfig({ AGENT_MODEL_PRICES: '{"gpt-4.1": {"input": 2, "output": 8}}' }).openai.prices).toEqual({ 'gpt-4.1': { input: 2, output: 8 } });
    expect(loadConfig({}).openai.prices).toBeUndefined();
    expect(() => loadConfig({ AGENT_MODEL_PRICES: 'gpt-4.1=2/8' })).toThrow(
      /AGENT_MODEL_PRICES: must be JSON such as \{"gpt-4\.1": \{"input": 2, "output": 8\}\}/,
    );
    expect(() => loadConfig({ AGENT_MODEL_PRICES: '{"gpt-4.1": {"input": 2}}' })).toThrow(
      /AGENT_MODEL_PRICES: the price of "gpt-4\.1" must have "input" and "output", numbers of dollars per million tokens/,
    );
  });

  it('reads payload keys as id:base64, and refuses a key of the wrong size naming the variable', () => {
    const key = Buffer.alloc(32, 7).toString('base64');
    expect(loadConfig({ AGENT_PAYLOAD_KEYS: `k1:${key}` }).payloadKeys?.map((k) => k.id)).toEqual(['k1']);
    expect(loadConfig({}).payloadKeys).toBeUndefined();
    expect(() => loadConfig({ AGENT_PAYLOAD_KEYS: 'k1:c2hvcnQ=' })).toThrow(/AGENT_PAYLOAD_KEYS: key "k1" is 5 bytes; AES-256 needs 32/);
  });

  it('registers each search attribute group that fits unless told which (auto, none, a list) and a prefix, and refuses an unknown group or a bad prefix', () => {
    expect(loadConfig({}).searchAttributes).toEqual({});
    expect(loadConfig({ AGENT_SEARCH_ATTRIBUTES: 'auto' }).searchAttributes).toEqual({});
    expect(loadConfig({ AGENT_SEARCH_ATTRIBUTES: 'none' }).searchAttributes).toEqual({ groups: [] });
    expect(loadConfig({ AGENT_SEARCH_ATTRIBUTES: 'status, approvals', AGENT_SEARCH_ATTRIBUTE_PREFIX: 'Support_' }).searchAttributes).toEqual({
      groups: ['status', 'approvals'],
      prefix: 'Support_',
    });
    expect(() => loadConfig({ AGENT_SEARCH_ATTRIBUTES: 'status,costs' })).toThrow(
      /AGENT_SEARCH_ATTRIBUTES: "costs" is not a group of search attributes: write auto, none, or groups separated by commas among status, approvals, unknownEffects, usage/,
    );
    expect(() => loadConfig({ AGENT_SEARCH_ATTRIBUTE_PREFIX: 'team-a.' })).toThrow(
      /AGENT_SEARCH_ATTRIBUTE_PREFIX: "team-a\." cannot prefix search attribute names: use a letter, then letters, digits or _, at most 40 characters/,
    );
  });

  it('refuses an OPENAI_BASE_URL that is not a URL', () => {
    expect(() => loadConfig({ OPENAI_BASE_URL: 'localhost:8080' })).toThrow(/OPENAI_BASE_URL/);
  });
});
