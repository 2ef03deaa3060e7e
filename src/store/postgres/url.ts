import { ConfigError } from '../../errors.ts';

/**
 * `?schema=NAME` in DATABASE_URL selects a Postgres schema: it is stripped from the URL (the server would refuse it as
 * a startup parameter), created by the migrator, set as every connection's search_path and used for drizzle's
 * migrations table, so two schemas in one database are fully independent (tests rely on it).
 */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

export function parsePgUrl(raw: string): { url: string; schema: string | undefined } {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch (error) {
    throw new ConfigError('DATABASE_URL: not a valid postgres:// URL; use postgres://user@host:5432/db', { cause: error });
  }
  const schema = parsed.searchParams.get('schema') ?? undefined;
  parsed.searchParams.delete('schema');
  if (schema !== undefined && !IDENTIFIER.test(schema)) {
    throw new ConfigError(
      `DATABASE_URL: schema "${schema}" is not a plain identifier; use letters, digits and _ (e.g. ?schema=occupancy)`,
    );
  }
  return { url: parsed.toString(), schema };
}
