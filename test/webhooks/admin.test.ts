import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSchemaFile, validateDocuments, formatMismatch } from '../../src/api/index.ts';
import { UsageError } from '../../src/errors.ts';
import { tempDir } from '../support/tmp.ts';
import {
  GENERATED_SECRET_BYTES,
  generateSecret,
  parseHeaderFlag,
  parseHeaderFlags,
  readSecretFile,
  validateSecret,
  validateWebhookUrl,
  webhookDocuments,
  writeSecretFile,
} from '../../src/webhooks/admin.ts';

const dirs: Array<{ remove(): void }> = [];
afterEach(() => dirs.splice(0).forEach((d) => d.remove()));

describe('webhook admin validation', () => {
  it('generates 96 hex characters (384 random bits), different every time, inside 64-256', () => {
    const a = generateSecret();
    expect(a).toMatch(/^[0-9a-f]{96}$/);
    expect(GENERATED_SECRET_BYTES * 2).toBe(96);
    expect(generateSecret()).not.toBe(a);
    expect(validateSecret(a, 'x')).toBe(a);
  });

  it('parses KEY:VALUE headers, trimming around the colon and keeping colons inside the value', () => {
    expect(parseHeaderFlag('X-Token: abc:def ')).toEqual({ key: 'X-Token', value: 'abc:def' });
    expect(() => parseHeaderFlags(['X-A:1', 'x-a:2'])).toThrow(/given twice/);
    expect(() => parseHeaderFlag('X-A:')).toThrow(/value is empty/);
    expect(() => parseHeaderFlag(':v')).toThrow(/expected KEY:VALUE/);
    expect(() => parseHeaderFlag('Content-Type:text/plain')).toThrow(UsageError);
  });

  it('accepts https and loopback http only, with no credentials in the URL', () => {
    expect(validateWebhookUrl('https://hooks.example.com/webhook')).toBe('https://hooks.example.com/webhook');
    for (const loopback of ['http://127.0.0.1:8080/webhook', 'http://localhost/webhook', 'http://[::1]:9/webhook']) {
      expect(validateWebhookUrl(loopback)).toBe(loopback);
    }
    expect(() => validateWebhookUrl('http://10.0.0.1/webhook')).toThrow(/HTTPS only/);
    expect(() => validateWebhookUrl('ftp://hooks.example.com/')).toThrow(/HTTPS only/);
    expect(() => validateWebhookUrl('https://user:pw@hooks.example.com/')).toThrow(/credentials/);
  });

  it('writes a secret file with mode 0600, refuses to overwrite it, and overwrites with force (still 0600)', () => {
    const tmp = tempDir();
    dirs.push(tmp);
    const path = join(tmp.dir, 'secret');
    const old = process.umask(0);
    try {
      writeSecretFile(path, 'first'.padEnd(64, '1'));
    } finally {
      process.umask(old);
    }
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(() => writeSecretFile(path, 'second'.padEnd(64, '2'))).toThrow(/EEXIST.*--force/);
    expect(readFileSync(path, 'utf8')).toBe(`${'first'.padEnd(64, '1')}\n`);
    const loose = join(tmp.dir, 'loose');
    writeFileSync(loose, 'old', { mode: 0o644 });
    writeSecretFile(loose, 'third'.padEnd(64, '3'), { force: true });
    expect(statSync(loose).mode & 0o777).toBe(0o600);
    expect(readSecretFile(loose)).toBe('third'.padEnd(64, '3'));
  });

  it('validates the webhook GraphQL documents against the assumed schema (jobs/schema.graphql)', () => {
    const schema = loadSchemaFile(new URL('../../jobs/schema.graphql', import.meta.url).pathname);
    const docs = Object.values(webhookDocuments());
    expect(docs.map((d) => d.operationName).sort()).toEqual(['RegisterWebhook', 'SendTestEvent', 'UpdateWebhook', 'Webhooks']);
    expect(validateDocuments(schema, docs).map(formatMismatch)).toEqual([]);
  });
});
