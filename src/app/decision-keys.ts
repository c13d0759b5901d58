/**
 * Where the decision keys come from, for every process that signs or checks
 * decisions: `AGENT_DECISION_KEYS`, else the file `AGENT_DECISION_KEYS_FILE`
 * names, else the key `npm start` makes in its data folder on first start
 * (`<dataDir>/decision-keys`, mode 0600). The API signs with the first key;
 * workers and `cli audit verify` check with all of them.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parseDecisionKeys, readDecisionKeyFile, type DecisionKey } from '../common/decision-signing';
import { ConfigError } from '../common/errors';
import type { WorkerConfig } from './config';

/** The decision key made in the data folder when none is configured. */
export const DEVELOPMENT_DECISION_KEYS_FILE = 'decision-keys';

/** The keys, and where they came from (the variable or the file), for banners and errors. */
export interface ResolvedDecisionKeys {
  keys: DecisionKey[];
  origin: string;
}

/**
 * The configured decision keys. With `create` (the API and workers of `npm start`), the data folder's key is made
 * when neither variable is set and it does not exist yet; without it (a reader such as `cli audit verify`), its
 * absence is a `ConfigError` saying what to set. Throws a `ConfigError` too for keys that cannot be used.
 */
export function resolveDecisionKeys(config: WorkerConfig, options: { create: boolean }): ResolvedDecisionKeys {
  const api = config.api;
  let keys: DecisionKey[];
  let origin: string;
  if (api.decisionKeys) {
    keys = parseDecisionKeys(api.decisionKeys, 'AGENT_DECISION_KEYS');
    origin = 'AGENT_DECISION_KEYS';
  } else {
    const file = api.decisionKeysFile ?? path.join(config.dataDir, DEVELOPMENT_DECISION_KEYS_FILE);
    if (!api.decisionKeysFile && options.create)
      writeOnce(file, () => `local-${Date.now().toString(36)}:${randomBytes(32).toString('hex')}\n`);
    if (!api.decisionKeysFile && !fs.existsSync(file))
      throw new ConfigError(
        `No decision keys: AGENT_DECISION_KEYS and AGENT_DECISION_KEYS_FILE are not set, and the data folder ${config.dataDir} (AGENT_DATA_DIR) has no ${DEVELOPMENT_DECISION_KEYS_FILE} file (npm start makes one on its first start). ` +
          'Set AGENT_DECISION_KEYS to the keys the HTTP API signs with ("id:secret,…", every key it has signed with), or run this with the AGENT_DATA_DIR of that npm start.',
      );
    keys = readDecisionKeyFile(file);
    origin = file;
  }
  if (keys.length === 0)
    throw new ConfigError(
      `No decision key in ${origin}: write one as "id:secret" (a secret from \`openssl rand -hex 32\`).`,
    );
  return { keys, origin };
}

/** Writes `file` (mode 0600) unless it exists. */
export function writeOnce(file: string, content: () => string): void {
  // The folder keeps the default mode: as root, embedded PostgreSQL's user must enter the data folder.
  fs.mkdirSync(path.dirname(file), { recursive: true });
  try {
    fs.writeFileSync(file, content(), { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}
