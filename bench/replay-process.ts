import { closeOnSignal, flags, report, required } from './child.ts';
import { record, serveReplay, type ReplayPlan } from './replay-server.ts';
import type { SandboxInfo } from './sandbox-process.ts';

/**
 * The replay server in its own process (bench/replay-server.ts):
 *
 *   node --import tsx bench/replay-process.ts --sandbox '<SandboxInfo JSON>' --plans '<ReplayPlan[] JSON>'
 *
 * Records every answer of the plans from the sandbox, then serves them. Prints one JSON line, ReplayInfo, once it
 * serves. Stops on SIGTERM.
 */

export interface ReplayInfo {
  url: string;
  answers: number;
  rows: number;
  jsonBytes: number;
  gzBytes: number;
  recordMs: number;
}

const args = flags();
const sandbox = JSON.parse(required(args, 'sandbox')) as SandboxInfo;
const plans = JSON.parse(required(args, 'plans')) as ReplayPlan[];
const started = performance.now();
const recording = await record({ url: sandbox.url, apiKey: sandbox.apiKey, apiSecret: sandbox.apiSecret }, plans);
const recordMs = performance.now() - started;
const server = await serveReplay(recording);
closeOnSignal(() => server.close());
report({
  url: server.url,
  answers: recording.answers.size,
  rows: recording.rows,
  jsonBytes: recording.jsonBytes,
  gzBytes: recording.gzBytes,
  recordMs,
} satisfies ReplayInfo);
