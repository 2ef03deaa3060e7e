import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { ROOT } from '../test/support/process.ts';
import { originalLine } from './source-lines.ts';

/**
 * Reads a V8 `.cpuprofile` (node --cpu-prof) and ranks functions by self time, and by total (inclusive) time for
 * frames of our own code, so the report names where a sync spends its time without opening DevTools.
 */

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface Frame {
  name: string;
  /** repo-relative path:line, or a node: / native label. */
  where: string;
  selfMs: number;
  selfPercent: number;
  totalMs: number;
  totalPercent: number;
}

function label(node: ProfileNode): { name: string; where: string } {
  const { functionName, url, lineNumber, columnNumber } = node.callFrame;
  const name = functionName || '(anonymous)';
  if (!url) return { name, where: '(native)' };
  if (!url.startsWith('file://')) return { name, where: `${url}:${lineNumber + 1}` };
  const absolute = new URL(url).pathname;
  const line = lineNumber === 0 && absolute.endsWith('.ts') ? originalLine(absolute, columnNumber, functionName) : undefined;
  return { name, where: `${relative(ROOT, absolute)}:${line ?? lineNumber + 1}` };
}

export function summarize(file: string): { totalMs: number; frames: Frame[] } {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const totalUs = profile.endTime - profile.startTime;

  const frames = new Map<string, Frame>();
  const frameOf = (node: ProfileNode): Frame => {
    const { name, where } = label(node);
    const key = `${name} ${where}`;
    let f = frames.get(key);
    if (!f) frames.set(key, (f = { name, where, selfMs: 0, selfPercent: 0, totalMs: 0, totalPercent: 0 }));
    return f;
  };
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    frameOf(node).selfMs += us / 1000;
    // Inclusive time: each ancestor frame once per sample stack (recursion counted once).
    const seen = new Set<Frame>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = frameOf(byId.get(cur)!);
      if (!seen.has(f)) {
        seen.add(f);
        f.totalMs += us / 1000;
      }
    }
  }
  for (const f of frames.values()) {
    f.selfPercent = (100 * f.selfMs * 1000) / totalUs;
    f.totalPercent = (100 * f.totalMs * 1000) / totalUs;
  }
  return { totalMs: totalUs / 1000, frames: [...frames.values()] };
}

export function topSelf(frames: Frame[], n: number): Frame[] {
  return [...frames].sort((a, b) => b.selfMs - a.selfMs).slice(0, n);
}

/** Our own functions (src/, jobs/) by inclusive time: where the engine's time goes, callees included. */
export function topOwnTotal(frames: Frame[], n: number): Frame[] {
  return frames
    .filter((f) => /^(src|jobs)\//.test(f.where))
    .sort((a, b) => b.totalMs - a.totalMs)
    .slice(0, n);
}

export function formatFrames(frames: Frame[], kind: 'self' | 'total'): string[] {
  return frames.map((f) => {
    const ms = kind === 'self' ? f.selfMs : f.totalMs;
    const pct = kind === 'self' ? f.selfPercent : f.totalPercent;
    return `${pct.toFixed(1).padStart(5)}%  ${ms.toFixed(0).padStart(6)} ms  ${f.name}  ${f.where}`;
  });
}

/** CLI: node --import tsx bench/cpuprofile.ts FILE.cpuprofile [N] */
if (import.meta.url === `file://${process.argv[1]}`) {
  const { totalMs, frames } = summarize(process.argv[2]!);
  const n = Number(process.argv[3] ?? 25);
  console.log(`profile: ${totalMs.toFixed(0)} ms\n-- self --`);
  console.log(formatFrames(topSelf(frames, n), 'self').join('\n'));
  console.log('-- own code, inclusive --');
  console.log(formatFrames(topOwnTotal(frames, n), 'total').join('\n'));
}
