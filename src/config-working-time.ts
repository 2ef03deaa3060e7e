import { readFileSync } from 'node:fs';
import { CalendarError } from './calendar-error.ts';
import { ConfigError } from './errors.ts';
import { workingCalendar, type WorkingCalendar, type WorkingCalendarInput } from './working-time.ts';
import { ALIAS_FIX, documentValue, yaml } from './yaml-document.ts';

/**
 * Working time per building (WORKING_TIME_FILE, docs/reporting.md "Working time"): a default calendar for every
 * building and overrides per building, by id or by name, validated once with `workingCalendar`. A building's zone is
 * the platform's (`buildings.time_zone`) when it gives one, else the calendar's configured `zone`, else UTC: what a
 * calendar says is local wall-clock time, so the zone comes from where the building is whenever that is known.
 *
 * ```yaml
 * default:                      # every building (each field optional; these are the built-in values)
 *   zone: UTC                   # for buildings whose platform gives no time zone
 *   days: [1, 2, 3, 4, 5]       # ISO weekdays worked, Monday 1 ... Sunday 7
 *   start: "08:00"
 *   end: "18:00"                # 24:00 for midnight
 *   holidays: [2026-12-25]      # local dates not worked
 * buildings:
 *   - building: Harbour Hall    # the building's id or its name
 *     customer: 6f1c0d2e-...    # optional: only that customer's building of that id or name
 *     start: "07:30"            # a field given replaces the default's (holidays too: list them all)
 * ```
 */

/** The fields of a calendar as configured; the zone is a fallback, used when the platform gives none. */
export interface CalendarFields {
  zone: string;
  days: readonly number[];
  start: string;
  end: string;
  holidays: readonly string[];
}

export interface BuildingOverride {
  /** The building's id or name. */
  building: string;
  /** Only this customer's building; undefined: any customer's. */
  customerId: string | undefined;
  fields: Partial<CalendarFields>;
  /** `file:line` of the entry, for messages. */
  where: string;
}

export interface WorkingTime {
  /** The file it came from; undefined: the built-in default. */
  file: string | undefined;
  default: CalendarFields;
  /** The default's zone was written in the file (not the built-in UTC). */
  defaultZoneConfigured: boolean;
  buildings: readonly BuildingOverride[];
}

/** Where a building's zone came from, as reports and `check` say it. */
export type ZoneSource = 'platform' | 'configured' | 'UTC (none known)';

/** A building's working calendar, resolved: what its aggregates are computed with. */
export interface ResolvedCalendar {
  zone: string;
  zoneSource: ZoneSource;
  calendar: WorkingCalendar;
  /** The calendar's days, start, end and holidays as canonical JSON (the zone stands beside it). */
  canonical: string;
}

export const DEFAULT_CALENDAR: CalendarFields = Object.freeze({ zone: 'UTC', days: [1, 2, 3, 4, 5], start: '08:00', end: '18:00', holidays: [] });
export const DEFAULT_WORKING_TIME: WorkingTime = Object.freeze({ file: undefined, default: DEFAULT_CALENDAR, defaultZoneConfigured: false, buildings: [] });

const FIELDS = ['zone', 'days', 'start', 'end', 'holidays'] as const;

/** The configuration's one wording of an error (config-parse.ts's `fail`, which this module cannot import: a circle). */
function fail(variable: string, value: string, problem: string, fix: string): never {
  throw new ConfigError(`${variable}=${JSON.stringify(value)}: ${problem}. Fix: ${fix}`);
}

/** WORKING_TIME_FILE, read and validated once; the built-in default without it. */
export function resolveWorkingTime(env: Readonly<Record<string, string | undefined>>): WorkingTime {
  const file = env.WORKING_TIME_FILE?.trim();
  if (!file) return DEFAULT_WORKING_TIME;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    fail('WORKING_TIME_FILE', file, `cannot read the file (${(error as NodeJS.ErrnoException).code ?? 'error'})`, 'point it at a YAML file of working hours (see .env.example and docs/reporting.md, "Working time")');
  }
  return parseWorkingTime(text, file);
}


type Located = { range?: [number, number, number] | null } | null | undefined;

/** Parses and validates a working-time file's text: every problem is one ConfigError naming the line, field, value and fix. */
export function parseWorkingTime(text: string, file: string): WorkingTime {
  const { LineCounter, parseDocument, isMap, isSeq } = yaml();
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const lineOf = (node: unknown) => `${file}:${(node as Located)?.range ? lines.linePos((node as Located)!.range![0]).line : 1}`;
  if (doc.errors.length > 0) {
    const at = lines.linePos(doc.errors[0]!.pos[0]);
    fail('WORKING_TIME_FILE', file, `${file}:${at.line}:${at.col}: not valid YAML (${doc.errors[0]!.message.split('\n')[0]})`, 'correct the syntax');
  }
  const root = doc.contents;
  const read = documentValue(doc, lines);
  if ('problem' in read) fail('WORKING_TIME_FILE', file, `${file}:${read.line}:${read.col}: ${read.problem}`, ALIAS_FIX);
  const value = read.value;
  if (value === null || value === undefined) return { file, default: DEFAULT_CALENDAR, defaultZoneConfigured: false, buildings: [] };
  if (!isMap(root) || typeof value !== 'object' || Array.isArray(value)) {
    fail('WORKING_TIME_FILE', file, `${file}:1: not a map with "default" and "buildings"`, 'write default: {zone, days, start, end, holidays} and buildings: [{building, ...}] (docs/reporting.md, "Working time")');
  }
  const top = value as Record<string, unknown>;
  for (const key of Object.keys(top)) {
    if (key !== 'default' && key !== 'buildings') fail('WORKING_TIME_FILE', file, `${lineOf(root.get(key, true))}: unknown key "${key}"`, 'use only default and buildings');
  }
  const defaultLabel = `WORKING_TIME_FILE ${lineOf(root.get('default', true))} (default)`;
  const defaults = fieldsOf(top.default, defaultLabel);
  const base: CalendarFields = { ...DEFAULT_CALENDAR, ...defaults };
  validate(base, defaultLabel);

  const list = top.buildings ?? [];
  const listNode = root.get('buildings', true);
  if (!Array.isArray(list)) fail('WORKING_TIME_FILE', file, `${lineOf(listNode)}: buildings is not a list`, 'write buildings: [{building: <id or name>, start: "07:30", ...}]');
  const seen = new Set<string>();
  const buildings = list.map((entry: unknown, i): BuildingOverride => {
    const where = lineOf(isSeq(listNode) ? listNode.items[i] : undefined);
    const label = `WORKING_TIME_FILE ${where} (buildings[${i}])`;
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      throw new CalendarError('buildings', entry, 'not a map', 'write {building: <id or name>, and the fields that differ from the default}', { label });
    }
    const { building, customer, ...rest } = entry as Record<string, unknown>;
    if (typeof building !== 'string' || building.trim() === '') {
      throw new CalendarError('building', building, 'missing or empty', "give the building's id or its name as the platform lists it", { label });
    }
    if (customer !== undefined && (typeof customer !== 'string' || customer.trim() === '')) {
      throw new CalendarError('customer', customer, 'not a customer id', 'give the id of the customer the building belongs to, or leave customer out', { label });
    }
    const key = `${customer ?? ''}\u0000${building}`;
    if (seen.has(key)) throw new CalendarError('building', building, 'listed twice', 'keep one entry per building (and customer)', { label });
    seen.add(key);
    const named = `WORKING_TIME_FILE ${where} (building ${JSON.stringify(building)})`;
    const fields = fieldsOf(rest, named);
    validate({ ...base, ...fields }, named);
    return { building, customerId: customer as string | undefined, fields, where };
  });
  return { file, default: base, defaultZoneConfigured: defaults.zone !== undefined, buildings };
}

function fieldsOf(value: unknown, label: string): Partial<CalendarFields> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new CalendarError('default', value, 'not a map', 'write the fields zone, days, start, end and holidays under it', { label });
  }
  for (const [key, v] of Object.entries(value)) {
    if (!(FIELDS as readonly string[]).includes(key)) throw new CalendarError(key, v, 'not a field of a working calendar', `use ${FIELDS.join(', ')}`, { label });
  }
  // workingCalendar checks each value's type (a time written 8 rather than "08:00" is refused there).
  return value as Partial<CalendarFields>;
}

function validate(fields: CalendarFields, label: string): WorkingCalendar {
  if (!Array.isArray(fields.holidays)) throw new CalendarError('holidays', fields.holidays, 'not a list', 'list local dates such as [2026-12-25, 2026-12-26]', { label });
  return workingCalendar(input(fields, fields.zone), { label });
}

function input(fields: CalendarFields, zone: string): WorkingCalendarInput {
  return { zone, days: fields.days, start: fields.start, end: fields.end, holidays: fields.holidays };
}

/** The override of a building: by id before by name, an entry for its customer before one for any customer. */
function overrideOf(config: WorkingTime, customerId: string, buildingId: string, buildingName: string | null): BuildingOverride | undefined {
  const find = (building: string | null, own: boolean) =>
    building ? config.buildings.find((o) => o.building === building && (own ? o.customerId === customerId : o.customerId === undefined)) : undefined;
  const id = buildingId === '' ? null : buildingId;
  return find(id, true) ?? find(id, false) ?? find(buildingName, true) ?? find(buildingName, false);
}

/**
 * The calendar a building's aggregates use: its configured fields (the default's, with its override's over them) in
 * the platform's zone when it gives one, else in the configured zone, else UTC. `id` '' stands for the spaces of no
 * known building: the default calendar.
 */
export function resolveCalendar(config: WorkingTime, building: { customerId: string; id: string; name: string | null; timeZone: string | null }): ResolvedCalendar {
  const override = overrideOf(config, building.customerId, building.id, building.name);
  const fields: CalendarFields = { ...config.default, ...override?.fields };
  const zoneConfigured = override?.fields.zone !== undefined || config.defaultZoneConfigured;
  const zone = building.timeZone ?? fields.zone;
  const zoneSource: ZoneSource = building.timeZone ? 'platform' : zoneConfigured ? 'configured' : 'UTC (none known)';
  const label = building.id === '' ? 'spaces of no known building' : `building ${building.name ?? building.id}`;
  const calendar = workingCalendar(input(fields, zone), { label });
  return { zone, zoneSource, calendar, canonical: canonicalCalendar(fields) };
}

/** Canonical JSON of a calendar's fields (not its zone): sorted, without repeats, in one key order. */
export function canonicalCalendar(fields: Pick<CalendarFields, 'days' | 'start' | 'end' | 'holidays'>): string {
  const days = [...new Set(fields.days)].sort((a, b) => a - b);
  const holidays = [...new Set(fields.holidays)].sort();
  return JSON.stringify({ days, start: fields.start, end: fields.end, holidays });
}

/** A calendar as stored (aggregate_calendars): its zone and canonical JSON, validated again. */
export function storedCalendar(zone: string, canonical: string, label: string): WorkingCalendar {
  const fields = JSON.parse(canonical) as Pick<CalendarFields, 'days' | 'start' | 'end' | 'holidays'>;
  return workingCalendar({ zone, ...fields }, { label });
}
