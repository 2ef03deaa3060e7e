import { UsageError } from '../errors.ts';
import type { RunRequest } from '../sync/engine.ts';
import type { AnyStream } from '../sync/stream.ts';
import { streams as registry } from '../../jobs/index.ts';

/** Every stream the application runs: the plug-ins in jobs/. */
export const allStreams: ReadonlyArray<AnyStream> = registry;

/** Streams named by `--stream` (all when undefined), with an error listing the valid names. */
export function selectStreams(name: string | undefined, request: RunRequest = { mode: 'incremental' }): AnyStream[] {
  // A backfill of everything loads the windowed streams' range and refreshes the full-refresh ones (engine.ts).
  if (!name) return [...registry];
  const eligible = request.mode === 'backfill' ? registry.filter((s) => s.kind === 'incremental-window') : [...registry];
  const match = eligible.filter((s) => s.name === name);
  if (match.length === 0) {
    const full = request.mode === 'backfill' && registry.some((s) => s.name === name && s.kind === 'full-refresh');
    const problem = full
      ? `a full-refresh stream: every run reads it whole, there is no range to backfill (\`sync --stream ${name}\` refreshes it)`
      : `no such ${request.mode === 'backfill' ? 'stream that can be backfilled' : 'stream'}`;
    throw new UsageError(`--stream ${JSON.stringify(name)}: ${problem}. Fix: use one of ${eligible.map((s) => s.name).join(', ')}`);
  }
  return match;
}
