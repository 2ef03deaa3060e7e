import { describe, expect, it } from 'vitest';
import { KeyBudget } from '../../src/api/budget/key-budget.ts';
import { MemoryKeyStore } from '../../src/api/budget/memory-store.ts';
import { DEFAULT_BUDGET, type KeyStore, type Take } from '../../src/api/budget/types.ts';
import { systemClock } from '../../src/clock.ts';
import { silentLogger } from '../../src/logger.ts';

/**
 * `lingerMs` (src/api/budget/key-budget.ts): a slot no query here uses stays with the process for its next query
 * instead of a round trip to a shared store, and goes back once the time is up.
 */

/** A memory store that counts what the budget asks of it and says when a slot comes back. */
function countingStore() {
  const inner = new MemoryKeyStore(DEFAULT_BUDGET, Date.now());
  const counts = { takes: 0, gives: 0 };
  let onGive: (slot: number) => void = () => {};
  const store: KeyStore = {
    take: (now, want): Promise<Take> => {
      counts.takes++;
      return inner.take(now, want);
    },
    give: async (slot) => {
      counts.gives++;
      await inner.give(slot);
      onGive(slot);
    },
    update: (change) => inner.update(change),
    reserve: (now, intervalMs, burst) => inner.reserve(now, intervalMs, burst),
    changed: () => new Promise(() => {}),
  };
  const nextGive = () => new Promise<number>((resolve) => (onGive = resolve));
  return { store, counts, nextGive };
}

const budgetOn = (store: KeyStore, lingerMs: number) =>
  new KeyBudget(store, DEFAULT_BUDGET, { clock: systemClock, sleep: async () => {}, logger: silentLogger, label: 'key', maxPauseMs: 60_000, lingerMs });

const clean = { kind: 'clean', latencyMs: 5 } as const;

describe('a slot kept after its query (lingerMs)', () => {
  it('goes to the next query of the process without a take from the store', async () => {
    const { store, counts } = countingStore();
    // Far longer than the test: the slot cannot have gone back in between.
    const budget = budgetOn(store, 60_000);
    const first = await budget.acquire();
    await first.release(clean);
    const second = await budget.acquire();
    expect(counts).toEqual({ takes: 1, gives: 0 });
    expect(budget.stats().inFlight).toBe(1);
    await second.release(clean);
  });

  it('goes back to the store when no query takes it in time', async () => {
    const { store, counts, nextGive } = countingStore();
    const budget = budgetOn(store, 20);
    const given = nextGive();
    const permit = await budget.acquire();
    await permit.release(clean);
    expect(counts.gives).toBe(0);
    expect(await given).toBe(0);
    expect(counts).toEqual({ takes: 1, gives: 1 });
    // The next query takes it from the store again.
    const again = await budget.acquire();
    expect(counts.takes).toBe(2);
    await again.release(clean);
  });

  it('without lingerMs goes back at once', async () => {
    const { store, counts } = countingStore();
    const budget = budgetOn(store, 0);
    const permit = await budget.acquire();
    await permit.release(clean);
    expect(counts).toEqual({ takes: 1, gives: 1 });
    await budget.acquire();
    expect(counts.takes).toBe(2);
  });
});
