import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { ApiVariant } from '../../src/sandbox/api-variants.ts';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.ts';
import { runMain } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

/** Definitions that adapt occupancy-sync to each sandbox API variant (test/check/fixtures/<variant>/). */
export const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

export interface Target {
  sandbox: Sandbox;
  /** The CLI's whole environment: the sandbox, its first customer's read key, quiet logs. */
  env: Record<string, string>;
  run(args: string[], extra?: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }>;
}

export async function sandboxFor(variant: ApiVariant, options: SandboxOptions = {}): Promise<Target> {
  const sandbox = await startSandbox({ apiVariant: variant, seed: 11, ...options });
  const customer = sandbox.customers[0]!;
  const env = {
    API_BASE_URL: sandbox.url,
    API_KEY: customer.readKey.key,
    API_SECRET: customer.readKey.secret,
    CUSTOMER_ID: customer.id,
    LOG_LEVEL: 'error',
    HTTP_MAX_ATTEMPTS: '2',
  };
  return { sandbox, env, run: (args, extra = {}) => runMain(args, { ...env, ...extra }) };
}

/** A private copy of a variant's fixture definitions, to break one thing in. */
export function fixtureCopy(variant: ApiVariant): { dir: string; file: string; edit(name: string, from: string | RegExp, to: string): void; remove(): void } {
  const tmp = tempDir(`check-${variant}-`);
  cpSync(join(FIXTURES, variant), tmp.dir, { recursive: true });
  return {
    dir: tmp.dir,
    file: join(tmp.dir, 'occupancy-sync.streams.yaml'),
    edit(name, from, to) {
      const path = join(tmp.dir, name);
      const text = readFileSync(path, 'utf8');
      const edited = text.replace(from, to);
      // An edit that does not apply would leave the fixture correct, and the test proving nothing.
      expect(edited, `${name}: ${String(from)} not found`).not.toBe(text);
      writeFileSync(path, edited);
    },
    remove: tmp.remove,
  };
}

/** 1-based line and column of the first `needle` in a file (where a finding must point). */
export function positionOf(path: string, needle: string): { line: number; column: number } {
  const lines = readFileSync(path, 'utf8').split('\n');
  const line = lines.findIndex((l) => l.includes(needle));
  expect(line, `${needle} in ${path}`).toBeGreaterThanOrEqual(0);
  return { line: line + 1, column: lines[line]!.indexOf(needle) + 1 };
}

/** The lines of a report that are problems (`  FAIL  ...`), without the marker. */
export const failures = (stdout: string): string[] => stdout.split('\n').filter((l) => l.startsWith('  FAIL  ')).map((l) => l.slice(8));

/**
 * A front end to `target` that refuses introspection as APIs with it turned off do (Apollo's answer: 200 with a
 * GraphQL error), and passes every other request through untouched.
 */
export async function introspectionOff(target: string): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.url?.endsWith('/api/external/query') && body.toString('utf8').includes('__schema')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ errors: [{ message: 'GraphQL introspection is not allowed, but the query contained __schema or __type', extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }] }));
        return;
      }
      const upstream = httpRequest(`${target}${req.url}`, { method: req.method, headers: { ...req.headers, host: new URL(target).host } }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
