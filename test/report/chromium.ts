import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { tempDir } from '../helpers/tmp.ts';

const run = promisify(execFile);

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);

/** Flags that keep headless Chromium off the network and away from the user's profile. */
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--hide-scrollbars',
];

async function chromium(args: string[]): Promise<string> {
  const profile = tempDir('chromium-profile-');
  try {
    const { stdout } = await run(CHROMIUM, [...FLAGS, `--user-data-dir=${profile.dir}`, ...args], {
      timeout: 60_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  } finally {
    profile.remove();
  }
}

/** The DOM as Chromium parsed and laid it out. */
export function dumpDom(file: string): Promise<string> {
  return chromium(['--dump-dom', `file://${file}`]);
}

export async function screenshot(file: string, png: string, size = '1100,2600'): Promise<void> {
  await chromium([`--window-size=${size}`, `--screenshot=${png}`, `file://${file}`]);
}
