import { PLACEHOLDER_SETTING_NAMES, type Config } from '../config.ts';
import type { EngineSettings } from '../sync/settings.ts';

/**
 * The engine's settings from the configuration: the window, page and contract settings it uses, and the values the
 * definitions may send as `{{settings.NAME}}` (PLACEHOLDER_SETTING_NAMES); nothing else of the configuration (no schedule, no
 * database, no webhook) reaches the engine.
 */
export function engineSettings(config: Pick<Config, 'sync'>): EngineSettings {
  const s = config.sync;
  return {
    lookbackMs: s.lookbackMs,
    settleDelayMs: s.settleDelayMs,
    stepMs: s.stepMs,
    pageSize: s.pageSize,
    initialHistoryMs: s.initialHistoryMs,
    maxClockSkewMs: s.maxClockSkewMs,
    rejectedRecords: s.rejectedRecords,
    maxRejectedShare: s.maxRejectedShare,
    maxPagesPerWindow: s.maxPagesPerWindow,
    concurrency: s.concurrency,
    windowConcurrency: s.windowConcurrency,
    maxPendingRecords: s.maxPendingRecords,
    placeholderSettings: Object.fromEntries(PLACEHOLDER_SETTING_NAMES.map((name) => [name, s[name]])),
  };
}
