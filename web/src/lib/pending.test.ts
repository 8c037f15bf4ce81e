import { describe, expect, it } from 'vitest';
import type { ReportSummary, ScanStatus } from './api/types';
import { filtersFromParams } from './filters';
import { pendingScans } from './pending';

const scan = (digest: string, status: ScanStatus['status'], updatedAt: string, namespace = 'a'): ScanStatus => ({
  digest, image: `r@${digest}`, namespace, scanner: 's', job: 'j', status, attempt: 1, updatedAt,
});
const scans = new Map(
  [
    scan('sha256:queued', 'queued', '2026-11-23T10:00:00Z'),
    scan('sha256:scanning', 'scanning', '2026-11-23T11:00:00Z', 'b'),
    scan('sha256:failed', 'failed', '2026-11-23T09:00:00Z'),
    scan('sha256:done', 'done', '2026-11-23T12:00:00Z'),
    scan('sha256:reported', 'failed', '2026-11-23T12:00:00Z'),
  ].map((s) => [s.digest, s]),
);
const rows = [{ digest: 'sha256:reported' } as ReportSummary];
const f = (qs = '') => filtersFromParams(new URLSearchParams(qs));

describe('running images without a report', () => {
  it('lists unfinished scans of digests without a row, failed first, then newest', () => {
    expect(pendingScans(scans, rows, f(), true).map((s) => s.digest)).toEqual(['sha256:failed', 'sha256:scanning', 'sha256:queued']);
  });

  it('follows the namespace filter', () => {
    expect(pendingScans(scans, rows, f('namespace=b'), true).map((s) => s.digest)).toEqual(['sha256:scanning']);
  });

  it('shows none while pages are missing or a report-only filter is set', () => {
    expect(pendingScans(scans, rows, f(), false)).toEqual([]);
    for (const qs of ['q=nginx', 'minSeverity=high', 'fixable=true', 'running=false']) {
      expect(pendingScans(scans, rows, f(qs), true)).toEqual([]);
    }
    expect(pendingScans(scans, rows, f('running=true'), true)).toHaveLength(3);
  });
});
