import { DELIVERIES } from '../support/deliveries.ts';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { ConfigError } from '../../src/errors.ts';
import { startReceiver, type Receiver } from '../../src/webhooks/receiver.ts';
import { signatureHeader } from '../../src/webhooks/signature.ts';
import { CUSTOMER_A, SECRET_A, customer, delivery, send } from './helpers.ts';
import { migratedStore } from '../support/databases.ts';
import { tempDir } from '../support/tmp.ts';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

it('speaks HTTPS directly when given a certificate and key', async () => {
  const tmp = tempDir('webhooks-tls-');
  cleanups.push(tmp.remove);
  const cert = join(tmp.dir, 'cert.pem');
  const key = join(tmp.dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1'], { stdio: 'ignore' });
  const { store, drop } = await migratedStore('sqlite', 'webhooks');
  cleanups.push(drop);
  const now = Date.UTC(2026, 0, 1, 10, 0, 5);
  const receiver: Receiver = await startReceiver({ deliveries: DELIVERIES, 
    store,
    customers: [customer(CUSTOMER_A, { webhookSecrets: [SECRET_A] })],
    clock: new FakeClock(now),
    tlsCert: cert,
    tlsKey: key,
  });
  cleanups.push(() => receiver.close());
  expect(receiver.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/webhook$/);
  const raw = JSON.stringify(delivery());
  const res = await send(receiver.url, {
    body: raw,
    headers: { 'Content-Type': 'application/json', 'X-Service-Signature': signatureHeader(SECRET_A, raw, Math.floor(now / 1000)) },
  });
  expect(res.json).toEqual({ status: 'stored' });
});

it('names the variable when the certificate file cannot be read', async () => {
  const { store, drop } = await migratedStore('sqlite', 'webhooks');
  cleanups.push(drop);
  await expect(startReceiver({ deliveries: DELIVERIES,  store, customers: [], tlsCert: '/nonexistent/cert.pem', tlsKey: '/nonexistent/key.pem' })).rejects.toThrow(
    new ConfigError('WEBHOOK_TLS_CERT="/nonexistent/cert.pem": cannot read the file (ENOENT). Fix: point it at a readable PEM file'),
  );
});
