/**
 * The record keys a window has seen (the page contract's no-progress rule). Keys are held as nested maps, one level
 * per key field, keyed by the field's value itself, rather than as one joined string per record: a large page is
 * thousands of records, and joining their fields made a string per record only to hash it once and keep it, which the
 * CPU profile of a backfill showed among its larger costs (docs/performance.md, "Against the limit (replay)").
 *
 * Values are told apart as the store tells them apart: 1 and "1" are different keys (Map keys compare by
 * SameValueZero); an object or array value, which a Map would compare by identity, is keyed by its JSON.
 */

type Level = Map<unknown, Level | true>;

const keyValue = (value: unknown): unknown => (value !== null && typeof value === 'object' ? `\u0001${JSON.stringify(value)}` : value);

export class SeenKeys {
  readonly #fields: ReadonlyArray<string>;
  readonly #root: Level = new Map();
  /** Rejected records, by their fingerprint. */
  readonly #fingerprints = new Set<string>();

  constructor(fields: ReadonlyArray<string>) {
    this.#fields = fields;
  }

  /** True when the record's key was not seen before; `remember` keeps it for the pages that follow. */
  record(record: Record<string, unknown>, remember: boolean): boolean {
    const fields = this.#fields;
    const last = fields.length - 1;
    let level = this.#root;
    for (let i = 0; i < last; i++) {
      const value = keyValue(record[fields[i]!]);
      let next = level.get(value) as Level | undefined;
      if (next === undefined) {
        if (!remember) return true;
        level.set(value, (next = new Map()));
      }
      level = next;
    }
    const value = last < 0 ? undefined : keyValue(record[fields[last]!]);
    if (level.has(value)) return false;
    if (remember) level.set(value, true);
    return true;
  }

  /** The same for a rejected record, by its fingerprint. */
  rejected(fingerprint: string, remember: boolean): boolean {
    if (this.#fingerprints.has(fingerprint)) return false;
    if (remember) this.#fingerprints.add(fingerprint);
    return true;
  }
}
