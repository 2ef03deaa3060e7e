import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.ts';
import { ConfigError } from '../../src/errors.ts';
import { StatusLine } from '../../src/cli/status-line.ts';
import { createLogger, memoryLogger } from '../../src/logger.ts';
import { createProgressReporter, formatDuration } from '../../src/cli/progress.ts';
import { startScheduler, validateCron } from '../../src/app/scheduler.ts';

function manualSchedule() {
  let fire: () => void = () => {};
  let stopped = false;
  return {
    schedule: (_expression: string, fn: () => void) => {
      fire = fn;
      return { stop: () => void (stopped = true), destroy: () => {} };
    },
    fire: () => fire(),
    stopped: () => stopped,
  };
}

describe('scheduler', () => {
  it('skips (and logs) a tick that comes while the previous run is still in progress', async () => {
    const { logger, records } = memoryLogger();
    const controller = new AbortController();
    const cron = manualSchedule();
    let release: () => void = () => {};
    let started = 0;
    const scheduler = startScheduler({
      cron: '*/5 * * * *',
      logger,
      signal: controller.signal,
      schedule: cron.schedule,
      run: () => {
        started++;
        return new Promise<void>((r) => (release = r));
      },
    });
    cron.fire();
    cron.fire();
    cron.fire();
    expect(started).toBe(1);
    expect(scheduler.skipped).toBe(2);
    expect(records().filter((l) => String(l.msg).includes('skipping this tick'))).toHaveLength(2);
    release();
    await new Promise((r) => setImmediate(r));
    cron.fire();
    expect(started).toBe(2);
    // Shutdown waits for the run in progress.
    controller.abort();
    let done = false;
    void scheduler.done.then(() => (done = true));
    await new Promise((r) => setImmediate(r));
    expect(done).toBe(false);
    release();
    await scheduler.done;
    expect(cron.stopped()).toBe(true);
    cron.fire();
    expect(started).toBe(2);
  });

  it('validates the expression with node-cron and names the variable and the fix', () => {
    expect(validateCron('*/5 * * * *')).toBe('*/5 * * * *');
    expect(validateCron('*/30 * * * * *')).toBe('*/30 * * * * *');
    expect(() => validateCron('every five minutes')).toThrow(ConfigError);
    expect(() => validateCron('61 * * * *')).toThrow(/SYNC_CRON="61 \* \* \* \*": not a valid cron expression.*Fix: use 5 fields/);
  });
});

describe('backfill progress', () => {
  it('draws one live line on a TTY with windows, rows, rows/s and ETA', () => {
    const clock = new FakeClock(0);
    let out = '';
    const reporter = createProgressReporter({ clock, statusLine: new StatusLine({ write: (s: string) => void (out += s) }), logger: memoryLogger().logger });
    const base = { customerId: 'c1', stream: 'occupancy', stateKey: 'occupancy#backfill', mode: 'backfill' as const };
    reporter.onProgress({ ...base, pages: 0, records: 0, windowsDone: 2, windowsTotal: 10 });
    clock.advance(4000);
    reporter.onProgress({ ...base, pages: 8, records: 4000, windowsDone: 4, windowsTotal: 10 });
    reporter.finish();
    const frames = out.split('\r\x1b[2K').filter(Boolean);
    expect(frames.at(-2)).toBe('backfill: windows 4/10 (40%), 4,000 rows, 1,000 rows/s, ETA 12s');
    expect(out.endsWith('\n')).toBe(true);
  });

  it('writes log lines (no control characters) when not on a TTY', () => {
    const clock = new FakeClock(0);
    const { logger, records } = memoryLogger();
    const out = '';
    const reporter = createProgressReporter({ clock, statusLine: undefined, logger, intervalMs: 1000 });
    const base = { customerId: 'c1', stream: 'occupancy', stateKey: 'occupancy#backfill', mode: 'backfill' as const };
    reporter.onProgress({ ...base, pages: 0, records: 0, windowsDone: 0, windowsTotal: 3 });
    reporter.onProgress({ ...base, pages: 1, records: 10, windowsDone: 1, windowsTotal: 3 });
    clock.advance(1000);
    reporter.onProgress({ ...base, pages: 2, records: 20, windowsDone: 3, windowsTotal: 3 });
    reporter.finish();
    expect(out).toBe('');
    expect(records().map((l) => l.msg)).toEqual([
      'backfill progress: windows 0/3 (0%), 0 rows, 0 rows/s, ETA ?',
      'backfill progress: windows 3/3 (100%), 20 rows, 20 rows/s, ETA 0s',
      'backfill progress: windows 3/3 (100%), 20 rows, 20 rows/s, ETA 0s',
    ]);
  });

  it('a log line written while the live line is drawn clears it first and draws it again after, on its own line', () => {
    let out = '';
    const line = new StatusLine({ write: (s: string) => void (out += s) });
    const logger = createLogger({ level: 'info', pretty: false, destination: { write: (s: string) => void (out += s) }, statusLine: line });
    line.show('backfill: windows 1/3');
    logger.warn('stopping: finishing the current page');
    line.done();
    // Drawn, cleared for the log line, the log line on its own line, then drawn again and closed with a newline.
    const [progress, rest, ...more] = out.split('\r\x1b[2K').filter(Boolean);
    expect(progress).toBe('backfill: windows 1/3');
    expect(more).toEqual([]);
    const [log, redrawn, end] = rest!.split('\n');
    expect(JSON.parse(log!).msg).toBe('stopping: finishing the current page');
    expect([redrawn, end]).toEqual(['backfill: windows 1/3', '']);
  });

  it('formats durations for humans', () => {
    expect([formatDuration(900), formatDuration(65_000), formatDuration(3 * 3600_000 + 120_000)]).toEqual(['1s', '1m05s', '3h02m']);
  });
});
