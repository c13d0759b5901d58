/** Certificates made with openssl for a test, and a TLS-terminating proxy in front of the Temporal dev server. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';

/**
 * Paths of PEM files: a CA, a server certificate it signed (localhost, 127.0.0.1), a client certificate it signed, and
 * one from another CA.
 */
export interface TestCertificates {
  dir: string;
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  rogueCert: string;
  rogueKey: string;
}

export function makeCertificates(): TestCertificates {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-tls-'));
  const at = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const key = (name: string) => openssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', at(name));
  const ca = (name: string, cn: string) => {
    key(`${name}.key`);
    openssl(
      'req',
      '-x509',
      '-new',
      '-key',
      at(`${name}.key`),
      '-out',
      at(`${name}.pem`),
      '-days',
      '2',
      '-subj',
      `/CN=${cn}`,
    );
  };
  const signed = (name: string, cn: string, by: string, ext: string) => {
    key(`${name}.key`);
    openssl('req', '-new', '-key', at(`${name}.key`), '-out', at(`${name}.csr`), '-subj', `/CN=${cn}`);
    fs.writeFileSync(at(`${name}.ext`), ext);
    openssl(
      'x509',
      '-req',
      '-in',
      at(`${name}.csr`),
      '-CA',
      at(`${by}.pem`),
      '-CAkey',
      at(`${by}.key`),
      '-CAcreateserial',
      '-out',
      at(`${name}.pem`),
      '-days',
      '2',
      '-extfile',
      at(`${name}.ext`),
    );
  };
  ca('ca', 'agent test CA');
  ca('rogue-ca', 'some other CA');
  signed('server', 'localhost', 'ca', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  signed('client', 'agent-worker', 'ca', 'extendedKeyUsage=clientAuth\n');
  signed('rogue', 'agent-worker', 'rogue-ca', 'extendedKeyUsage=clientAuth\n');
  return {
    dir,
    ca: at('ca.pem'),
    serverCert: at('server.pem'),
    serverKey: at('server.key'),
    clientCert: at('client.pem'),
    clientKey: at('client.key'),
    rogueCert: at('rogue.pem'),
    rogueKey: at('rogue.key'),
  };
}

/**
 * A TLS server (ALPN h2) that requires a client certificate signed by the test CA and forwards to `target` in plain
 * TCP.
 */
export interface TlsProxy {
  readonly port: number;
  /** Connections that presented a valid client certificate, by its common name. */
  readonly authorized: string[];
  close(): Promise<void>;
}

export async function startTlsProxy(target: string, certs: TestCertificates): Promise<TlsProxy> {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const sockets = new Set<net.Socket>();
  const authorized: string[] = [];
  const server = tls.createServer(
    {
      key: fs.readFileSync(certs.serverKey),
      cert: fs.readFileSync(certs.serverCert),
      ca: [fs.readFileSync(certs.ca)],
      requestCert: true,
      rejectUnauthorized: true,
      ALPNProtocols: ['h2'],
    },
    (client) => {
      authorized.push(String(client.getPeerCertificate().subject?.CN));
      const upstream = net.connect(port, host === 'localhost' ? '127.0.0.1' : host);
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    },
  );
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    authorized,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
