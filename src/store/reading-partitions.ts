import { sql } from '../../db/schema/drizzle.ts';
import type { Logger } from '../logger.ts';
import { END_READING_MS, FIRST_READING_MS } from '../time.ts';
import type { Adapter, Executor } from './adapter.ts';
import { quoted } from './identifiers.ts';

/**
 * The monthly partitions of occupancy_readings on Postgres (migration 0013; SQLite keeps one table and this is a
 * no-op there). A partition covers one UTC calendar month, [first instant, first instant of the next), and is named
 * occupancy_readings_YYYY_MM. Before a page with readings of a month commits, that month's partition and the next
 * month's exist: made in a short transaction of their own, under an advisory lock so concurrent writers make each
 * once, as an empty table ATTACHed to the parent (SHARE UPDATE EXCLUSIVE on the parent: pages and reports go on
 * meanwhile, where CREATE TABLE ... PARTITION OF would take ACCESS EXCLUSIVE). The months known to be covered are
 * cached per process, so a page in a known month costs a Set lookup, no SQL. The next month is made with the first
 * page of this one, so crossing into a month never waits on DDL.
 *
 * A month some rows of which already sit in occupancy_readings_default (a user's own INSERT before the store made its
 * partition) is left to the default partition: making its partition would fail. The store says so once per process;
 * docs/operations.md, "Partitions (Postgres)", says how to split it.
 */

const PARENT = 'occupancy_readings';
const DEFAULT_PARTITION = 'occupancy_readings_default';

export interface ReadingPartition {
  name: string;
  /** Epoch ms of its lower bound (inclusive), or null: MINVALUE, or the default partition. */
  fromMs: number | null;
  /** Epoch ms of its upper bound (exclusive), or null: MAXVALUE, or the default partition. */
  toMs: number | null;
  isDefault: boolean;
}

// pg_get_expr gives a bound as `FOR VALUES FROM ('2026-01-01 00:00:00+00') TO ('2026-02-01 00:00:00+00')` in the
// session's zone, or `DEFAULT`; the single key column's value is read back as a timestamptz.
const bound = (group: number) =>
  `CASE WHEN m[${group}] IS NULL OR m[${group}] IN ('MINVALUE', 'MAXVALUE') THEN NULL ` +
  `ELSE (extract(epoch FROM btrim(m[${group}], '''')::timestamptz) * 1000)::bigint END`;
const LIST = `
  SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT' AS is_default, ${bound(1)} AS from_ms, ${bound(2)} AS to_ms
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    LEFT JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid), '^FOR VALUES FROM \\((.*)\\) TO \\((.*)\\)$') m ON true
   WHERE i.inhparent = to_regclass('${PARENT}')
   ORDER BY 3 NULLS FIRST, 1`;
const PARTITIONED = `SELECT count(*) AS n FROM pg_class WHERE oid = to_regclass('${PARENT}') AND relkind = 'p'`;
/** Per schema: the tests' schemas share a database, and two stores of one schema must not make a month twice. */
const MAKE_LOCK = `SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.${PARENT} partitions'))`;

/** The partitions of occupancy_readings, oldest first (the default partition first of all). */
export async function listPartitions(tx: Pick<Executor, 'all'>, doing?: string): Promise<ReadingPartition[]> {
  // pg_get_expr opens each partition (ACCESS SHARE): a lock on the table holds this up, hence `doing` for the wait.
  const rows = await tx.all<{ name: string; is_default: boolean; from_ms: string | number | null; to_ms: string | number | null }>(sql.raw(LIST), doing);
  return rows.map((r) => ({
    name: r.name,
    fromMs: r.from_ms === null ? null : Number(r.from_ms),
    toMs: r.to_ms === null ? null : Number(r.to_ms),
    isDefault: r.is_default,
  }));
}

/** Epoch ms of the first instant of the UTC month holding `ms`, and of the next one. */
export function monthStart(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}
export function nextMonth(start: number): number {
  const d = new Date(start);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** occupancy_readings_YYYY_MM of the month starting at `start`. */
export function partitionName(start: number): string {
  const d = new Date(start);
  return `${PARENT}_${String(d.getUTCFullYear()).padStart(4, '0')}_${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
}

const iso = (ms: number) => new Date(ms).toISOString();
const overlaps = (p: ReadingPartition, from: number, to: number) =>
  !p.isDefault && (p.fromMs === null || p.fromMs < to) && (p.toMs === null || p.toMs > from);

/**
 * The months (UTC month starts) of the readings' observation times that a page needs: each one's month and the month
 * after it. Times in canonical form (`...Z`) of the month just seen skip the date parsing: a page is mostly one month.
 */
export function monthsNeeded(records: ReadonlyArray<{ observedAt?: unknown }>): Set<number> {
  const months = new Set<number>();
  let prefix: string | undefined;
  for (let i = 0; i < records.length; i++) {
    const time = records[i]!.observedAt;
    if (typeof time !== 'string') continue;
    if (prefix !== undefined && time.endsWith('Z') && time.startsWith(prefix)) continue;
    const ms = Date.parse(time);
    // Not a time, or one no reading may have: the sink refuses the record with its own message, in the page's transaction.
    if (Number.isNaN(ms) || ms < FIRST_READING_MS || ms >= END_READING_MS) continue;
    const start = monthStart(ms);
    months.add(start).add(nextMonth(start));
    prefix = time.endsWith('Z') ? time.slice(0, 8) : undefined;
  }
  return months;
}

export class ReadingPartitions {
  readonly #db: Adapter;
  readonly #logger: Logger;
  /** Undefined until the first page asks; false on SQLite or a table not (yet) partitioned. */
  #partitioned: boolean | undefined;
  /** Month starts a partition (or the default partition, for a month with rows there) is known to take. */
  readonly #covered = new Set<number>();

  constructor(db: Adapter, logger: Logger) {
    this.#db = db;
    this.#logger = logger;
    if (db.dialect !== 'postgres') this.#partitioned = false;
  }

  /** Makes sure the months of these readings, and the month after each, have their partitions. */
  async ensure(records: ReadonlyArray<{ observedAt?: unknown }>): Promise<void> {
    if (this.#partitioned === false) return;
    let missing: number[] | undefined;
    for (const month of monthsNeeded(records)) if (!this.#covered.has(month)) (missing ??= []).push(month);
    if (!missing) return;
    const doing = `making the month partitions of a page of ${records.length} readings`;
    if (this.#partitioned === undefined) {
      const [row] = await this.#db.all<{ n: number | string }>(sql.raw(PARTITIONED));
      this.#partitioned = Number(row?.n) === 1;
      if (!this.#partitioned) return;
    }
    // Another process may have made them: a read of the catalog takes no lock on the table.
    this.#learn(await listPartitions(this.#db, doing), missing);
    const todo = missing.filter((m) => !this.#covered.has(m)).sort((a, b) => a - b);
    if (todo.length === 0) return;
    await this.#db.transaction(async (tx) => {
      await tx.all(sql.raw(MAKE_LOCK), doing);
      const partitions = await listPartitions(tx, doing);
      for (const month of todo) {
        const end = nextMonth(month);
        if (partitions.some((p) => overlaps(p, month, end))) continue;
        if (partitions.some((p) => p.isDefault) && (await this.#inDefault(tx, month, end, doing))) continue;
        const name = partitionName(month);
        // An empty table attached: no scan of it, SHARE UPDATE EXCLUSIVE on the parent (only the default partition,
        // empty or nearly, is read to prove it holds no row of the month).
        await tx.run(sql.raw(`CREATE TABLE ${name} (LIKE ${PARENT} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`), doing);
        await tx.run(sql.raw(`ALTER TABLE ${PARENT} ATTACH PARTITION ${name} FOR VALUES FROM ('${iso(month)}') TO ('${iso(end)}')`), doing);
        partitions.push({ name, fromMs: month, toMs: end, isDefault: false });
        this.#logger.info({ partition: name, from: iso(month), to: iso(end) }, `made partition ${name} for the readings of ${iso(month).slice(0, 7)}`);
      }
    });
    for (const month of todo) this.#covered.add(month);
  }

  /** True (and said once) when the default partition holds readings of [from, to): the month stays there. */
  async #inDefault(tx: Executor, from: number, to: number, doing: string): Promise<boolean> {
    const rows = await tx.all(sql`SELECT 1 AS x FROM ${sql.identifier(DEFAULT_PARTITION)} WHERE observed_at >= ${iso(from)} AND observed_at < ${iso(to)} LIMIT 1`, doing);
    if (rows.length === 0) return false;
    this.#logger.warn(
      { month: iso(from).slice(0, 7), partition: DEFAULT_PARTITION },
      `readings of ${iso(from).slice(0, 7)} are in ${DEFAULT_PARTITION} (written there before the store made the month's partition); ` +
        'the month stays in the default partition, and retention deletes its rows one by one. Fix: split it as docs/operations.md, "Partitions (Postgres)", shows',
    );
    return true;
  }

  #learn(partitions: readonly ReadingPartition[], months: readonly number[]): void {
    for (const month of months) {
      if (partitions.some((p) => overlaps(p, month, nextMonth(month)))) this.#covered.add(month);
    }
  }

  /**
   * Drops the partitions wholly older than `beforeMs` (their upper bound at or before it), each in a transaction of
   * its own, oldest first; resolves to their names. Rows of older months elsewhere (the default partition, a partition
   * reaching past the cutoff) are for the row-wise delete that follows.
   */
  async dropBefore(beforeMs: number): Promise<string[]> {
    if (this.#db.dialect !== 'postgres') return [];
    const [row] = await this.#db.all<{ n: number | string }>(sql.raw(PARTITIONED));
    if (Number(row?.n) !== 1) return [];
    const old = (await listPartitions(this.#db, 'listing the partitions (retention)')).filter((p) => !p.isDefault && p.toMs !== null && p.toMs <= beforeMs);
    const dropped: string[] = [];
    for (const partition of old) {
      await this.#db.transaction(async (tx) => {
        await tx.all(sql.raw(MAKE_LOCK), `dropping partition ${partition.name} (retention)`);
        // DROP takes ACCESS EXCLUSIVE on the parent for the moment of the drop (DETACH CONCURRENTLY, which would not,
        // is refused while a default partition exists).
        await tx.run(sql.raw(`DROP TABLE IF EXISTS ${quoted(partition.name)}`), `dropping partition ${partition.name} (retention)`);
      });
      dropped.push(partition.name);
    }
    // A late reading of a dropped month makes its partition again: learn afresh.
    if (dropped.length > 0) this.#covered.clear();
    return dropped;
  }
}
