/**
 * What the engine is configured with: its own settings, not the application's configuration (no cron expression, no
 * database, no webhook). The wiring (src/app/) makes them from the configuration (`engineSettings(config)`); a
 * library user may pass `config.sync` as it is, whose fields are a superset.
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
  /** Windows of one stream read at the same time (each page by page, in order). Default 1. */
  windowConcurrency?: number;
  /**
   * Values of the definitions' `{{settings.NAME}}` placeholders, by NAME (e.g. `buildingsNameLike`). Unset, the
   * settings object's own field of that name is read (so `config.sync` works as it is).
   */
  streamSettings?: Readonly<Record<string, unknown>>;
}

/** The value of `{{settings.NAME}}`, from `streamSettings` or the settings' own field. */
export function streamSettingsOf(settings: EngineSettings): Readonly<Record<string, unknown>> {
  return settings.streamSettings ?? (settings as unknown as Record<string, unknown>);
}
