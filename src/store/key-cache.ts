/**
 * Dictionary keys (floor spaces, statuses) known to be committed in this database, so a page looks up each value in
 * memory and asks the database only for values it has not seen. A key learnt inside a transaction is only tentative:
 * were the transaction rolled back, the row behind it would not exist. A Scope collects those and adds them to the
 * cache when its transaction commits. Keys never change once committed (dictionary rows are never deleted).
 */
export class KeyCache {
  readonly #maps = new Map<string, Map<string, number>>();

  /** The committed keys of one dictionary (e.g. `floor_spaces:<customer>`), made on first use. */
  committed(dictionary: string): Map<string, number> {
    let map = this.#maps.get(dictionary);
    if (!map) {
      map = new Map();
      this.#maps.set(dictionary, map);
    }
    return map;
  }

  scope(): KeyScope {
    return new KeyScope(this);
  }
}

export class KeyScope {
  readonly #cache: KeyCache;
  readonly #learnt: Array<[dictionary: string, value: string, key: number]> = [];

  constructor(cache: KeyCache) {
    this.#cache = cache;
  }

  committed(dictionary: string): Map<string, number> {
    return this.#cache.committed(dictionary);
  }

  /** A key found or made in this scope's transaction. */
  learn(dictionary: string, value: string, key: number): void {
    this.#learnt.push([dictionary, value, key]);
  }

  /** The transaction committed: its keys are real. */
  commit(): void {
    for (const [dictionary, value, key] of this.#learnt) this.#cache.committed(dictionary).set(value, key);
    this.#learnt.length = 0;
  }
}
