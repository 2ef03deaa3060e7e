import type { Config, Env } from './config-types.ts';
import { fail, integer } from './config-parse.ts';

/** Where an adaptive in-flight limit starts: moderate, found up or down from there (src/api/budget/aimd.ts). */
const START_IN_FLIGHT = 8;

/** API_IN_FLIGHT (auto or a fixed N), API_MAX_IN_FLIGHT and API_MAX_RATE. */
export function resolveBudget(env: Env): Config['budget'] {
  const maxInFlight = integer(env, 'API_MAX_IN_FLIGHT', 32, 1, 1024);
  const mode = env.API_IN_FLIGHT?.trim().toLowerCase() || 'auto';
  let fixed: number | undefined;
  if (mode !== 'auto') {
    fixed = Number(mode);
    if (!Number.isInteger(fixed) || fixed < 1 || fixed > 1024) {
      fail('API_IN_FLIGHT', env.API_IN_FLIGHT, 'must be auto or a whole number from 1 to 1024', 'leave it unset (auto: adapt to the platform) or set the number of queries per key the platform allows in flight');
    }
    if (env.API_MAX_IN_FLIGHT?.trim() && fixed > maxInFlight) {
      fail('API_IN_FLIGHT', env.API_IN_FLIGHT, `is above API_MAX_IN_FLIGHT=${maxInFlight}`, 'lower API_IN_FLIGHT, or unset API_MAX_IN_FLIGHT (it only bounds auto)');
    }
  }
  const rateText = env.API_MAX_RATE?.trim().toLowerCase();
  let ratePerSecond: number | undefined;
  if (rateText && rateText !== 'off') {
    ratePerSecond = Number(rateText);
    if (!Number.isFinite(ratePerSecond) || ratePerSecond <= 0 || ratePerSecond > 10_000) {
      fail('API_MAX_RATE', env.API_MAX_RATE, 'must be off or a number of queries per second above 0 (up to 10000)', 'set e.g. API_MAX_RATE=10 (or 0.5 for one every two seconds), or off');
    }
  }
  return fixed === undefined
    ? { adaptive: true, maxInFlight, startInFlight: Math.min(START_IN_FLIGHT, maxInFlight), ratePerSecond }
    : { adaptive: false, maxInFlight: fixed, startInFlight: fixed, ratePerSecond };
}
