import { describe, expect, it } from 'vitest';
import type { Change, ChangeList, FindingsChanged } from './api/types';
import {
  addLive,
  appendPage,
  changeFromFrame,
  countNewSevere,
  emptyFeed,
  formatBounded,
  mergeFirstPage,
  newSevere,
  newerFirst,
  type Feed,
} from './change-feed';

const zero = { critical: 0, high: 0, medium: 0, low: 0, negligible: 0, unknown: 0 };
const digest = `sha256:${'c'.repeat(64)}`;

/** Change n happened n minutes after 10:00. */
function change(n: number, extra: Partial<Change> = {}): Change {
  return {
    id: n,
    digest,
    image: `registry.local/app@${digest}`,
    cause: 'rescan',
    dbBuilt: '',
    changedAt: new Date(Date.parse('2026-11-22T10:00:00Z') + n * 60_000).toISOString(),
    baseline: false,
    newCounts: { ...zero, high: 1 },
    resolvedCounts: zero,
    new: [],
    resolved: [],
    kevAddedCount: 0,
    kevAdded: [],
    truncated: false,
    ...extra,
  };
}

const ids = (f: Feed) => f.items.map((c) => c.id);
const page = (ns: number[], nextCursor?: string): ChangeList => ({ items: ns.map((n) => change(n)), ...(nextCursor ? { nextCursor } : {}) });
const loaded = (ns: number[], nextCursor?: string): Feed => ({ items: ns.map((n) => change(n)), nextCursor, loaded: true });

describe('change feed', () => {
  it('converts a findings.changed frame to the REST shape', () => {
    const frame: FindingsChanged = {
      changeId: 42, digest, image: `app@${digest}`, cause: 'rematch', changedAt: '2026-11-22T10:00:00Z', baseline: true,
      newCounts: { ...zero, critical: 2 }, resolvedCounts: zero,
    };
    expect(changeFromFrame(frame)).toEqual({
      id: 42, digest, image: `app@${digest}`, cause: 'rematch', dbBuilt: '', changedAt: '2026-11-22T10:00:00Z', baseline: true,
      newCounts: { ...zero, critical: 2 }, resolvedCounts: zero, kevAddedCount: 0, new: [], resolved: [], kevAdded: [], truncated: false,
    });
    const full = changeFromFrame({
      ...frame, baseline: false, dbBuilt: '2026-11-22T01:00:00Z', dbSchema: 'v6.0.2', truncated: true, changesPath: '/x',
      new: [{ id: 'CVE-1', severity: 'critical', package: { name: 'a', version: '1', type: 'apk' } }],
    });
    expect(full).toMatchObject({ dbBuilt: '2026-11-22T01:00:00Z', dbSchema: 'v6.0.2', truncated: true, resolved: [] });
    expect(full.new.map((f) => f.id)).toEqual(['CVE-1']);
    expect(full).not.toHaveProperty('changesPath');
  });

  it('orders newest first by time, then by id', () => {
    const same = '2026-11-22T10:00:00Z';
    const list = [change(1), change(3), change(2, { changedAt: same }), change(9, { changedAt: same })].sort(newerFirst);
    expect(list.map((c) => c.id)).toEqual([3, 1, 9, 2]);
  });

  it('loads the first page, keeping frames that arrived while it was in flight', () => {
    const live = addLive(emptyFeed(), change(12));
    expect(live.loaded).toBe(false);
    const f = mergeFirstPage(live, page([11, 10, 9], 'c9'));
    expect(ids(f)).toEqual([12, 11, 10, 9]);
    expect(f).toMatchObject({ loaded: true, nextCursor: 'c9' });
  });

  it('keeps a change once when a frame and a page both carry it; the page copy wins', () => {
    const frame = change(12, { new: [], truncated: true });
    const fromPage = change(12, { new: [{ id: 'CVE-1', severity: 'high', package: { name: 'a', version: '1', type: 'apk' } }] });
    let f = addLive(emptyFeed(), frame);
    f = mergeFirstPage(f, { items: [fromPage, change(11)] });
    expect(ids(f)).toEqual([12, 11]);
    expect(f.items[0]).toBe(fromPage);
    // A late frame of a change the page already listed changes nothing.
    expect(addLive(f, frame)).toBe(f);
  });

  it('adds live changes in order and ignores known ids', () => {
    let f = loaded([10, 9], 'c9');
    f = addLive(f, change(11));
    f = addLive(f, change(13));
    f = addLive(f, change(12)); // frames may arrive out of order across replicas
    expect(ids(f)).toEqual([13, 12, 11, 10, 9]);
    expect(f.nextCursor).toBe('c9');
  });

  it('appends the next page, dropping duplicates and pages of a replaced feed', () => {
    const f = loaded([12, 11, 10], 'c10');
    const next = appendPage(f, page([10, 9, 8], 'c8'), 'c10');
    expect(ids(next)).toEqual([12, 11, 10, 9, 8]);
    expect(next.nextCursor).toBe('c8');
    expect(appendPage(next, page([7]), 'c10')).toBe(next);
    const last = appendPage(next, page([7]), 'c8');
    expect(ids(last)).toEqual([12, 11, 10, 9, 8, 7]);
    expect(last.nextCursor).toBeUndefined();
  });

  it('after a reconnect merges an overlapping first page and keeps the deeper cursor', () => {
    // Loaded 3 pages down to 4; missed 13 and 14 while disconnected.
    const f = mergeFirstPage(loaded([12, 11, 10, 9, 8, 7, 6, 5, 4], 'c4'), page([14, 13, 12, 11], 'c11'));
    expect(ids(f)).toEqual([14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4]);
    expect(f.nextCursor).toBe('c4');
  });

  it('after a reconnect takes the page’s cursor when the page reaches further back', () => {
    const f = mergeFirstPage(loaded([12, 11]), page([13, 12, 11, 10], 'c10'));
    expect(ids(f)).toEqual([13, 12, 11, 10]);
    expect(f.nextCursor).toBe('c10');
  });

  it('after a reconnect replaces the feed when too many changes were missed to join the two', () => {
    const f = mergeFirstPage(loaded([5, 4, 3], 'c3'), page([20, 19, 18], 'c18'));
    expect(ids(f)).toEqual([20, 19, 18]);
    expect(f.nextCursor).toBe('c18');
  });

  it('a last page merges whatever the feed holds', () => {
    const f = mergeFirstPage(loaded([5, 4, 3]), page([6, 5]));
    expect(ids(f)).toEqual([6, 5, 4, 3]);
    expect(f.nextCursor).toBeUndefined();
  });

  it('counts new critical and high findings, baselines excluded', () => {
    const items = [
      change(1, { newCounts: { ...zero, critical: 2, high: 3, medium: 7 } }),
      change(2, { baseline: true, newCounts: { ...zero, critical: 50 } }),
      change(3, { newCounts: zero, resolvedCounts: { ...zero, high: 4 } }),
    ];
    expect(newSevere(items)).toBe(5);
    expect(newSevere([])).toBe(0);
  });

  it('pages the count up to a bound and says when it stopped early', async () => {
    const pages: Record<string, ChangeList> = {
      start: { items: [change(3), change(2)], nextCursor: 'p2' },
      p2: { items: [change(1, { newCounts: { ...zero, critical: 1 } })], nextCursor: 'p3' },
      p3: { items: [change(0)] },
    };
    const seen: (string | undefined)[] = [];
    const fetchPage = async (cursor: string | undefined) => {
      seen.push(cursor);
      return pages[cursor ?? 'start'];
    };
    expect(await countNewSevere(fetchPage, 10)).toEqual({ count: 4, bounded: false });
    expect(seen).toEqual([undefined, 'p2', 'p3']);
    const bounded = await countNewSevere(fetchPage, 2);
    expect(bounded).toEqual({ count: 3, bounded: true });
    expect(formatBounded(bounded)).toBe('≥3');
    expect(formatBounded({ count: 0, bounded: false })).toBe('0');
  });
});
