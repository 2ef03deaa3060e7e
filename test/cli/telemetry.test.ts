import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runMain } from '../support/cli.ts';
import { freshDatabase, type TestDatabase } from '../support/databases.ts';
import { ROOT } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';
import { DAY, childEnv } from '../sync/helpers.ts';

/**
 * OpenTelemetry traces (issue 26): off unless the standard OTEL_* variables name an OTLP endpoint, then a span per run,
 * stream, window, API request (retries and token refreshes as events) and commit, sent over OTLP/HTTP to a receiver
 * here; with the variables unset, no OpenTelemetry module is even loaded.
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

  it('a sync sends one trace: the run, each stream, each window, each commit, as parent and children', async () => {
    sandbox = await startSandbox({ seed: 3, customers: 1, dataStart: Math.floor((Date.now() - DAY) / 300_000) * 300_000, faults: { seed: 4, serverError: 0.4 } });
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
    expect(streams.map((s) => attr(s, 'stream.name')).sort()).toEqual(['buildings', 'occupancy']);
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
    expect(new Set(receiver.spans.map((s) => s.traceId)).size).toBe(1);
    expect(receiver.headers[0]!.authorization).toBe('Bearer collector-token-123456');
  });

  it('with OTEL_* unset no OpenTelemetry module is loaded; with an endpoint it is', () => {
    const dir = tempDir('otel-hooks-');
    try {
      // A module hook in the child that says each @opentelemetry module it resolves.
      const hook = join(dir.dir, 'hook.mjs');
      writeFileSync(hook, "import { registerHooks } from 'node:module';\nregisterHooks({ resolve(s, c, next) { if (s.includes('@opentelemetry')) process.stderr.write(`LOADED ${s}\\n`); return next(s, c); } });\n");
      const run = (extra: Record<string, string>) =>
        execFileSync(process.execPath, ['--import', hook, '--import', 'tsx', join(ROOT, 'bin/occupancy-sync.ts'), 'status'], {
          env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATABASE_URL: `file:${join(dir.dir, 'x.db')}`, LOG_LEVEL: 'silent', ...extra },
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
        });
      const spawnOut = (extra: Record<string, string>) => {
        try {
          run(extra);
          return '';
        } catch (error) {
          return String((error as { stderr?: string }).stderr ?? '');
        }
      };
      // status on an empty database exits non-zero (nothing to show is fine); only the hook's lines matter.
      expect(spawnOut({})).not.toContain('LOADED');
      expect(spawnOut({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' })).toContain('LOADED @opentelemetry/api');
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
