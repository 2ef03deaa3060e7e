import { describe, expect, it } from 'vitest';
import { engineSettings } from '../../src/app/engine-settings.ts';
import { resolveConfig } from '../../src/config.ts';
import { placeholderSettingsOf, type EngineSettings } from '../../src/sync/settings.ts';

const base = { API_BASE_URL: 'https://api.example.com', API_KEY: 'key-1', API_SECRET: 'secret-1', CUSTOMER_ID: '6f1c0d2e-8a4b-4c1d-9e2f-0123456789ab' };

describe('engineSettings', () => {
  it('hands the engine its own settings from the configuration, and nothing else of it', () => {
    const config = resolveConfig({
      ...base,
      SYNC_LOOKBACK: '30m',
      SYNC_SETTLE_DELAY: '2m',
      SYNC_STEP: '6h',
      SYNC_PAGE_SIZE: '250',
      SYNC_INITIAL_HISTORY: '3d',
      SYNC_MAX_CLOCK_SKEW: '10m',
      SYNC_REJECTED_RECORDS: 'fail',
      SYNC_MAX_REJECTED_SHARE: '0.25',
      SYNC_MAX_PAGES_PER_WINDOW: '500',
      SYNC_CONCURRENCY: '3',
      SYNC_WINDOW_CONCURRENCY: '2',
      BUILDINGS_NAME_LIKE: 'HQ%',
      SYNC_CRON: '*/10 * * * *',
    });
    expect(engineSettings(config)).toStrictEqual<EngineSettings>({
      lookbackMs: 30 * 60_000,
      settleDelayMs: 2 * 60_000,
      stepMs: 6 * 3_600_000,
      pageSize: 250,
      initialHistoryMs: 3 * 86_400_000,
      maxClockSkewMs: 10 * 60_000,
      rejectedRecords: 'fail',
      maxRejectedShare: 0.25,
      maxPagesPerWindow: 500,
      concurrency: 3,
      windowConcurrency: 2,
      maxPendingRecords: 4000,
      placeholderSettings: { buildingsNameLike: 'HQ%' },
    });
  });

  it('gives the definitions an unset setting as unset, and takes only the sync part of the configuration', () => {
    const config = resolveConfig(base);
    const settings = engineSettings({ sync: config.sync });
    expect(settings).toStrictEqual(engineSettings(config));
    expect(settings.placeholderSettings).toStrictEqual({ buildingsNameLike: undefined });
  });

  it('placeholders read placeholderSettings only: the configuration passed as it is gives them nothing', () => {
    const config = resolveConfig({ ...base, BUILDINGS_NAME_LIKE: 'HQ%' });
    expect(placeholderSettingsOf(engineSettings(config))).toStrictEqual({ buildingsNameLike: 'HQ%' });
    // `config.sync` has a `buildingsNameLike` field, but it is not a placeholder's value unless engineSettings says so.
    expect(placeholderSettingsOf(config.sync as EngineSettings)).toStrictEqual({});
  });
});
