import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedPostgresServer } from '../../src/db/embedded-postgres';
import { migrate } from '../../src/db/migrations';
import { createPool } from '../../src/db/pool';
import { makeCertificates, type TestCertificates } from '../support/tls';

// PostgreSQL over TLS, configured the standard way: DATABASE_URL's sslmode and sslrootcert (and
// sslcert/sslkey for a client certificate), as node-postgres reads them. A PostgreSQL server of the
// test's own with ssl=on and a certificate from the test's CA.

let certs: TestCertificates;
let serverDir: string;
let dataDir: string;
let pg: EmbeddedPostgresServer;
beforeAll(async () => {
  certs = makeCertificates();
  // The server runs as its own user when the tests run as root: it must read its certificate and
  // own its key (PostgreSQL refuses a key others can read).
  serverDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-pg-ssl-'));
  fs.chmodSync(serverDir, 0o755);
  const cert = path.join(serverDir, 'server.pem');
  const key = path.join(serverDir, 'server.key');
  fs.copyFileSync(certs.serverCert, cert);
  fs.copyFileSync(certs.serverKey, key);
  fs.chmodSync(cert, 0o644);
  fs.chmodSync(key, 0o600);
  if (process.getuid?.() === 0) {
    const { uid, gid } = postgresUser();
    fs.chownSync(key, uid, gid);
  }
  pg = await startEmbeddedPostgres({
    dataDir: (dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-pg-ssl-data-'))),
    ephemeral: true,
    postgresFlags: ['-c', 'ssl=on', '-c', `ssl_cert_file=${cert}`, '-c', `ssl_key_file=${key}`],
  });
}, 120_000);
afterAll(async () => {
  await pg?.stop();
  for (const dir of [serverDir, dataDir, certs?.dir]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** The uid and gid of the `postgres` user the embedded server runs as. */
function postgresUser(): { uid: number; gid: number } {
  const line = fs
    .readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('no postgres user');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

const withSsl = (params: string) => `${pg.databaseUrl.replace('127.0.0.1', 'localhost')}?${params}`;

describe('PostgreSQL over TLS', () => {
  it('sslmode=verify-full with the server CA in sslrootcert: encrypted, and the worker migrates and works over it', async () => {
    const pool = createPool(withSsl(`sslmode=verify-full&sslrootcert=${certs.ca}`));
    try {
      const { rows } = await pool.query<{ ssl: boolean }>('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
      expect(rows).toEqual([{ ssl: true }]);
      await migrate(pool);
      const { rows: tables } = await pool.query(
        "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'durable_agent' AND table_name = 'conversation_messages'",
      );
      expect(tables[0].n).toBe(1);
    } finally {
      await pool.end();
    }
  });

  it('a server certificate from a CA not given in sslrootcert is refused with the reason', async () => {
    const pool = createPool(withSsl(`sslmode=verify-full&sslrootcert=${certs.ca.replace('ca.pem', 'rogue-ca.pem')}`));
    try {
      await expect(pool.query('SELECT 1')).rejects.toThrow(/self[- ]signed certificate|unable to verify|certificate/);
    } finally {
      await pool.end();
    }
  });

  it('without sslmode the same server is reached in plain text (TLS is opt-in, as with libpq)', async () => {
    const pool = createPool(pg.databaseUrl);
    try {
      const { rows } = await pool.query<{ ssl: boolean }>('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
      expect(rows).toEqual([{ ssl: false }]);
    } finally {
      await pool.end();
    }
  });
});
