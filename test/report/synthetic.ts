import { totalOf, type FloorSpaceSummary, type HourlyPoint, type ReportData } from '../../src/report/types.ts';

/**
 * A week of deterministic hourly figures for a few floor spaces with an office-hours shape, for rendering tests.
 * (The view tests use a small hand-computed fixture stored in a real database instead.)
 */
export function syntheticReport(floorSpaces = 4, days = 7): ReportData {
  const start = Date.UTC(2026, 0, 5); // a Monday
  const ids = Array.from({ length: floorSpaces }, (_, i) => `${(0x1a2b3c4d + i * 0x111111).toString(16)}-0000-4000-8000-${String(i).padStart(12, '0')}`);
  const hourly: HourlyPoint[] = [];
  ids.forEach((id, i) => {
    for (let h = 0; h < days * 24; h++) {
      const t = start + h * 3_600_000;
      const hour = new Date(t).getUTCHours();
      const weekday = (new Date(t).getUTCDay() + 6) % 7;
      if (i === 2 && h > 50 && h < 60) continue; // a gap: the line must break, not interpolate
      const office = weekday < 5 && hour >= 8 && hour < 18;
      const peakness = office ? Math.sin(((hour - 8) / 10) * Math.PI) : 0;
      const avg = Math.round((office ? 2 + (8 + i * 3) * peakness : (h * 7 + i) % 3 === 0 ? 1 : 0) * 100) / 100;
      const readings = 12;
      const occupied = avg > 0 ? Math.min(readings, Math.round(readings * Math.min(1, avg / 3))) : 0;
      hourly.push({
        customerId: 'cust-1',
        floorSpaceId: id,
        hour: new Date(t).toISOString(),
        readings,
        occupiedReadings: occupied,
        totalHeadcount: Math.round(avg * readings),
        avgHeadcount: Math.round(avg * readings) / readings,
        peakHeadcount: Math.ceil(avg * 1.3),
        occupiedShare: occupied / readings,
      });
    }
  });
  const floor: FloorSpaceSummary[] = ids.map((id) => {
    const pts = hourly.filter((p) => p.floorSpaceId === id);
    const readings = pts.reduce((n, p) => n + p.readings, 0);
    const occupied = pts.reduce((n, p) => n + p.occupiedReadings, 0);
    const total = pts.reduce((n, p) => n + p.totalHeadcount, 0);
    return {
      customerId: 'cust-1',
      customerName: null,
      floorSpaceId: id,
      readings,
      occupiedReadings: occupied,
      occupiedShare: occupied / readings,
      avgHeadcount: total / readings,
      peakHeadcount: Math.max(...pts.map((p) => p.peakHeadcount)),
      firstHour: pts[0]!.hour,
      lastHour: pts.at(-1)!.hour,
      latestObservedAt: '2026-01-11T23:55:00.000Z',
      latestStatus: 'NotOccupied',
      latestHeadcount: 0,
    };
  });
  return {
    range: { from: new Date(start).toISOString(), to: new Date(start + days * 86_400_000).toISOString() },
    customerId: null,
    generatedAt: '2026-01-12T06:00:00.000Z',
    timeZone: 'UTC',
    floorSpaces: floor,
    total: totalOf(floor),
    hourly,
  };
}
