import { openSync, writeSync, closeSync, statSync, rmSync, mkdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { openStore } from './src/store/index.ts';
const dir = '/tmp/st-corrupt'; rmSync(dir, { recursive: true, force: true }); mkdirSync(dir);
const path = `${dir}/x.db`;
const database = { url: `file:${path}`, dialect: 'sqlite' as const, sqlitePath: path };
const N = Number(process.argv[2] ?? 200_000);
let store = await openStore(database); await store.migrate();
const cp = (w: string | null) => ({ customerId: 'c', stream: 'occupancy', watermark: w, windowStart: null, windowEnd: null, pageCursor: null, rangeStart: null, rangeEnd: null });
const t0 = Date.parse('2025-01-01T00:00:00.000Z');
for (let p = 0; p < N / 5000; p++) {
  const records = Array.from({ length: 5000 }, (_, i) => ({ floorSpaceId: `fs-${i % 500}`, observedAt: new Date(t0 + (p * 10 + Math.floor(i / 500)) * 60_000).toISOString(), occupancyStatus: i % 2 ? 'CurrentlyOccupied' : 'Unoccupied', headcount: i % 7, eventId: `e-${p}-${i}` }));
  await store.commitPage({ customerId: 'c', sink: 'occupancy', records, at: '2026-01-01T00:00:00.000Z', checkpoint: cp(null) });
}
await store.close();
const size = statSync(path).size;
console.log('size', (size / 1e6).toFixed(1), 'MB');
const db0 = new Database(path, { readonly: true });
let t = performance.now(); console.log('quick_check before', db0.pragma('quick_check', { simple: true }), (performance.now() - t).toFixed(0), 'ms'); db0.close();
const fd = openSync(path, 'r+'); writeSync(fd, randomBytes(65536), 0, 65536, Math.floor(size / 2 / 4096) * 4096); closeSync(fd);
const db = new Database(path, { readonly: true });
t = performance.now(); console.log('quick_check after', db.pragma('quick_check(5)'), (performance.now() - t).toFixed(0), 'ms');
t = performance.now(); try { console.log(db.prepare('SELECT count(*) FROM occupancy').get()); } catch (e) { console.log('count:', (e as Error).message); } console.log((performance.now() - t).toFixed(0), 'ms');
db.close();
store = await openStore(database); await store.migrate();
try { await store.commitPage({ customerId: 'c', sink: 'occupancy', records: [{ floorSpaceId: 'fs-new', observedAt: '2026-01-01T00:00:00.000Z', occupancyStatus: 'x', headcount: 1, eventId: null }], at: '2026-01-01T00:00:00.000Z', checkpoint: cp(null) }); console.log('commit ok'); } catch (e) { console.log('commit:', (e as Error).message); }
await store.close();
