import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DEFAULT_TIMEOUT_MS, within } from './wait.ts';

/**
 * The one way tests and benchmarks run child processes. A child's output is kept whole and split into lines; every
 * wait (a line, the exit) is on an event, has a timeout naming what it waited for, and fails at once when the
 * child exits first or could not be started (a spawn 'error', e.g. a Node this user may not execute).
 *
 * TypeScript runs in a child as this Node (`process.execPath`, the project's own line) with tsx as the loader, so a
 * child runs the current sources with no build step. The package's compiled CLI (dist/bin/occupancy-sync.js) is
 * exercised by the package test (test/package/), never here.
 */

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The CLI's entry point in the sources. */
const CLI_SOURCE = fileURLToPath(new URL('../../bin/occupancy-sync.ts', import.meta.url));

/** tsx's loader by absolute URL: a bare `tsx` would be resolved from the child's working directory. */
const TSX = pathToFileURL(fileURLToPath(new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url))).href;

/** Node arguments that run the TypeScript file `script` with `args`. */
const tsNodeArgs = (script: string, ...args: string[]): string[] => ['--import', TSX, script, ...args];

export interface Exit {
  /** null when a signal ended the child. */
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SpawnOptions {
  /** Default: the repository root. */
  cwd?: string;
  /** The child's whole environment (default: this process's). */
  env?: Record<string, string | undefined>;
  /** 'pipe' to write() to the child (default 'ignore'). */
  stdin?: 'ignore' | 'pipe';
  /** 'ignore' discards the child's stdout (default: kept and split into lines). */
  stdout?: 'pipe' | 'ignore';
  /** 'inherit' passes the child's stderr straight to the runner's (default: kept and split into lines). */
  stderr?: 'pipe' | 'inherit';
  uid?: number;
  gid?: number;
  /** How messages name the child (default: the command line). */
  name?: string;
}

export type Stream = 'stdout' | 'stderr';

export interface Child {
  readonly name: string;
  readonly process: ChildProcess;
  /**
   * Settles once the child is gone and its output read; rejects when it could not be started. It has no timeout:
   * race it (waitFor's `unless`), and wait with exit().
   */
  readonly exited: Promise<Exit>;
  stdout(): string;
  stderr(): string;
  /**
   * The first line on `stream` (default stdout) equal to `pattern` (a string) or matching it (a RegExp), among the
   * lines already printed and those to come.
   */
  waitForLine(pattern: string, what?: string, options?: LineOptions): Promise<string>;
  waitForLine(pattern: RegExp, what?: string, options?: LineOptions): Promise<RegExpExecArray>;
  /** The next stdout line not yet returned by nextLine (a request/answer protocol over stdin and stdout). */
  nextLine(what: string, timeoutMs?: number): Promise<string>;
  /** Writes to the child's stdin (spawned with `stdin: 'pipe'`). */
  write(text: string): void;
  /** Waits for the exit. */
  exit(timeoutMs?: number, what?: string): Promise<Exit>;
  /** Sends `signal` (default SIGTERM) unless the child is gone, then waits for the exit. */
  kill(signal?: NodeJS.Signals, timeoutMs?: number): Promise<Exit>;
}

export interface LineOptions {
  stream?: Stream;
  timeoutMs?: number;
}

const live = new Set<ChildProcess>();
// A test that failed before stopping its child must not leave it running after the worker process ends.
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** Starts `command args`. */
export function spawnProcess(command: string, args: string[], options: SpawnOptions = {}): Child {
  const name = options.name ?? [command === process.execPath ? 'node' : command, ...args.filter((a) => !a.startsWith('file:'))].join(' ').slice(0, 200);
  const child = spawn(command, args, {
    cwd: options.cwd ?? ROOT,
    env: options.env ?? process.env,
    stdio: [options.stdin ?? 'ignore', options.stdout ?? 'pipe', options.stderr ?? 'pipe'],
    ...(options.uid === undefined ? {} : { uid: options.uid }),
    ...(options.gid === undefined ? {} : { gid: options.gid }),
  });
  live.add(child);
  const events = new EventEmitter().setMaxListeners(0);
  const text: Record<Stream, string> = { stdout: '', stderr: '' };
  const lines: Record<Stream, string[]> = { stdout: [], stderr: [] };
  const partial: Record<Stream, string> = { stdout: '', stderr: '' };
  let ended: { exit: Exit } | { error: Error } | undefined;

  const take = (stream: Stream, chunk: string) => {
    text[stream] += chunk;
    const parts = (partial[stream] + chunk).split('\n');
    partial[stream] = parts.pop()!;
    if (parts.length === 0) return;
    lines[stream].push(...parts);
    events.emit('change');
  };
  // A child that died while being written to: its exit is what the waits report, not the EPIPE.
  child.stdin?.on('error', () => {});
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => take('stdout', chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => take('stderr', chunk));

  const tail = () => {
    const out = `${text.stdout}${text.stderr}`;
    return out ? `output of ${name}:\n${out.slice(-3000)}` : `${name} printed nothing`;
  };
  const exited = new Promise<Exit>((resolve, reject) => {
    child.once('error', (error) => {
      live.delete(child);
      ended ??= { error: new Error(`${name} ${child.pid === undefined ? 'could not be started' : 'failed'}: ${error.message}`, { cause: error }) };
      events.emit('change');
      reject((ended as { error: Error }).error);
    });
    // 'close', not 'exit': the output is read to its end, so a line printed just before exiting is seen.
    child.once('close', (code, signal) => {
      live.delete(child);
      for (const stream of ['stdout', 'stderr'] as const) {
        if (partial[stream]) lines[stream].push(partial[stream]);
        partial[stream] = '';
      }
      ended ??= { exit: { code, signal } };
      events.emit('change');
      if ('exit' in ended) resolve(ended.exit);
    });
  });
  exited.catch(() => {});

  /** Resolves with `find()`'s first defined answer, rechecked on every line and at the end. */
  const waitUntil = async <T>(find: () => T | undefined, what: string, timeoutMs: number): Promise<T> => {
    let check = () => {};
    try {
      return await within(
        new Promise<T>((resolve, reject) => {
          check = () => {
            const found = find();
            if (found !== undefined) resolve(found);
            else if (ended && 'error' in ended) reject(ended.error);
            else if (ended) reject(new Error(`${name} exited (${describeExit(ended.exit)}) before ${what}\n${tail()}`));
          };
          events.on('change', check);
          check();
        }),
        what,
        timeoutMs,
        tail,
      );
    } finally {
      events.off('change', check);
    }
  };

  let cursor = 0;
  const handle: Child = {
    name,
    process: child,
    exited,
    stdout: () => text.stdout,
    stderr: () => text.stderr,
    waitForLine(pattern: string | RegExp, what?: string, options: LineOptions = {}): Promise<never> {
      const stream = options.stream ?? 'stdout';
      const label = what ?? `the line ${String(pattern)} on its ${stream}`;
      return waitUntil(() => {
        for (const line of lines[stream]) {
          if (typeof pattern === 'string') {
            if (line === pattern) return line;
          } else {
            pattern.lastIndex = 0;
            const match = pattern.exec(line);
            if (match) return match;
          }
        }
        return undefined;
      }, label, options.timeoutMs ?? DEFAULT_TIMEOUT_MS) as Promise<never>;
    },
    nextLine(what, timeoutMs = DEFAULT_TIMEOUT_MS) {
      return waitUntil(() => (cursor < lines.stdout.length ? lines.stdout[cursor++] : undefined), what, timeoutMs);
    },
    write(data) {
      if (!child.stdin) throw new Error(`${name} was spawned without stdin: 'pipe'`);
      child.stdin.write(data);
    },
    exit(timeoutMs = DEFAULT_TIMEOUT_MS, what = `${name} to exit`) {
      return within(exited, what, timeoutMs, tail);
    },
    kill(signal = 'SIGTERM', timeoutMs = DEFAULT_TIMEOUT_MS) {
      if (!ended && child.exitCode === null && child.signalCode === null) child.kill(signal);
      // A child that outlives its stop is killed outright before the failure is reported: left running (a serve with
      // its pool of connections and its cron), it outlived the test worker too and took later tests' connections.
      return within(exited, `${name} to exit after ${signal}`, timeoutMs, tail).catch((error: unknown) => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        throw error;
      });
    },
  };
  return handle;
}

function describeExit(exit: Exit): string {
  return exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
}

export interface NodeOptions extends SpawnOptions {
  /** Flags for node itself, e.g. --expose-gc or --cpu-prof. */
  nodeFlags?: string[];
  /** A command that runs node, e.g. `valgrind --tool=cachegrind` (bench/replay-instructions.ts). */
  wrapper?: string[];
}

/** Runs the TypeScript file `script` (absolute, or relative to the repository root) in this Node, through tsx. */
export function spawnTs(script: string, args: string[] = [], options: NodeOptions = {}): Child {
  const file = fileURLToPath(new URL(script, pathToFileURL(ROOT)));
  const node = [process.execPath, ...(options.nodeFlags ?? []), ...tsNodeArgs(file, ...args)];
  const [command, ...rest] = [...(options.wrapper ?? []), ...node];
  return spawnProcess(command!, rest, {
    name: `${script.replace(ROOT, '')} ${args.join(' ')}`.trim().slice(0, 200),
    ...options,
  });
}

/** Starts `occupancy-sync <args>` from the sources. */
export function spawnCli(args: string[], options: SpawnOptions = {}): Child {
  return spawnProcess(process.execPath, tsNodeArgs(CLI_SOURCE, ...args), { name: `occupancy-sync ${args.join(' ')}`, ...options });
}

export interface Finished extends Exit {
  stdout: string;
  stderr: string;
}

/** Runs `occupancy-sync <args>` to its end (at most `timeoutMs`) and returns its exit and output. */
export async function runCli(args: string[], options: SpawnOptions & { timeoutMs?: number } = {}): Promise<Finished> {
  const child = spawnCli(args, options);
  try {
    const exit = await child.exit(options.timeoutMs);
    return { ...exit, stdout: child.stdout(), stderr: child.stderr() };
  } finally {
    if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL');
  }
}
