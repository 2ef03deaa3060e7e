import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { ExitCode } from '../../src/errors.ts';
import { SIGNATURE_HEADER, signatureHeader } from '../../src/webhooks/signature.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { capture, runMain } from '../support/cli.ts';
import { freshDatabase, type TestDatabase } from '../support/databases.ts';
import { ROOT, spawnProcess } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';
import { DAY, HOUR, childEnv } from '../sync/helpers.ts';

/**
 * OpenTelemetry traces (issue 26): off unless the standard OTEL_* variables name an OTLP endpoint, then a span per run,
 * stream, window, API request (retries and token refreshes as events) and commit, sent over OTLP/HTTP to a receiver
 * here; with the variables unset, no tracing package is loaded, and the one-shot commands load nothing of
 * OpenTelemetry (prom-client, for /metrics and METRICS_TEXTFILE, requires @opentelemetry/api: docs/operations.md).
 */

interface OtlpSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
  events?: Array<{ name: string }>;
  status?: { code?: number };
}

/** A minimal OTLP/HTTP JSON traces receiver. */
async function otlpReceiver(): Promise<{ url: string; spans: OtlpSpan[]; headers: Array<Record<string, unknown>>; close(): Promise<void> }> {
  const spans: OtlpSpan[] = [];
  const headers: Array<Record<string, unknown>> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      headers.push(req.headers);
      if (req.url === '/v1/traces' && String(req.headers['content-type']).includes('json')) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }> };
        for (const r of body.resourceSpans) for (const s of r.scopeSpans) spans.push(...s.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, spans, headers, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const attr = (span: OtlpSpan, key: string) => {
  const v = span.attributes?.find((a) => a.key === key)?.value;
  return v && (v.stringValue ?? v.intValue ?? v.boolValue ?? v.doubleValue);
};

describe('OpenTelemetry traces', () => {
  let sandbox: Sandbox | undefined;
  let db: TestDatabase | undefined;
  let receiver: Awaited<ReturnType<typeof otlpReceiver>> | undefined;
  afterEach(async () => {
    await sandbox?.close();
    await db?.drop();
    await receiver?.close();
  });

  it('a sync sends one trace: the run, each stream, each window, each commit, as parent and children; token obtained and refreshed as events', async () => {
    // Tokens live 2 s (1 to 2 s by the JWT's whole-second exp), so the client replaces its token after at most a
    // second; every answer comes 200 ms late, so the run lasts longer than that.
    sandbox = await startSandbox({
      seed: 3,
      customers: 1,
      dataStart: Math.floor((Date.now() - DAY) / 300_000) * 300_000,
      expiresIn: 2,
      faults: { seed: 4, serverError: 0.4, latencyMs: 200 },
    });
    db = await freshDatabase('sqlite', 'otel');
    receiver = await otlpReceiver();
    const env = childEnv(sandbox, db.url, {
      LOG_LEVEL: 'silent',
      SYNC_INITIAL_HISTORY: '3h',
      SYNC_PAGE_SIZE: '50',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20collector-token-123456',
      OTEL_SERVICE_NAME: 'occupancy-sync-test',
    });
    const result = await runMain(['sync'], env);
    expect(result.code, result.stderr).toBe(ExitCode.OK);
    // Shutdown flushes before main() returns: everything has arrived.
    const byName = (name: string) => receiver!.spans.filter((s) => s.name === name);
    const [run] = byName('sync.run');
    expect(run).toBeDefined();
    const streams = byName('sync.stream');
    expect(streams.map((s) => attr(s, 'stream.name')).sort()).toEqual(['buildings', 'floor-spaces', 'floors', 'occupancy']);
    for (const s of streams) expect(s.parentSpanId).toBe(run!.spanId);
    const occupancy = streams.find((s) => attr(s, 'stream.name') === 'occupancy')!;
    const windows = byName('sync.window');
    expect(windows.length).toBeGreaterThanOrEqual(3);
    for (const w of windows) expect(w.parentSpanId).toBe(occupancy.spanId);
    const commits = byName('store.commit');
    expect(commits.filter((c) => windows.some((w) => w.spanId === c.parentSpanId)).length).toBeGreaterThan(windows.length - 1);
    const requests = byName('api.request');
    expect(requests.length).toBeGreaterThan(windows.length);
    expect(requests.some((r) => r.events?.some((e) => e.name === 'retry'))).toBe(true);
    // The first token is obtained when the key's customer is checked, before any stream starts: an event of the run.
    // The later ones replace it from inside a request: events of that request.
    const withEvent = (name: string) => receiver!.spans.filter((s) => s.events?.some((e) => e.name === name));
    expect(withEvent('token.obtain').map((s) => s.spanId)).toEqual([run!.spanId]);
    expect(run!.events!.filter((e) => e.name === 'token.obtain')).toHaveLength(1);
    const refreshed = withEvent('token.refresh');
    expect(refreshed.length).toBeGreaterThanOrEqual(1);
    for (const s of refreshed) expect(s.name).toBe('api.request');
    expect(new Set(receiver.spans.map((s) => s.traceId)).size).toBe(1);
    expect(receiver.headers[0]!.authorization).toBe('Bearer collector-token-123456');
  });

  it('webhook serve sends a webhook.delivery span for a signed delivery: method, status, outcome, customer, delivery id', async () => {
    receiver = await otlpReceiver();
    const dir = tempDir('otel-webhook-');
    const customerId = '0a1b2c3d-0000-4000-8000-00000000000a';
    const secret = 'w'.repeat(64);
    const deliveryId = randomUUID();
    const controller = new AbortController();
    let stderr = '';
    let announced!: (url: string) => void;
    const listening = new Promise<string>((resolve) => (announced = resolve));
    const served = main(['node', 'occupancy-sync', 'webhook', 'serve'], {
      env: {
        CUSTOMER_ID: customerId,
        WEBHOOK_SECRET: secret,
        WEBHOOK_HOST: '127.0.0.1',
        WEBHOOK_PORT: '0',
        DATABASE_URL: `file:${join(dir.dir, 'webhooks.db')}`,
        LOG_LEVEL: 'silent',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      },
      stdout: capture(),
      stderr: {
        write(text: string) {
          stderr += text;
          const match = /Receiving webhook deliveries at (\S+)/.exec(stderr);
          if (match) announced(match[1]!);
        },
      },
      signal: controller.signal,
    });
    try {
      const url = await Promise.race([listening, served.then((code) => Promise.reject(new Error(`webhook serve exited early (${code}): ${stderr}`)))]);
      const now = new Date();
      const body = JSON.stringify({
        Id: deliveryId,
        Type: 'Occupancy',
        CustomerId: customerId,
        Created: now.toISOString(),
        Sent: now.toISOString(),
        Data: [{ FloorSpaceId: '9e8d7c6b-0000-4000-8000-000000000001', OccupancyStatus: 'CurrentlyOccupied', Headcount: 3 }],
      });
      const answer = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signatureHeader(secret, body, Math.floor(now.getTime() / 1000)) },
        body,
      });
      expect(answer.status, await answer.text()).toBe(200);
    } finally {
      controller.abort();
    }
    // Telemetry shuts down, sending what is buffered, before main() returns.
    expect(await served.finally(() => dir.remove()), stderr).toBe(ExitCode.OK);
    const deliveries = receiver.spans.filter((s) => s.name === 'webhook.delivery');
    expect(deliveries).toHaveLength(1);
    const [span] = deliveries;
    expect(span!.parentSpanId || undefined).toBeUndefined();
    expect(attr(span!, 'http.request.method')).toBe('POST');
    expect(Number(attr(span!, 'http.response.status_code'))).toBe(200);
    expect(attr(span!, 'webhook.outcome')).toBe('stored');
    expect(attr(span!, 'customer.id')).toBe(customerId);
    expect(attr(span!, 'webhook.delivery_id')).toBe(deliveryId);
  });

  it('with OTEL_* unset sync, backfill, demo and status load nothing of OpenTelemetry; serve and METRICS_TEXTFILE only @opentelemetry/api, by prom-client', async () => {
    sandbox = await startSandbox({ seed: 3, customers: 1, buildingsPerCustomer: 1, floorSpacesPerBuilding: 2, dataStart: Math.floor((Date.now() - 3 * HOUR) / 300_000) * 300_000 });
    const dir = tempDir('otel-hooks-');
    try {
      // A module hook in the child that says each @opentelemetry module it resolves (ES imports and CommonJS requires
      // alike), and who asked for it.
      const hook = join(dir.dir, 'hook.mjs');
      writeFileSync(
        hook,
        "import { registerHooks } from 'node:module';\n" +
          "registerHooks({ resolve(s, c, next) { if (s.includes('@opentelemetry')) process.stderr.write(`LOADED ${s} FROM ${c.parentURL}\\n`); return next(s, c); } });\n",
      );
      const env = childEnv(sandbox, `file:${join(dir.dir, 'x.db')}`, { LOG_LEVEL: 'silent' });
      const start = (args: string[], extra: Record<string, string> = {}) =>
        spawnProcess(process.execPath, ['--import', hook, '--import', 'tsx', join(ROOT, 'bin/occupancy-sync.ts'), ...args], {
          env: { ...env, ...extra },
          name: `occupancy-sync ${args.join(' ')}`,
        });
      const run = async (args: string[], extra: Record<string, string> = {}) => {
        const child = start(args, extra);
        const exit = await child.exit(120_000);
        return { code: exit.code, stdout: child.stdout(), stderr: child.stderr() };
      };
      const loaded = (stderr: string) => [...new Set(stderr.split('\n').filter((l) => l.startsWith('LOADED ')))];
      const byPromClient = `LOADED @opentelemetry/api FROM ${pathToFileURL(join(ROOT, 'node_modules/prom-client/lib/metrics/processCpuTotal.js')).href}`;

      const sync = await run(['sync']);
      expect(sync.code, sync.stderr).toBe(ExitCode.OK);
      expect(sync.stdout).toMatch(/^sync: 1 customer, 4 streams, \d+ pages, [\d,]+ records, 0 failed/);
      expect(loaded(sync.stderr)).toEqual([]);
      const backfill = await run(['backfill', '--from', '2h']);
      expect(backfill.code, backfill.stderr).toBe(ExitCode.OK);
      expect(backfill.stdout).toMatch(/^backfill: 1 customer/);
      expect(loaded(backfill.stderr)).toEqual([]);
      const status = await run(['status']);
      expect(status.code, status.stderr).toBe(ExitCode.OK);
      expect(loaded(status.stderr)).toEqual([]);
      const demo = await run(['demo', '--days', '1', '--database', `file:${join(dir.dir, 'demo.db')}`]);
      expect(demo.code, demo.stderr).toBe(ExitCode.OK);
      expect(loaded(demo.stderr)).toEqual([]);

      // What docs/operations.md says: prom-client requires the API package, and nothing else of OpenTelemetry is loaded.
      const textfile = join(dir.dir, 'occupancy_sync.prom');
      const withTextfile = await run(['sync'], { METRICS_TEXTFILE: textfile });
      expect(withTextfile.code, withTextfile.stderr).toBe(ExitCode.OK);
      expect(readFileSync(textfile, 'utf8')).toContain('occupancy_sync_runs_total');
      expect(loaded(withTextfile.stderr)).toEqual([byPromClient]);
      const serve = start(['serve', '--no-webhooks'], { SERVE_HOST: '127.0.0.1', SERVE_PORT: '0', SYNC_CRON: '0 0 1 1 *' });
      try {
        const [, opsUrl] = (await serve.waitForLine(/^serve: health and metrics on (\S+)/, 'serve to listen', { stream: 'stderr', timeoutMs: 60_000 })) as RegExpExecArray;
        const metrics = await (await fetch(`${opsUrl}/metrics`)).text();
        expect(metrics).toContain('process_cpu_seconds_total');
      } finally {
        await serve.kill('SIGTERM', 30_000);
      }
      expect(loaded(serve.stderr())).toEqual([byPromClient]);

      const traced = await run(['status'], { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
      expect(loaded(traced.stderr).join('\n')).toContain('LOADED @opentelemetry/sdk-trace');
    } finally {
      dir.remove();
    }
  });

  it('a bad OTEL_* value is one configuration line, exit 78, the header value not shown', async () => {
    const bad = await runMain(['status'], { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' });
    expect(bad.code).toBe(ExitCode.CONFIG);
    expect(bad.stderr).toBe('occupancy-sync: OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318": not an http(s) URL. Fix: e.g. OTEL_EXPORTER_OTLP_ENDPOINT=http://otel-collector:4318\n');
    const headers = await runMain(['status'], { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_HEADERS: 'secret-token-value' });
    expect(headers.code).toBe(ExitCode.CONFIG);
    expect(headers.stderr).not.toContain('secret-token-value');
  });
});
