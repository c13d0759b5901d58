import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findApiDecider } from '../../src/cli/api-decisions';
import { findRunningApi, howToDecideThroughApi } from '../../src/cli/running-api';
import { loadConfig } from '../../src/app/config';
import type { RuntimeInfo } from '../../src/app/runtime-file';

// Which API the CLI decides through: the running npm start's (found through
// its runtime file) only when it serves the CLI's own Temporal address,
// namespace and task queue, embedded or on a team's cluster; as its
// development approver only when it made development tokens. When none can be
// used, the CLI says which variables to set.

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-running-api-'));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

const TEAM = {
  TEMPORAL_ADDRESS: 'temporal.team.example:7233',
  DATABASE_URL: 'postgres://u:p@db.team.example:5432/agent',
  TEMPORAL_TASK_QUEUE: 'billing',
  AGENT_DATA_DIR: dataDir,
};
const tokensFile = path.join(dataDir, 'api-tokens.json');
const ON_TEAM_CLUSTER: RuntimeInfo = {
  temporalAddress: 'temporal.team.example:7233',
  namespace: 'default',
  taskQueue: 'billing',
  databaseUrl: TEAM.DATABASE_URL,
  databaseSchema: 'durable_agent',
  apiUrl: 'http://127.0.0.1:8787',
  developmentTokensFile: tokensFile,
  pid: 4242,
};
const EMBEDDED: RuntimeInfo = {
  ...ON_TEAM_CLUSTER,
  temporalAddress: '127.0.0.1:7233',
  databaseUrl: 'postgres://postgres:pw@127.0.0.1:5999/agent',
  taskQueue: 'agent',
};
const find = (env: Record<string, string>, runtime: RuntimeInfo | undefined) =>
  findRunningApi(loadConfig(env), env, runtime);

const APPROVER_TOKEN = 'a'.repeat(43);
fs.writeFileSync(
  tokensFile,
  JSON.stringify([
    { subject: 'local-requester', roles: ['requester', 'operator'], token: 'r'.repeat(43) },
    { subject: 'local-approver', roles: ['approver', 'operator'], token: APPROVER_TOKEN },
  ]),
  { mode: 0o600 },
);

describe('the API the CLI decides through', () => {
  it("is the API of an npm start on a team's cluster when the CLI has the same environment", () => {
    const running = find(TEAM, ON_TEAM_CLUSTER);
    expect(running).toEqual({
      found: 'api',
      url: 'http://127.0.0.1:8787',
      developmentTokensFile: tokensFile,
      runtime: ON_TEAM_CLUSTER,
    });
    expect(findApiDecider(TEAM, running)).toEqual({
      url: 'http://127.0.0.1:8787',
      token: APPROVER_TOKEN,
      subject: 'local-approver',
    });
  });

  it('is the API of an npm start with embedded servers when the environment names none', () => {
    expect(find({ AGENT_DATA_DIR: dataDir }, EMBEDDED)).toMatchObject({ found: 'api', url: 'http://127.0.0.1:8787' });
  });

  it('is not the API of an npm start serving another address, namespace or task queue', () => {
    const others: Record<string, string>[] = [
      { TEMPORAL_ADDRESS: 'temporal.other.example:7233' },
      { TEMPORAL_NAMESPACE: 'payments' },
      { TEMPORAL_TASK_QUEUE: 'refunds' },
    ];
    for (const other of others) {
      const env = { ...TEAM, ...other };
      const running = find(env, ON_TEAM_CLUSTER);
      expect(running.found, JSON.stringify(other)).toBe('other-target');
      expect(findApiDecider(env, running), JSON.stringify(other)).toBeUndefined();
    }
    // A task queue the environment sets wins over the embedded npm start's, and then its API is not used either.
    expect(find({ AGENT_DATA_DIR: dataDir, TEMPORAL_TASK_QUEUE: 'refunds' }, EMBEDDED).found).toBe('other-target');
  });

  it("takes AGENT_API_TOKEN with the running npm start's URL, and AGENT_API_URL with AGENT_API_TOKEN over everything", () => {
    expect(findApiDecider({ ...TEAM, AGENT_API_TOKEN: 'mine' }, find(TEAM, ON_TEAM_CLUSTER))).toEqual({
      url: 'http://127.0.0.1:8787',
      token: 'mine',
    });
    const remote = { ...TEAM, AGENT_API_URL: 'https://agents.example.com/', AGENT_API_TOKEN: 'mine' };
    expect(findApiDecider(remote, find(remote, undefined))).toEqual({
      url: 'https://agents.example.com',
      token: 'mine',
    });
  });

  it("has no approver's token when the npm start's tokens come from AGENT_API_TOKENS_FILE, even with an earlier start's development tokens in the data folder", () => {
    const configured = { ...ON_TEAM_CLUSTER, developmentTokensFile: undefined };
    const running = find(TEAM, configured);
    expect(running).toMatchObject({ found: 'api', url: 'http://127.0.0.1:8787' });
    expect(fs.existsSync(tokensFile)).toBe(true);
    expect(findApiDecider(TEAM, running)).toBeUndefined();
  });

  it('refuses a development tokens file others can read', () => {
    const exposed = path.join(dataDir, 'exposed-tokens.json');
    fs.writeFileSync(exposed, fs.readFileSync(tokensFile), { mode: 0o644 });
    fs.chmodSync(exposed, 0o644);
    const running = find(TEAM, { ...ON_TEAM_CLUSTER, developmentTokensFile: exposed });
    expect(() => findApiDecider(TEAM, running)).toThrow(
      `The API token file ${exposed} can be read by others (mode 644): run \`chmod 600 ${exposed}\`.`,
    );
  });
});

describe('what the CLI says to set when it finds no API it can use', () => {
  const setBoth =
    "set AGENT_API_URL to the URL of the HTTP API beside these workers (npm start's or npm run api's) and AGENT_API_TOKEN to an approver's token";

  it('names both variables and the data folder when no npm start runs there', () => {
    expect(howToDecideThroughApi(find(TEAM, undefined))).toBe(
      `To decide from this CLI, ${setBoth}: no npm start runs with this CLI's data folder (${dataDir}, AGENT_DATA_DIR) to find its API.`,
    );
  });

  it('names both variables, and what the running npm start serves instead, when it serves another target', () => {
    expect(howToDecideThroughApi(find({ ...TEAM, TEMPORAL_TASK_QUEUE: 'refunds' }, ON_TEAM_CLUSTER))).toBe(
      `To decide from this CLI, ${setBoth}: the npm start running here (pid 4242) serves task queue "billing" of namespace "default" at temporal.team.example:7233, ` +
        `not this CLI's task queue "refunds" of namespace "default" at temporal.team.example:7233, so its API at http://127.0.0.1:8787 is not used. ` +
        "To decide through it, run the CLI with that npm start's TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and TEMPORAL_TASK_QUEUE.",
    );
  });

  it('names both variables when the running npm start has no API', () => {
    expect(howToDecideThroughApi(find(TEAM, { ...ON_TEAM_CLUSTER, apiUrl: undefined }))).toBe(
      `To decide from this CLI, ${setBoth}: the npm start running here (pid 4242) has no HTTP API listening (AGENT_API_PORT=off, or it is still starting).`,
    );
  });

  it("gives the API's URL when the running npm start serves one with tokens the CLI does not hold", () => {
    expect(howToDecideThroughApi(find(TEAM, { ...ON_TEAM_CLUSTER, developmentTokensFile: undefined }))).toBe(
      "To decide from this CLI, set AGENT_API_URL=http://127.0.0.1:8787 and AGENT_API_TOKEN to an approver's token (from AGENT_API_TOKENS_FILE or your identity provider): " +
        'the npm start running here serves its API there, with tokens this CLI does not hold.',
    );
  });
});
