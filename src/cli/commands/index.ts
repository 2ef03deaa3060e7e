import type { CommandModule } from '../context.ts';
import { sandboxCommand } from './sandbox.ts';
import { checkCommand } from './check.ts';
import { schemaCommand } from './schema.ts';
import { migrateCommand } from './migrate.ts';
import { syncCommand } from './sync.ts';
import { backfillCommand } from './backfill.ts';
import { scheduleCommand } from './schedule.ts';
import { statusCommand } from './status.ts';
import { demoCommand } from './demo.ts';
import { webhookCommand } from './webhook.ts';
import { reportCommand } from './report.ts';
import { serveCommand } from './serve.ts';
import { stateCommand } from './state.ts';
import { recordCommand } from './record.ts';
import { aggregatesCommand } from './aggregates.ts';
import { pruneCommand } from './prune.ts';

/** Every command of the CLI; each module registers one command (or one command group). */
export const commands: CommandModule[] = [
  syncCommand,
  backfillCommand,
  scheduleCommand,
  statusCommand,
  stateCommand,
  reportCommand,
  aggregatesCommand,
  pruneCommand,
  serveCommand,
  migrateCommand,
  checkCommand,
  schemaCommand,
  webhookCommand,
  sandboxCommand,
  recordCommand,
  demoCommand,
];
