import { readdirSync, readFileSync } from 'node:fs';

/**
 * The local Postgres server's CPU so far: utime + stime of every process named postgres, and of the children they
 * reaped (the postmaster reaps a client's backends when they end, so a finished run's backends are counted), in CPU
 * seconds (Linux /proc). Undefined where /proc is not there or shows no postgres process (a server on another
 * machine). Every other client of the same server counts too: read it on a machine that runs only the benchmark.
 */
export function postgresCpuSeconds(): number | undefined {
  const tick = 100;
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return undefined;
  }
  let total = 0;
  let found = false;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      if (!stat.slice(stat.indexOf('(') + 1, close).startsWith('postgres')) continue;
      const fields = stat.slice(close + 2).split(' ');
      found = true;
      total += (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / tick;
    } catch {
      // The process ended while being read.
    }
  }
  return found ? total : undefined;
}
