import { describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import cron from 'node-cron';
import { ExitCode } from '../../src/errors.ts';
import { tempDir } from '../support/tmp.ts';

const DEPLOY = join(import.meta.dirname, '../../deploy');
const UNITS = ['occupancy-sync-serve.service', 'occupancy-sync-sync.service', 'occupancy-sync-sync.timer'];
const SYSTEMD_ANALYZE = ['/usr/bin/systemd-analyze', '/bin/systemd-analyze'].find((p) => existsSync(p));

/** A unit file as section -> key -> values (keys may repeat). */
function parseUnit(name: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | undefined;
  for (const raw of readFileSync(join(DEPLOY, name), 'utf8').split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || line.startsWith(';')) continue;
    const section = /^\[(.+)\]$/.exec(line);
    if (section) {
      current = new Map();
      sections.set(section[1]!, current);
      continue;
    }
    const eq = line.indexOf('=');
    if (!current || eq < 1) throw new Error(`${name}: cannot parse line ${JSON.stringify(raw)}`);
    const key = line.slice(0, eq);
    current.set(key, [...(current.get(key) ?? []), line.slice(eq + 1)]);
  }
  return sections;
}

const value = (unit: Map<string, Map<string, string[]>>, section: string, key: string) => unit.get(section)?.get(key)?.at(-1);

describe('deploy/', () => {
  it.skipIf(!SYSTEMD_ANALYZE)('systemd-analyze verify accepts every unit without a single warning', () => {
    const tmp = tempDir('units-');
    try {
      for (const unit of UNITS) copyFileSync(join(DEPLOY, unit), join(tmp.dir, unit));
      const result = spawnSync(SYSTEMD_ANALYZE!, ['verify', ...UNITS.map((u) => join(tmp.dir, u))], { encoding: 'utf8' });
      // verify exits 0 on unknown keys and bad values (it only warns), so any output is a failure too.
      const warnings = result.stderr.split('\n').filter((l) => l.trim() && !/dbus|Failed to connect to bus/i.test(l));
      expect(warnings).toEqual([]);
      expect(result.status).toBe(0);
    } finally {
      tmp.remove();
    }
  });

  it.each(['occupancy-sync-serve.service', 'occupancy-sync-sync.service'])('%s reads /etc/occupancy-sync/env and is hardened', (name) => {
    const unit = parseUnit(name);
    expect(value(unit, 'Service', 'EnvironmentFile')).toBe('/etc/occupancy-sync/env');
    expect(value(unit, 'Service', 'User')).toBe('occupancy-sync');
    expect(value(unit, 'Service', 'KillSignal')).toBe('SIGTERM');
    for (const [key, expected] of [
      ['NoNewPrivileges', 'yes'],
      ['ProtectSystem', 'strict'],
      ['ProtectHome', 'yes'],
      ['PrivateTmp', 'yes'],
      ['PrivateDevices', 'yes'],
      ['ReadWritePaths', '/var/lib/occupancy-sync'],
      ['StateDirectory', 'occupancy-sync'],
      ['CapabilityBoundingSet', ''],
      ['RestrictAddressFamilies', 'AF_INET AF_INET6 AF_UNIX'],
      ['UMask', '0077'],
    ] as const) {
      expect([key, value(unit, 'Service', key)]).toEqual([key, expected]);
    }
  });

  it('the serve unit restarts on failure but not on authentication or configuration errors', () => {
    const unit = parseUnit('occupancy-sync-serve.service');
    expect(value(unit, 'Service', 'ExecStart')).toMatch(/\/bin\/occupancy-sync\.js serve$/);
    expect(value(unit, 'Service', 'Restart')).toBe('on-failure');
    expect(value(unit, 'Service', 'RestartPreventExitStatus')!.split(/\s+/).map(Number).sort()).toEqual([ExitCode.AUTH, ExitCode.CONFIG].sort());
    expect(value(unit, 'Install', 'WantedBy')).toBe('multi-user.target');
  });

  it('the sync service is a one-shot that counts "lock held" as success, started by the timer every 5 minutes', () => {
    const service = parseUnit('occupancy-sync-sync.service');
    expect(value(service, 'Service', 'Type')).toBe('oneshot');
    expect(value(service, 'Service', 'ExecStart')).toMatch(/\/bin\/occupancy-sync\.js sync$/);
    expect(value(service, 'Service', 'SuccessExitStatus')).toBe(String(ExitCode.LOCKED));
    const timer = parseUnit('occupancy-sync-sync.timer');
    expect(value(timer, 'Timer', 'Unit')).toBe('occupancy-sync-sync.service');
    expect(value(timer, 'Timer', 'OnCalendar')).toBe('*:0/5');
    expect(value(timer, 'Install', 'WantedBy')).toBe('timers.target');
  });

  it('the crontab line is valid, sources the same env file, uses no flock, and documents every exit code', () => {
    const text = readFileSync(join(DEPLOY, 'occupancy-sync.crontab'), 'utf8');
    const lines = text.split('\n').filter((l) => l.trim() && !l.startsWith('#'));
    expect(lines).toHaveLength(1);
    const fields = lines[0]!.trim().split(/\s+/);
    expect(cron.validate(fields.slice(0, 5).join(' '))).toBe(true);
    expect(fields[5]).toBe('occupancy-sync');
    const command = fields.slice(6).join(' ');
    expect(command).toContain('. /etc/occupancy-sync/env');
    expect(command).toMatch(/occupancy-sync\.js sync\b/);
    expect(command).not.toMatch(/flock/);
    for (const code of Object.values(ExitCode)) expect(text).toMatch(new RegExp(`#\\s+${code}\\s`));
  });

  it('env.example reads the same in sh (crontab) as in systemd', () => {
    const file = join(DEPLOY, 'env.example');
    const sh = execFileSync('sh', ['-c', `set -a; . "${file}"; printf '%s\\n' "$SYNC_CRON" "$DATABASE_URL"`], { encoding: 'utf8', env: {} });
    expect(sh).toBe('*/5 * * * *\nfile:/var/lib/occupancy-sync/occupancy.db\n');
  });
});
