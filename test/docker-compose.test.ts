/**
 * Static checks of the container stack: docker-compose.yml, the Dockerfile and
 * the files under deploy/ they mount. Nothing here needs a Docker engine; the
 * files are parsed and cross-checked against the worker's own configuration.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it, expect } from 'vitest';
import { parse } from 'yaml';
import { ENV_VARS, loadConfig } from '../src/runtime/config';
import { SEARCH_ATTRIBUTES } from '../src/workflows/api';

const root = path.resolve(__dirname, '..');
const read = (file: string): string => readFileSync(path.join(root, file), 'utf8');

interface Service {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  environment?: Record<string, string | number | boolean | null> | string[];
  volumes?: Array<string | { type?: string; source?: string; target?: string }>;
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string | string[] };
  ports?: Array<string | number | { target?: number; published?: string | number }>;
  entrypoint?: string | string[];
  command?: string | string[];
}

interface Compose {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

const compose = parse(read('docker-compose.yml')) as Compose;
const services = compose?.services ?? {};
const service = (name: string): Service => {
  const s = services[name];
  if (!s) throw new Error(`docker-compose.yml has no service "${name}"`);
  return s;
};

/** A service's environment as a map, whichever of compose's two forms it uses. */
function envOf(s: Service): Record<string, string> {
  const env = s.environment ?? {};
  if (Array.isArray(env)) {
    return Object.fromEntries(
      env.map((entry) => {
        const eq = entry.indexOf('=');
        return eq === -1 ? [entry, ''] : [entry.slice(0, eq), entry.slice(eq + 1)];
      }),
    );
  }
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v == null ? '' : String(v)]));
}

/** What compose would substitute with none of the variables set: `${X:-d}` and `${X-d}` become d, `$$` becomes `$`. */
function interpolateWithDefaults(value: string): string {
  return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}/g, (match, _name?: string, fallback?: string) =>
    match === '$$' ? '$' : (fallback ?? ''),
  );
}

/** Bind mounts as { source, target }, from short (`./a:/b:ro`) or long syntax. */
function bindMounts(s: Service): Array<{ source: string; target: string }> {
  return (s.volumes ?? []).flatMap((v) => {
    if (typeof v === 'string') {
      const [source, target] = v.split(':');
      return source && target && /^[./]/.test(source) ? [{ source, target }] : [];
    }
    return v.type === 'bind' && v.source && v.target ? [{ source: v.source, target: v.target }] : [];
  });
}

function dependsOn(s: Service): Record<string, string | undefined> {
  const d = s.depends_on ?? {};
  if (Array.isArray(d)) return Object.fromEntries(d.map((name) => [name, undefined]));
  return Object.fromEntries(Object.entries(d).map(([name, spec]) => [name, spec?.condition]));
}

const asText = (v: string | string[] | undefined): string => (Array.isArray(v) ? v.join(' ') : (v ?? ''));

describe('docker-compose.yml', () => {
  it('parses as a compose file with services', () => {
    expect(compose).toBeTypeOf('object');
    expect(services).toBeTypeOf('object');
  });

  it('has the five services of the stack', () => {
    expect(Object.keys(services)).toEqual(
      expect.arrayContaining(['postgresql', 'temporal', 'temporal-admin-tools', 'temporal-ui', 'worker']),
    );
  });

  it('pins every image to an explicit tag (never latest, never a variable)', () => {
    const images = Object.entries(services).filter(([, s]) => s.image !== undefined);
    expect(images.length).toBeGreaterThanOrEqual(4);
    for (const [name, s] of images) {
      const image = String(s.image);
      expect(image, `${name}: no variables in the image reference`).not.toContain('$');
      const withoutDigest = image.split('@')[0];
      const lastSegment = withoutDigest.split('/').pop() ?? '';
      const tag = lastSegment.includes(':') ? lastSegment.slice(lastSegment.indexOf(':') + 1) : '';
      expect(tag, `${name}: image ${image} has no tag`).not.toBe('');
      expect(tag, `${name}: image ${image}`).not.toBe('latest');
      expect(tag, `${name}: image ${image}`).toMatch(/\d/);
    }
  });

  it('runs PostgreSQL from the official image with a pg_isready healthcheck and a named volume', () => {
    const pg = service('postgresql');
    const major = /^postgres:(\d+)/.exec(String(pg.image))?.[1];
    expect(Number(major)).toBeGreaterThanOrEqual(16);
    expect(asText(pg.healthcheck?.test)).toContain('pg_isready');
    const dataVolume = (pg.volumes ?? []).find(
      (v) => typeof v === 'string' && v.endsWith(':/var/lib/postgresql/data'),
    ) as string | undefined;
    expect(dataVolume).toBeDefined();
    expect(Object.keys(compose.volumes ?? {})).toContain(dataVolume!.split(':')[0]);
  });

  it('creates the app database `agent` with an init script mounted from deploy/', () => {
    const initMount = bindMounts(service('postgresql')).find((m) => m.target === '/docker-entrypoint-initdb.d');
    expect(initMount, 'a bind mount onto /docker-entrypoint-initdb.d').toBeDefined();
    const dir = path.join(root, initMount!.source);
    expect(path.relative(root, dir).split(path.sep)[0]).toBe('deploy');
    expect(statSync(dir).isDirectory()).toBe(true);
    const init = readdirSync(dir).filter((f) => /\.(sh|sql)$/.test(f)).map((f) => readFileSync(path.join(dir, f), 'utf8'));
    expect(init.join('\n')).toMatch(/CREATE DATABASE/i);
    expect(envOf(service('postgresql')).AGENT_DB_NAME ?? init.join('\n')).toMatch(/agent/);
  });

  it('runs Temporal (auto-setup 1.2x) on PostgreSQL persistence, like Temporal’s own compose samples', () => {
    const temporal = service('temporal');
    expect(String(temporal.image)).toMatch(/^temporalio\/auto-setup:1\.2\d\.\d+$/);
    const env = envOf(temporal);
    expect(env.DB).toBe('postgres12');
    expect(env.DB_PORT).toBe('5432');
    expect(env.POSTGRES_SEEDS).toBe('postgresql');
    expect(env.POSTGRES_USER).toBe(envOf(service('postgresql')).POSTGRES_USER);
    expect(interpolateWithDefaults(env.POSTGRES_PWD ?? '')).toBe(
      interpolateWithDefaults(envOf(service('postgresql')).POSTGRES_PASSWORD ?? ''),
    );
    expect(env.POSTGRES_PWD).not.toBe('');
    expect(dependsOn(temporal).postgresql).toBe('service_healthy');
    expect(asText(temporal.ports as string[] | undefined)).toContain('127.0.0.1:7233:7233');
  });

  it('publishes no port beyond 127.0.0.1', () => {
    const published = Object.entries(compose.services).flatMap(([name, svc]) => (svc.ports ?? []).map((p) => [name, p] as const));
    expect(published.length).toBeGreaterThan(0);
    for (const [name, port] of published) {
      const host = typeof port === 'object' ? (port as { host_ip?: string }).host_ip : String(port).split(':').length === 3 ? String(port).split(':')[0] : undefined;
      expect(host, `${name} publishes ${JSON.stringify(port)}`).toBe('127.0.0.1');
    }
  });

  it('mounts the dynamic config file that DYNAMIC_CONFIG_FILE_PATH names, and it is valid YAML', () => {
    const temporal = service('temporal');
    const configPath = envOf(temporal).DYNAMIC_CONFIG_FILE_PATH;
    expect(configPath).toBe('config/dynamicconfig/development-sql.yaml');
    // auto-setup resolves relative paths against /etc/temporal
    const inContainer = path.posix.join('/etc/temporal', configPath);
    const mount = bindMounts(temporal).find((m) => inContainer.startsWith(`${m.target}/`));
    expect(mount, `a bind mount covering ${inContainer}`).toBeDefined();
    const onHost = path.join(root, mount!.source, path.posix.relative(mount!.target, inContainer));
    expect(path.relative(root, onHost)).toBe(path.join('deploy', 'temporal', 'dynamicconfig', 'development-sql.yaml'));
    expect(existsSync(onHost)).toBe(true);
    const dynamic = parse(readFileSync(onHost, 'utf8')) as Record<string, Array<{ value: unknown }>>;
    expect(dynamic).toBeTypeOf('object');
    for (const [key, entries] of Object.entries(dynamic)) {
      expect(Array.isArray(entries), `${key} is a list of {value, constraints}`).toBe(true);
      for (const entry of entries) expect(entry, key).toHaveProperty('value');
    }
  });

  it('registers every search attribute the workflow sets (AgentStatus, PendingApprovals, UnknownEffects, PendingApprovalTags, AwaitingApprovalSince) on the default namespace', () => {
    const admin = service('temporal-admin-tools');
    expect(String(admin.image)).toMatch(/^temporalio\/admin-tools:1\.2\d\./);
    const script = interpolateWithDefaults(`${asText(admin.entrypoint)}\n${asText(admin.command)}`);
    expect(script).toContain('temporal operator search-attribute create');
    for (const key of SEARCH_ATTRIBUTES) {
      const type = ({ KEYWORD: 'Keyword', INT: 'Int', KEYWORD_LIST: 'KeywordList', DATETIME: 'Datetime' } as Record<string, string>)[key.type];
      expect(script, key.name).toContain(`--name ${key.name} --type ${type}`);
      expect(script, `${key.name} is checked before creating`).toContain(`${key.name}:${type}`);
    }
    const env = envOf(admin);
    expect(`${script} ${env.TEMPORAL_ADDRESS ?? ''}`).toContain('temporal:7233');
    expect(`${script} ${env.TEMPORAL_NAMESPACE ?? ''}`).toMatch(/\bdefault\b/);
    expect(script, 'retries until the server answers').toMatch(/\b(while|until)\b/);
    expect(dependsOn(admin)).toHaveProperty('temporal');
  });

  it('serves the Temporal UI against the server on port 8080, read-only', () => {
    const ui = service('temporal-ui');
    expect(String(ui.image)).toMatch(/^temporalio\/ui:\d+\.\d+\.\d+$/);
    expect(envOf(ui).TEMPORAL_ADDRESS).toBe('temporal:7233');
    expect(envOf(ui).TEMPORAL_DISABLE_WRITE_ACTIONS).toBe('true');
    expect(asText(ui.ports as string[] | undefined)).toContain('127.0.0.1:8080:8080');
  });

  describe('worker', () => {
    const worker = service('worker');
    const env = envOf(worker);

    it('is built from the Dockerfile', () => {
      const build = worker.build;
      const dockerfile = typeof build === 'string' ? 'Dockerfile' : (build?.dockerfile ?? 'Dockerfile');
      const context = typeof build === 'string' ? build : (build?.context ?? '.');
      expect(build).toBeDefined();
      expect(path.resolve(root, context, dockerfile)).toBe(path.join(root, 'Dockerfile'));
    });

    it('sets every environment variable the worker configuration reads', () => {
      expect(ENV_VARS.length).toBeGreaterThan(0);
      for (const name of ENV_VARS) expect(env, `worker environment sets ${name}`).toHaveProperty(name);
    });

    it('points at the compose services, with a separate `agent` database', () => {
      expect(env.TEMPORAL_ADDRESS).toBe('temporal:7233');
      expect(env.TEMPORAL_NAMESPACE).toBe('default');
      expect(env.TEMPORAL_TASK_QUEUE).toBe('agent');
      const url = new URL(interpolateWithDefaults(env.DATABASE_URL));
      expect(url.protocol).toMatch(/^postgres(ql)?:$/);
      expect(url.hostname).toBe('postgresql');
      expect(url.port).toBe('5432');
      expect(url.pathname).toBe('/agent');
      expect(env.OPENAI_API_KEY).toBe('${OPENAI_API_KEY:-}');
      expect(env.OPENAI_BASE_URL).toBe('${OPENAI_BASE_URL:-}');
      expect(env.OPENAI_MODEL).toBe('${OPENAI_MODEL:-gpt-4o-mini}');
      expect(env.AGENT_DATA_DIR).toBe('/data');
      expect(asText(worker.volumes as string[] | undefined)).toMatch(/:\/data\b/);
    });

    it('has an environment the worker configuration accepts (with nothing set on the host)', () => {
      const resolved = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, interpolateWithDefaults(v)]));
      const config = loadConfig(resolved);
      expect(config.temporal.address).toBe('temporal:7233');
      expect(config.temporal.namespace).toBe('default');
      expect(config.temporal.taskQueue).toBe('agent');
      expect(config.databaseUrl).toMatch(/@postgresql:5432\/agent$/);
      expect(config.openai.model).toBe('gpt-4o-mini');
      expect(config.dataDir).toBe('/data');
    });

    it('starts after PostgreSQL is healthy, Temporal is up and the search attributes exist', () => {
      const deps = dependsOn(worker);
      expect(deps.postgresql).toBe('service_healthy');
      expect(deps).toHaveProperty('temporal');
      expect(deps['temporal-admin-tools']).toBe('service_completed_successfully');
    });
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const instructions = dockerfile
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));

  it('builds on an active Node LTS image (even major, 22 or later)', () => {
    const froms = instructions.filter((line) => /^FROM\s/i.test(line));
    expect(froms.length).toBeGreaterThan(0);
    const runtime = froms[froms.length - 1].split(/\s+/)[1];
    const match = /^(?:docker\.io\/)?(?:library\/)?node:(\d+)(?:[.-][\w.-]*)?$/.exec(runtime);
    expect(match, `final stage FROM ${runtime}`).not.toBeNull();
    const major = Number(match![1]);
    expect(major % 2).toBe(0);
    expect(major).toBeGreaterThanOrEqual(22);
  });

  it('installs from the lockfile, copies the source and runs npm start', () => {
    expect(instructions.some((l) => /^COPY\s.*package\.json/.test(l) && l.includes('package-lock.json'))).toBe(true);
    expect(instructions.some((l) => /^RUN\s.*\bnpm (ci|install)\b/.test(l))).toBe(true);
    expect(instructions.some((l) => /^COPY\s+\.\s+\.$/.test(l) || /^COPY\s+src\b/.test(l))).toBe(true);
    const cmd = instructions.filter((l) => /^CMD\s/.test(l)).pop() ?? '';
    expect(cmd.replace(/[[\]",]/g, ' ').split(/\s+/).filter(Boolean).slice(1)).toEqual(['npm', 'start']);
  });
});

describe('.dockerignore', () => {
  it('keeps host dependencies, local state and git metadata out of the build context', () => {
    const entries = read('.dockerignore')
      .split(/\r?\n/)
      .map((l) => l.trim().replace(/^\/+|\/+$/g, ''))
      .filter((l) => l !== '' && !l.startsWith('#'));
    expect(entries).toEqual(expect.arrayContaining(['node_modules', '.data', '.tools', 'dist', '.git']));
  });
});
