import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

/**
 * Child processes of the harness. Every measured party (sandbox, sync run, receiver) runs in its own process so it
 * competes for the two cores the same way in every measurement, and so peak RSS belongs to one run only.
 * Children print exactly one JSON line on stdout when they have something to say; everything else goes to stderr.
 */

export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface Child<T> {
  process: ChildProcess;
  /** The first JSON line the child printed on stdout. Rejects when it exits first (with its stderr). */
  message: Promise<T>;
  /** Resolves with the exit code once the child is gone. */
  exited: Promise<number | null>;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

export interface SpawnOptions {
  /** Extra flags for node itself, e.g. --cpu-prof. */
  nodeFlags?: string[];
  env?: Record<string, string | undefined>;
}

/** Runs `bench/<script>` (TypeScript, through tsx) with `args`. */
export function spawnTs<T>(script: string, args: string[], options: SpawnOptions = {}): Child<T> {
  const file = fileURLToPath(new URL(`./${script}`, import.meta.url));
  const child = spawn(process.execPath, [...(options.nodeFlags ?? []), '--import', 'tsx', file, ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'silent', ...options.env },
  });
  let stdout = '';
  let stderr = '';
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const message = new Promise<T>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const nl = stdout.indexOf('\n');
      if (nl >= 0) {
        try {
          resolve(JSON.parse(stdout.slice(0, nl)) as T);
        } catch (error) {
          reject(new Error(`bench/${script} printed a line that is not JSON: ${stdout.slice(0, nl).slice(0, 200)}`, { cause: error }));
        }
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-8000);
    });
    void exited.then((code) => reject(new Error(`bench/${script} ${args.join(' ')} exited (${code}) before reporting:\n${stderr}`)));
  });
  message.catch(() => {});
  return {
    process: child,
    message,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Runs a child to completion and returns its JSON line; a non-zero exit is an error. */
export async function runTs<T>(script: string, args: string[], options: SpawnOptions = {}): Promise<T> {
  const child = spawnTs<T>(script, args, options);
  const [result, code] = await Promise.all([child.message, child.exited]);
  if (code !== 0) throw new Error(`bench/${script} exited with code ${code}`);
  return result;
}

/** For children: print the one JSON line. */
export function report(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** For long-lived children: exit cleanly on SIGTERM after `close`. */
export function closeOnSignal(close: () => Promise<void>): void {
  const stop = () => {
    close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

/** `--name value` flags of a child's argv. */
export function flags(argv: string[] = process.argv.slice(2)): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) continue;
    const eq = arg.indexOf('=');
    if (eq > 0) out.set(arg.slice(2, eq), arg.slice(eq + 1));
    else if (argv[i + 1] !== undefined && !argv[i + 1]!.startsWith('--')) out.set(arg.slice(2), argv[++i]!);
    else out.set(arg.slice(2), 'true');
  }
  return out;
}

export function required(map: Map<string, string>, name: string): string {
  const value = map.get(name);
  if (value === undefined) throw new Error(`missing --${name}`);
  return value;
}
