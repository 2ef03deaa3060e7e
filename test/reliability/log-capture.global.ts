import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { findLeaks, type CaptureSummary, type Leak } from './log-audit.ts';
import { FIGURES_DIR } from './figures.ts';

/**
 * Global half of the suite-wide log audit (see log-capture.setup.ts). Setup gives every test file the run's capture
 * directory; teardown reads every file's capture once more, searches it for the fixed secrets the test suites use
 * (webhook secrets and header values handed straight to a receiver, which no SecretRegistry ever sees), writes
 * test-results/reliability/log-audit.json, and fails the run on any hit.
 */

/** Fixed secrets of the test suites, loaded lazily so a missing helper never breaks the run. */
async function knownTestSecrets(): Promise<string[]> {
  const values: string[] = [];
  const take = (module: Record<string, unknown>) => {
    for (const [name, value] of Object.entries(module)) {
      if (/SECRET/.test(name) && typeof value === 'string') values.push(value);
      if (/HEADER/.test(name) && value && typeof value === 'object' && typeof (value as { value?: unknown }).value === 'string') values.push((value as { value: string }).value);
    }
  };
  for (const path of ['../webhooks/helpers.ts', './webhook-stream-gen.ts', './secret-fixtures.ts']) {
    try {
      take((await import(path)) as Record<string, unknown>);
    } catch {
      // a suite that is not there is not audited for its constants
    }
  }
  return values.filter((v) => v.length >= 8);
}

export default function setup(project: TestProject): () => Promise<void> {
  const dir = join(tmpdir(), `occupancy-sync-log-capture-${process.pid}-${Date.now()}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  project.provide('logCaptureDir', dir);
  return async () => {
    if (!existsSync(dir)) return;
    const known = await knownTestSecrets();
    const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
    let lines = 0;
    let scrubbed = 0;
    const secrets = new Set<string>();
    const leaks: Array<Leak & { testFile: string }> = [];
    const scrubbedByFile: Record<string, number> = {};
    for (const file of files) {
      const summary = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CaptureSummary;
      lines += summary.lines;
      scrubbed += summary.scrubbed;
      for (const s of summary.secrets) secrets.add(s);
      if (summary.scrubbed) scrubbedByFile[summary.testFile.replace(/^.*?\/test\//, 'test/')] = summary.scrubbed;
      const linesPath = join(dir, file.replace(/\.json$/, '.lines'));
      const text = existsSync(linesPath) ? readFileSync(linesPath, 'utf8') : '';
      for (const leak of [...summary.leaks, ...findLeaks(text, [], known, false)]) leaks.push({ ...leak, testFile: summary.testFile });
    }
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(FIGURES_DIR, { recursive: true });
    const audit = { testFiles: files.length, lines, secretsRegistered: secrets.size, knownTestSecrets: known.length, scrubbedLines: scrubbed, scrubbedByFile, leaks };
    writeFileSync(join(FIGURES_DIR, 'log-audit.json'), `${JSON.stringify(audit, null, 2)}\n`);
    if (leaks.length > 0) {
      process.exitCode = 1;
      throw new Error(`log audit: ${leaks.length} secret(s) found in emitted log lines: ${JSON.stringify(leaks.slice(0, 10))}`);
    }
  };
}
