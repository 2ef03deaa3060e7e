/** Configuration and logging for programs that embed occupancy-sync (the CLI resolves the same once, at start). */
import { resolveConfig as resolveConfigImpl } from '../config.ts';

export type { Config, CustomerConfig, Env } from '../config.ts';
export { createLogger, silentLogger, type Logger, type LoggerOptions } from '../logger.ts';

/**
 * Reads and validates the configuration from environment variables (the table in the README; `.env.example`).
 * Secrets may come from files (`API_SECRET_FILE`, ...). Any bad value throws a `ConfigError` naming the variable,
 * the value (secrets masked) and the fix. Pass any object: nothing else reads `process.env`.
 *
 * @example
 * import { resolveConfig, ConfigError } from 'occupancy-sync';
 * try {
 *   const config = resolveConfig({ ...process.env, DATABASE_URL: 'postgres://sync@db:5432/occupancy?schema=occupancy' });
 *   console.log(config.database.dialect, config.customers.map((c) => c.id));
 * } catch (error) {
 *   if (error instanceof ConfigError) console.error(error.message);
 *   throw error;
 * }
 */
export const resolveConfig: typeof resolveConfigImpl = resolveConfigImpl;
