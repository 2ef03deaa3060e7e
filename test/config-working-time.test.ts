import { describe, expect, it } from 'vitest';
import { DEFAULT_WORKING_TIME, parseWorkingTime, resolveCalendar, resolveWorkingTime } from '../src/config-working-time.ts';
import { resolveConfig } from '../src/config.ts';
import { ConfigError } from '../src/errors.ts';

const FILE = `
default:
  zone: Europe/London
  start: "08:00"
  end: "18:00"
  holidays: [2026-12-25]
buildings:
  - building: Harbour Hall
    start: "07:30"
  - building: b-42
    days: [1, 2, 3, 4]
    holidays: []
  - building: Harbour Hall
    customer: other-customer
    end: "16:00"
`;

function error(text: string): string {
  try {
    parseWorkingTime(text, 'hours.yaml');
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('no error');
}

describe('WORKING_TIME_FILE: working time per building, resolved once', () => {
  it('without it, every building works Monday to Friday, 08:00 to 18:00, in its platform zone or UTC', () => {
    const config = resolveConfig({});
    expect(config.workingTime).toBe(DEFAULT_WORKING_TIME);
    const utc = resolveCalendar(config.workingTime, { customerId: 'c', id: 'b', name: 'B', timeZone: null });
    expect([utc.zone, utc.zoneSource, utc.canonical]).toEqual(['UTC', 'UTC (none known)', '{"days":[1,2,3,4,5],"start":"08:00","end":"18:00","holidays":[]}']);
    const platform = resolveCalendar(config.workingTime, { customerId: 'c', id: 'b', name: 'B', timeZone: 'Asia/Kolkata' });
    expect([platform.zone, platform.zoneSource]).toEqual(['Asia/Kolkata', 'platform']);
  });

  it('a default for all, overrides by id or by name (a customer\'s own first), the platform zone before the configured one', () => {
    const wt = parseWorkingTime(FILE, 'hours.yaml');
    const at = (id: string, name: string | null, timeZone: string | null = null, customerId = 'c1') => resolveCalendar(wt, { customerId, id, name, timeZone });
    expect(at('b-1', 'Harbour Hall').canonical).toBe('{"days":[1,2,3,4,5],"start":"07:30","end":"18:00","holidays":["2026-12-25"]}');
    expect(at('b-1', 'Harbour Hall', null, 'other-customer').canonical).toBe('{"days":[1,2,3,4,5],"start":"08:00","end":"16:00","holidays":["2026-12-25"]}');
    expect(at('b-42', 'Harbour Hall').canonical).toBe('{"days":[1,2,3,4],"start":"08:00","end":"18:00","holidays":[]}');
    expect([at('b-7', 'Annex').zone, at('b-7', 'Annex').zoneSource]).toEqual(['Europe/London', 'configured']);
    expect([at('b-7', 'Annex', 'America/New_York').zone, at('b-7', 'Annex', 'America/New_York').zoneSource]).toEqual(['America/New_York', 'platform']);
    expect(at('', null).canonical).toBe('{"days":[1,2,3,4,5],"start":"08:00","end":"18:00","holidays":["2026-12-25"]}');
  });

  it('each problem is one line: where, the field, the value and the fix', () => {
    expect(error('buildings:\n  - building: Harbour Hall\n    start: "22:00"\n    end: "06:00"\n')).toBe(
      'WORKING_TIME_FILE hours.yaml:2 (building "Harbour Hall"): end "06:00": not after start 22:00. Fix: give an end later the same day (24:00 for midnight); overnight shifts are not supported',
    );
    expect(error('default:\n  zone: Mars/Olympus\n')).toMatch(/^WORKING_TIME_FILE hours\.yaml:2 \(default\): zone "Mars\/Olympus": not a time zone this Node\.js knows\. Fix: use an IANA zone name/);
    expect(error('default:\n  start: 8\n')).toMatch(/^WORKING_TIME_FILE hours\.yaml:2 \(default\): start 8: not a time of day in the form HH:MM/);
    expect(error('default:\n  days: [1, 8]\n')).toMatch(/days \[1,8\]: 8 is not an ISO weekday\. Fix: use 1 \(Monday\) to 7 \(Sunday\)/);
    expect(error('default:\n  holidays: [2026-02-30]\n')).toMatch(/holidays\[0\] "2026-02-30": not a real date in the form YYYY-MM-DD/);
    expect(error('default:\n  hours: 8\n')).toMatch(/\(default\): hours 8: not a field of a working calendar\. Fix: use zone, days, start, end, holidays$/);
    expect(error('buildings:\n  - start: "09:00"\n')).toMatch(/^WORKING_TIME_FILE hours\.yaml:2 \(buildings\[0\]\): building undefined: missing or empty/);
    expect(error('buildings:\n  - building: A\n  - building: A\n')).toMatch(/hours\.yaml:3 \(buildings\[1\]\): building "A": listed twice/);
    expect(error('weekdays: [1]\n')).toBe('WORKING_TIME_FILE="hours.yaml": hours.yaml:1: unknown key "weekdays". Fix: use only default and buildings');
    expect(error('default: [\n')).toMatch(/^WORKING_TIME_FILE="hours\.yaml": hours\.yaml:\d+:\d+: not valid YAML/);
    expect(error('default:\n  days: *weekdays\n')).toBe('WORKING_TIME_FILE="hours.yaml": hours.yaml:2:9: Unresolved alias (the anchor must be set before the alias): weekdays. Fix: set each anchor (&name) before an alias (*name) uses it, or write the value out');
    for (const message of [error('buildings:\n  - building: A\n    end: "07:00"\n'), error('default:\n  zone: Nowhere\n')]) expect(message).not.toContain('\n');
  });

  it('a file that cannot be read names the variable', () => {
    expect(() => resolveWorkingTime({ WORKING_TIME_FILE: '/nonexistent/hours.yaml' })).toThrow(
      'WORKING_TIME_FILE="/nonexistent/hours.yaml": cannot read the file (ENOENT). Fix: point it at a YAML file of working hours',
    );
  });
});
