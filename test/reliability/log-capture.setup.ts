import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, inject } from 'vitest';
import { addLogTap } from '../../src/logger.ts';
import { findLeaks, type CaptureSummary } from './log-audit.ts';

/**
 * Suite-wide log capture (vitest setupFiles: runs in every test file). Every line of every logger made with
 * createLogger/memoryLogger is appended to a per-file capture under the run's directory, together with every value
 * registered with any SecretRegistry. At the end of the file its lines are searched for those secrets and for
 * anything shaped like a JWT; the global teardown (log-capture.global.ts) searches all files again with every
 * secret of the run and the test suites' fixed secrets.
 *
 * The lines searched are the EMITTED ones (after the SecretRegistry scrub): what an operator's log file receives.
 * Lines where the scrub had to censor something are counted separately (the second net caught a secret the code
 * should not have logged in the first place), so the audit also shows how much we lean on it.
 */

declare module 'vitest' {
  export interface ProvidedContext {
    logCaptureDir: string;
  }
}

const dir = (() => {
  try {
    return inject('logCaptureDir') || join(tmpdir(), 'occupancy-sync-log-capture');
  } catch {
    return join(tmpdir(), 'occupancy-sync-log-capture');
  }
})();
mkdirSync(dir, { recursive: true });
const testFile = expect.getState().testPath ?? 'unknown';
const stem = join(dir, `${process.pid}-${Date.now()}-${Math.random().toString(16).slice(2, 8)}`);
const linesPath = `${stem}.lines`;
const secrets = new Set<string>();
let buffer: string[] = [];
let lines = 0;
let scrubbed = 0;

const flush = () => {
  if (buffer.length === 0) return;
  appendFileSync(linesPath, buffer.join(''), { mode: 0o600 });
  buffer = [];
};

addLogTap({
  line(emitted, beforeScrub) {
    lines += 1;
    if (emitted !== beforeScrub) scrubbed += 1;
    buffer.push(emitted.endsWith('\n') ? emitted : `${emitted}\n`);
    if (buffer.length >= 500) flush();
  },
  secret(value) {
    secrets.add(value);
  },
});

afterAll(async () => {
  flush();
  const { readFileSync, existsSync } = await import('node:fs');
  const text = existsSync(linesPath) ? readFileSync(linesPath, 'utf8') : '';
  const leaks = findLeaks(text, secrets);
  const summary: CaptureSummary = { testFile, lines, scrubbed, secrets: [...secrets], leaks };
  writeFileSync(`${stem}.json`, JSON.stringify(summary), { mode: 0o600 });
  expect(leaks, `secrets found in the log lines of ${testFile}`).toEqual([]);
});
