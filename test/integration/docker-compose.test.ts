/**
 * Static checks of the container stack: docker-compose.yml, the Dockerfile and
 * the files under deploy/ they mount. Nothing here needs a Docker engine; the
 * files are parsed and cross-checked against the worker's own configuration.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it, expect } from 'vitest';
import { parse } from 'yaml';
import { ENV_VARS, loadConfig } from '../../src/app/config';
import { SEARCH_ATTRIBUTES } from '../../src/contract';

const root = path.resolve(__dirname, '..', '..');
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
  restart?: string;
}

interface Compose {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

const composeText = read('docker-compose.yml');
const compose = parse(composeText) as Compose;
const env = generatedEnv();
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

/**
 * What compose would substitute given `vars`: `${X}`, `${X:-d}`/`${X-d}`
 * (d when unset or empty / unset), `${X:?msg}`/`${X?msg}` (an error naming X
 * when unset or empty / unset), and `$$` for a literal `$`.
 */
function interpolate(value: string, vars: Record<string, string> = {}): string {
  return value.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\}/g,
    (match, name?: string, colon?: string, op?: string, arg?: string) => {
      if (match === '$$') return '$';
      const set = name! in vars && (colon !== ':' || vars[name!] !== '');
      if (set) return vars[name!];
      if (op === '?') throw new Error(`${name} ${arg}`);
      return op === '-' ? (arg ?? '') : '';
    },
  );
}

/** The variables compose reads from `.env`, as scripts/compose-env.sh writes them (run in a scratch folder). */
function generatedEnv(): { vars: Record<string, string>; mode: number } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'compose-env-'));
  try {
    const file = path.join(dir, '.env');
    execFileSync('bash', [path.join(root, 'scripts', 'compose-env.sh'), file], {
      env: { PATH: process.env.PATH ?? '' },
      stdio: 'pipe',
    });
    const vars = Object.fromEntries(
      readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => /^[A-Z_]+=/.test(l))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    return { vars, mode: statSync(file).mode & 0o777 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every `${NAME…}` the compose file refers to. */
const referencedVariables = (text: string): string[] => [
  ...new Set([...text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1])),
];

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

/**
 * The shell a one-shot service runs: its entrypoint and command, and the scripts of deploy/ they name through a bind
 * mount.
 */
function scriptOf(s: Service): string {
  const inline = `${asText(s.entrypoint)}\n${asText(s.command)}`;
  const files = bindMounts(s)
    .filter((m) => inline.includes(m.target))
    .map((m) => {
      const onHost = path.join(root, m.source);
      expect(path.relative(root, onHost).split(path.sep)[0], `${m.source} is in deploy/`).toBe('deploy');
      return readFileSync(onHost, 'utf8');
    });
  expect(files.length, 'the script it runs is mounted from deploy/').toBeGreaterThan(0);
  return `${inline}\n${files.join('\n')}`;
}

describe('docker-compose.yml', () => {
  it('parses as a compose file with services', () => {
    expect(compose).toBeTypeOf('object');
    expect(services).toBeTypeOf('object');
  });

  it('has the six services of the stack', () => {
    expect(Object.keys(services)).toEqual(
      expect.arrayContaining([
        'postgresql',
        'temporal-schema',
        'temporal',
        'temporal-admin-tools',
        'temporal-ui',
        'worker',
      ]),
    );
  });

  it('uses no deprecated image: the server image with a schema job, not temporalio/auto-setup', () => {
    for (const [name, s] of Object.entries(services)) expect(String(s.image ?? ''), name).not.toMatch(/auto-setup/);
    expect(String(service('temporal').image)).toMatch(/^temporalio\/server:1\.\d+\.\d+$/);
    const version = String(service('temporal').image).split(':')[1];
    // The admin tools of the server's own version: the schema job installs the schema that server expects.
    for (const job of ['temporal-schema', 'temporal-admin-tools'])
      expect(String(service(job).image), job).toBe(`temporalio/admin-tools:${version}`);
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
    const init = readdirSync(dir)
      .filter((f) => /\.(sh|sql)$/.test(f))
      .map((f) => readFileSync(path.join(dir, f), 'utf8'));
    expect(init.join('\n')).toMatch(/CREATE DATABASE/i);
    expect(envOf(service('postgresql')).AGENT_DB_NAME ?? init.join('\n')).toMatch(/agent/);
  });

  it('runs Temporal on PostgreSQL persistence, after a job that creates or upgrades its schemas', () => {
    const temporal = service('temporal');
    const tenv = envOf(temporal);
    expect(tenv.DB).toBe('postgres12');
    expect(tenv.DB_PORT).toBe('5432');
    expect(tenv.POSTGRES_SEEDS).toBe('postgresql');
    expect(tenv.POSTGRES_USER).toBe(envOf(service('postgresql')).POSTGRES_USER);
    expect(interpolate(tenv.POSTGRES_PWD ?? '', env.vars)).toBe(
      interpolate(envOf(service('postgresql')).POSTGRES_PASSWORD ?? '', env.vars),
    );
    expect(dependsOn(temporal).postgresql).toBe('service_healthy');
    expect(dependsOn(temporal)['temporal-schema']).toBe('service_completed_successfully');
    expect(asText(temporal.ports as string[] | undefined)).toContain('127.0.0.1:7233:7233');
    // The server configuration the cluster project runs (deploy/temporal/config.yaml), mounted where the variable
    // points.
    const mounted = asText(temporal.volumes as string[] | undefined);
    expect(mounted).toContain(`./deploy/temporal/config.yaml:${tenv.TEMPORAL_SERVER_CONFIG_FILE_PATH}:ro`);
    expect(read('deploy/temporal/config.yaml').split('\n')[0]).toBe('# enable-template');

    const schema = service('temporal-schema');
    expect(dependsOn(schema).postgresql).toBe('service_healthy');
    expect(interpolate(envOf(schema).SQL_PASSWORD ?? '', env.vars)).toBe(
      interpolate(tenv.POSTGRES_PWD ?? '', env.vars),
    );
    const script = scriptOf(schema);
    for (const db of ['temporal', 'temporal_visibility']) expect(script).toContain(db);
    for (const step of ['create', 'setup-schema -v 0.0', 'update-schema -d']) expect(script).toContain(step);
    // The versioned schemas the admin-tools image ships for PostgreSQL 12+ (the cluster project runs the same script on
    // the server's own module's schemas).
    for (const part of ['/etc/temporal/schema/postgresql/v12', '$kind/versioned']) expect(script).toContain(part);
    execFileSync('sh', ['-n', path.join(root, 'deploy', 'temporal', 'setup-schema.sh')]);
  });

  it('publishes no port beyond 127.0.0.1', () => {
    const published = Object.entries(compose.services).flatMap(([name, svc]) =>
      (svc.ports ?? []).map((p) => [name, p] as const),
    );
    expect(published.length).toBeGreaterThan(0);
    for (const [name, port] of published) {
      const host =
        typeof port === 'object'
          ? (port as { host_ip?: string }).host_ip
          : String(port).split(':').length === 3
            ? String(port).split(':')[0]
            : undefined;
      expect(host, `${name} publishes ${JSON.stringify(port)}`).toBe('127.0.0.1');
    }
  });

  it('mounts the dynamic config file that DYNAMIC_CONFIG_FILE_PATH names, and it is valid YAML', () => {
    const temporal = service('temporal');
    const configPath = envOf(temporal).DYNAMIC_CONFIG_FILE_PATH;
    // Absolute: the server image renders its embedded config template, whose default is an absolute path too.
    expect(configPath).toBe('/etc/temporal/config/dynamicconfig/development-sql.yaml');
    const inContainer = configPath;
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

  it('creates the default namespace and registers every search attribute the workflow sets, once Temporal is healthy', () => {
    const admin = service('temporal-admin-tools');
    const script = scriptOf(admin);
    expect(script).toContain('temporal operator namespace create');
    expect(script).toContain('temporal operator search-attribute create');
    for (const key of SEARCH_ATTRIBUTES) {
      const type = (
        {
          KEYWORD: 'Keyword',
          INT: 'Int',
          DOUBLE: 'Double',
          KEYWORD_LIST: 'KeywordList',
          DATETIME: 'Datetime',
        } as Record<string, string>
      )[key.type];
      expect(script, `${key.name} is checked and created as ${type}`).toContain(`${key.name}:${type}`);
    }
    const aenv = envOf(admin);
    expect(aenv.TEMPORAL_ADDRESS).toBe('temporal:7233');
    expect(aenv.TEMPORAL_NAMESPACE).toBe('default');
    expect(script, 'retries until the server answers').toMatch(/\b(while|until)\b/);
    expect(dependsOn(admin).temporal).toBe('service_healthy');
  });

  it('checks the health of PostgreSQL, Temporal and the worker, and starts each after what it needs is healthy', () => {
    expect(asText(service('postgresql').healthcheck?.test)).toContain('pg_isready');
    expect(asText(service('temporal').healthcheck?.test)).toContain('7233');
    const workerCheck = asText(service('worker').healthcheck?.test);
    expect(workerCheck).toContain(`127.0.0.1:${envOf(service('worker')).AGENT_API_PORT}/healthz`);
    expect(dependsOn(service('worker')).temporal).toBe('service_healthy');
    expect(dependsOn(service('temporal-ui')).temporal).toBe('service_healthy');
    // Whatever a service waits for can report it: a health check, or a one-shot job's exit.
    for (const [name, s] of Object.entries(services)) {
      for (const [target, condition] of Object.entries(dependsOn(s))) {
        if (condition === 'service_healthy')
          expect(service(target).healthcheck?.test, `${name} waits for ${target} to be healthy`).toBeDefined();
        else if (condition === 'service_completed_successfully')
          expect(service(target).restart, `${name} waits for the job ${target}`).toBe('no');
        else expect.fail(`${name} starts with ${target} merely started (${condition}), not healthy or done`);
      }
    }
  });

  it('takes its secrets from .env: required, never inline, and scripts/compose-env.sh writes them to a file only its owner reads', () => {
    expect(env.mode).toBe(0o600);
    const secretNames = /PASSWORD|PWD|SECRET|DECISION_KEYS$|API_KEY/;
    let secrets = 0;
    for (const [name, s] of Object.entries(services)) {
      for (const [key, value] of Object.entries(envOf(s))) {
        if (!secretNames.test(key)) continue;
        secrets++;
        expect(value, `${name}: ${key} comes from a variable`).toMatch(/^\$\{[A-Z_]+(:?[-?].*)?\}$/);
        expect(value, `${name}: ${key} has no inline default`).not.toMatch(/^\$\{[A-Z_]+:?-[^}]/);
      }
    }
    expect(secrets).toBeGreaterThanOrEqual(5);
    // The database URL carries the password from .env, never a literal one.
    expect(envOf(service('worker')).DATABASE_URL).toMatch(/^postgres:\/\/agent:\$\{AGENT_DB_PASSWORD:\?[^}]+\}@/);
    // With nothing set, `up` stops and names what is missing.
    expect(() => interpolate(envOf(service('postgresql')).POSTGRES_PASSWORD ?? '', {})).toThrow(
      /TEMPORAL_DB_PASSWORD is not set\. Run scripts\/compose-env\.sh/,
    );
    for (const required of ['TEMPORAL_DB_PASSWORD', 'AGENT_DB_PASSWORD', 'AGENT_DECISION_KEYS']) {
      expect(composeText).toContain(`\${${required}:?`);
      expect(env.vars[required], required).toMatch(/^(k1:)?[0-9a-f]{64}$/);
    }
    expect(new Set(Object.values(env.vars)).size, 'each secret is its own').toBe(
      Object.values(env.vars).length - (env.vars.OPENAI_API_KEY === env.vars.OPENAI_BASE_URL ? 1 : 0),
    );
    // .env.example names every variable the file refers to; git and the image build leave .env out.
    const example = read('.env.example');
    for (const name of referencedVariables(composeText))
      expect(example, `.env.example lists ${name}`).toMatch(new RegExp(`^${name}=`, 'm'));
    expect(
      read('.gitignore')
        .split('\n')
        .map((l) => l.trim()),
    ).toContain('.env');
    expect(
      read('.dockerignore')
        .split('\n')
        .map((l) => l.trim()),
    ).toContain('.env');
  });

  it('serves the Temporal UI against the server on port 8080, read-only', () => {
    const ui = service('temporal-ui');
    expect(String(ui.image)).toMatch(/^temporalio\/ui:\d+\.\d+\.\d+$/);
    expect(envOf(ui).TEMPORAL_ADDRESS).toBe('temporal:7233');
    expect(envOf(ui).TEMPORAL_DISABLE_WRITE_ACTIONS).toBe('true');
    expect(asText(ui.ports as string[] | undefined)).toContain('127.0.0.1:8080:8080');
  });

  it("lets the UI decode encrypted payloads through the worker's codec server, with the inbox session of a signed-in operator", () => {
    const ui = service('temporal-ui');
    // The browser calls the codec at the address published on the host, from the UI's origin, which the worker allows.
    expect(envOf(ui).TEMPORAL_CODEC_ENDPOINT).toBe('http://127.0.0.1:8787/codec');
    expect(envOf(ui).TEMPORAL_CODEC_INCLUDE_CREDENTIALS).toBe('true');
    expect(asText(service('worker').ports as string[] | undefined)).toContain('127.0.0.1:8787:8787');
    expect(envOf(service('worker')).AGENT_CODEC_CORS_ORIGINS).toBe(
      '${AGENT_CODEC_CORS_ORIGINS:-http://127.0.0.1:8080}',
    );
  });

  describe('worker', () => {
    const worker = service('worker');
    const wenv = envOf(worker);

    it('is built from the Dockerfile', () => {
      const build = worker.build;
      const dockerfile = typeof build === 'string' ? 'Dockerfile' : (build?.dockerfile ?? 'Dockerfile');
      const context = typeof build === 'string' ? build : (build?.context ?? '.');
      expect(build).toBeDefined();
      expect(path.resolve(root, context, dockerfile)).toBe(path.join(root, 'Dockerfile'));
    });

    it('sets every environment variable the worker configuration reads', () => {
      expect(ENV_VARS.length).toBeGreaterThan(0);
      for (const name of ENV_VARS) expect(wenv, `worker environment sets ${name}`).toHaveProperty(name);
    });

    it('points at the compose services, with a separate `agent` database', () => {
      expect(wenv.TEMPORAL_ADDRESS).toBe('temporal:7233');
      expect(wenv.TEMPORAL_NAMESPACE).toBe('default');
      expect(wenv.TEMPORAL_TASK_QUEUE).toBe('agent');
      const url = new URL(interpolate(wenv.DATABASE_URL, env.vars));
      expect(url.protocol).toMatch(/^postgres(ql)?:$/);
      expect(url.hostname).toBe('postgresql');
      expect(url.port).toBe('5432');
      expect(url.pathname).toBe('/agent');
      expect(wenv.OPENAI_API_KEY).toBe('${OPENAI_API_KEY:-}');
      expect(wenv.OPENAI_BASE_URL).toBe('${OPENAI_BASE_URL:-}');
      expect(wenv.OPENAI_MODEL).toBe('${OPENAI_MODEL:-gpt-4o-mini}');
      expect(wenv.AGENT_DATA_DIR).toBe('/data');
      expect(asText(worker.volumes as string[] | undefined)).toMatch(/:\/data\b/);
    });

    it('has an environment the worker configuration accepts (with nothing set on the host)', () => {
      const resolved = Object.fromEntries(Object.entries(wenv).map(([k, v]) => [k, interpolate(v, env.vars)]));
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

  it('installs from the lockfile, copies the source, compiles the worker and runs it compiled', () => {
    expect(instructions.some((l) => /^COPY\s.*package\.json/.test(l) && l.includes('package-lock.json'))).toBe(true);
    expect(instructions.some((l) => /^RUN\s.*\bnpm (ci|install)\b/.test(l))).toBe(true);
    const copied = instructions.findIndex((l) => /^COPY\s+\.\s+\.$/.test(l) || /^COPY\s+src\b/.test(l));
    expect(copied).toBeGreaterThan(-1);
    // npm run start:compiled refuses to start without build/main.js, which npm run build:app writes from the copied
    // sources.
    expect(instructions.findIndex((l) => /^RUN\s+npm run build:app$/.test(l))).toBeGreaterThan(copied);
    const cmd = instructions.filter((l) => /^CMD\s/.test(l)).pop() ?? '';
    expect(
      cmd
        .replace(/[[\]",]/g, ' ')
        .split(/\s+/)
        .filter(Boolean)
        .slice(1),
    ).toEqual(['npm', 'run', 'start:compiled']);
  });
});

describe('.dockerignore', () => {
  it('keeps host dependencies, local state and git metadata out of the build context', () => {
    const entries = read('.dockerignore')
      .split(/\r?\n/)
      .map((l) => l.trim().replace(/^\/+|\/+$/g, ''))
      .filter((l) => l !== '' && !l.startsWith('#'));
    expect(entries).toEqual(expect.arrayContaining(['node_modules', '.data', '.tools', 'dist', 'build', '.git']));
  });
});
