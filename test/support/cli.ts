import { main } from '../../src/cli/main.ts';

/** Collects what a command writes. */
export function capture(): { write(text: string): void; text(): string } {
  let text = '';
  return { write: (s: string) => void (text += s), text: () => text };
}

/** `occupancy-sync <args>` in this process, as bin/ runs it, with `env` as its whole environment. */
export async function runMain(args: string[], env: Record<string, string>, signal = new AbortController().signal): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = capture();
  const stderr = capture();
  const code = await main(['node', 'occupancy-sync', ...args], { env, stdout, stderr, signal });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}
