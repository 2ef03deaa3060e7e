import { redactUrl } from '../src/net.ts';
import { describe, expect, it } from 'vitest';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { resolveConfig, parseDuration, requireApi, selectCustomers, configSecrets } from '../src/config.ts';
import { ConfigError, exitCodeFor } from '../src/errors.ts';
import { tempDir } from './support/tmp.ts';

const SECRET = 'super-secret-value-that-must-never-appear';
const C1 = '6f1c0d2e-8a4b-4c1d-9e2f-0123456789ab';
const CA = '0a0a0a0a-0000-4000-8000-00000000000a';
const CB = '0b0b0b0b-0000-4000-8000-00000000000b';
const base = { API_BASE_URL: 'https://api.example.com', API_KEY: 'key-1', API_SECRET: SECRET, CUSTOMER_ID: C1 };

function configError(env: Record<string, string | undefined>): ConfigError {
  try {
    resolveConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('resolveConfig', () => {
  it('applies documented defaults: SQLite file, 15m lookback, 60s settle, 1h step', () => {
    const config = resolveConfig(base);
    expect(config.database).toEqual({ url: 'file:./data/occupancy.db', dialect: 'sqlite', sqlitePath: './data/occupancy.db' });
    expect(config.sync).toMatchObject({ lookbackMs: 900_000, settleDelayMs: 60_000, stepMs: 3_600_000, pageSize: 1000, cron: '*/5 * * * *' });
    expect(config.sync).toMatchObject({ maxClockSkewMs: 300_000, rejectedRecords: 'quarantine', maxRejectedShare: 0.5, maxPagesPerWindow: 10_000 });
    expect(config.webhook).toMatchObject({ path: '/webhook', toleranceMs: 300_000, maxBodyBytes: 1 << 20, maxDecompressedBytes: 16 << 20 });
    expect(config.customers).toEqual([{ id: C1, apiKey: 'key-1', apiSecret: SECRET, webhookSecrets: [], webhookHeaders: {} }]);
  });

  it('keeps every reading by default; READINGS_RETENTION takes a duration of at least an hour, or off', () => {
    expect(resolveConfig(base).sync).toMatchObject({ readingsRetentionMs: 0, runHistoryRetentionMs: 28 * 86_400_000 });
    expect(resolveConfig({ ...base, READINGS_RETENTION: '400d' }).sync.readingsRetentionMs).toBe(400 * 86_400_000);
    expect(resolveConfig({ ...base, READINGS_RETENTION: 'OFF' }).sync.readingsRetentionMs).toBe(0);
    expect(configError({ ...base, READINGS_RETENTION: '5m' }).message).toMatch(/^READINGS_RETENTION="5m": must be a duration from 1h to 36500d \(a hundred years\), or off\. Fix: use e\.g\. 90d or 400d, or off to keep everything \(the default is off\)$/);
  });

  it('gives each API key an adaptive budget by default, a fixed one with API_IN_FLIGHT=N, and a rate with API_MAX_RATE', () => {
    expect(resolveConfig(base).budget).toEqual({ adaptive: true, maxInFlight: 32, startInFlight: 8, ratePerSecond: undefined });
    expect(resolveConfig({ ...base, API_MAX_IN_FLIGHT: '4' }).budget).toEqual({ adaptive: true, maxInFlight: 4, startInFlight: 4, ratePerSecond: undefined });
    expect(resolveConfig({ ...base, API_IN_FLIGHT: '3', API_MAX_RATE: '0.5' }).budget).toEqual({ adaptive: false, maxInFlight: 3, startInFlight: 3, ratePerSecond: 0.5 });
    expect(resolveConfig({ ...base, API_IN_FLIGHT: 'AUTO', API_MAX_RATE: 'off' }).budget.adaptive).toBe(true);
    expect(configError({ ...base, API_IN_FLIGHT: 'lots' }).message).toMatch(/^API_IN_FLIGHT="lots": must be auto or a whole number from 1 to 1024\. Fix: /);
    expect(configError({ ...base, API_IN_FLIGHT: '40', API_MAX_IN_FLIGHT: '32' }).message).toMatch(/^API_IN_FLIGHT="40": is above API_MAX_IN_FLIGHT=32\. Fix: /);
    expect(configError({ ...base, API_MAX_RATE: '0' }).message).toMatch(/^API_MAX_RATE="0": must be off or a number of queries per second above 0/);
    expect(configError({ ...base, API_MAX_IN_FLIGHT: '0' }).message).toMatch(/^API_MAX_IN_FLIGHT="0": must be an integer from 1 to 1024/);
  });

  it('refuses a customer id that is not a UUID, from CUSTOMER_ID and from a customers file (exit 78)', () => {
    expect(configError({ ...base, CUSTOMER_ID: 'acme' }).message).toBe(
      'CUSTOMER_ID="acme": not a customer id (the platform\'s customer ids are UUIDs, e.g. 6f1c0d2e-8a4b-4c1d-9e2f-0123456789ab). ' +
        'Fix: copy the customer id from the Admin Console (Open as Customer) or from `occupancy-sync check`',
    );
    expect(configError({ ...base, CUSTOMER_ID: `${C1}x` }).message).toMatch(/^CUSTOMER_ID=".*": not a customer id/);
    const tmp = tempDir('cfg-ids-');
    try {
      const file = join(tmp.dir, 'customers.json');
      writeFileSync(file, JSON.stringify([{ id: 'c-1', apiKey: 'ka', apiSecretEnv: 'A_SECRET' }]));
      expect(configError({ CUSTOMERS_FILE: file, A_SECRET: 'secret-a-123' }).message).toMatch(/^CUSTOMERS_FILE entry 0 \(c-1\) id="c-1": not a customer id/);
    } finally {
      tmp.remove();
    }
  });

  it('selects Postgres from a postgres:// URL', () => {
    expect(resolveConfig({ ...base, DATABASE_URL: 'postgres://u@h:5432/db' }).database.dialect).toBe('postgres');
  });

  it("takes DATABASE_URL's sslmode only as libpq names it, refusing any other (postgres.js took it for verify-full), the password hidden", () => {
    for (const mode of ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full']) {
      expect(resolveConfig({ ...base, DATABASE_URL: `postgres://u@h:5432/db?sslmode=${mode}` }).database.url, mode).toBe(`postgres://u@h:5432/db?sslmode=${mode}`);
    }
    const accepted = 'use one of sslmode=disable, allow, prefer, require, verify-ca, verify-full (lower case), or leave sslmode out for no TLS';
    expect(configError({ ...base, DATABASE_URL: 'postgres://u:hunter2pw@h:5432/db?sslmode=bogus' }).message).toBe(
      `DATABASE_URL="postgres://u:***@h:5432/db?sslmode=bogus": sslmode="bogus" is not an sslmode Postgres knows. Fix: ${accepted}`,
    );
    expect(configError({ ...base, DATABASE_URL: 'postgres://u@h:5432/db?sslmode=DISABLE' }).message).toContain('sslmode="DISABLE" is not an sslmode Postgres knows');
    // postgres.js keeps the last of two: each is checked.
    expect(configError({ ...base, DATABASE_URL: 'postgres://u@h:5432/db?sslmode=require&sslmode=no-verify' }).message).toContain('sslmode="no-verify"');
    expect(configError({ ...base, DATABASE_URL: 'postgres://u@h:5432/db?sslmode=' }).message).toContain('sslmode="" is not');
    expect(configError({ ...base, DATABASE_URL: 'postgres://u@h:5432/db?sslmode=bogus' })).toBeInstanceOf(ConfigError);
  });

  it('refuses plain http except on loopback, naming the variable and the fix', () => {
    const error = configError({ ...base, API_BASE_URL: 'http://api.example.com' });
    expect(error.message).toContain('API_BASE_URL="http://api.example.com"');
    expect(error.message).toContain('Fix: use an https:// URL');
    expect(resolveConfig({ ...base, API_BASE_URL: 'http://127.0.0.1:4000/' }).apiBaseUrl).toBe('http://127.0.0.1:4000');
    expect(resolveConfig({ ...base, API_BASE_URL: 'http://[::1]:4000' }).apiBaseUrl).toBe('http://[::1]:4000');
  });

  it('names the variable and the fix for a bad duration and never echoes a secret', () => {
    expect(configError({ ...base, SYNC_LOOKBACK: 'soon' }).message).toMatch(/SYNC_LOOKBACK="soon": not a duration\. Fix:/);
    const error = configError({ ...base, WEBHOOK_SECRET: 'too-short-secret' });
    expect(error.message).toContain('WEBHOOK_SECRET=[16 characters, hidden]');
    expect(error.message).not.toContain('too-short-secret');
    const missingKey = configError({ API_SECRET: SECRET });
    expect(missingKey.message).toContain('API_KEY');
    expect(missingKey.message).not.toContain(SECRET);
  });

  it('rejects out-of-range integers and unknown databases', () => {
    expect(configError({ ...base, SYNC_PAGE_SIZE: '6000' }).message).toContain('SYNC_PAGE_SIZE="6000": must be an integer from 1 to 5000');
    expect(configError({ ...base, SYNC_REJECTED_RECORDS: 'drop' }).message).toBe(
      'SYNC_REJECTED_RECORDS="drop": must be one of quarantine, fail. Fix: set SYNC_REJECTED_RECORDS=quarantine (the default) or another of those values',
    );
    expect(configError({ ...base, SYNC_MAX_REJECTED_SHARE: '1.5' }).message).toContain('SYNC_MAX_REJECTED_SHARE="1.5": must be a share from 0 to 1');
    expect(resolveConfig({ ...base, SYNC_MAX_CLOCK_SKEW: '2d', SYNC_REJECTED_RECORDS: 'fail' }).sync).toMatchObject({ maxClockSkewMs: 172_800_000, rejectedRecords: 'fail' });
    expect(configError({ ...base, DATABASE_URL: 'mysql://x:pw@h/db' }).message).toContain('mysql://x:***@h/db');
  });

  it('bounds every duration: a timeout by the longest wait a timer takes, a span by ten years, a retention by a hundred', () => {
    expect(configError({ ...base, HTTP_TIMEOUT: '9999999999d' }).message).toBe('HTTP_TIMEOUT="9999999999d": must be at most 24d (the longest wait a timer takes). Fix: use a smaller value');
    expect(configError({ ...base, DATABASE_URL: 'postgres://sync@db/occupancy', DATABASE_STATEMENT_TIMEOUT: '25d' }).message).toContain('DATABASE_STATEMENT_TIMEOUT="25d": must be at most 24d');
    expect(resolveConfig({ ...base, HTTP_TIMEOUT: '24d' }).http.timeoutMs).toBe(24 * 86_400_000);
    expect(configError({ ...base, SYNC_INITIAL_HISTORY: '99999999d' }).message).toBe('SYNC_INITIAL_HISTORY="99999999d": must be at most 3650d (ten years). Fix: use a smaller value');
    expect(resolveConfig({ ...base, SYNC_INITIAL_HISTORY: '3650d' }).sync.initialHistoryMs).toBe(3650 * 86_400_000);
    expect(configError({ ...base, READINGS_RETENTION: '99999999999d' }).message).toContain('READINGS_RETENTION="99999999999d": must be a duration from 1h to 36500d (a hundred years), or off');
  });

  it('refuses a WEBHOOK_TOLERANCE that would turn replay protection off: above 1h, naming the value, the limit and the fix (exit 78)', () => {
    const error = configError({ ...base, WEBHOOK_TOLERANCE: '3650d' });
    expect(exitCodeFor(error)).toBe(78);
    expect(error.message).toBe(
      'WEBHOOK_TOLERANCE="3650d": must be at most 1h (a signed delivery seen on its way could be replayed for as long; the platform recommends 5m). ' +
        "Fix: use 300s (the default, as the platform recommends); a larger value only while a sender's clock is off, and fix that clock (NTP)",
    );
    expect(error.message).not.toContain('\n');
    expect(configError({ ...base, WEBHOOK_TOLERANCE: '3601s' }).message).toContain('WEBHOOK_TOLERANCE="3601s": must be at most 1h');
    expect(resolveConfig({ ...base, WEBHOOK_TOLERANCE: '1h' }).webhook.toleranceMs).toBe(3_600_000);
    expect(resolveConfig(base).webhook.toleranceMs).toBe(300_000);
  });

  it('bounds each window setting by what it means: a lookback every run re-reads, a settle delay no run reads past, a step, a trusted clock skew, a compared window', () => {
    const limits: Array<[variable: string, limit: string, over: string]> = [
      ['SYNC_LOOKBACK', '7d', '169h'],
      ['SYNC_SETTLE_DELAY', '1h', '61m'],
      ['SYNC_STEP', '7d', '8d'],
      ['SYNC_MAX_CLOCK_SKEW', '2d', '49h'],
      ['COMPLETENESS_WINDOW', '1d', '25h'],
    ];
    for (const [variable, limit, over] of limits) {
      for (const value of [over, '3650d']) {
        const error = configError({ ...base, [variable]: value });
        expect(exitCodeFor(error)).toBe(78);
        expect(error.message).toMatch(new RegExp(`^${variable}="${value}": must be at most ${limit} \\([^\n]+\\)\\. Fix: [^\n]+$`));
      }
      expect(() => resolveConfig({ ...base, [variable]: limit })).not.toThrow();
    }
    expect(configError({ ...base, SYNC_LOOKBACK: '3650d' }).message).toContain('Fix: re-read an older range once with `occupancy-sync backfill` or `state rewind`');
    // The settle delay, the one setting that stored nothing at all: a first run must have something to read.
    expect(configError({ ...base, SYNC_SETTLE_DELAY: '1h', SYNC_INITIAL_HISTORY: '1h' }).message).toBe(
      'SYNC_SETTLE_DELAY="1h": not below SYNC_INITIAL_HISTORY=1h: a first run would read nothing. Fix: make SYNC_SETTLE_DELAY shorter than SYNC_INITIAL_HISTORY',
    );
    expect(configError({ ...base, SYNC_INITIAL_HISTORY: '1m' }).message).toContain('SYNC_INITIAL_HISTORY="1m": not longer than SYNC_SETTLE_DELAY');
    expect(resolveConfig({ ...base, SYNC_SETTLE_DELAY: '59m', SYNC_INITIAL_HISTORY: '1h' }).sync).toMatchObject({ settleDelayMs: 59 * 60_000, initialHistoryMs: 3_600_000 });
  });

  it('refuses a required webhook header that authenticates nothing or that no sender can send, naming it and not its value', () => {
    const withHeaders = (headers: Record<string, string>) => configError({ ...base, WEBHOOK_REQUIRED_HEADERS: JSON.stringify(headers) }).message;
    expect(withHeaders({ 'X-Token': '' })).toBe(
      'WEBHOOK_REQUIRED_HEADERS="(not shown)": the value of X-Token is empty. Fix: give X-Token the value set on the webhook (`webhook register --header X-Token=VALUE`)',
    );
    expect(withHeaders({ 'X-Token': '  ' })).toContain('the value of X-Token is empty');
    expect(withHeaders({ 'X-Token': 'super\nsecret-value' })).toContain('the value of X-Token is not one a sender can send (visible ASCII characters, spaces inside only)');
    expect(withHeaders({ 'X-Token': ' padded-secret' })).not.toContain('padded-secret');
    expect(withHeaders({ 'Content-Type': 'application/json' })).toBe(
      'WEBHOOK_REQUIRED_HEADERS="(not shown)": Content-Type is set by the sender of every delivery and cannot be required. Fix: require a header of your own, e.g. {"X-Webhook-Token":"value"}',
    );
    expect(resolveConfig({ ...base, WEBHOOK_REQUIRED_HEADERS: JSON.stringify({ 'X-Token': 'a token with spaces inside' }) }).customers[0]!.webhookHeaders).toEqual({ 'X-Token': 'a token with spaces inside' });
  });

  it('shows no part of a password in a URL it names, however the password is written', () => {
    const cases: Array<[string, string]> = [
      ['postgres://postgres:hunter2/secret@127.0.0.1:5432/test', 'postgres://postgres:***@127.0.0.1:5432/test'],
      ['postgres://postgres:my@secretpw@127.0.0.1:1/test', 'postgres://postgres:***@127.0.0.1:1/test'],
      ['postgres://postgres:a?b#c@db/test', 'postgres://postgres:***@db/test'],
      ['postgres://postgres@127.0.0.1:1/test?password=hunter2secret&sslmode=require', 'postgres://postgres@127.0.0.1:1/test?password=***&sslmode=require'],
      ['postgres://db/test?sslmode=require&sslpassword=keypass', 'postgres://db/test?sslmode=require&sslpassword=***'],
      ['postgres://sync@db/test', 'postgres://sync@db/test'],
      ['http://user:sekrit123pw@127.0.0.1:1/v1/traces', 'http://user:***@127.0.0.1:1/v1/traces'],
      ['ftp://sekrit123@x', 'ftp://***@x'],
      ['postgres://db/test?options=a@b', 'postgres://***@b'],
    ];
    for (const [url, shown] of cases) expect(redactUrl(url), url).toBe(shown);
    // Through the configuration's own message, which names DATABASE_URL.
    const bad = configError({ ...base, DATABASE_URL: 'postgres://postgres:hunter2/secret@' });
    expect(bad.message).toContain('DATABASE_URL=');
    expect(bad.message).not.toMatch(/hunter2|secret@/);
  });

  it('bounds the records a stream run holds: two pages per window at the default page size, never below two pages, never below one', () => {
    expect(resolveConfig(base).sync.maxPendingRecords).toBe(16_000);
    expect(resolveConfig({ ...base, SYNC_WINDOW_CONCURRENCY: '2' }).sync.maxPendingRecords).toBe(4000);
    // A larger page alone keeps a page in flight while one commits.
    expect(resolveConfig({ ...base, SYNC_WINDOW_CONCURRENCY: '1', SYNC_PAGE_SIZE: '5000' }).sync.maxPendingRecords).toBe(10_000);
    expect(resolveConfig({ ...base, SYNC_PAGE_SIZE: '5000', SYNC_MAX_PENDING_RECORDS: '5000' }).sync.maxPendingRecords).toBe(5000);
    expect(configError({ ...base, SYNC_PAGE_SIZE: '2000', SYNC_MAX_PENDING_RECORDS: '1500' }).message).toBe(
      'SYNC_MAX_PENDING_RECORDS="1500": below SYNC_PAGE_SIZE=2000: not even one page would fit. Fix: set it to at least 2000 (twice that keeps a page in flight while one commits), or unset it',
    );
    expect(configError({ ...base, SYNC_MAX_PENDING_RECORDS: 'lots' }).message).toContain('SYNC_MAX_PENDING_RECORDS="lots": must be an integer from 1 to 100000000');
  });

  it('reads secrets from files only when the file is private', () => {
    const tmp = tempDir();
    try {
      const file = join(tmp.dir, 'secret');
      writeFileSync(file, `${SECRET}\n`);
      chmodSync(file, 0o644);
      expect(configError({ ...base, API_SECRET: undefined, API_SECRET_FILE: file }).message).toContain(`chmod 600 ${file}`);
      chmodSync(file, 0o600);
      expect(resolveConfig({ ...base, API_SECRET: undefined, API_SECRET_FILE: file }).customers[0]?.apiSecret).toBe(SECRET);
      // Refused before a byte is read: a device (read whole, /dev/zero filled the memory), a directory, a large file.
      expect(configError({ ...base, API_SECRET: undefined, API_SECRET_FILE: '/dev/zero' }).message).toContain('not a regular file. Fix: point it at a file holding only the secret');
      expect(configError({ ...base, API_SECRET: undefined, API_SECRET_FILE: tmp.dir }).message).toContain('not a regular file');
      const large = join(tmp.dir, 'large');
      writeFileSync(large, 'x'.repeat(64 * 1024 + 1), { mode: 0o600 });
      expect(configError({ ...base, API_SECRET: undefined, API_SECRET_FILE: large }).message).toContain('the file holds 65537 bytes, more than a secret (65536 at most)');
      expect(configError({ ...base, API_SECRET: undefined, API_SECRET_FILE: join(tmp.dir, 'missing') }).message).toContain('cannot read the file (ENOENT)');
      // A webhook secret of the wrong length is named by the variable it came from, the file's included.
      const short = join(tmp.dir, 'short');
      writeFileSync(short, 'too-short-for-a-signature-secret\n', { mode: 0o600 });
      expect(configError({ ...base, WEBHOOK_SECRET_FILE: short }).message).toMatch(/^WEBHOOK_SECRET_FILE=.*: a webhook signature secret has 64 to 256 characters/);
      expect(configError({ ...base, WEBHOOK_PREVIOUS_SECRET: 'short' }).message).toMatch(/^WEBHOOK_PREVIOUS_SECRET=.*: a webhook signature secret has 64 to 256 characters/);
    } finally {
      tmp.remove();
    }
  });

  it('loads several customers from a customers file, refusing inline secrets', () => {
    const tmp = tempDir();
    try {
      const file = join(tmp.dir, 'customers.json');
      writeFileSync(file, JSON.stringify([{ id: CA, apiKey: 'ka', apiSecretEnv: 'A_SECRET' }, { id: CB, apiKey: 'kb', apiSecretEnv: 'B_SECRET' }]));
      const config = resolveConfig({ API_BASE_URL: base.API_BASE_URL, CUSTOMERS_FILE: file, A_SECRET: 'secret-a-123', B_SECRET: 'secret-b-123' });
      expect(config.customers.map((c) => [c.id, c.apiSecret])).toEqual([[CA, 'secret-a-123'], [CB, 'secret-b-123']]);
      expect(selectCustomers(config, CB).map((c) => c.id)).toEqual([CB]);
      expect(() => selectCustomers(config, 'zzz')).toThrow(`--customer "zzz": no such customer is configured. Fix: use one of ${CA}, ${CB}`);
      expect(configSecrets(config)).toEqual(['secret-a-123', 'secret-b-123']);
      expect(configError({ CUSTOMERS_FILE: file, A_SECRET: 'x'.repeat(10) }).message).toContain('B_SECRET');

      writeFileSync(file, JSON.stringify([{ id: CA, apiKey: 'ka', apiSecret: 'inline!' }]));
      expect(configError({ CUSTOMERS_FILE: file }).message).toContain('holds a secret inline');
    } finally {
      tmp.remove();
    }
  });

  it('says where a customers file or WEBHOOK_REQUIRED_HEADERS is not JSON (line:column), never a fragment of its text (exit 78)', () => {
    const tmp = tempDir();
    try {
      const file = join(tmp.dir, 'customers.json');
      const third = '   "webhookHeaders":{"X-Webhook-Token":tok3nSECRETvalue42}}';
      writeFileSync(file, `[\n  {"id": "${CA}", "apiKey": "ka", "apiSecretEnv": "A_SECRET",\n${third}\n]\n`);
      const error = configError({ API_BASE_URL: base.API_BASE_URL, CUSTOMERS_FILE: file, A_SECRET: 'secret-a-123' });
      expect(exitCodeFor(error)).toBe(78);
      expect(error.message).toBe(`CUSTOMERS_FILE=${JSON.stringify(file)}: not valid JSON at 3:${third.indexOf('tok3n') + 1} (line:column; the text is not shown, as it may hold a secret). Fix: fix the JSON syntax there`);
      for (const part of ['tok3n', 'SECRET', 'value42', 'k-Token', 'Unexpected token']) expect(error.message).not.toContain(part);

      const headers = configError({ ...base, WEBHOOK_REQUIRED_HEADERS: '{"X-Webhook-Token":tok3nSECRETvalue42}' }).message;
      expect(headers).toBe(
        'WEBHOOK_REQUIRED_HEADERS="(not shown)": not valid JSON at 1:20 (line:column; the text is not shown, as it may hold a secret). Fix: use a JSON object, e.g. {"X-Webhook-Token":"value"}',
      );
      expect(headers).not.toMatch(/tok3n|SECRET|value42/);
    } finally {
      tmp.remove();
    }
  });

  it('requireApi explains what is missing', () => {
    expect(() => requireApi(resolveConfig({}))).toThrow(/API_BASE_URL=\(unset\): required for this command/);
    expect(() => requireApi(resolveConfig({ API_BASE_URL: 'https://x.example' }))).toThrow(/no customer configured/);
  });
});

describe('parseDuration', () => {
  it.each([
    ['1500ms', 1500],
    ['60s', 60_000],
    ['15m', 900_000],
    ['1h', 3_600_000],
    ['7d', 604_800_000],
    ['1w', 604_800_000],
    ['2w', 1_209_600_000],
    ['90', 90_000],
    ['1.5h', 5_400_000],
  ])('%s is %d ms', (text, ms) => expect(parseDuration(text)).toBe(ms));
  it.each(['', 'abc', '-5s', '5 weeks'])('%j is not a duration', (text) => expect(parseDuration(text)).toBeUndefined());
});
