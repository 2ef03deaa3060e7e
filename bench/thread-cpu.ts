import { readFileSync } from 'node:fs';

/**
 * The calling thread's user + system CPU (Linux): fields 14 and 15 of /proc/thread-self/stat, after the command name
 * (which may hold spaces), in clock ticks (USER_HZ, 100 on Linux). Undefined where the file does not exist.
 */
export function mainThreadCpuMs(): number | undefined {
  try {
    const stat = readFileSync('/proc/thread-self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}
