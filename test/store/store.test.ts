import { describe, expect, it } from 'vitest';
import { StoreError } from '../../src/errors.ts';
import { ABANDONED_RUN_ERROR } from '../../src/store/types.ts';
import { checkpoint, DIALECTS, fresh, migrationNames, readings } from './harness.ts';

const C = 'cust-a';

describe.each(DIALECTS)('store on %s', (dialect) => {
  it('applies migrations once: a second migrate on the same database applies nothing', async () => {
    const { store, another } = await fresh(dialect, 'migrate', false);
    expect(await store.migrate()).toEqual(migrationNames(dialect));
    expect(migrationNames(dialect)[0]).toBe('0000_tables');
    expect(await store.migrate()).toEqual([]);
    expect(await (await another()).migrate()).toEqual([]);
    const rows = await store.query<{ n: number }>('SELECT count(*) AS n FROM occupancy');
    expect(rows).toEqual([{ n: 0 }]);
  });

  it('upserting the same page twice leaves exactly the same rows', async () => {
    const { store } = await fresh(dialect, 'idem');
    const page = { customerId: C, sink: 'occupancy' as const, records: readings(50), checkpoint: checkpoint(C, null, 'p1') };
    await store.commitPage({ ...page, at: '2026-03-01T12:00:00.000Z' });
    const first = await store.query('SELECT * FROM occupancy ORDER BY floor_space_id, observed_at');
    await store.commitPage({ ...page, at: '2026-03-01T12:05:00.000Z' });
    const second = await store.query('SELECT * FROM occupancy ORDER BY floor_space_id, observed_at');
    expect(first).toHaveLength(50);
    expect(second).toEqual(first);
  });

  it('a changed reading updates its values but keeps its first source and ingestion time', async () => {
    const { store } = await fresh(dialect, 'change');
    const [r] = readings(1);
    await store.commitPage({ customerId: C, sink: 'occupancy', records: [r!], at: '2026-03-01T12:00:00.000Z', checkpoint: checkpoint(C, null) });
    await store.commitPage({
      customerId: C, sink: 'occupancy', records: [{ ...r!, headcount: 9, occupancyStatus: 'OCCUPIED' }],
      at: '2026-03-01T12:05:00.000Z', checkpoint: checkpoint(C, null),
    });
    expect(await store.query('SELECT headcount, source, ingested_at FROM occupancy')).toEqual([
      { headcount: 9, source: 'poll', ingested_at: '2026-03-01T12:00:00.000Z' },
    ]);
  });

  it('a reading delivered by webhook and then polled is one row that keeps source webhook', async () => {
    const { store } = await fresh(dialect, 'both');
    const [r] = readings(1);
    const delivery = { id: 'dlv-1', customerId: C, type: 'Occupancy', createdAt: '2026-03-01T10:00:01.000Z',
      sentAt: '2026-03-01T10:00:02.000Z', receivedAt: '2026-03-01T10:00:03.000Z', body: '{"Id":"dlv-1"}' };
    expect(await store.storeDelivery(delivery, [{ ...r!, eventId: 'dlv-1' }])).toBe('stored');
    await store.commitPage({ customerId: C, sink: 'occupancy', records: [r!], at: '2026-03-01T12:00:00.000Z', checkpoint: checkpoint(C, null) });
    expect(await store.query('SELECT source, event_id, ingested_at FROM occupancy')).toEqual([
      { source: 'webhook', event_id: 'dlv-1', ingested_at: '2026-03-01T10:00:03.000Z' },
    ]);
  });

  it('a polled reading that later arrives by webhook stays one row with source poll', async () => {
    const { store } = await fresh(dialect, 'pollfirst');
    const [r] = readings(1);
    await store.commitPage({ customerId: C, sink: 'occupancy', records: [r!], at: '2026-03-01T12:00:00.000Z', checkpoint: checkpoint(C, null) });
    await store.storeDelivery({ id: 'dlv-2', customerId: C, type: 'Occupancy', createdAt: '2026-03-01T12:00:01.000Z',
      sentAt: '2026-03-01T12:00:01.000Z', receivedAt: '2026-03-01T12:00:02.000Z', body: '{}' }, [{ ...r!, eventId: 'dlv-2' }]);
    expect(await store.query('SELECT source, event_id FROM occupancy')).toEqual([{ source: 'poll', event_id: r!.eventId }]);
  });

  it('duplicates inside one page become one row with the last values', async () => {
    const { store } = await fresh(dialect, 'dups');
    const [r] = readings(1);
    await store.commitPage({ customerId: C, sink: 'occupancy', at: '2026-03-01T12:00:00.000Z', checkpoint: checkpoint(C, null),
      records: [r!, { ...r!, headcount: 4 }] });
    expect(await store.query('SELECT headcount FROM occupancy')).toEqual([{ headcount: 4 }]);
  });

  it('ids an array literal or JSON could misread are keys like any other: quotes, backslashes, braces, commas, spaces, NULL', async () => {
    // The store binds lists of ids as one value (key-list.ts textIn: a Postgres array literal, a JSON array on SQLite).
    const ids = ['a"b', 'c\\d', '{e}', 'f,g', ' h ', 'NULL', '"', '\\', '\'', 'ü😀', '[1]'];
    const { store, another } = await fresh(dialect, 'odd_ids');
    const listing = (capacity: number) =>
      store.commitPage({ customerId: C, sink: 'floorSpaces', at: '2026-03-01T09:00:00.000Z', checkpoint: { ...checkpoint(C, null), stateKey: 'floor_spaces' },
        records: ids.map((id, i) => ({ id, buildingId: i % 2 === 0 ? 'b"1' : 'b\\2', floorId: '{f}', capacity, name: null, spaceType: null })) });
    await listing(4);
    // Listed again with another capacity: the listing reads where each space was (spacePlaces) by the same ids.
    await listing(6);
    // A process that knows no key yet reads each id's key (ensureKeys) instead of making another.
    const fresher = await another();
    await fresher.commitPage({ customerId: C, sink: 'occupancy', at: '2026-03-01T12:00:00.000Z', checkpoint: checkpoint(C, null),
      records: ids.map((id) => ({ ...readings(1, '2026-03-01T10:00:00.000Z', id)[0]!, eventId: null })) });
    expect(await store.query('SELECT floor_space_id AS id, capacity FROM floor_spaces ORDER BY floor_space_key')).toEqual(ids.map((id) => ({ id, capacity: 6 })));
    const stored = await store.query<{ id: string; n: number | string }>('SELECT floor_space_id AS id, count(*) AS n FROM occupancy GROUP BY floor_space_id');
    expect(new Map(stored.map((r) => [r.id, Number(r.n)]))).toEqual(new Map(ids.map((id) => [id, 1])));
    // The buildings' calendar days and locks (Postgres) are taken by the same ids.
    expect((await fresher.refreshAggregates(C)).spaces).toBe(ids.length);
    expect(await store.query('SELECT DISTINCT building_id AS b FROM calendar_days ORDER BY building_id')).toEqual([{ b: 'b"1' }, { b: 'b\\2' }]);
  });

  it('a building missing from a complete listing is soft-deleted, and restored when it is listed again', async () => {
    const { store } = await fresh(dialect, 'bld');
    const page = (at: string, ids: string[]) =>
      store.commitPage({ customerId: C, sink: 'buildings', at, records: ids.map((id) => ({ id, name: `Building ${id}` })),
        checkpoint: { ...checkpoint(C, null), stateKey: 'buildings' } });
    await page('2026-03-01T10:00:00.000Z', ['b1', 'b2']);
    await page('2026-03-01T11:00:00.000Z', ['b1']);
    expect(await store.markDeleted('buildings', C, '2026-03-01T11:00:00.000Z', '2026-03-01T11:00:05.000Z')).toBe(1);
    expect(await store.markDeleted('buildings', C, '2026-03-01T11:00:00.000Z', '2026-03-01T11:00:06.000Z')).toBe(0);
    expect(await store.query('SELECT id, deleted_at FROM buildings ORDER BY id')).toEqual([
      { id: 'b1', deleted_at: null },
      { id: 'b2', deleted_at: '2026-03-01T11:00:05.000Z' },
    ]);
    await page('2026-03-01T12:00:00.000Z', ['b1', 'b2']);
    expect(await store.query('SELECT id, first_seen_at, last_seen_at, deleted_at FROM buildings WHERE id = $1', ['b2'])).toEqual([
      { id: 'b2', first_seen_at: '2026-03-01T10:00:00.000Z', last_seen_at: '2026-03-01T12:00:00.000Z', deleted_at: null },
    ]);
  });

  it('refuses to move a watermark backwards, on saveState and on commitPage, and stores nothing of the refused page', async () => {
    const { store } = await fresh(dialect, 'wm');
    await store.saveState(checkpoint(C, '2026-03-01T10:00:00.000Z'));
    await store.saveState(checkpoint(C, '2026-03-01T10:00:00.000Z', 'same-watermark-is-fine'));
    await expect(store.saveState(checkpoint(C, '2026-03-01T09:59:59.999Z'))).rejects.toThrow(StoreError);
    await expect(store.saveState(checkpoint(C, null))).rejects.toThrow(/backwards from 2026-03-01T10:00:00.000Z to none/);
    await expect(
      store.commitPage({ customerId: C, sink: 'occupancy', records: readings(3), at: '2026-03-01T12:00:00.000Z',
        checkpoint: checkpoint(C, '2026-03-01T09:00:00.000+00:00') }),
    ).rejects.toThrow(StoreError);
    expect(await store.query('SELECT count(*) AS n FROM occupancy')).toEqual([{ n: 0 }]);
    await store.saveState(checkpoint(C, '2026-03-01T11:00:00.000+01:00')); // equal instant, other offset
    await store.saveState(checkpoint(C, '2026-03-01T10:00:00.001Z'));
    expect((await store.getState(C, 'occupancy'))?.watermark).toBe('2026-03-01T10:00:00.001Z');
  });

  it("moves a backfill's progress back only as a recorded rewind: windows read ahead dropped, a move forwards refused", async () => {
    const { store } = await fresh(dialect, 'progress');
    const stream = 'occupancy#backfill';
    const window = (from: string, to: string) => ({ windowStart: from, windowEnd: to });
    await store.saveState({
      customerId: C, stateKey: stream, watermark: null, pageCursor: 'c-3', rangeStart: '2026-03-01T00:00:00.000Z', rangeEnd: '2026-03-01T05:00:00.000Z',
      ...window('2026-03-01T02:00:00.000Z', '2026-03-01T03:00:00.000Z'),
      windows: [{ from: '2026-03-01T03:00:00.000Z', to: '2026-03-01T04:00:00.000Z', cursor: 'c-9', done: false }],
    });
    const rewind = (windowStart: string, windowEnd: string) =>
      store.changeState({ customerId: C, stateKey: stream, actor: 'test', at: '2026-03-02T00:00:00.000Z', action: 'rewind', progress: { windowStart, windowEnd } });
    await expect(rewind('2026-03-01T02:00:00.000Z', '2026-03-01T03:00:00.000Z')).rejects.toThrow(/would not move it backwards \(it is at 2026-03-01T02:00:00.000Z\)/);
    await expect(rewind('2026-03-01T04:00:00.000Z', '2026-03-01T05:00:00.000Z')).rejects.toThrow(StoreError);
    const change = await rewind('2026-03-01T00:00:00.000Z', '2026-03-01T01:00:00.000Z');
    expect(change).toMatchObject({ action: 'rewind', oldWatermark: null, newWatermark: null, before: { windowStart: '2026-03-01T02:00:00.000Z', pageCursor: 'c-3' } });
    const after = await store.getState(C, stream);
    expect(after).toMatchObject({ ...window('2026-03-01T00:00:00.000Z', '2026-03-01T01:00:00.000Z'), pageCursor: null, rangeStart: '2026-03-01T00:00:00.000Z', rangeEnd: '2026-03-01T05:00:00.000Z', updatedAt: '2026-03-02T00:00:00.000Z' });
    expect(after?.windows ?? []).toEqual([]);
    expect(await store.stateChanges({ customerId: C, stateKey: stream })).toEqual([change]);
  });

  it('commits a page atomically: a record violating a constraint leaves neither rows, checkpoint nor run counters', async () => {
    const { store } = await fresh(dialect, 'atomic');
    const run = await store.startRun({ customerId: C, stateKey: 'occupancy', mode: 'incremental', startedAt: '2026-03-01T12:00:00.000Z' });
    await store.commitPage({ customerId: C, sink: 'occupancy', records: readings(2), at: '2026-03-01T12:00:00.000Z', runId: run,
      checkpoint: checkpoint(C, '2026-03-01T10:00:00.000Z', 'page-1') });
    const bad = readings(3, '2026-03-01T11:00:00.000Z');
    bad[2]!.headcount = -1; // CHECK occupancy_headcount_non_negative fails after two rows were written
    await expect(
      store.commitPage({ customerId: C, sink: 'occupancy', records: bad, at: '2026-03-01T12:01:00.000Z', runId: run,
        checkpoint: checkpoint(C, '2026-03-01T11:00:00.000Z', 'page-2') }),
    ).rejects.toThrow(/occupancy_readings_headcount_non_negative/);
    expect(await store.query('SELECT count(*) AS n FROM occupancy')).toEqual([{ n: 2 }]);
    const state = await store.getState(C, 'occupancy');
    expect([state?.watermark, state?.pageCursor]).toEqual(['2026-03-01T10:00:00.000Z', 'page-1']);
    expect((await store.lastRuns(C)).map((r) => [r.pages, r.records])).toEqual([[1, 2]]);
  });

  it('commits pages together in one transaction, in their order: a violation in the last leaves none of them', async () => {
    const { store } = await fresh(dialect, 'together');
    const run = await store.startRun({ customerId: C, stateKey: 'occupancy', mode: 'incremental', startedAt: '2026-03-01T12:00:00.000Z' });
    const page = (n: number, records: ReturnType<typeof readings>) => ({
      customerId: C, sink: 'occupancy' as const, records, at: '2026-03-01T12:00:00.000Z', runId: run,
      checkpoint: checkpoint(C, `2026-03-01T0${n}:00:00.000Z`, `page-${n}`),
    });
    const bad = readings(3, '2026-03-01T03:00:00.000Z', 'fs-bad');
    bad[2]!.headcount = -1;
    await expect(store.commitPages([page(1, readings(2, '2026-03-01T01:00:00.000Z')), page(2, readings(2, '2026-03-01T02:00:00.000Z', 'fs-2')), page(3, bad)]))
      .rejects.toThrow(/occupancy_readings_headcount_non_negative/);
    expect(await store.query('SELECT count(*) AS n FROM occupancy')).toEqual([{ n: 0 }]);
    expect(await store.getState(C, 'occupancy')).toBeUndefined();
    expect((await store.lastRuns(C)).map((r) => [r.pages, r.records])).toEqual([[0, 0]]);
    // The same pages without the violation: every row, the last page's checkpoint, every page counted.
    bad[2]!.headcount = 1;
    await store.commitPages([page(1, readings(2, '2026-03-01T01:00:00.000Z')), page(2, readings(2, '2026-03-01T02:00:00.000Z', 'fs-2')), page(3, bad)]);
    expect(await store.query('SELECT count(*) AS n FROM occupancy')).toEqual([{ n: 7 }]);
    const state = await store.getState(C, 'occupancy');
    expect([state?.watermark, state?.pageCursor]).toEqual(['2026-03-01T03:00:00.000Z', 'page-3']);
    expect((await store.lastRuns(C)).map((r) => [r.pages, r.records])).toEqual([[3, 7]]);
    // No pages: nothing to do.
    await store.commitPages([]);
  });

  it('stores a redelivered webhook once: attempts goes to 2 and its occupancy is not rewritten', async () => {
    const { store } = await fresh(dialect, 'dlv');
    const delivery = { id: 'dlv-9', customerId: C, type: 'Occupancy', createdAt: '2026-03-01T10:00:00.000Z',
      sentAt: '2026-03-01T10:00:00.500Z', receivedAt: '2026-03-01T10:00:01.000Z', body: '{"Id":"dlv-9","t":1}' };
    expect(await store.storeDelivery(delivery, readings(2))).toBe('stored');
    const retried = readings(3).map((r) => ({ ...r, headcount: 7 }));
    expect(await store.storeDelivery({ ...delivery, sentAt: '2026-03-01T10:05:00.000Z', body: '{"t":2}' }, retried)).toBe('duplicate');
    expect(await store.query('SELECT attempts, sent_at, body FROM webhook_deliveries')).toEqual([
      { attempts: 2, sent_at: '2026-03-01T10:00:00.500Z', body: '{"Id":"dlv-9","t":1}' },
    ]);
    expect(await store.query('SELECT headcount, source FROM occupancy ORDER BY observed_at')).toEqual([
      { headcount: 0, source: 'webhook' },
      { headcount: 1, source: 'webhook' },
    ]);
  });

  it('records runs and reports the latest run of each stream with its counters', async () => {
    const { store, clock } = await fresh(dialect, 'runs');
    const first = await store.startRun({ customerId: C, stateKey: 'occupancy', mode: 'incremental', startedAt: '2026-03-01T10:00:00.000Z' });
    await store.finishRun(first, { status: 'failed', finishedAt: '2026-03-01T10:01:00.000Z', error: 'HTTP 503' });
    const second = await store.startRun({ customerId: C, stateKey: 'occupancy', mode: 'backfill', startedAt: '2026-03-01T11:00:00.000Z' });
    await store.commitPage({ customerId: C, sink: 'occupancy', records: readings(4), at: '2026-03-01T11:00:30.000Z', runId: second,
      checkpoint: { ...checkpoint(C, null), stateKey: 'occupancy#backfill' } });
    await store.finishRun(second, { status: 'succeeded', finishedAt: '2026-03-01T11:01:00.000Z' });
    const lock = await store.tryLock('cust-b', 'buildings');
    const b = await store.startRun({ customerId: 'cust-b', stateKey: 'buildings', mode: 'full', startedAt: '2026-03-01T11:00:00.000Z' });
    expect(await store.lastRuns()).toEqual([
      { id: second, customerId: C, stateKey: 'occupancy', mode: 'backfill', startedAt: '2026-03-01T11:00:00.000Z',
        finishedAt: '2026-03-01T11:01:00.000Z', status: 'succeeded', pages: 1, records: 4, rejected: 0, error: null },
      { id: b, customerId: 'cust-b', stateKey: 'buildings', mode: 'full', startedAt: '2026-03-01T11:00:00.000Z',
        finishedAt: null, status: 'running', pages: 0, records: 0, rejected: 0, error: null },
    ]);
    expect((await store.lastRuns('cust-b')).map((r) => r.id)).toEqual([b]);
    // Once no live process holds its lock, a run still recorded as running is shown as what it is (nothing written).
    await lock!.release();
    expect(await store.lastRuns('cust-b')).toMatchObject([{ id: b, status: 'interrupted', error: ABANDONED_RUN_ERROR, finishedAt: null }]);
    expect(await store.query('SELECT status FROM sync_runs WHERE id = $1', [b])).toEqual([{ status: 'running' }]);
    expect(await store.listStates(C)).toEqual([{ ...checkpoint(C, null), stateKey: 'occupancy#backfill', updatedAt: new Date(clock.now()).toISOString() }]);
    await expect(store.finishRun(9999, { status: 'failed', finishedAt: '2026-03-01T11:01:00.000Z' })).rejects.toThrow(/run 9999 does not exist/);
  });

  it('keeps quarantined records in the page transaction: one row per raw record, counted in the run', async () => {
    const { store } = await fresh(dialect, 'quarantine');
    const run = await store.startRun({ customerId: C, stateKey: 'occupancy', mode: 'incremental', startedAt: '2026-03-01T10:00:00.000Z' });
    const bad = { fingerprint: 'f'.repeat(32), raw: '{"headcount":null}', reason: 'headcount: expected a whole number, got null' };
    const other = { fingerprint: 'e'.repeat(32), raw: '{"created":5}', reason: 'created: expected an ISO 8601 date-time' };
    const window = { from: '2026-03-01T09:00:00.000Z', to: '2026-03-01T10:00:00.000Z' };
    await store.commitPage({ customerId: C, sink: 'occupancy', records: readings(2), at: '2026-03-01T10:00:01.000Z', runId: run,
      checkpoint: checkpoint(C, null), quarantine: { stream: 'occupancy', window, records: [bad, other] } });
    await store.commitPage({ customerId: C, sink: 'occupancy', records: [], at: '2026-03-01T10:05:00.000Z', runId: run,
      checkpoint: checkpoint(C, null), quarantine: { stream: 'occupancy', window, records: [bad] } });
    // A page whose checkpoint is refused takes its quarantine rows with it.
    await store.saveState(checkpoint(C, '2026-03-01T12:00:00.000Z'));
    await expect(store.commitPage({ customerId: C, sink: 'occupancy', records: [], at: '2026-03-01T10:06:00.000Z', runId: run,
      checkpoint: checkpoint(C, '2026-03-01T11:00:00.000Z'), quarantine: { stream: 'occupancy', window, records: [{ ...bad, fingerprint: 'd'.repeat(32) }] } })).rejects.toThrow(/backwards/);
    const rows = await store.query<Record<string, unknown>>(
      'SELECT fingerprint, window_start, window_end, record, reason, first_run_id, last_run_id, first_seen_at, last_seen_at, times_seen FROM quarantined_records WHERE customer_id = $1 ORDER BY fingerprint',
      [C],
    );
    expect(rows).toEqual([
      { fingerprint: other.fingerprint, window_start: window.from, window_end: window.to, record: other.raw, reason: other.reason,
        first_run_id: run, last_run_id: run, first_seen_at: '2026-03-01T10:00:01.000Z', last_seen_at: '2026-03-01T10:00:01.000Z', times_seen: 1 },
      { fingerprint: bad.fingerprint, window_start: window.from, window_end: window.to, record: bad.raw, reason: bad.reason,
        first_run_id: run, last_run_id: run, first_seen_at: '2026-03-01T10:00:01.000Z', last_seen_at: '2026-03-01T10:05:00.000Z', times_seen: 2 },
    ]);
    const [last] = await store.lastRuns(C);
    expect(last).toMatchObject({ id: run, pages: 2, records: 2, rejected: 3 });
  });

  it('refuses malformed records with a StoreError naming the record and field', async () => {
    const { store } = await fresh(dialect, 'bad');
    const [r] = readings(1);
    const commit = (record: object) =>
      store.commitPage({ customerId: C, sink: 'occupancy', records: [record as never], at: '2026-03-01T12:00:00.000Z', checkpoint: checkpoint(C, null) });
    await expect(commit({ ...r, observedAt: 'yesterday' })).rejects.toThrow(/record 0: observedAt/);
    await expect(commit({ ...r, observedAt: '2026-03-01T10:00:00' })).rejects.toThrow(/no UTC offset/);
    await expect(commit({ ...r, headcount: 1.5 })).rejects.toThrow(/headcount must be an integer/);
    await expect(commit({ ...r, floorSpaceId: '' })).rejects.toThrow(/floorSpaceId must be a non-empty string/);
    expect(await store.getState(C, 'occupancy')).toBeUndefined();
  });

  it('accepts the same values on both dialects: a headcount beyond a 32-bit integer is refused, as the database would refuse it', async () => {
    const { store } = await fresh(dialect, 'int4');
    const [r] = readings(1);
    const delivery = { id: 'd-big', customerId: C, type: 'Occupancy', createdAt: r!.observedAt, sentAt: r!.observedAt, receivedAt: r!.observedAt, body: '{}' };
    const error = (await store.storeDelivery(delivery, [{ ...r!, headcount: 3_000_000_000 }]).catch((e: unknown) => e)) as StoreError;
    expect(error).toBeInstanceOf(StoreError);
    expect(error.message).toMatch(/occupancy record 0: headcount must be an integer from -2147483648 to 2147483647, got 3000000000/);
    // Coded as a value the column cannot hold (SQLSTATE class 22), so callers tell it from a passing failure.
    expect((error.cause as { code?: string }).code).toMatch(/^22/);
    await expect(store.commitPage({ customerId: C, sink: 'occupancy', records: [{ ...r!, headcount: 2 ** 31 }], at: r!.observedAt, checkpoint: checkpoint(C, null) })).rejects.toThrow(/headcount must be an integer/);
    expect(await store.query('SELECT count(*) AS n FROM webhook_deliveries')).toEqual([{ n: 0 }]);
    await store.storeDelivery(delivery, [{ ...r!, headcount: 2 ** 31 - 1 }]);
    expect(await store.query('SELECT headcount FROM occupancy')).toEqual([{ headcount: 2 ** 31 - 1 }]);
  });

  it('query takes $n placeholders on both dialects, in any order, repeated, and not inside literals', async () => {
    const { store } = await fresh(dialect, 'query');
    expect(await store.query("SELECT $2 AS b, $1 AS a, '$1' AS lit, $1 AS again", ['x', 'y'])).toEqual([
      { b: 'y', a: 'x', lit: '$1', again: 'x' },
    ]);
  });
});
