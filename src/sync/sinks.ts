import type { IsoUtc, SinkName, Store } from '../store/types.ts';

/**
 * Soft-delete per sink, for full-refresh streams with `softDelete`: rows of the customer not seen since `seenSince`
 * get `deleted_at = at`. A new sink with soft-delete needs a store method and a line here.
 */
export const softDeleters: Partial<
  Record<SinkName, (store: Store, customerId: string, seenSince: IsoUtc, at: IsoUtc) => Promise<number>>
> = {
  buildings: (store, customerId, seenSince, at) => store.markBuildingsDeleted(customerId, seenSince, at),
};
