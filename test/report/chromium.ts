import { existsSync } from 'node:fs';
import { spawnProcess } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';

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
    const child = spawnProcess(CHROMIUM, [...FLAGS, `--user-data-dir=${profile.dir}`, ...args], { name: `chromium ${args[0]}` });
    try {
      const { code, signal } = await child.exit(60_000, `chromium ${args[0]} to finish`);
      if (code !== 0) throw new Error(`chromium ${args.join(' ')} exited with ${code ?? signal}:\n${child.stderr().slice(-3000)}`);
      return child.stdout();
    } finally {
      await child.kill('SIGKILL').catch(() => {});
    }
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
