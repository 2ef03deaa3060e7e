import type { CommandModule } from '../context.ts';

/** Every command of the CLI; each module registers one command (or one command group). */
export const commands: CommandModule[] = [];
