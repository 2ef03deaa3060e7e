import type { Config } from '../config.ts';
import { UsageError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { redactUrl } from '../net.ts';
import { readRecording } from '../sandbox/replay-load.ts';
import { openForWriting } from './database.ts';

/**
 * `record --load-state DIR`: writes the sync state a recorded run started from into the database a replay will run
 * against. A sync plans its windows from its watermark, so a run recorded on a database that had synced before (every
 * cron run) asks other questions from an empty one; with this state it asks the recorded ones. Only into a database
 * holding no other state for those streams: nothing of a real database is overwritten by a replay's state.
 */
export async function loadRecordedState(config: Config, dir: string, logger: Logger): Promise<{ loaded: number; database: string }> {
  const { meta } = readRecording(dir);
  const database = redactUrl(config.database.url);
  if (meta.stateAtStart === undefined) {
    throw new UsageError(
      `--load-state ${JSON.stringify(dir)}: the recording holds no sync state${meta.stateNote ? ` (${meta.stateNote})` : ` (occupancy-sync ${meta.command[0] ?? ''} reads none)`}. ` +
        'Fix: replay it into an empty database',
    );
  }
  if (meta.stateAtStart.length === 0) return { loaded: 0, database };
  const store = await openForWriting(config.database, logger);
  try {
    for (const state of meta.stateAtStart) {
      const existing = await store.getState(state.customerId, state.stream);
      if (existing) {
        throw new UsageError(
          `--load-state: ${database} already holds sync state for customer ${state.customerId}, stream ${state.stream}; nothing was loaded. ` +
            'Fix: point DATABASE_URL at a new database for the replay',
        );
      }
    }
    // The recording keeps the state key under its file format's name, `stream`.
    for (const { stream: stateKey, ...state } of meta.stateAtStart) await store.saveState({ ...state, stateKey });
    return { loaded: meta.stateAtStart.length, database };
  } finally {
    await store.close();
  }
}
