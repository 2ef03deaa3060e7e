import { once } from 'node:events';
import { request } from 'node:http';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { spawnTs, type Child, type Exit } from '../support/process.ts';

export const WEBHOOK_SECRET = 'W'.repeat(24) + '-serve-test-webhook-secret-' + 'w'.repeat(24);

export interface Answer {
  status: number;
  text: string;
  json: any;
  headers: Record<string, string | string[] | undefined>;
}

export async function get(url: string, method = 'GET', body?: string, headers: Record<string, string> = {}): Promise<Answer> {
  const req = request(url, { method, agent: false, headers: body ? { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)), ...headers } : headers });
  req.end(body);
  const [res] = (await once(req, 'response')) as [import('node:http').IncomingMessage];
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode ?? 0, text, json, headers: res.headers };
}

/** The value of one Prometheus series in exposition text (undefined when absent). */
export function metric(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Sum of every series of a metric whose labels contain all the given fragments. */
export function metricSum(text: string, name: string, ...fragments: string[]): number {
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && fragments.every((f) => l.includes(f)))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** Environment for one customer of the sandbox, on private ports. */
export function serveEnv(sandbox: Sandbox, databaseUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  const customer = sandbox.customers[0]!;
  return {
    DATABASE_URL: databaseUrl,
    API_BASE_URL: sandbox.url,
    API_KEY: customer.readKey.key,
    API_SECRET: customer.readKey.secret,
    CUSTOMER_ID: customer.id,
    WEBHOOK_SECRET,
    WEBHOOK_HOST: '127.0.0.1',
    WEBHOOK_PORT: '0',
    SERVE_HOST: '127.0.0.1',
    SERVE_PORT: '0',
    SYNC_INITIAL_HISTORY: '1d',
    HTTP_BACKOFF_MIN: '1ms',
    HTTP_BACKOFF_MAX: '5ms',
    LOG_LEVEL: 'silent',
    ...extra,
  };
}

export function occupancyDelivery(customerId: string, id: string, floorSpaceId: string): string {
  const now = new Date().toISOString();
  return JSON.stringify({
    Id: id,
    Type: 'Occupancy',
    CustomerId: customerId,
    Created: now,
    Sent: now,
    Data: [{ FloorSpaceId: floorSpaceId, OccupancyStatus: 'CurrentlyOccupied', Headcount: 3 }],
  });
}

export interface ServeProcess {
  child: Child;
  opsUrl: string;
  webhookUrl: string;
  /** Everything it printed, stdout then stderr. */
  output(): string;
  /** SIGTERM, then the exit code and signal. */
  stop(): Promise<Exit>;
}

/** Starts `serve` (test/serve/child.ts) in a child process and resolves once it printed where it listens. */
export async function spawnServe(env: Record<string, string>, args: string[] = []): Promise<ServeProcess> {
  const child = spawnTs('test/serve/child.ts', args, { env: { PATH: process.env.PATH ?? '', ...env }, name: `serve ${args.join(' ')}` });
  try {
    const ready = await child.waitForLine(/serve: health and metrics on (\S+), webhooks on (\S+)$/, 'serve to print where it listens', { stream: 'stderr' });
    return {
      child,
      opsUrl: ready[1]!,
      webhookUrl: ready[2]!,
      output: () => child.stdout() + child.stderr(),
      stop: () => child.kill('SIGTERM'),
    };
  } catch (error) {
    await child.kill('SIGKILL').catch(() => {});
    throw error;
  }
}
