import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics.ts';

function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Sample lines (not comments) of one metric family. */
const samples = (text: string, family: string) => text.split('\n').filter((l) => l.startsWith(family));

describe('metrics', () => {
  it('counts runs, pages, records and failures per stream, with no customer label by default', async () => {
    const m = createMetrics({ processMetrics: false });
    m.recordRun({ customerId: 'c1', stream: 'occupancy', status: 'succeeded', pages: 3, records: 2500 });
    m.recordRun({ customerId: 'c2', stream: 'occupancy', status: 'failed', pages: 1, records: 10, errorKind: 'TRANSPORT' });
    m.recordRun({ customerId: 'c1', stream: 'occupancy', status: 'succeeded', pages: 0, records: 0, rejected: 4 });
    m.recordPage('c1', 'buildings', 7);
    const text = await m.text();
    expect(value(text, 'occupancy_sync_runs_total{stream="occupancy",status="succeeded"}')).toBe(2);
    expect(value(text, 'occupancy_sync_records_rejected_total{stream="occupancy"}')).toBe(4);
    expect(value(text, 'occupancy_sync_runs_total{stream="occupancy",status="failed"}')).toBe(1);
    expect(value(text, 'occupancy_sync_pages_total{stream="occupancy"}')).toBe(4);
    expect(value(text, 'occupancy_sync_records_total{stream="occupancy"}')).toBe(2510);
    expect(value(text, 'occupancy_sync_pages_total{stream="buildings"}')).toBe(1);
    expect(value(text, 'occupancy_sync_failures_total{stream="occupancy",kind="TRANSPORT"}')).toBe(1);
    expect(text).not.toContain('customer=');
  });

  it('keeps the number of series independent of the number of customers unless METRICS_PER_CUSTOMER', async () => {
    const series = async (perCustomer: boolean, customers: number) => {
      const m = createMetrics({ processMetrics: false, perCustomer });
      for (let i = 0; i < customers; i++) {
        for (const stream of ['buildings', 'occupancy']) {
          m.recordRun({ customerId: `c${i}`, stream, status: 'succeeded', pages: 1, records: 5, durationSeconds: 0.2, finishedAt: 1_700_000_000 + i });
          m.setSyncLag(`c${i}`, stream, 60 + i);
        }
      }
      return (await m.text()).split('\n').filter((l) => l && !l.startsWith('#')).length;
    };
    const [ten, thousand] = [await series(false, 10), await series(false, 1_000)];
    expect(thousand).toBe(ten);
    const [tenEach, thousandEach] = [await series(true, 10), await series(true, 1_000)];
    expect(thousandEach).toBeGreaterThan(100 * (tenEach - ten));
    console.log(`series at 1,000 customers x 2 streams: ${thousand} by stream, ${thousandEach} with METRICS_PER_CUSTOMER`);
  });

  it('exports per stream the worst lag and the oldest last success, and per customer when asked', async () => {
    for (const perCustomer of [false, true]) {
      const m = createMetrics({ processMetrics: false, perCustomer });
      m.recordRun({ customerId: 'c1', stream: 'occupancy', status: 'succeeded', durationSeconds: 3, finishedAt: 1_700_000_100 });
      m.recordRun({ customerId: 'c2', stream: 'occupancy', status: 'succeeded', durationSeconds: 40, finishedAt: 1_700_000_000 });
      m.recordRun({ customerId: 'c2', stream: 'occupancy', status: 'failed', durationSeconds: 1, finishedAt: 1_700_000_500 });
      m.setSyncLag('c1', 'occupancy', 125.5);
      m.setSyncLag('c1', 'occupancy', 60);
      m.setSyncLag('c2', 'occupancy', 900);
      const text = await m.text();
      if (perCustomer) {
        expect(value(text, 'occupancy_sync_lag_seconds{customer="c1",stream="occupancy"}')).toBe(60);
        expect(value(text, 'occupancy_sync_last_success_timestamp_seconds{customer="c2",stream="occupancy"}')).toBe(1_700_000_000);
        expect(value(text, 'occupancy_sync_runs_total{customer="c2",stream="occupancy",status="failed"}')).toBe(1);
      } else {
        expect(value(text, 'occupancy_sync_lag_seconds{stream="occupancy"}')).toBe(900);
        // A failure does not move the last success; the oldest customer's is the stream's.
        expect(value(text, 'occupancy_sync_last_success_timestamp_seconds{stream="occupancy"}')).toBe(1_700_000_000);
      }
      expect(value(text, 'occupancy_sync_run_duration_seconds_count{stream="occupancy",status="succeeded"}')).toBe(2);
      expect(value(text, 'occupancy_sync_run_duration_seconds_bucket{le="5",stream="occupancy",status="succeeded"}')).toBe(1);
      expect(value(text, 'occupancy_sync_run_duration_seconds_sum{stream="occupancy",status="succeeded"}')).toBe(43);
    }
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

  it('keeps each registry separate; process metrics under their standard names', async () => {
    const a = createMetrics({ processMetrics: false });
    const b = createMetrics();
    a.setSyncLag('c1', 'occupancy', 60);
    expect(value(await a.text(), 'occupancy_sync_lag_seconds{stream="occupancy"}')).toBe(60);
    const other = await b.text();
    expect(other).not.toContain('occupancy_sync_lag_seconds{');
    expect(samples(other, 'process_cpu_seconds_total').length).toBe(1);
    expect(samples(other, 'nodejs_heap_size_used_bytes').length).toBe(1);
    expect(other).not.toContain('occupancy_sync_process_');
    expect(a.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
  });
});
