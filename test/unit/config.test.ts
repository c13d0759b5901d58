import { describe, expect, it } from 'vitest';
import { ConfigError, ENV_VARS, loadConfig } from '../../src/app/config';

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
    expect(() => loadConfig({ AGENT_DEFAULT_AGENT: 'two words' })).toThrow(
      /AGENT_DEFAULT_AGENT.*must be the name of one of the agents/,
    );
  });

  it("forwards the SDK core's log at warn (error with LOG_LEVEL=error) unless AGENT_CORE_LOG_LEVEL says otherwise, and refuses a level LOG_LEVEL would drop, saying what to set", () => {
    expect(loadConfig({})).toMatchObject({ logLevel: 'info', coreLogLevel: 'warn' });
    expect(loadConfig({ LOG_LEVEL: 'debug', AGENT_CORE_LOG_LEVEL: 'debug' })).toMatchObject({
      logLevel: 'debug',
      coreLogLevel: 'debug',
    });
    expect(loadConfig({ AGENT_CORE_LOG_LEVEL: 'error' }).coreLogLevel).toBe('error');
    expect(loadConfig({ LOG_LEVEL: 'error' })).toMatchObject({ logLevel: 'error', coreLogLevel: 'error' });
    expect(() => loadConfig({ AGENT_CORE_LOG_LEVEL: 'debug' })).toThrow(
      "AGENT_CORE_LOG_LEVEL=debug is more verbose than LOG_LEVEL=info: the core's lines go through the worker's log, which would drop them. Set LOG_LEVEL=debug too.",
    );
    expect(() => loadConfig({ AGENT_CORE_LOG_LEVEL: 'verbose' })).toThrow(
      /AGENT_CORE_LOG_LEVEL: Invalid option: expected one of "trace"\|"debug"/,
    );
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
    expect(loadConfig({ TEMPORAL_UI_PORT: '9233' }).api.codecCorsOrigins).toEqual([
      'http://127.0.0.1:9233',
      'http://localhost:9233',
    ]);
    expect(loadConfig({ TEMPORAL_ADDRESS: 'temporal.example.com:7233' }).api.codecCorsOrigins).toEqual([]);
    expect(
      loadConfig({
        TEMPORAL_ADDRESS: 'temporal.example.com:7233',
        AGENT_CODEC_CORS_ORIGINS: 'https://temporal-ui.example.com, http://127.0.0.1:8080',
      }).api.codecCorsOrigins,
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
    expect(() => loadConfig({ AGENT_MCP_SERVERS: servers })).toThrow(
      'AGENT_MCP_SERVERS names ${CRM_TOKEN}, and CRM_TOKEN is not set.',
    );
    expect(() =>
      loadConfig({ AGENT_MCP_SERVERS: '{"crm": {"url": "https://crm.example.com/mcp", "command": "node"}}' }),
    ).toThrow(
      /AGENT_MCP_SERVERS: the value: server "crm" needs exactly one of "command" \(a program the worker starts\) and "url"/,
    );
    expect(() => loadConfig({ AGENT_MCP_SERVERS: '{"crm_tools": {"url": "https://crm.example.com/mcp"}}' })).toThrow(
      /server "crm_tools": a name is 1-24 letters, digits or "-"/,
    );
    expect(() => loadConfig({ AGENT_MCP_SERVERS: 'crm=https://x' })).toThrow(/AGENT_MCP_SERVERS: must be JSON such as/);
    expect(
      loadConfig({
        AGENT_MCP_SERVERS:
          '{"crm": {"url": "https://crm.example.com/mcp", "reconnect": {"attempts": 2, "delayMs": 100}}}',
      }).mcpServers,
    ).toEqual({
      crm: { url: 'https://crm.example.com/mcp', reconnect: { attempts: 2, delayMs: 100 } },
    });
    expect(() =>
      loadConfig({
        AGENT_MCP_SERVERS:
          '{"crm": {"url": "https://crm.example.com/mcp", "reconnect": {"attempts": 0, "delayMs": -1}}}',
      }),
    ).toThrow(
      /server "crm": reconnect.attempts must be a whole number from 1 to 20; .*server "crm": reconnect.delayMs must be a whole number of milliseconds from 0 to 60000/,
    );
  });

  it('reads model prices as JSON and refuses a table that is not one, with an example', () => {
    expect(loadConfig({ AGENT_MODEL_PRICES: '{"gpt-4.1": {"input": 2, "output": 8}}' }).openai.prices).toEqual({
      'gpt-4.1': { input: 2, output: 8 },
    });
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
    expect(() => loadConfig({ AGENT_PAYLOAD_KEYS: 'k1:c2hvcnQ=' })).toThrow(
      /AGENT_PAYLOAD_KEYS: key "k1" is 5 bytes; AES-256 needs 32/,
    );
  });

  it('registers each search attribute group that fits unless told which (auto, none, a list) and a prefix, and refuses an unknown group or a bad prefix', () => {
    expect(loadConfig({}).searchAttributes).toEqual({});
    expect(loadConfig({ AGENT_SEARCH_ATTRIBUTES: 'auto' }).searchAttributes).toEqual({});
    expect(loadConfig({ AGENT_SEARCH_ATTRIBUTES: 'none' }).searchAttributes).toEqual({ groups: [] });
    expect(
      loadConfig({ AGENT_SEARCH_ATTRIBUTES: 'status, approvals', AGENT_SEARCH_ATTRIBUTE_PREFIX: 'Support_' })
        .searchAttributes,
    ).toEqual({
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

  it("exports traces to OpenTelemetry's OTLP/HTTP endpoint (the traces' own URL winning), none with OTEL_TRACES_EXPORTER=none, and refuses another exporter or gRPC naming the variable", () => {
    expect(loadConfig({}).traces).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }).traces).toEqual({
      url: 'http://127.0.0.1:4318/v1/traces',
      endpointVariable: 'OTEL_EXPORTER_OTLP_ENDPOINT',
      serviceName: 'durable-agent-worker',
    });
    expect(
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318/',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/spans',
        OTEL_SERVICE_NAME: 'support',
      }).traces,
    ).toEqual({
      url: 'http://b:4318/spans',
      endpointVariable: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
      serviceName: 'support',
    });
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'none' }).traces,
    ).toBeUndefined();
    expect(() =>
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'zipkin' }),
    ).toThrow(/OTEL_TRACES_EXPORTER: is "zipkin", but npm start and npm run api export traces over OTLP only/);
    expect(() =>
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4317',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc',
      }),
    ).toThrow(
      /OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: is "grpc", but npm start and npm run api send traces over OTLP\/HTTP/,
    );
    // Without an endpoint nothing is exported, so the other variables are not checked.
    expect(loadConfig({ OTEL_TRACES_EXPORTER: 'zipkin' }).traces).toBeUndefined();
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: '127.0.0.1:4318' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT: must be an http\(s\) URL/,
    );
  });

  it('verifies OIDC tokens only when an issuer is set, with the claims given', () => {
    expect(loadConfig({ AGENT_OIDC_AUDIENCE: 'agent' }).api.oidc).toBeUndefined();
    expect(
      loadConfig({
        AGENT_OIDC_ISSUER: 'https://id.example.com',
        AGENT_OIDC_AUDIENCE: 'agent',
        AGENT_OIDC_ROLES_CLAIM: 'realm.roles',
      }).api.oidc,
    ).toEqual({
      issuer: 'https://id.example.com',
      audience: 'agent',
      rolesClaim: 'realm.roles',
    });
  });

  it('takes over lost workers unless told false, with a confirmation delay of at least 100 ms when one is set', () => {
    expect(loadConfig({}).lostWorkers).toEqual({ enabled: true });
    expect(loadConfig({ AGENT_LOST_WORKER_TAKEOVER: 'no', AGENT_LOST_WORKER_CONFIRM_MS: '500' }).lostWorkers).toEqual({
      enabled: false,
      confirmMs: 500,
    });
    expect(() => loadConfig({ AGENT_LOST_WORKER_TAKEOVER: 'maybe' })).toThrow(
      /AGENT_LOST_WORKER_TAKEOVER: must be true or false/,
    );
    expect(() => loadConfig({ AGENT_LOST_WORKER_CONFIRM_MS: '50' })).toThrow(
      /AGENT_LOST_WORKER_CONFIRM_MS: must be at least 100 ms/,
    );
  });

  it('serves the API on 127.0.0.1:8787 unless told another port, 0 or off, and refuses a port past 65535', () => {
    expect(loadConfig({}).api).toMatchObject({
      host: '127.0.0.1',
      port: 8787,
      requireSignedDecisions: true,
      allowSelfApproval: false,
    });
    expect(loadConfig({ AGENT_API_PORT: 'off' }).api.port).toBe('off');
    expect(loadConfig({ AGENT_API_PORT: '0' }).api.port).toBe(0);
    expect(() => loadConfig({ AGENT_API_PORT: '70000' })).toThrow(/AGENT_API_PORT: must be at most 65535/);
  });

  it('names every bad variable at once, one line each', () => {
    let message = '';
    try {
      loadConfig({ DATABASE_URL: 'mysql://localhost/agent', AGENT_MAX_PARALLEL_TOOL_CALLS: '0', LOG_LEVEL: 'loud' });
    } catch (err) {
      message = (err as Error).message;
    }
    const lines = message.split('\n');
    expect(lines[0]).toBe('Invalid configuration in the environment:');
    expect(
      lines
        .slice(1)
        .map((l) => l.split(':')[0].trim())
        .sort(),
    ).toEqual(['AGENT_MAX_PARALLEL_TOOL_CALLS', 'DATABASE_URL', 'LOG_LEVEL']);
  });

  it("lists for a deployment every variable of the worker's own, not the embedded dev server's, the log levels or OpenTelemetry's", () => {
    expect(ENV_VARS).toEqual(
      expect.arrayContaining([
        'TEMPORAL_ADDRESS',
        'DATABASE_URL',
        'OPENAI_MODEL',
        'AGENT_DECISION_KEYS',
        'AGENT_OIDC_ISSUER',
        'AGENT_SEARCH_ATTRIBUTES',
      ]),
    );
    for (const name of [
      'TEMPORAL_CLI_PATH',
      'TEMPORAL_UI_PORT',
      'LOG_LEVEL',
      'AGENT_CORE_LOG_LEVEL',
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'TEMPORAL_API_KEY',
    ]) {
      expect(ENV_VARS).not.toContain(name);
    }
    expect(new Set(ENV_VARS).size).toBe(ENV_VARS.length);
  });

  it('refuses an OPENAI_BASE_URL that is not a URL', () => {
    expect(() => loadConfig({ OPENAI_BASE_URL: 'localhost:8080' })).toThrow(/OPENAI_BASE_URL/);
  });
});
