import { ConfigError } from '../errors.ts';

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * A command-line instant: `2026-01-01` (midnight UTC) or an ISO 8601 date-time with a zone
 * (`2026-01-01T06:00:00Z`, `2026-01-01T08:00+02:00`). A date-time without a zone is refused rather than guessed.
 */
export function parseInstant(flag: string, value: string): number {
  const text = value.trim();
  const ok = DATE_ONLY.test(text) || DATE_TIME.test(text);
  const ms = ok ? Date.parse(DATE_ONLY.test(text) ? `${text}T00:00:00Z` : text) : Number.NaN;
  if (!ok || Number.isNaN(ms)) {
    const hint = /T\d{2}:\d{2}/.test(text) && !/(Z|[+-]\d{2}:\d{2})$/i.test(text) ? ' (a time needs a zone: add Z for UTC)' : '';
    throw new ConfigError(
      `${flag} ${JSON.stringify(value)}: not an ISO 8601 date or date-time with a zone${hint}. Fix: use e.g. 2026-01-01 or 2026-01-01T06:00:00Z`,
    );
  }
  return ms;
}
