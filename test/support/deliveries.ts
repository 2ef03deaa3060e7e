import { deliveryRules } from '../../src/sync/deliveries.ts';
import { streams } from '../../jobs/index.ts';

/** The rules `serve` gives the receiver for the built-in streams: delivered Occupancy items as jobs/streams.yaml declares them. */
export const DELIVERIES = deliveryRules(streams);
