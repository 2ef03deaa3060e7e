import type { Command } from 'commander';
import type { CliContext, CommandModule } from '../context.ts';
import { systemClock } from '../../clock.ts';
import { ExitCode, UsageError } from '../../errors.ts';
import type { Config } from '../../config.ts';
import type { StateChangeRecord, Store, SyncState } from '../../store/types.ts';
import { runKeyOf } from '../../sync/stream.ts';

/**
 * `state show|rewind|reset`: inspect and correct sync state without raw SQL (Meltano's `state get/set/clear`,
 * Airbyte's state edit). Rewinding is the one way a watermark moves backwards; each change takes the stream's run
 * lock, is recorded in `sync_state_changes` (who, when, before and after) and logged.
 */

interface Common {
  customer?: string;
  stream?: string;
}

/** The customers a command applies to: --customer, else the configured ones; a state change needs at least one. */
function customersFor(config: Config, flag: string | undefined, selectCustomers: (c: Config, id: string | undefined) => Array<{ id: string }>): string[] {
  if (flag) return config.customers.length > 0 ? selectCustomers(config, flag).map((c) => c.id) : [flag];
  if (config.customers.length === 0) {
    throw new UsageError('no customer is configured and --customer is missing. Fix: name the customer with --customer <id>');
  }
  return config.customers.map((c) => c.id);
}

/** `user@host`, naming the user behind sudo too, for the audit trail. */
async function actor(env: CliContext['env']): Promise<string> {
  const { hostname, userInfo } = await import('node:os');
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    user = env.USER ?? env.LOGNAME ?? 'unknown';
  }
  const sudo = env.SUDO_USER && env.SUDO_USER !== user ? `${env.SUDO_USER} (as ${user})` : user;
  return `${sudo}@${hostname()}`;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}

export function formatStates(states: ReadonlyArray<SyncState>, changes: ReadonlyArray<StateChangeRecord>): string {
  if (states.length === 0 && changes.length === 0) return 'No sync state yet: run `occupancy-sync sync` first.\n';
  const rows = [['CUSTOMER', 'STREAM', 'WATERMARK', 'WINDOW IN FLIGHT', 'PAGE CURSOR', 'READ AHEAD', 'RANGE', 'UPDATED']];
  for (const s of states) {
    const ahead = s.windows ?? [];
    const done = ahead.filter((w) => w.done).length;
    rows.push([
      s.customerId,
      s.stateKey,
      s.watermark ?? '-',
      s.windowStart && s.windowEnd ? `[${s.windowStart}, ${s.windowEnd})` : '-',
      s.pageCursor ? (s.pageCursor.length > 24 ? `${s.pageCursor.slice(0, 24)}…` : s.pageCursor) : '-',
      // Windows after the one in flight, read at the same time (their bounds and cursors: --json).
      ahead.length ? `${ahead.length} window${ahead.length === 1 ? '' : 's'}, ${done} complete` : '-',
      s.rangeStart && s.rangeEnd ? `[${s.rangeStart}, ${s.rangeEnd})` : '-',
      s.updatedAt,
    ]);
  }
  let text = `${table(rows)}\n`;
  if (changes.length > 0) {
    text += '\nRecorded changes (newest first; by hand, or by a run whose answers proved windows incomplete):\n';
    for (const c of changes) {
      const what =
        c.action !== 'rewind'
          ? `state removed (watermark was ${c.oldWatermark ?? '-'})`
          : c.oldWatermark === null && c.after?.windowStart
            ? `backfill progress ${c.before?.windowStart ?? 'done'} -> ${c.after.windowStart}`
            : `watermark ${c.oldWatermark ?? '-'} -> ${c.newWatermark ?? '-'}`;
      text += `  ${c.changedAt}  ${c.actor}  ${c.action} ${c.customerId} ${c.stateKey}: ${what}\n`;
    }
  }
  return text;
}

/**
 * `state show --json`: the state key under `stream`, the name `--stream` and the tables' column give it (users' jq
 * scripts read it so).
 */
function showJson(states: ReadonlyArray<SyncState>, changes: ReadonlyArray<StateChangeRecord>): unknown {
  const state = (s: SyncState | undefined) => s && (({ customerId, stateKey, ...rest }) => ({ customerId, stream: stateKey, ...rest }))(s);
  return {
    states: states.map(state),
    changes: changes.map(({ id, customerId, stateKey, before, after, ...rest }) => ({ id, customerId, stream: stateKey, ...rest, before: state(before), after: state(after) })),
  };
}

async function show(ctx: CliContext, flags: Common & { json?: boolean }): Promise<void> {
  const config = ctx.config();
  const { openForReading } = await import('../../app/database.ts');
  const store = await openForReading(config.database, ctx.logger());
  try {
    const [{ checkCustomerFlag, checkStreamFlag }, { loadStreams }] = await Promise.all([import('../known-names.ts'), import('../../app/streams.ts')]);
    await checkCustomerFlag(config, store, flags.customer);
    if (flags.stream !== undefined) {
      checkStreamFlag(loadStreams(config).streams, (await store.listStates()).map((s) => s.stateKey), flags.stream);
    }
    const states = (await store.listStates(flags.customer)).filter((s) => flags.stream === undefined || s.stateKey === flags.stream);
    const changes = await store.stateChanges({ ...(flags.customer && { customerId: flags.customer }), ...(flags.stream && { stateKey: flags.stream }), limit: 20 });
    ctx.stdout.write(flags.json ? `${JSON.stringify(showJson(states, changes), null, 2)}\n` : formatStates(states, changes));
  } finally {
    await store.close();
  }
}

interface ChangeFlags extends Common {
  stream: string;
  yes?: boolean;
}

/**
 * The states a change of `key` applies to for a customer: the state stored under it; or, for a fan-out stream's name
 * with no state of its own, each of its partitions' (`occupancy/<parent>`); or none stored (undefined state).
 */
async function targetsOf(store: Store, customerId: string, key: string): Promise<Array<{ key: string; state: SyncState | undefined }>> {
  const exact = await store.getState(customerId, key);
  if (exact) return [{ key, state: exact }];
  const partitions = (await store.listStates(customerId)).filter((s) => s.stateKey !== key && runKeyOf(s.stateKey) === key);
  return partitions.length ? partitions.map((state) => ({ key: state.stateKey, state })) : [{ key, state: undefined }];
}

type Build = (customerId: string, state: SyncState | undefined, key: string) => Promise<{ to?: string } | undefined>;

/**
 * Applies one change per customer and state key (each partition of a fan-out stream named by its stream) under the
 * stream's run lock; a held lock is reported and exits 75.
 */
async function change(ctx: CliContext, flags: ChangeFlags, build: Build, action: 'rewind' | 'reset'): Promise<void> {
  const config = ctx.config();
  const [{ selectCustomers }, { openForWriting }] = await Promise.all([import('../../config.ts'), import('../../app/database.ts')]);
  const customers = customersFor(config, flags.customer, selectCustomers);
  const store = await openForWriting(config.database, ctx.logger());
  const who = await actor(ctx.env);
  try {
    const [{ checkStreamFlag }, { loadStreams }] = await Promise.all([import('../known-names.ts'), import('../../app/streams.ts')]);
    checkStreamFlag(loadStreams(config).streams, (await store.listStates()).map((s) => s.stateKey), flags.stream);
    let locked = 0;
    for (const customerId of customers) {
      const planned: Array<{ key: string; state: SyncState | undefined; to?: string }> = [];
      for (const { key, state } of await targetsOf(store, customerId, flags.stream)) {
        const target = await build(customerId, state, key);
        if (target) planned.push({ key, state, ...target });
      }
      if (planned.length === 0) continue;
      if (!flags.yes) {
        for (const { key, state, to } of planned) {
          const what = action === 'rewind' ? `move the watermark of ${customerId} ${key} from ${state?.watermark} back to ${to}` : `remove the state of ${customerId} ${key}`;
          ctx.stdout.write(`would ${what}; nothing changed. Add --yes to do it.\n`);
        }
        ctx.exitCode = ExitCode.USAGE;
        continue;
      }
      // A fan-out stream's partitions (`space-readings/<parent>`) are run under their stream's lock.
      const lock = await store.tryLock(customerId, runKeyOf(flags.stream));
      if (!lock) {
        ctx.stderr.write(`  ${customerId} ${flags.stream}: a run holds its lock; nothing changed. Fix: try again once it finished (or stop it)\n`);
        locked += 1;
        continue;
      }
      try {
        for (const { key, to } of planned) await applyChange(ctx, store, { customerId, key, to, action, who });
      } finally {
        await lock.release();
      }
    }
    if (locked > 0 && ctx.exitCode === ExitCode.OK) ctx.exitCode = ExitCode.LOCKED;
  } finally {
    await store.close();
  }
}

/** One state change, recorded in sync_state_changes, logged and said. The caller holds the stream's lock. */
async function applyChange(ctx: CliContext, store: Store, c: { customerId: string; key: string; to: string | undefined; action: 'rewind' | 'reset'; who: string }): Promise<void> {
  const { globalSecrets } = await import('../../logger.ts');
  const { customerId, key, action, who } = c;
  const at = new Date(systemClock.now()).toISOString();
  const record = await store.changeState(
    action === 'rewind' ? { action, customerId, stateKey: key, to: c.to!, actor: who, at } : { action, customerId, stateKey: key, actor: who, at },
  );
  ctx.logger().warn({ customer: customerId, stream: key, action, actor: who, before: record.oldWatermark, after: record.newWatermark, changeId: record.id }, `sync state changed by hand (${action})`);
  ctx.stdout.write(
    globalSecrets.scrub(
      action === 'rewind'
        ? `${customerId} ${key}: watermark ${record.oldWatermark} -> ${record.newWatermark} (change ${record.id}); the next run reads from ${record.newWatermark} minus SYNC_LOOKBACK\n`
        : `${customerId} ${key}: state removed (change ${record.id}); the next run starts ${key.includes('#') ? 'the backfill over' : 'from SYNC_INITIAL_HISTORY'}\n`,
    ),
  );
}

/** `state rewind`: checks the stream and --to, then moves each state's watermark back (change). */
async function rewind(ctx: CliContext, flags: ChangeFlags & { to: string }): Promise<void> {
  const [{ parseInstant }, { loadStreams }] = await Promise.all([import('../../time.ts'), import('../../app/streams.ts')]);
  const { streams } = loadStreams(ctx.config());
  // A partition's key (`occupancy/<floor space>`) rewinds that partition; a fan-out stream's name, all of them.
  const stream = streams.find((s) => s.name === runKeyOf(flags.stream));
  if (!stream || stream.kind !== 'incremental') {
    const names = streams.filter((s) => s.kind === 'incremental').map((s) => s.name);
    throw new UsageError(
      `--stream ${JSON.stringify(flags.stream)}: only the watermark of an incremental stream can be rewound. Fix: use one of ${names.join(', ')}` +
        ' (a backfill or buildings: state reset)',
    );
  }
  const to = parseInstant('--to', flags.to);
  const now = systemClock.now();
  if (to > now) throw new UsageError(`--to ${JSON.stringify(flags.to)} is in the future. Fix: give a time before now`);
  const target = new Date(to).toISOString();
  const build: Build = async (customerId, current, key) => {
    if (!current?.watermark) {
      ctx.stderr.write(`  ${customerId} ${key}: no watermark yet; nothing to rewind\n`);
      return undefined;
    }
    if (!(target < current.watermark)) {
      // One partition of a fan-out stream named by its stream: a parent read only up to --to has nothing to re-read.
      if (key !== flags.stream) {
        ctx.stderr.write(`  ${customerId} ${key}: watermark ${current.watermark} is not after --to; left as it is\n`);
        return undefined;
      }
      throw new UsageError(`--to ${JSON.stringify(flags.to)} is not before the watermark of ${customerId} ${key} (${current.watermark}). Fix: give an earlier time`);
    }
    return { to: target };
  };
  await change(ctx, flags, build, 'rewind');
}

export const stateCommand: CommandModule = (program, ctx) => {
  const state: Command = program
    .command('state')
    .description('Inspect and correct sync state: show it, rewind a watermark (re-read a period), or reset a stream.')
    .addHelpText(
      'after',
      `
Examples:
  $ occupancy-sync state show
  $ occupancy-sync state show --stream occupancy --json
  $ occupancy-sync state rewind --stream occupancy --to 2026-03-03T00:00:00Z --yes   # re-read since last Tuesday
  $ occupancy-sync state reset --stream occupancy#backfill --customer 6f1c0d2e-... --yes
`,
    );

  state
    .command('show')
    .description('Print the sync state per customer and stream, and the changes made to it by hand. Read-only.')
    .option('--customer <id>', 'only this customer')
    .option('--stream <key>', 'only this stream or state key (occupancy, buildings, occupancy#backfill)')
    .option('--json', 'print JSON ({ states, changes })')
    .addHelpText('after', '\nExamples:\n  $ occupancy-sync state show\n  $ occupancy-sync state show --customer 6f1c0d2e-... --json\n')
    .action((flags: Common & { json?: boolean }) => show(ctx, flags));

  state
    .command('rewind')
    .description(
      'Move a watermark backwards so the next runs re-read from --to (minus SYNC_LOOKBACK): after a platform incident, or\n' +
        'to replay quarantined records. Upserts make the re-read idempotent. Needs --yes; recorded in sync_state_changes.',
    )
    .requiredOption('--stream <name>', "the incremental stream (occupancy); a fan-out stream's name rewinds each of its partitions, occupancy/<parent> one")
    .requiredOption('--to <time>', 'the new watermark: 2026-03-03, 2026-03-03T06:00:00Z, 2d (two days ago, rounded down to the hour) or now (the start of this hour, as 0h, not this instant); before the current one')
    .option('--customer <id>', 'only this customer (default: every configured customer)')
    .option('--yes', 'really change it (without: print what would change, exit 64)')
    .addHelpText(
      'after',
      `
Takes the stream's run lock (exit 75 if a run holds it; try again once it finished). Any window in flight is dropped.
The sync engine itself never moves a watermark backwards; this command is the only way.

Examples:
  $ occupancy-sync state rewind --stream occupancy --to 2026-03-03 --yes
  $ occupancy-sync state rewind --stream occupancy --to 2026-03-03T06:00:00Z --customer 6f1c0d2e-... --yes
`,
    )
    .action((flags: ChangeFlags & { to: string }) => rewind(ctx, flags));

  state
    .command('reset')
    .description(
      'Remove the state of a stream or state key: an incremental stream starts over from SYNC_INITIAL_HISTORY, a backfill\n' +
        '(occupancy#backfill) from its --from. Stored rows stay. Needs --yes; recorded in sync_state_changes.',
    )
    .requiredOption('--stream <key>', "the stream or state key (occupancy, buildings, occupancy#backfill; a fan-out stream's name: each of its partitions, occupancy/<parent>: one)")
    .option('--customer <id>', 'only this customer (default: every configured customer)')
    .option('--yes', 'really remove it (without: print what would change, exit 64)')
    .addHelpText('after', '\nExamples:\n  $ occupancy-sync state reset --stream occupancy#backfill --yes\n')
    .action((flags: ChangeFlags) =>
      change(
        ctx,
        flags,
        async (customerId, current, key) => {
          if (!current) {
            ctx.stderr.write(`  ${customerId} ${key}: no state; nothing to reset\n`);
            return undefined;
          }
          return {};
        },
        'reset',
      ),
    );
};
