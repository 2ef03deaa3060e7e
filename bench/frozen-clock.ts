/**
 * `node --import tsx --import ./bench/frozen-clock.ts bin/occupancy-sync.ts sync ...` with BENCH_FROZEN_NOW=<epoch ms>:
 * freezes Date.now() (what src/clock.ts systemClock reads), so an incremental sync plans exactly the window the
 * replay server recorded ([watermark - SYNC_LOOKBACK, now - SYNC_SETTLE_DELAY)) whenever it runs. Timers are not
 * affected (they use a monotonic clock). Used by the steady-state benchmark only.
 */
const frozen = Number(process.env.BENCH_FROZEN_NOW);
if (Number.isFinite(frozen)) Date.now = () => frozen;
