// Running images without a report (queued, scanning, or failed scans) join
// the images table as rows of their own. Only the scan list knows them, so
// they are shown only when the table can tell they have no report: every
// page is loaded, and no filter that only reports can match (text,
// severity, fixable, "not running") is set.
import type { ReportSummary, ScanStatus } from './api/types';
import type { ImageFilters } from './filters';

export const MAX_PENDING = 200;

export function pendingScans(
  scans: ReadonlyMap<string, ScanStatus>,
  rows: readonly ReportSummary[],
  filters: ImageFilters,
  complete: boolean,
): ScanStatus[] {
  if (!complete || filters.q.trim() || filters.minSeverity || filters.fixable || filters.running === 'false') return [];
  const reported = new Set(rows.map((r) => r.digest));
  const out: ScanStatus[] = [];
  for (const s of scans.values()) {
    if (s.status === 'done' || reported.has(s.digest)) continue;
    if (filters.namespace && s.namespace !== filters.namespace) continue;
    out.push(s);
  }
  // Failed first (they need someone), then the most recently updated.
  out.sort((a, b) => Number(b.status === 'failed') - Number(a.status === 'failed') || (a.updatedAt < b.updatedAt ? 1 : a.updatedAt > b.updatedAt ? -1 : 0));
  return out.slice(0, MAX_PENDING);
}
