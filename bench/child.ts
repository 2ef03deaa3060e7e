import { spawnTs, type Child } from '../test/support/process.ts';

/**
 * Child processes of the harness, started with the test suite's spawner (test/support/process.ts). Every measured
 * party (sandbox, sync run, receiver) runs in its own process so it competes for the two cores the same way in
 * every measurement, and so peak RSS belongs to one run only. Children print exactly one JSON line on stdout when
 * they have something to say; everything else goes to stderr.
 */

export interface BenchChild<T> {
  child: Child;
  /** The first line the child printed on stdout, parsed. Rejects when it exits first (with its output). */
  message: Promise<T>;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

export interface BenchSpawnOptions {
  /** Extra flags for node itself, e.g. --cpu-prof. */
  nodeFlags?: string[];
  /** A command that runs node, e.g. valgrind's (bench/replay-instructions.ts). */
  wrapper?: string[];
  env?: Record<string, string | undefined>;
  /** How long the child may take to report (default 10 minutes: a large sync run). */
  timeoutMs?: number;
}

/** Runs `bench/<script>` (TypeScript, through tsx) with `args`. */
export function spawnBench<T>(script: string, args: string[], options: BenchSpawnOptions = {}): BenchChild<T> {
  const child = spawnTs(`bench/${script}`, args, {
    nodeFlags: options.nodeFlags,
    ...(options.wrapper && { wrapper: options.wrapper }),
    env: { ...process.env, LOG_LEVEL: 'silent', ...options.env },
    name: `bench/${script}`,
  });
  const message = child.nextLine(`bench/${script} to report`, options.timeoutMs ?? 600_000).then((line) => {
    try {
      return JSON.parse(line) as T;
    } catch (error) {
      throw new Error(`bench/${script} printed a line that is not JSON: ${line.slice(0, 200)}`, { cause: error });
    }
  });
  message.catch(() => {});
  return {
    child,
    message,
    async stop() {
      await child.kill('SIGTERM');
    },
  };
}

/** Runs a child to completion and returns its JSON line; a non-zero exit is an error. */
export async function runBench<T>(script: string, args: string[], options: BenchSpawnOptions = {}): Promise<T> {
  const { child, message } = spawnBench<T>(script, args, options);
  const result = await message;
  const { code } = await child.exit(60_000, `bench/${script} to exit after reporting`);
  if (code !== 0) throw new Error(`bench/${script} exited with code ${code}:\n${child.stderr().slice(-3000)}`);
  return result;
}

/** For children: print the one JSON line. */
export function report(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** The parent this process was started by (read at the start: a child may be orphaned before closeOnSignal). */
const PARENT = process.ppid;

/**
 * For long-lived children: exit cleanly on SIGTERM after `close`, or once the parent is gone: a benchmark killed
 * outright (kill -9) sends its servers no signal, and they would serve on with nobody to stop them.
 */
export function closeOnSignal(close: () => Promise<void>): void {
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
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
  // An orphan is adopted by init or a subreaper: its parent's pid changes.
  if (process.ppid !== PARENT) stop();
  setInterval(() => {
    if (process.ppid !== PARENT) stop();
  }, 1_000).unref();
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
