import { parallelWindowsSuite } from './parallel-windows.ts';

/** Windows read in parallel on Postgres (test/sync/parallel-windows.ts), a file of its own so both dialects run at once. */
parallelWindowsSuite('postgres');
