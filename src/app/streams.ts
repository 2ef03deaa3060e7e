import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DEFAULT_DEFINITIONS_FILE, type Config } from '../config.ts';
import { ConfigError, UsageError } from '../errors.ts';
import type { RunRequest } from '../sync/engine.ts';
import { loadDefinitionsFile, type DefinitionsIo } from '../sync/definitions.ts';
import { mergeStreams } from '../sync/definition-partitions.ts';
import type { WebhookOperationSpecs } from '../webhook-operations.ts';
import type { AnyStream } from '../sync/stream.ts';
import { deliveryRules } from '../sync/deliveries.ts';
import type { DeliveryRule } from '../store/types.ts';
import { streams as registry } from '../../jobs/index.ts';

/** The built-in streams: the plug-ins in jobs/ (jobs/streams.yaml). */
export const allStreams: ReadonlyArray<AnyStream> = registry;

/** The streams and webhook documents in force: the built-ins, with a user's definitions file over them. */
export interface StreamSetup {
  streams: ReadonlyArray<AnyStream>;
  /** How the webhook operations differ from the built-in ones (src/webhooks/graphql/), by operation. */
  webhooks: WebhookOperationSpecs;
  /** The user's definitions file read, if any. */
  file: string | undefined;
}

/** Where the user's definitions file is, or undefined when there is none (and none was asked for). */
export function definitionsPath(config: Config, cwd: string = process.cwd()): string | undefined {
  const { path, explicit } = config.definitions;
  const target = resolve(cwd, path);
  if (!existsSync(target)) {
    if (!explicit) return undefined;
    throw new ConfigError(
      `DEFINITIONS_FILE=${JSON.stringify(path)}: no such file or directory. Fix: point it at a definitions file or a directory holding ${DEFAULT_DEFINITIONS_FILE}, or unset it`,
    );
  }
  if (!statSync(target).isDirectory()) return target;
  const inside = join(target, DEFAULT_DEFINITIONS_FILE);
  if (existsSync(inside)) return inside;
  if (!explicit) return undefined;
  throw new ConfigError(`DEFINITIONS_FILE=${JSON.stringify(path)}: the directory holds no ${DEFAULT_DEFINITIONS_FILE}. Fix: create it there, or name the file itself`);
}

export interface LoadStreamsOptions {
  /** Where a relative DEFINITIONS_FILE (or the default file) is looked for; default the working directory. */
  cwd?: string;
  /**
   * `parseDocumentSource` (src/api/documents.ts): also check the documents' syntax, variables and selections. Every
   * command that sends requests passes it; `status` and `state` need no document and skip loading graphql.
   */
  parseDocument?: DefinitionsIo['parseDocument'];
}

/**
 * The built-in streams with the user's definitions file (DEFINITIONS_FILE, or ./occupancy-sync.streams.yaml) over
 * them: a user stream replaces the built-in of the same name in its place, a new name runs after the built-ins.
 * Read and validated on every call, at a command's start: a broken file is a ConfigError listing each problem.
 */
export function loadStreams(config: Config, options: LoadStreamsOptions = {}): StreamSetup {
  const file = definitionsPath(config, options.cwd);
  if (!file) return { streams: registry, webhooks: {}, file: undefined };
  const user = loadDefinitionsFile(file, { under: registry, ...(options.parseDocument && { parseDocument: options.parseDocument }) });
  return { streams: mergeStreams(registry, user.streams), webhooks: user.webhooks, file };
}

/** Streams named by `--stream` (all when undefined), with an error listing the valid names. */
export function selectStreams(
  name: string | undefined,
  request: RunRequest = { mode: 'incremental' },
  available: ReadonlyArray<AnyStream> = registry,
): AnyStream[] {
  // A backfill of everything loads the windowed streams' range and refreshes the full ones (engine.ts).
  if (!name) return [...available];
  const eligible = request.mode === 'backfill' ? available.filter((s) => s.kind === 'incremental') : [...available];
  const match = eligible.filter((s) => s.name === name);
  if (match.length === 0) {
    const full = request.mode === 'backfill' && available.some((s) => s.name === name && s.kind === 'full');
    const problem = full
      ? `a full stream (kind: full): every run reads it whole, there is no range to backfill (\`sync --stream ${name}\` refreshes it)`
      : `no such ${request.mode === 'backfill' ? 'stream that can be backfilled' : 'stream'}`;
    throw new UsageError(`--stream ${JSON.stringify(name)}: ${problem}. Fix: use one of ${eligible.map((s) => s.name).join(', ')}`);
  }
  return match;
}

/**
 * How the receiver reads delivered items: the rules of the streams in force (a user's definitions over the built-in
 * ones), compiled from their declarations (src/sync/deliveries.ts).
 */
export function deliveryRulesFor(streams: ReadonlyArray<AnyStream>): Map<string, DeliveryRule> {
  return deliveryRules(streams, registry);
}
