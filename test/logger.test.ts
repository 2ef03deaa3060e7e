import { describe, expect, it } from 'vitest';
import { memoryLogger, SecretRegistry, maskSecret } from '../src/logger.ts';

describe('logger redaction', () => {
  it('censors secret-named fields wherever they sit', () => {
    const { logger, lines } = memoryLogger({ secrets: new SecretRegistry() });
    logger.info({ apiSecret: 'aaa', headers: { authorization: 'Bearer zzz' }, customer: { secret: 'bbb' } }, 'hello');
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toMatch(/aaa|zzz|bbb/);
    expect(lines[0]).toContain('[REDACTED]');
  });

  it('scrubs registered secret values from free text such as error messages', () => {
    const secrets = new SecretRegistry();
    const token = 'eyJhbGciOiJIUzI1NiJ9.payload.signature';
    secrets.add(token);
    const { logger, lines } = memoryLogger({ secrets });
    logger.error({ err: new Error(`request with ${token} failed`) }, `token ${token} refused`);
    expect(lines.join('\n')).not.toContain(token);
    expect(lines.join('\n')).toContain('token [REDACTED] refused');
  });

  it('ignores values too short to be secrets, so ordinary words are not censored', () => {
    const secrets = new SecretRegistry();
    secrets.add('info');
    expect(secrets.size).toBe(0);
  });

  it('masks a secret to its length', () => {
    expect(maskSecret('abcdef')).toBe('[6 characters, hidden]');
    expect(maskSecret(undefined)).toBe('(empty)');
  });
});
