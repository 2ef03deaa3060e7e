import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics.ts';

function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('metrics', () => {
  it('counts runs, pages, records and failures per customer and stream', async () => {
    const m = createMetrics({ processMetrics: false });
    m.recordRun({ customerId: 'c1', stream: 'occupancy', status: 'succeeded', pages: 3, records: 2500 });
    m.recordRun({ customerId: 'c1', stream: 'occupancy', status: 'failed', pages: 1, records: 10, errorKind: 'TRANSPORT' });
    m.recordRun({ customerId: 'c1', stream: 'occupancy', status: 'succeeded', pages: 0, records: 0, rejected: 4 });
    m.recordPage('c1', 'buildings', 7);
    const text = await m.text();
    expect(value(text, 'occupancy_sync_runs_total{customer="c1",stream="occupancy",status="succeeded"}')).toBe(2);
    expect(value(text, 'occupancy_sync_records_rejected_total{customer="c1",stream="occupancy"}')).toBe(4);
    expect(value(text, 'occupancy_sync_runs_total{customer="c1",stream="occupancy",status="failed"}')).toBe(1);
    expect(value(text, 'occupancy_sync_pages_total{customer="c1",stream="occupancy"}')).toBe(4);
    expect(value(text, 'occupancy_sync_records_total{customer="c1",stream="occupancy"}')).toBe(2510);
    expect(value(text, 'occupancy_sync_pages_total{customer="c1",stream="buildings"}')).toBe(1);
    expect(value(text, 'occupancy_sync_failures_total{customer="c1",stream="occupancy",kind="TRANSPORT"}')).toBe(1);
  });

  it('counts webhook deliveries by outcome and refusal reason', async () => {
    const m = createMetrics({ processMetrics: false });
    m.webhookOutcome('accepted');
    m.webhookOutcome('accepted');
    m.webhookOutcome('duplicate');
    m.webhookOutcome('refused', 'stale_timestamp');
    const text = await m.text();
    expect(value(text, 'occupancy_sync_webhook_deliveries_total{outcome="accepted",reason=""}')).toBe(2);
    expect(value(text, 'occupancy_sync_webhook_deliveries_total{outcome="duplicate",reason=""}')).toBe(1);
    expect(value(text, 'occupancy_sync_webhook_deliveries_total{outcome="refused",reason="stale_timestamp"}')).toBe(1);
  });

  it('sums API client stats read at scrape time with direct counts, and never goes down when a client goes away', async () => {
    const m = createMetrics({ processMetrics: false });
    const stats = { authCalls: 2, tokenRefreshes: 1, retries: 5 };
    const remove = m.observeApiStats(() => stats);
    m.recordRetry();
    expect(value(await m.text(), 'occupancy_sync_api_retries_total')).toBe(6);
    stats.retries = 9;
    stats.authCalls = 3;
    expect(value(await m.text(), 'occupancy_sync_api_retries_total')).toBe(10);
    remove();
    const text = await m.text();
    expect(value(text, 'occupancy_sync_api_retries_total')).toBe(10);
    expect(value(text, 'occupancy_sync_api_auth_calls_total')).toBe(3);
    expect(value(text, 'occupancy_sync_api_token_refreshes_total')).toBe(1);
  });

  it('keeps each registry separate and exposes lag as a gauge', async () => {
    const a = createMetrics({ processMetrics: false });
    const b = createMetrics();
    a.setSyncLag('c1', 'occupancy', 125.5);
    a.setSyncLag('c1', 'occupancy', 60);
    expect(value(await a.text(), 'occupancy_sync_lag_seconds{customer="c1",stream="occupancy"}')).toBe(60);
    const other = await b.text();
    expect(other).not.toContain('occupancy_sync_lag_seconds{');
    expect(other).toContain('occupancy_sync_process_cpu_seconds_total');
    expect(a.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
  });
});
