import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { openStore } from '../../src/store/index.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { tempDir } from '../support/tmp.ts';

/** Runs the CLI in-process and captures its output. */
async function run(args: string[], env: Record<string, string>, signal?: AbortSignal, onStderr?: (text: string) => void) {
  let stdout = '';
  let stderr = '';
  const code = await main(['node', 'occupancy-sync', ...args], {
    env,
    stdout: { write: (t: string) => (stdout += t) },
    stderr: {
      write: (t: string) => {
        stderr += t;
        onStderr?.(t);
      },
    },
    signal: signal ?? new AbortController().signal,
  });
  return { code, stdout, stderr };
}

let sandbox: Sandbox;
let tmp: ReturnType<typeof tempDir>;
let env: Record<string, string>;
let customerId: string;

beforeAll(async () => {
  // The system clock on both sides: `webhook serve` checks the signature time against it.
  sandbox = await startSandbox({ seed: 3, customers: 1, buildingsPerCustomer: 1, floorSpacesPerBuilding: 2 });
  tmp = tempDir('webhook-cli-');
  const c = sandbox.customers[0]!;
  customerId = c.id;
  env = {
    API_BASE_URL: sandbox.url,
    API_KEY: c.writeKey.key,
    API_SECRET: c.writeKey.secret,
    CUSTOMER_ID: c.id,
    DATABASE_URL: `file:${join(tmp.dir, 'cli.db')}`,
    WEBHOOK_HOST: '127.0.0.1',
    WEBHOOK_PORT: '0',
    LOG_LEVEL: 'warn',
  };
});

afterAll(async () => {
  await sandbox.close();
  tmp.remove();
});

it('webhook serve refuses to start closed to everyone: no secret, no header, no WEBHOOK_ACCEPT_UNSIGNED (exit 78)', async () => {
  const result = await run(['webhook', 'serve'], env);
  expect(result.code).toBe(78);
  expect(result.stderr).toBe(
    `occupancy-sync: WEBHOOK_SECRET=(unset): no customer has a webhook secret or custom header (${customerId}), so the receiver would accept no delivery. ` +
      'Fix: set WEBHOOK_SECRET (or WEBHOOK_SECRET_FILE) to the signature secret set on the webhook, or WEBHOOK_REQUIRED_HEADERS ' +
      '(with CUSTOMERS_FILE: webhookSecretEnv, webhookSecretFile or webhookHeaders in the entry); ' +
      'WEBHOOK_ACCEPT_UNSIGNED=true accepts unsigned deliveries (a development machine only)\n',
  );
});

/** `webhook serve` through main(), until stop() aborts it; resolves its exit code. */
async function serve(extraEnv: Record<string, string>) {
  const controller = new AbortController();
  let announced!: (url: string) => void;
  const url = new Promise<string>((resolve) => (announced = resolve));
  const done = run(['webhook', 'serve'], { ...env, ...extraEnv }, controller.signal, (text) => {
    const match = /Receiving webhook deliveries at (\S+)/.exec(text);
    if (match) announced(match[1]!);
  });
  const first = await Promise.race([url, done.then((r) => { throw new Error(`serve exited early: ${r.code} ${r.stderr}`); })]);
  return {
    url: first,
    stop: async () => {
      controller.abort();
      return (await done).code;
    },
  };
}

function secretFile(name: string, value: string): string {
  const path = join(tmp.dir, name);
  writeFileSync(path, `${value}\n`, { mode: 0o600 });
  return path;
}

describe('webhook commands against the sandbox', () => {
  it('register, test, rotate, clear: the sandbox shows signed true/false and the receiver accepts only what it can verify', async () => {
    const first = secretFile('first.secret', 'f'.repeat(80));
    let receiver = await serve({ WEBHOOK_SECRET_FILE: first });

    const reg = await run(['webhook', 'register', '--url', receiver.url, '--signature-secret-file', first, '--compress'], env);
    expect(reg.stderr).toBe('');
    expect(reg.code).toBe(0);
    const id = /id:\s+(\S+)/.exec(reg.stdout)![1]!;
    expect(sandbox.webhooks(customerId)).toEqual([expect.objectContaining({ id, signed: true, compress: true, url: receiver.url })]);

    const test1 = await run(['webhook', 'test', '--id', id], env);
    expect(test1.stdout).toContain('the receiver accepted it');
    expect(test1.code).toBe(0);

    // Rotation without telling the receiver: the receiver refuses the delivery, `webhook test` says so and exits 1.
    const next = join(tmp.dir, 'next.secret');
    const rotated = await run(['webhook', 'update', '--id', id, '--rotate-secret', '--secret-out', next], env);
    expect(rotated.code).toBe(0);
    expect(rotated.stdout).toContain(`written to ${next} (mode 0600)`);
    expect(statSync(next).mode & 0o777).toBe(0o600);
    const nextSecret = readFileSync(next, 'utf8').trim();
    expect(nextSecret).toMatch(/^[0-9a-f]{96}$/);
    expect(rotated.stdout).not.toContain(nextSecret);
    expect((await run(['webhook', 'test', '--id', id], env)).code).toBe(1);

    // The receiver with the new secret and the previous one: accepted again.
    expect(await receiver.stop()).toBe(0);
    receiver = await serve({ WEBHOOK_SECRET_FILE: next, WEBHOOK_PREVIOUS_SECRET_FILE: first, WEBHOOK_PORT: new URL(receiver.url).port });
    expect((await run(['webhook', 'test', '--id', id], env)).code).toBe(0);

    // Printing instead of a file: the secret appears once on stdout.
    const printed = await run(['webhook', 'update', '--id', id, '--rotate-secret', '--no-compress'], env);
    expect(printed.stdout).toMatch(/shown once[^\n]*\n[0-9a-f]{96}\n/);
    expect(sandbox.webhooks(customerId)[0]).toMatchObject({ signed: true, compress: false });

    const cleared = await run(['webhook', 'update', '--id', id, '--clear-signature-secret'], env);
    expect(cleared.code).toBe(0);
    expect(sandbox.webhooks(customerId)[0]!.signed).toBe(false);
    // The receiver still has secrets configured, so it refuses the now unsigned delivery.
    expect((await run(['webhook', 'test', '--id', id], env)).code).toBe(1);
    expect(await receiver.stop()).toBe(0);

    const listed = await run(['webhook', 'list', '--json'], env);
    expect(JSON.parse(listed.stdout)).toEqual([{ customerId, webhooks: [expect.objectContaining({ id, signed: false, compress: false })] }]);
    const text = await run(['webhook', 'list'], env);
    expect(text.stdout).toContain('signed:   no');

    // The test deliveries that were accepted are in the database, once each.
    const store = await openStore({ url: env.DATABASE_URL!, dialect: 'sqlite', sqlitePath: env.DATABASE_URL!.slice(5) });
    try {
      const rows = await store.query<{ n: number }>('SELECT COUNT(*) AS n FROM webhook_deliveries');
      expect(Number(rows[0]!.n)).toBe(2);
    } finally {
      await store.close();
    }
  });

  it('registers with a generated secret and headers, masking header values in listings', async () => {
    const out = join(tmp.dir, 'generated.secret');
    const reg = await run(
      ['webhook', 'register', '--url', 'https://hooks.example.com/webhook', '--generate-secret', '--secret-out', out, '--header', 'X-Webhook-Token: header-value-123456'],
      env,
    );
    expect(reg.code).toBe(0);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    expect(reg.stdout).not.toContain('header-value-123456');
    const hook = sandbox.webhooks(customerId).find((h) => h.url === 'https://hooks.example.com/webhook')!;
    expect(hook.additionalHeaders).toEqual([{ key: 'X-Webhook-Token', value: 'header-value-123456' }]);
    expect((await run(['webhook', 'list', '--json'], env)).stdout).not.toContain('header-value-123456');
    // --secret-out never overwrites an existing file without --force.
    const again = await run(['webhook', 'update', '--id', hook.id, '--rotate-secret', '--secret-out', out], env);
    expect(again.code).toBe(64);
    expect(again.stderr).toContain('--force');
  });

  it('explains a 403: the scope, where to grant it and the user permission', async () => {
    const c = sandbox.customers[0]!;
    const res = await run(['webhook', 'register', '--url', 'https://hooks.example.com/x'], { ...env, API_KEY: c.readKey.key, API_SECRET: c.readKey.secret });
    expect(res.code).toBe(77);
    expect(res.stderr).toContain('WritePublicApi');
    expect(res.stderr).toContain('/settings/apiaccess');
    expect(res.stderr).toContain('write permission');
    expect(res.stderr).not.toContain(c.readKey.secret);
  });
});

describe('local validation before any call', () => {
  it.each([
    [['register', '--url', 'http://hooks.example.com/webhook'], '--url "http://hooks.example.com/webhook"'],
    [['register', '--url', 'not a url'], '--url "not a url": not an absolute URL'],
    [['register', '--url', 'https://h.example.com', '--header', 'NoColon'], '--header "NoColon": expected KEY:VALUE'],
    [['register', '--url', 'https://h.example.com', '--header', 'Bad Name:v'], 'is not a valid header name'],
    [['register', '--url', 'https://h.example.com', '--header', 'X-Service-Signature:v'], 'set by the platform itself'],
    [['register', '--url', 'https://h.example.com', '--secret-out', '/tmp/x'], '--secret-out: only used with --generate-secret'],
    [['register', '--url', 'https://h.example.com', '--events', 'Bogus'], '--events "Bogus": no stream of the definitions in force stores deliveries of that event type. Fix: use Occupancy'],
    [['register', '--url', 'https://h.example.com', '--events', 'occupancy'], '--events "occupancy": no stream of the definitions in force stores deliveries of that event type. Fix: write Occupancy'],
    [['register', '--url', 'https://h.example.com', '--events', 'Occupancy,Occupancy'], '--events "Occupancy,Occupancy": Occupancy is named twice. Fix: name each event type once'],
    [['test', '--id', 'x', '--type', 'Bogus'], '--type "Bogus": no stream of the definitions in force stores deliveries of that event type'],
    [['update', '--id', 'x'], 'nothing to change'],
    [['update', '--id', 'x', '--secret-out', '/tmp/x'], 'only used with --rotate-secret'],
  ])('webhook %j fails with exit 64 (usage) naming the flag', async (args, message) => {
    const before = sandbox.stats.authCalls;
    const res = await run(['webhook', ...args], env);
    expect(res.code).toBe(64);
    expect(res.stderr).toContain(message);
    expect(res.stderr).toContain('Fix:');
    expect(sandbox.stats.authCalls).toBe(before);
  });

  it('refuses a secret file with fewer than 64 characters, naming the file and the length', async () => {
    const short = secretFile('short.secret', 'x'.repeat(20));
    const res = await run(['webhook', 'register', '--url', 'https://h.example.com', '--signature-secret-file', short], env);
    expect(res.code).toBe(64);
    expect(res.stderr).toContain('64 to 256 characters, this one has 20');
    expect(res.stderr).not.toContain('x'.repeat(20));
  });

  it('refuses --rotate-secret together with --clear-signature-secret (usage error)', async () => {
    const res = await run(['webhook', 'update', '--id', 'x', '--rotate-secret', '--clear-signature-secret'], env);
    expect(res.code).toBe(64);
  });

  it('documents every subcommand with examples', async () => {
    for (const sub of ['register', 'update', 'list', 'test', 'serve']) {
      const res = await run(['webhook', sub, '--help'], env);
      expect(res.code).toBe(0);
      expect(res.stdout).toMatch(/Examples?:/);
    }
  });
});
