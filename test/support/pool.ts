/**
 * The one concurrency pool: runs `task` over `items` (or over 0..count-1) with at most `limit` in flight, items
 * taken in order, results in item order. `items` may be a lazy or endless generator (one that stops at a deadline,
 * say): it is read only as workers free up. After a task fails no new item is started, and the pool rejects with
 * that failure once the tasks in flight have settled.
 */
export function runPool<R>(count: number, limit: number, task: (index: number) => Promise<R>): Promise<R[]>;
export function runPool<T, R>(items: Iterable<T>, limit: number, task: (item: T, index: number) => Promise<R>): Promise<R[]>;
export async function runPool<T, R>(items: Iterable<T> | number, limit: number, task: (item: T, index: number) => Promise<R>): Promise<R[]> {
  if (!(limit >= 1)) throw new Error(`runPool: limit must be at least 1, got ${limit}`);
  const source: Iterable<T> =
    typeof items === 'number'
      ? (function* () {
          for (let i = 0; i < items; i++) yield i as T;
        })()
      : items;
  const iterator = source[Symbol.iterator]();
  const results: R[] = [];
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (!failure) {
      const item = iterator.next();
      if (item.done) return;
      const index = next++;
      try {
        results[index] = await task(item.value, index);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: typeof items === 'number' ? Math.min(limit, items) : limit }, worker));
  if (failure) throw failure.error;
  return results;
}
