import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { get } from 'svelte/store';
import type { FindingsChanged, ReportSummary, ScanStatus } from '../api/types';
import { createLiveStore, framesAfter, type LiveStore } from './live';

const counts = { critical: 0, high: 0, medium: 0, low: 0, negligible: 0, unknown: 0 };

function row(n: number, extra: Partial<ReportSummary> = {}): ReportSummary {
  const digest = `sha256:${n.toString(16).padStart(64, '0')}`;
  return {
    digest,
    image: `registry.local/app${n}@${digest}`,
    scannedAt: '2026-11-21T10:00:00Z',
    storedAt: '2026-11-21T10:00:01Z',
    grypeVersion: '0.121.2',
    dbBuilt: '',
    cause: 'scan',
    counts: { ...counts, high: n },
    fixable: 0,
    findings: n,
    kev: 0,
    maxRisk: 0,
    ...extra,
  };
}

function scan(n: number, status: ScanStatus['status']): ScanStatus {
  return {
    digest: row(n).digest,
    image: row(n).image,
    namespace: 'apps',
    scanner: 'default',
    job: `scan-${n}`,
    status,
    attempt: 1,
    updatedAt: '2026-11-21T10:00:00Z',
  };
}

describe('live store', () => {
  let store: LiveStore;
  beforeEach(() => {
    vi.useFakeTimers();
    store = createLiveStore({ highlightMs: 1000 });
  });
  afterEach(() => {
    store.destroy();
    vi.useRealTimers();
  });

  it('starts unloaded and connecting', () => {
    const s = get(store);
    expect(s.loaded).toBe(false);
    expect(s.rows).toEqual([]);
    expect(s.connection).toBe('connecting');
  });

  it('first resync loads rows without highlighting them', () => {
    store.resync({ items: [row(1), row(2)], total: 7, nextCursor: 'c2' });
    const s = get(store);
    expect(s.loaded).toBe(true);
    expect(s.rows.map((r) => r.findings)).toEqual([1, 2]);
    expect(s.total).toBe(7);
    expect(s.nextCursor).toBe('c2');
    expect(s.highlighted.size).toBe(0);
  });

  it('later resync highlights only new and changed rows, and drops vanished ones', () => {
    store.resync({ items: [row(1), row(2), row(3)], total: 3 });
    const changed = row(2, { counts: { ...counts, critical: 1, high: 2 } });
    store.resync({ items: [row(4), row(1), changed], total: 3 });
    const s = get(store);
    expect(s.rows.map((r) => r.digest)).toEqual([row(4).digest, row(1).digest, row(2).digest]);
    expect([...s.highlighted].sort()).toEqual([row(2).digest, row(4).digest].sort());
    expect(s.nextCursor).toBeUndefined();
  });

  it('highlights expire after the highlight period', () => {
    store.resync({ items: [], total: 0 });
    store.add(row(1));
    expect(get(store).highlighted.has(row(1).digest)).toBe(true);
    vi.advanceTimersByTime(999);
    expect(get(store).highlighted.has(row(1).digest)).toBe(true);
    vi.advanceTimersByTime(1);
    expect(get(store).highlighted.size).toBe(0);
  });

  it('add puts a new row first and counts it; adding a known digest updates it in place', () => {
    store.resync({ items: [row(1), row(2)], total: 2 });
    store.add(row(3));
    expect(get(store).rows.map((r) => r.findings)).toEqual([3, 1, 2]);
    expect(get(store).total).toBe(3);
    store.add(row(2, { fixable: 9 }));
    const s = get(store);
    expect(s.rows.map((r) => r.findings)).toEqual([3, 1, 2]);
    expect(s.rows[2].fixable).toBe(9);
    expect(s.total).toBe(3);
  });

  it('update merges a patch into a known row and reports unknown digests', () => {
    store.resync({ items: [row(1)], total: 1 });
    expect(store.update({ digest: row(1).digest, fixable: 5 })).toBe(true);
    expect(get(store).rows[0]).toMatchObject({ fixable: 5, grypeVersion: '0.121.2' });
    expect(get(store).highlighted.has(row(1).digest)).toBe(true);
    expect(store.update({ digest: row(9).digest, fixable: 5 })).toBe(false);
    expect(get(store).rows).toHaveLength(1);
  });

  it('remove drops the row and decrements the total; unknown digests are a no-op', () => {
    store.resync({ items: [row(1), row(2)], total: 10 });
    expect(store.remove(row(1).digest)).toBe(true);
    expect(get(store).rows.map((r) => r.findings)).toEqual([2]);
    expect(get(store).total).toBe(9);
    expect(store.remove(row(1).digest)).toBe(false);
    expect(get(store).total).toBe(9);
  });

  it('append adds the next page without duplicates or highlights', () => {
    store.resync({ items: [row(1), row(2)], total: 4, nextCursor: 'a' });
    store.append({ items: [row(2), row(3), row(4)], total: 4 });
    const s = get(store);
    expect(s.rows.map((r) => r.findings)).toEqual([1, 2, 3, 4]);
    expect(s.nextCursor).toBeUndefined();
    expect(s.highlighted.size).toBe(0);
  });

  it('reset forgets rows so the next resync highlights nothing', () => {
    store.resync({ items: [row(1)], total: 1 });
    store.reset();
    expect(get(store).loaded).toBe(false);
    store.resync({ items: [row(5)], total: 1 });
    expect(get(store).highlighted.size).toBe(0);
  });

  it('applies report.stored: known rows update in place, unknown ones ask for a refetch', () => {
    store.resync({ items: [row(1)], total: 1 });
    const known = store.apply({
      type: 'report.stored',
      id: 'e1',
      time: '2026-11-21T10:05:00Z',
      data: { digest: row(1).digest, image: row(1).image, scannedAt: '2026-11-21T10:05:00Z', counts: { ...counts, critical: 4 }, fixable: 2, findings: 4 },
    });
    expect(known).toBe(false);
    expect(get(store).rows[0].counts.critical).toBe(4);
    const unknown = store.apply({
      type: 'report.stored',
      id: 'e2',
      time: '2026-11-21T10:06:00Z',
      data: { digest: row(2).digest, image: row(2).image, scannedAt: '2026-11-21T10:06:00Z', counts, fixable: 0, findings: 0 },
    });
    expect(unknown).toBe(true);
    const s = get(store);
    expect(s.rows).toHaveLength(1);
    expect(s.changes).toBe(2);
    expect(s.lastEvent?.id).toBe('e2');
  });

  it('applies report.deleted and scan.status', () => {
    store.resync({ items: [row(1), row(2)], total: 2 });
    store.apply({ type: 'report.deleted', id: 'd', time: '', data: { digest: row(1).digest, image: row(1).image } });
    expect(get(store).rows.map((r) => r.findings)).toEqual([2]);
    store.setScans([scan(2, 'done')]);
    store.apply({ type: 'scan.status', id: 's', time: '', data: { ...scan(3, 'failed'), reason: 'ImagePullFailed' } });
    const s = get(store);
    expect(s.scans.get(row(2).digest)?.status).toBe('done');
    expect(s.scans.get(row(3).digest)?.reason).toBe('ImagePullFailed');
    expect(s.changes).toBe(1);
  });

  it('logs findings.changed frames in order, bounded, without touching rows or report counters', () => {
    const small = createLiveStore({ changeLogSize: 3 });
    small.resync({ items: [row(1)], total: 1 });
    const frame = (id: number): FindingsChanged => ({
      changeId: id, digest: row(1).digest, image: row(1).image, cause: 'rescan', changedAt: '2026-11-21T10:00:00Z',
      baseline: false, newCounts: { ...counts, high: 1 }, resolvedCounts: counts,
    });
    for (let i = 1; i <= 5; i++) {
      expect(small.apply({ type: 'findings.changed', id: `f${i}`, time: '', data: frame(100 + i) })).toBe(false);
    }
    const s = get(small);
    expect(s.changeSeq).toBe(5);
    expect(s.changeLog.map((f) => [f.seq, f.data.changeId])).toEqual([[3, 103], [4, 104], [5, 105]]);
    expect(framesAfter(s.changeLog, 3).map((f) => f.data.changeId)).toEqual([104, 105]);
    expect(framesAfter(s.changeLog, 5)).toEqual([]);
    expect(s.changes).toBe(0);
    expect(s.highlighted.size).toBe(0);
    expect(s.rows).toHaveLength(1);
    small.destroy();
  });

  it('tracks connection state and counts reconnects', () => {
    store.setConnection('open');
    store.setConnection('closed');
    store.markReconnect();
    store.markReconnect();
    expect(get(store).connection).toBe('closed');
    expect(get(store).reconnects).toBe(2);
  });
});
