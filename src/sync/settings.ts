/**
 * What the engine is configured with: its own settings, not the application's configuration (no cron expression, no
 * database, no webhook). The wiring (src/app/) makes them from the configuration, in one place
 * (`engineSettings(config)`, src/app/engine-settings.ts), which a library user calls too.
 */
export interface EngineSettings {
  lookbackMs: number;
  settleDelayMs: number;
  /** Window length, unless a stream sets its own (`window.step`). */
  stepMs: number;
  /** Records per page, unless a stream sets its own (`paging.pageSize`); never above a stream's `paging.maxPageSize`. */
  pageSize: number;
  /** How far back the first incremental run starts when a stream has no watermark yet. */
  initialHistoryMs: number;
  /** The platform's Date header caps the watermark only while it is this close to the local clock. */
  maxClockSkewMs: number;
  /** What a record that breaks its declared types does: quarantined (the run goes on) or fails its window. */
  rejectedRecords: 'quarantine' | 'fail';
  /** A window whose rejected share exceeds this (with at least 10 rejected) fails: the API changed. */
  maxRejectedShare: number;
  /** A window needing more pages than this fails (nothing may page forever). */
  maxPagesPerWindow: number;
  /** Customers synced at once by one process. */
  concurrency?: number;
  /**
   * Windows of one stream read at the same time (each page by page, in order), once the store waits for the network
   * (run/window-demand.ts). Default 1.
   */
  windowConcurrency?: number;
  /** Records one stream run holds at most in pages requested and not yet committed. Unset: no bound. */
  maxPendingRecords?: number;
  /** Values of the definitions' `{{settings.NAME}}` placeholders, by NAME (e.g. `buildingsNameLike`); unset: none. */
  placeholderSettings?: Readonly<Record<string, unknown>>;
}

const NO_PLACEHOLDER_SETTINGS: Readonly<Record<string, unknown>> = Object.freeze({});

/** The values of `{{settings.NAME}}`: `placeholderSettings`, and nothing else of the settings. */
export function placeholderSettingsOf(settings: EngineSettings): Readonly<Record<string, unknown>> {
  return settings.placeholderSettings ?? NO_PLACEHOLDER_SETTINGS;
}
