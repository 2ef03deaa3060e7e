import { readSequential } from './minimal-client.ts';
import { openWriter } from './raw-writers.ts';

/**
 * The steady state's minimal client as its own process, run with plain `node` (type stripping, no tsx):
 *
 *   node bench/steady-minimal.ts '<SteadyMinimalJob JSON>'
 *
 * Authenticates, reads the one window, writes it in one transaction per page, exits. What a cron job written by
 * hand would do, measured from process start to exit by the harness.
 */

export interface SteadyMinimalJob {
  url: string;
  apiKey: string;
  apiSecret: string;
  customerId: string;
  from: number;
  to: number;
  stepMs: number;
  pageSize: number;
  databaseUrl: string;
}

const job = JSON.parse(process.argv[2]!) as SteadyMinimalJob;
const writer = openWriter(job.databaseUrl, job.customerId);
try {
  await readSequential(job, (nodes) => writer.write(nodes));
} finally {
  await writer.close();
}
