/**
 * A count as people read it: `1234567` as `1,234,567`, what `toLocaleString('en-US')` writes for whole numbers,
 * without loading ICU's number formatting, which a short cron run would pay for one summary line
 * (docs/performance.md, "Steady state").
 */
export function formatCount(n: number): string {
  const whole = Math.round(n);
  if (!Number.isFinite(whole)) return String(whole);
  return String(whole).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}
