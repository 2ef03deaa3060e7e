import type { SandboxInfo } from './sandbox-process.ts';

/** One sync measurement, handed to bench/sync-worker.ts as JSON. Both sides read exactly these pages. */
export interface SyncJob {
  sandbox: SandboxInfo;
  /** Epoch ms; the backfill range [from, to). */
  from: number;
  to: number;
  /** Window length (SYNC_STEP) and page size (SYNC_PAGE_SIZE), the same for ours and the baseline. */
  stepMs: number;
  pageSize: number;
  /** file:<path> or postgres://...?schema=NAME, already migrated by the harness. */
  databaseUrl: string;
  /** The observations the range holds, checked against the table afterwards. */
  expectedRows: number;
  /**
   * Ours runs with the settings' defaults (SYNC_PAGE_SIZE, SYNC_STEP and whatever else is not set), as a user who
   * sets nothing would; stepMs and pageSize must then be those defaults (the recording follows them).
   */
  defaultSettings?: boolean;
}

/** What a worker reports. */
export interface SyncResult {
  rows: number;
  ms: number;
  rowsPerSecond: number;
  /** process.resourceUsage().maxRSS at the end, in bytes. */
  maxRssBytes: number;
}
