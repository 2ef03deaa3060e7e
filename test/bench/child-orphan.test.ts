import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { afterEach, expect, it } from 'vitest';
import { DEFAULT_TIMEOUT_MS, within, waitFor } from '../support/wait.ts';

/**
 * A benchmark's servers (bench/child.ts closeOnSignal: the replay servers, the sandbox, the receiver) stop once the
 * benchmark that started them is gone, even when it was killed outright and could send them nothing: a benchmark
 * killed with kill -9 left its replay servers serving with nobody to stop them.
 */

const CHILD = `
import { createServer } from 'node:http';
import { closeOnSignal, report } from './bench/child.ts';
const server = createServer((_, res) => res.end('ok'));
server.listen(0, '127.0.0.1', () => {
  closeOnSignal(() => new Promise((resolve) => server.close(() => resolve())));
  report({ pid: process.pid });
});
`;
// The benchmark: starts the child with the child's output as its own, then waits forever.
const PARENT = `
const { spawn } = require('node:child_process');
spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', ${JSON.stringify(CHILD)}], { stdio: ['ignore', 'inherit', 'inherit'] });
setInterval(() => {}, 1 << 30);
`;

const pids: number[] = [];
afterEach(() => {
  for (const pid of pids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
});

/** Whether a process runs (a zombie waiting for its reaper has ended). */
function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

it('a benchmark server stops once the benchmark that started it is killed with SIGKILL', async () => {
  const parent = spawn(process.execPath, ['-e', PARENT], { stdio: ['ignore', 'pipe', 'pipe'] });
  pids.push(parent.pid!);
  let stderr = '';
  parent.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const lines = createInterface({ input: parent.stdout });
  const first = await within(new Promise<string>((resolve) => lines.once('line', resolve)), "the child's report", DEFAULT_TIMEOUT_MS, () => `stderr: ${stderr}`);
  const { pid } = JSON.parse(first) as { pid: number };
  pids.push(pid);
  expect(running(pid)).toBe(true);

  const exited = new Promise((resolve) => parent.once('exit', resolve));
  parent.kill('SIGKILL');
  await exited;
  // It looks for its parent every second; the wait allows a loaded machine's delays.
  await waitFor(() => !running(pid), 'the orphaned server to stop', DEFAULT_TIMEOUT_MS, { everyMs: 100 });
});
