import Database from 'better-sqlite3';
const path = process.argv[2]!;
for (let i = 0; i < 3; i++) {
  const db = new Database(path, { readonly: true });
  let t = performance.now(); db.pragma('quick_check'); const qc = performance.now() - t;
  t = performance.now(); db.prepare('SELECT count(*) FROM occupancy_readings').get(); const cnt = performance.now() - t;
  t = performance.now(); db.pragma('integrity_check'); const ic = performance.now() - t;
  console.log(`quick_check ${qc.toFixed(0)} ms, count(*) ${cnt.toFixed(0)} ms, integrity_check ${ic.toFixed(0)} ms`);
  db.close();
}
