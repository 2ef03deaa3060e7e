import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { tsNodeArgs } from '../helpers/spawn.ts';

export interface ServeProcess {
  child: ChildProcess;
  opsUrl: string;
  webhookUrl: string;
  output(): string;
  /** SIGTERM, then the exit code and signal. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const CHILD = join(import.meta.dirname, 'child.ts');

/** Starts `serve` in a child process and resolves once it printed where it listens. */
export async function spawnServe(env: Record<string, string>, args: string[] = []): Promise<ServeProcess> {
  const child = spawn(process.execPath, tsNodeArgs(CHILD, ...args), {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const ready = await new Promise<RegExpExecArray>((resolve, reject) => {
    // A child that never gets ready is killed, never left running after the test.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not print where it listens within 60 s:\n${output}`));
    }, 60_000);
    const check = () => {
      const match = /serve: health and metrics on (\S+), webhooks on (\S+)\n/.exec(output);
      if (match) {
        clearTimeout(timer);
        child.stderr!.off('data', check);
        resolve(match);
      }
    };
    child.stderr!.on('data', check);
    void exited.then(([code]) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code} before it was ready:\n${output}`));
    });
  });
  return {
    child,
    opsUrl: ready[1]!,
    webhookUrl: ready[2]!,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const [code, signal] = await exited;
      return { code, signal };
    },
  };
}

/** Polls `check` every 50 ms until it returns true (or gives up after `timeoutMs`). */
export async function until(check: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
