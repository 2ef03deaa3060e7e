import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import nodeVersion from '../../src/cli/node-version.cjs';
import { invocation } from '../../src/cli/invocation.ts';
import { ROOT } from '../support/process.ts';
import { Figures } from '../reliability/figures.ts';

/**
 * The Node check every start runs first (src/cli/node-version.cjs) says what package.json "engines" and the README
 * say. What it does on a real old Node: test/cli/readme.test.ts (a clone) and test/package/ (the package).
 */

const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
const OLD = ['0.10.48', '8.17.0', '12.22.12', '14.21.3', '16.20.2', '18.20.8', '20.20.2', '22.0.0', 'v22.18.0', 'garbage'];

const figures = new Figures(
  { section: 'node-version', title: 'A Node.js too old: the check every start runs first (test/cli/node-version.test.ts; the package on a real old Node: test/package/tarball.test.ts)' },
  ['node-version/too-old'],
);
afterAll(() => void figures.publish());

describe('the supported Node lines', () => {
  it('are too old exactly below the lowest line of package.json "engines"', () => {
    const lowest = /^\^(\d+)\.(\d+)\.0\b/.exec(PKG.engines.node);
    expect(lowest, PKG.engines.node).not.toBeNull();
    const [major, minor] = [Number(lowest![1]), Number(lowest![2])];
    expect(nodeVersion.tooOld(`${major}.${minor}.0`)).toBe(false);
    expect(nodeVersion.tooOld(`${major}.${minor - 1}.99`)).toBe(true);
    expect(nodeVersion.tooOld(`${major - 1}.99.0`)).toBe(true);
    for (const line of PKG.engines.node.split('||').map((range) => /(\d+)\.(\d+)\.(\d+)/.exec(range)![0])) {
      expect(nodeVersion.tooOld(line), line).toBe(false);
    }
    for (const old of OLD) {
      expect(nodeVersion.tooOld(old), old).toBe(true);
    }
  });

  it('are named as the README names them, and a refusal is one line with the Node found and the fix', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme).toContain(`Requirements: **${nodeVersion.SUPPORTED}**`);
    expect(nodeVersion.refusal('v20.20.2', 'install one')).toBe(
      'occupancy-sync: Node.js v20.20.2 is too old: occupancy-sync needs Node.js 22 (22.19 or later), 24 or 26. Fix: install one',
    );
    expect(readme).toMatch(/\| 78 \| Configuration error.*a Node\.js too old to run occupancy-sync/);
    expect(nodeVersion.EXIT_CODE).toBe(78);
    figures.record({
      key: 'node-version/too-old',
      tried: `Node.js versions below package.json "engines" (${OLD[0]} to ${OLD.at(-2)}, and an unreadable version)`,
      count: OLD.length,
      held:
        'each judged too old; the refusal is one line naming the Node found, the lines needed and the fix, exit 78 (formerly a SyntaxError about enableCompileCache); ' +
        'the installed command and the compiled entry systemd units start print exactly that line on a real old Node (test/package/tarball.test.ts)',
    });
  });
});

describe('how hints spell the command', () => {
  it('npx occupancy-sync in a clone and under npx, the bare name from an installed command', () => {
    expect(invocation(['node', '/repo/bin/occupancy-sync.cjs'], {}, true)).toBe('npx occupancy-sync');
    expect(invocation(['node', '/home/u/.npm/_npx/0123/node_modules/.bin/occupancy-sync'], { npm_lifecycle_event: 'npx' }, true)).toBe('npx occupancy-sync');
    expect(invocation(['node', '/usr/lib/node_modules/.bin/occupancy-sync'], { npm_lifecycle_event: 'npx' }, false)).toBe('npx occupancy-sync');
    expect(invocation(['node', '/usr/bin/occupancy-sync'], {}, false)).toBe('occupancy-sync');
    expect(invocation(['node', '/opt/app/node_modules/occupancy-sync/dist/bin/occupancy-sync.js'], {}, false)).toBe('npx occupancy-sync');
  });
});
