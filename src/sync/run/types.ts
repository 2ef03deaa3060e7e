import type { Clock } from '../../clock.ts';
import type { Logger } from '../../logger.ts';
import type { IsoUtc, RunMode, Store } from '../../store/types.ts';
import type { GraphQLRequester } from '../fetch.ts';
import type { EngineSettings } from '../settings.ts';

/**
 * The types of a stream run, in one file: the run's parts (src/sync/run/*.ts) import them from here and never from
 * each other's modules for a type, so no two parts import each other.
 */

/** `restart`: a backfill starts over even when a backfill of another (or the same, complete) range is stored. */
export type RunRequest = { mode: 'incremental' } | { mode: 'backfill'; from: number; to: number; restart?: boolean };

/** `skipped`: not run because a concurrent run holds an optional lock (a backfill's refresh of buildings). */
export type OutcomeStatus = 'succeeded' | 'failed' | 'interrupted' | 'locked' | 'skipped';

export interface StreamOutcome {
  customerId: string;
  /** The stream's name (`occupancy`). */
  stream: string;
  /** Its state and lock key: the name, or `occupancy#backfill` for a backfill (see `stateKey`). */
  stateKey: string;
  mode: RunMode;
  status: OutcomeStatus;
  pages: number;
  records: number;
  /** Records that broke their declared types, quarantined (committed with their pages). */
  rejected: number;
  /**
   * Readings stored with a status that is neither canonical nor mapped to a canonical one (src/statuses.ts): the
   * reports count them neither occupied nor vacant. 0 for streams of other sinks.
   */
  unmapped: number;
  /** The first few distinct such statuses (UNMAPPED_STATUSES_KEPT), for the message that names the map to add. */
  unmappedStatuses: string[];
  /** Windows completed in this run (incremental-window streams). */
  windows: number;
  watermark: IsoUtc | null;
  /** Why nothing ran, when nothing did. */
  note?: string;
  error?: unknown;
  /** How long the run took, lock to last commit (absent when it never started). */
  durationMs?: number;
}

export interface ProgressEvent {
  customerId: string;
  /** The stream's name (`occupancy`). */
  stream: string;
  /** Its state and lock key (`occupancy#backfill` for a backfill). */
  stateKey: string;
  mode: RunMode;
  pages: number;
  records: number;
  windowsDone: number;
  windowsTotal: number;
}

export interface StreamRunContext {
  store: Store;
  clock: Clock;
  logger: Logger;
  settings: EngineSettings;
  signal?: AbortSignal;
  customerId: string;
  client: GraphQLRequester;
  document: unknown;
  onProgress?(event: ProgressEvent): void;
}

/** Which run of which stream: what every progress event and outcome of it names. */
export interface RunIdentity {
  customerId: string;
  stream: string;
  stateKey: string;
  mode: RunMode;
}

/** What a run committed: its pages, records and windows, and the watermark its last checkpoint stored. */
export interface RunCounts {
  pages: number;
  records: number;
  rejected: number;
  /** As StreamOutcome's. */
  unmapped: number;
  unmappedStatuses: string[];
  windows: number;
  watermark: IsoUtc | null;
}

/** What a runner (full or windowed) returns: its counts, how it ended, and why when it failed or read nothing. */
export interface RunResult extends RunCounts {
  status: 'succeeded' | 'interrupted' | 'failed';
  note?: string;
  error?: unknown;
}

/** A half-open time window [from, to) in epoch ms; `cursor` resumes a window after its last committed page. */
export interface SyncWindow {
  from: number;
  to: number;
  cursor: string | null;
}

/** A window of a run, and how far it has been read (its committed cursor; `done` once its last page committed). */
export interface WindowProgress {
  readonly index: number;
  readonly from: number;
  readonly to: number;
  cursor: string | null;
  done: boolean;
}
