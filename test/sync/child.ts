import { spawn, type ChildProcess } from 'node:child_process';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { cliArgs, ROOT } from '../helpers/spawn.ts';

export { ROOT };

/** Environment for a child `occupancy-sync` talking to `sandbox` with its first customer (or all, via a file). */
export function childEnv(sandbox: Sandbox, databaseUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  const customer = sandbox.customers[0]!;
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    API_BASE_URL: sandbox.url,
    API_KEY: customer.readKey.key,
    API_SECRET: customer.readKey.secret,
    CUSTOMER_ID: customer.id,
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'warn',
    HTTP_BACKOFF_MIN: '10ms',
    HTTP_BACKOFF_MAX: '50ms',
    ...extra,
  };
}

export interface Child {
  process: ChildProcess;
  /** Resolves with the exit code (or 128 + signal number when killed by a signal). */
  exited: Promise<{ code: number; signal: NodeJS.Signals | null }>;
  stdout(): string;
  stderr(): string;
}

export function runChild(args: string[], env: Record<string, string>): Child {
  const child = spawn(process.execPath, cliArgs(...args), { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code: code ?? (signal === 'SIGKILL' ? 137 : 128), signal }));
  });
  return { process: child, exited, stdout: () => out, stderr: () => err };
}

/** Polls `check` every `everyMs` until it returns true or `exited` settles first. */
export async function waitFor(check: () => Promise<boolean>, exited: Promise<unknown>, everyMs = 25): Promise<boolean> {
  let done = false;
  void exited.then(() => (done = true));
  while (!done) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return false;
}

/** A seeded PRNG (mulberry32), so kill points are reproducible. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
