import { chmodSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { memoryLogger } from '../../src/logger.ts';
import { FileTokenStore } from '../../src/api/token-cache.ts';
import { tempDir } from '../support/tmp.ts';

const NOW = Date.UTC(2026, 0, 1);
const info = (token: string, expiresAt = NOW + 900_000) => ({ token, obtainedAt: NOW, expiresAt, claims: undefined });

describe('FileTokenStore', () => {
  let tmp: ReturnType<typeof tempDir>;
  afterEach(() => tmp.remove());

  it('writes the file with mode 0600, atomically, and reads the token back in another instance', () => {
    tmp = tempDir();
    const path = join(tmp.dir, 'cache', 'tokens.json');
    new FileTokenStore(path, 'https://api.example.com', 'key-a').save(info('token-aaaaaaaa'));
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(tmp.dir, 'cache'))).toEqual(['tokens.json']);
    expect(new FileTokenStore(path, 'https://api.example.com', 'key-a').load(NOW)?.token).toBe('token-aaaaaaaa');
  });

  it('makes its directory with mode 0700, and refuses at once one that cannot be made (procfs: Node\'s recursive mkdir looped there forever)', () => {
    tmp = tempDir();
    const path = join(tmp.dir, 'a', 'b', 'tokens.json');
    new FileTokenStore(path, 'https://api.example.com', 'key-a').save(info('token-aaaaaaaa'));
    expect(statSync(join(tmp.dir, 'a', 'b')).mode & 0o777).toBe(0o700);
    expect(() => new FileTokenStore('/proc/no-such-dir/tokens.json', 'https://api.example.com', 'key-a').save(info('token-bbbbbbbb'))).toThrow(/ENOENT/);
  });

  it('keys entries by base URL and key name, so a sandbox token never goes to another host or key', () => {
    tmp = tempDir();
    const path = join(tmp.dir, 'tokens.json');
    new FileTokenStore(path, 'http://127.0.0.1:4000', 'key-a').save(info('sandbox-token-1'));
    new FileTokenStore(path, 'https://api.example.com', 'key-a').save(info('real-token-111'));
    expect(new FileTokenStore(path, 'http://127.0.0.1:4000', 'key-b').load(NOW)).toBeUndefined();
    expect(new FileTokenStore(path, 'http://127.0.0.1:4000', 'key-a').load(NOW)?.token).toBe('sandbox-token-1');
    expect(new FileTokenStore(path, 'https://api.example.com', 'key-a').load(NOW)?.token).toBe('real-token-111');
  });

  it('ignores expired, corrupt, too-open and symlinked files', () => {
    tmp = tempDir();
    const path = join(tmp.dir, 'tokens.json');
    const { logger, lines } = memoryLogger();
    const store = new FileTokenStore(path, 'https://api.example.com', 'key-a', logger);
    store.save(info('token-expiring', NOW + 1000));
    expect(store.load(NOW + 1000)).toBeUndefined();

    store.save(info('token-bbbbbbbb'));
    chmodSync(path, 0o644);
    expect(store.load(NOW)).toBeUndefined();
    expect(lines.join('')).toContain('mode 0600');

    writeFileSync(path, '{"version":1,"tokens":', { mode: 0o600 });
    chmodSync(path, 0o600);
    expect(store.load(NOW)).toBeUndefined();
    // A damaged file's warning says where it breaks, never V8's excerpt of it: the excerpt would hold a token.
    const damaged = '{"version":1,"tokens":{"k":{"token":eyJtok3nSECRETvalue42}}}';
    writeFileSync(path, damaged, { mode: 0o600 });
    lines.length = 0;
    expect(store.load(NOW)).toBeUndefined();
    expect(lines.join('')).toContain(`not valid JSON at 1:${damaged.indexOf('eyJ') + 1} (line:column`);
    expect(lines.join('')).not.toMatch(/tok3n|SECRET|value42|eyJ/);

    const target = join(tmp.dir, 'elsewhere.json');
    writeFileSync(target, JSON.stringify({ version: 1, tokens: {} }), { mode: 0o600 });
    const link = join(tmp.dir, 'link.json');
    symlinkSync(target, link);
    expect(new FileTokenStore(link, 'https://api.example.com', 'key-a').load(NOW)).toBeUndefined();
  });

  it('removes a refused token only if it is still the stored one', () => {
    tmp = tempDir();
    const path = join(tmp.dir, 'tokens.json');
    const store = new FileTokenStore(path, 'https://api.example.com', 'key-a');
    store.save(info('token-newer-1'));
    store.remove('token-older-0');
    expect(store.load(NOW)?.token).toBe('token-newer-1');
    store.remove('token-newer-1');
    expect(store.load(NOW)).toBeUndefined();
  });
});
