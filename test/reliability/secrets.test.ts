import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/client.ts';
import { loadDocument } from '../../src/api/documents.ts';
import { createContext } from '../../src/cli/context.ts';
import { buildProgram, main } from '../../src/cli/main.ts';
import { FakeClock } from '../../src/clock.ts';
import { addLogTap, memoryLogger, SecretRegistry } from '../../src/logger.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { Figures } from './figures.ts';
import { findLeaks } from './log-audit.ts';
import { tempDir } from '../support/tmp.ts';

/** Secrets that exist nowhere else, so no scrubber in this process knows them: only not printing them helps. */
let counter = 0;
const fresh = (label: string, length = 80) => `${label}-${process.pid}-${++counter}-`.padEnd(length, 'S3cr3t');

async function run(args: string[], env: Record<string, string>) {
  let out = '';
  const code = await main(['node', 'occupancy-sync', ...args], {
    env,
    stdout: { write: (t: string) => (out += t) },
    stderr: { write: (t: string) => (out += t) },
    signal: new AbortController().signal,
  });
  return { code, out };
}

function commandPaths(program: Command, prefix: string[] = []): string[][] {
  return program.commands.flatMap((c) => [[...prefix, c.name()], ...commandPaths(c, [...prefix, c.name()])]);
}

const figures = new Figures({ section: 'secrets', title: 'Secrets: output, configuration errors, files and logs' }, [
  'secrets/help',
  'secrets/config-errors',
  'secrets/file-modes',
  'secrets/client-logs',
]);
afterAll(() => void figures.publish());

let sandbox: Sandbox;
let tmp: ReturnType<typeof tempDir>;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 77, customers: 1, buildingsPerCustomer: 1, floorSpacesPerBuilding: 2 });
  tmp = tempDir('reliability-secrets-');
});

afterAll(async () => {
  await sandbox?.close();
  tmp?.remove();
});

describe('secrets never appear in command output', () => {
  it('every command and subcommand --help, with every secret variable set, prints no secret', async () => {
    const secrets = { API_SECRET: fresh('help-api'), WEBHOOK_SECRET: fresh('help-wh'), WEBHOOK_PREVIOUS_SECRET: fresh('help-prev'), PG_PASSWORD: fresh('help-pgpw', 24) };
    const env = {
      API_BASE_URL: sandbox.url,
      API_KEY: 'help-key',
      API_SECRET: secrets.API_SECRET,
      CUSTOMER_ID: sandbox.customers[0]!.id,
      WEBHOOK_SECRET: secrets.WEBHOOK_SECRET,
      WEBHOOK_PREVIOUS_SECRET: secrets.WEBHOOK_PREVIOUS_SECRET,
      WEBHOOK_REQUIRED_HEADERS: JSON.stringify({ 'X-Token': fresh('help-header') }),
      DATABASE_URL: `postgres://app:${secrets.PG_PASSWORD}@127.0.0.1:5432/test`,
    };
    const values = [...Object.values(secrets), JSON.parse(env.WEBHOOK_REQUIRED_HEADERS)['X-Token'] as string];
    const paths = [[], ...commandPaths(buildProgram(createContext(env, { stdout: { write: () => {} }, stderr: { write: () => {} } }, new AbortController().signal)))];
    expect(paths.length).toBeGreaterThan(10);
    for (const path of paths) {
      const { code, out } = await run([...path, '--help'], env);
      expect(code, `${path.join(' ')} --help`).toBe(0);
      expect(out, `${path.join(' ')} --help`).toMatch(/Usage:/);
      for (const value of values) expect(out, `${path.join(' ')} --help`).not.toContain(value);
    }
    figures.record({ key: 'secrets/help', tried: '`--help` of every command and subcommand with API, webhook, header and database secrets in the environment', count: paths.length, held: 'exit 0, no secret printed' });
  });

  /** Each case: an environment that fails validation while holding secrets; none of them may be printed. */
  const configCases: Array<{ name: string; env: () => { env: Record<string, string>; secrets: string[] } }> = [
    { name: 'WEBHOOK_SECRET too short', env: () => { const s = fresh('short', 40); return { env: { WEBHOOK_SECRET: s }, secrets: [s] }; } },
    { name: 'WEBHOOK_PREVIOUS_SECRET too long', env: () => { const s = fresh('long', 300); return { env: { WEBHOOK_SECRET: fresh('ok'), WEBHOOK_PREVIOUS_SECRET: s }, secrets: [s] }; } },
    { name: 'API_SECRET without API_KEY', env: () => { const s = fresh('nokey'); return { env: { API_SECRET: s }, secrets: [s] }; } },
    { name: 'API_KEY and API_SECRET without CUSTOMER_ID', env: () => { const s = fresh('nocust'); return { env: { API_KEY: 'k', API_SECRET: s }, secrets: [s] }; } },
    { name: 'CUSTOMERS_FILE together with API_SECRET', env: () => { const s = fresh('both'); return { env: { CUSTOMERS_FILE: '/nonexistent.json', API_KEY: 'k', API_SECRET: s }, secrets: [s] }; } },
    { name: 'invalid WEBHOOK_REQUIRED_HEADERS holding a token', env: () => { const s = fresh('hdr'); return { env: { API_KEY: 'k', API_SECRET: fresh('a'), CUSTOMER_ID: 'c', WEBHOOK_REQUIRED_HEADERS: `{"X-Token": "${s}"` }, secrets: [s] }; } },
    { name: 'unknown DATABASE_URL scheme with a password', env: () => { const s = fresh('dbpw', 24); return { env: { DATABASE_URL: `mysql://app:${s}@db.example.com/occupancy` }, secrets: [s] }; } },
    { name: 'a bad HTTP_TIMEOUT next to valid secrets', env: () => { const s = fresh('bystander'); return { env: { API_KEY: 'k', API_SECRET: s, CUSTOMER_ID: 'c', HTTP_TIMEOUT: 'soon' }, secrets: [s] }; } },
    {
      name: 'API_SECRET_FILE readable by everyone',
      env: () => {
        const s = fresh('file');
        const path = join(tmp.dir, `api-secret-${counter}`);
        writeFileSync(path, s);
        chmodSync(path, 0o644);
        return { env: { API_KEY: 'k', API_SECRET_FILE: path, CUSTOMER_ID: 'c' }, secrets: [s] };
      },
    },
  ];

  /** One configuration error of `configCases`, run with a harmless DATABASE_URL: exit 78, the fix named, no secret. */
  async function expectHidden(c: (typeof configCases)[number]): Promise<void> {
    const { env, secrets } = c.env();
    const { code, out } = await run(['sync'], { DATABASE_URL: `file:${join(tmp.dir, 'unused.db')}`, ...env });
    expect(code, `${c.name}: ${out}`).toBe(78);
    expect(out, c.name).toMatch(/Fix:/);
    for (const s of secrets) expect(out, c.name).not.toContain(s);
  }

  async function customersFileSecretOfWrongLength(): Promise<void> {
    const secret = fresh('custfile', 30);
    const file = join(tmp.dir, 'customers.json');
    writeFileSync(file, JSON.stringify([{ id: 'c1', apiKey: 'k', apiSecretEnv: 'C1_SECRET', webhookSecretEnv: 'C1_WEBHOOK' }]));
    const { code, out } = await run(['sync'], { CUSTOMERS_FILE: file, C1_SECRET: fresh('c1api'), C1_WEBHOOK: secret });
    expect(code, out).toBe(78);
    expect(out).not.toContain(secret);
  }

  async function baseUrlWithCredentials(): Promise<void> {
    const password = fresh('urlpw', 24);
    const { code, out } = await run(['sync'], { API_BASE_URL: `http://user:${password}@api.example.com`, API_KEY: 'k', API_SECRET: fresh('x'), CUSTOMER_ID: 'c' });
    expect(code, out).toBe(78);
    expect(out).not.toContain(password);
  }

  for (const c of configCases) {
    it(`a configuration error (${c.name}) exits 78 without printing the secret`, () => expectHidden(c));
  }

  it('a CUSTOMERS_FILE webhook secret of the wrong length is not printed in the error', customersFileSecretOfWrongLength);

  it('an API_BASE_URL with credentials is refused without printing them', baseUrlWithCredentials);

  // The figure's own proof, so that it never counts cases that did not run or did not hold (a filtered run, say).
  it('every configuration error case, run in one sweep, exits 78 without printing a secret', async () => {
    let held = 0;
    for (const c of configCases) {
      await expectHidden(c);
      held += 1;
    }
    for (const special of [customersFileSecretOfWrongLength, baseUrlWithCredentials]) {
      await special();
      held += 1;
    }
    figures.record({ key: 'secrets/config-errors', tried: 'configuration errors with secrets in the environment (exit 78, message names the fix)', count: held, held: 'no secret printed, including a CUSTOMERS_FILE webhook secret of the wrong length and credentials in API_BASE_URL' });
  });
});

describe('files holding secrets are private', () => {
  it('webhook --secret-out and the token cache are created 0600 even with umask 000, and --force keeps 0600', async () => {
    const c = sandbox.customers[0]!;
    const env = { API_BASE_URL: sandbox.url, API_KEY: c.writeKey.key, API_SECRET: c.writeKey.secret, CUSTOMER_ID: c.id, DATABASE_URL: `file:${join(tmp.dir, 'w.db')}`, LOG_LEVEL: 'warn' };
    const previous = process.umask(0);
    try {
      const registered = join(tmp.dir, 'registered.secret');
      const reg = await run(['webhook', 'register', '--url', 'http://127.0.0.1:9/webhook', '--generate-secret', '--secret-out', registered], env);
      expect(reg.code, reg.out).toBe(0);
      expect(statSync(registered).mode & 0o777).toBe(0o600);
      const id = /id:\s+(\S+)/.exec(reg.out)![1]!;

      const rotated = join(tmp.dir, 'rotated.secret');
      writeFileSync(rotated, 'old contents');
      chmodSync(rotated, 0o644);
      const rot = await run(['webhook', 'update', '--id', id, '--rotate-secret', '--secret-out', rotated, '--force'], env);
      expect(rot.code, rot.out).toBe(0);
      expect(statSync(rotated).mode & 0o777).toBe(0o600);
      const secret = readFileSync(rotated, 'utf8').trim();
      expect(rot.out).not.toContain(secret);

      const cacheFile = join(tmp.dir, 'tokens.json');
      const client = createApiClient({ baseUrl: sandbox.url, apiKey: c.readKey.key, apiSecret: c.readKey.secret, tokenCacheFile: cacheFile });
      try {
        await client.request(loadDocument('jobs/buildings.graphql'), { nameLike: null });
      } finally {
        await client.close();
      }
      expect(statSync(cacheFile).mode & 0o777).toBe(0o600);
      expect(readFileSync(cacheFile, 'utf8')).not.toContain(c.readKey.secret);
    } finally {
      process.umask(previous);
    }
    figures.record({ key: 'secrets/file-modes', tried: 'files written with umask 000: `webhook register --secret-out`, `webhook update --rotate-secret --secret-out --force` over a 0644 file, TOKEN_CACHE_FILE', count: 3, held: 'each is 0600; the token cache holds no API secret' });
  });
});

describe('the API client and the log scrubber', () => {
  it('through revoked tokens, 5xx and retries the client never writes a token or secret into a log line (the scrubber has nothing to do)', async () => {
    const clock = new FakeClock('2026-01-08T00:00:00Z');
    const faulty = await startSandbox({ clock, seed: 5, customers: 1, faults: { seed: 9, revokeToken: 0.2, serverError: 0.2, graphqlError: 0.1 } });
    const secrets = new SecretRegistry();
    const log = memoryLogger({ secrets });
    const raw: string[] = [];
    const removeTap = addLogTap({ line: (_emitted, beforeScrub) => void raw.push(beforeScrub) });
    const c = faulty.customers[0]!;
    const client = createApiClient({
      baseUrl: faulty.url, apiKey: c.readKey.key, apiSecret: c.readKey.secret, clock, logger: log.logger, secrets,
      http: { backoffMinMs: 1, backoffMaxMs: 2, maxAttempts: 8 }, retryGraphQLErrors: true,
    });
    const tokens = new Set<string>();
    const doc = loadDocument('jobs/buildings.graphql');
    try {
      for (let i = 0; i < 40; i++) {
        // Two revocations in a row are an AuthError by design; the failure is logged too, which is the point here.
        await client.request(doc, { nameLike: null }).catch((error: unknown) => log.logger.error({ err: error }, 'request failed'));
        tokens.add((await client.token()).token);
      }
      // The structured redaction: a secret-named field is censored by pino before any scrub.
      log.logger.warn({ apiSecret: c.readKey.secret, headers: { authorization: `Bearer ${[...tokens][0]}` } }, 'redaction probe');
    } finally {
      removeTap();
      await client.close();
      await faulty.close();
    }
    expect(client.stats.reauthsOn401).toBeGreaterThan(0);
    expect(client.stats.retries).toBeGreaterThan(0);
    const all = [c.readKey.secret, ...tokens];
    expect(findLeaks(log.lines.join('\n'), all)).toEqual([]);
    // Before the scrub, too: the client itself never put them into a line; the scrubber is only the second net.
    expect(findLeaks(raw.join('\n'), all)).toEqual([]);
    expect(log.lines.at(-1)).toContain('[REDACTED]');
    figures.record({ key: 'secrets/client-logs', tried: '40 requests through revoked tokens, 5xx and GraphQL errors, logged at trace; a probe line with secret-named fields', count: 40, held: 'no token or API secret in any line, before or after the scrub; secret-named fields censored' });
  });
});
