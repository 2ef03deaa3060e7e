/**
 * Deterministic, fast hashing for generated data. Not cryptographic: the sandbox derives a million observation ids
 * per benchmark run, and a SHA per id would dominate the time. Murmur3's finalizer gives well-spread 32-bit words.
 */

export const Tag = {
  customer: 1,
  building: 2,
  floorSpace: 3,
  observation: 4,
  status: 5,
  headcount: 6,
  delay: 7,
  key: 8,
  fault: 9,
  delivery: 10,
  name: 11,
  capacity: 12,
  webhook: 13,
  floor: 14,
  room: 15,
} as const;

export function mix32(input: number): number {
  let h = input >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Hashes integers (any safe integer, negative included) to one unsigned 32-bit word. */
export function hashInts(parts: readonly number[]): number {
  let h = 0x811c9dc5;
  for (const p of parts) {
    const lo = p >>> 0;
    const hi = Math.floor(p / 4294967296) >>> 0;
    h = mix32(Math.imul(h ^ lo, 0x01000193) + 0x9e3779b9);
    if (hi !== 0) h = mix32(Math.imul(h ^ hi, 0x01000193) + 0x7f4a7c15);
  }
  return h;
}

/** FNV-1a of a string, so string identities (webhook ids) can feed hashInts. */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return mix32(h);
}

/** Uniform in [0, 1). */
export function rand01(parts: readonly number[]): number {
  return hashInts(parts) / 4294967296;
}

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

export function hex32(word: number): string {
  return HEX[(word >>> 24) & 0xff]! + HEX[(word >>> 16) & 0xff]! + HEX[(word >>> 8) & 0xff]! + HEX[word & 0xff]!;
}

/** A version-4-shaped UUID derived from `parts` (lowercase, canonical 8-4-4-4-12 form). */
export function uuidFrom(parts: readonly number[]): string {
  const base = hashInts(parts);
  const w0 = mix32(base ^ 0x1b873593);
  const w1 = (mix32(base ^ 0xcc9e2d51) & 0xffff0fff) | 0x00004000;
  const w2 = (mix32(base ^ 0xe6546b64) & 0x3fffffff) | 0x80000000;
  const w3 = mix32(hashInts([base, ...parts]));
  const a = hex32(w0);
  const b = hex32(w1);
  const c = hex32(w2);
  const d = hex32(w3);
  return `${a}-${b.slice(0, 4)}-${b.slice(4)}-${c.slice(0, 4)}-${c.slice(4)}${d}`;
}

/** A secret-looking hex string derived from `parts`, `bytes` long before encoding. */
export function hexFrom(parts: readonly number[], bytes: number): string {
  let out = '';
  for (let i = 0; out.length < bytes * 2; i++) out += hex32(hashInts([...parts, i]));
  return out.slice(0, bytes * 2);
}

/**
 * The hot path of observation generation: four words for (per-series hash, tick), without arrays. `words[0]` orders
 * ids (it is the first 8 hex characters), so callers can sort numerically and compare strings only on ties.
 */
export function seriesWords(series: number, k: number, out: Uint32Array): void {
  const kk = Math.imul(k + 1, 0x9e3779b1);
  out[0] = mix32(mix32(series ^ 0x1b873593 ^ kk) + series);
  out[1] = mix32(mix32(series ^ 0xcc9e2d51 ^ kk) + out[0]!);
  out[2] = mix32(mix32(series ^ 0xe6546b64 ^ kk) + out[1]!);
  out[3] = mix32(mix32(series ^ 0x85ebca6b ^ kk) + out[2]!);
}

/** Formats four words as a version-4-shaped UUID. */
export function uuidFromWords(w: Uint32Array): string {
  const a = hex32(w[0]!);
  const b = hex32((w[1]! & 0xffff0fff) | 0x00004000);
  const c = hex32((w[2]! & 0x3fffffff) | 0x80000000);
  const d = hex32(w[3]!);
  return `${a}-${b.slice(0, 4)}-${b.slice(4)}-${c.slice(0, 4)}-${c.slice(4)}${d}`;
}
