import { describe, expect, it } from 'vitest';
import type { Change, ChangedFinding, Severity } from './api/types';
import {
  changeFiltersFromParams,
  changeFiltersToParams,
  changeFiltersToQuery,
  changeMatches,
  projectChange,
  sinceMs,
  worstSeverity,
  type ChangeFilters,
} from './change-filters';

const zero = { critical: 0, high: 0, medium: 0, low: 0, negligible: 0, unknown: 0 };
const now = Date.parse('2026-11-22T12:00:00Z');

function finding(id: string, severity: Severity): ChangedFinding {
  return { id, severity, package: { name: 'openssl', version: '3.3.1-r0', type: 'apk' }, fixedIn: ['3.3.2-r0'] };
}

function change(extra: Partial<Change> = {}): Change {
  return {
    id: 1,
    digest: `sha256:${'a'.repeat(64)}`,
    image: `registry.local/app@sha256:${'a'.repeat(64)}`,
    cause: 'rescan',
    dbBuilt: '2026-11-22T01:00:00Z',
    changedAt: '2026-11-22T11:00:00Z',
    baseline: false,
    newCounts: { ...zero, medium: 1 },
    resolvedCounts: zero,
    new: [finding('CVE-2026-0001', 'medium')],
    resolved: [],
    kevAddedCount: 0,
    kevAdded: [],
    truncated: false,
    ...extra,
  };
}

const filters = (f: Partial<ChangeFilters> = {}): ChangeFilters => ({ since: 'all', minSeverity: '', cause: '', ...f });

describe('change filters', () => {
  it('read the URL, ignoring values that are not filters', () => {
    expect(changeFiltersFromParams(new URLSearchParams(''))).toEqual(filters());
    expect(changeFiltersFromParams(new URLSearchParams('since=7d&minSeverity=high&cause=rematch'))).toEqual(
      filters({ since: '7d', minSeverity: 'high', cause: 'rematch' }),
    );
    expect(changeFiltersFromParams(new URLSearchParams('since=1y&minSeverity=bad&cause=<x>'))).toEqual(filters());
  });

  it('write only non-default values to the URL and round-trip', () => {
    expect(changeFiltersToParams(filters()).toString()).toBe('');
    const f = filters({ since: '24h', minSeverity: 'critical', cause: 'scan' });
    const qs = changeFiltersToParams(f).toString();
    expect(qs).toBe('since=24h&minSeverity=critical&cause=scan');
    expect(changeFiltersFromParams(new URLSearchParams(qs))).toEqual(f);
  });

  it('turn the time window into an RFC 3339 since, relative to now', () => {
    expect(changeFiltersToQuery(filters(), now)).toEqual({ since: undefined, minSeverity: undefined, cause: undefined });
    expect(changeFiltersToQuery(filters({ since: '24h', minSeverity: 'high', cause: 'rescan' }), now)).toEqual({
      since: '2026-11-21T12:00:00.000Z',
      minSeverity: 'high',
      cause: 'rescan',
    });
    expect(changeFiltersToQuery(filters({ since: '7d' }), now).since).toBe('2026-11-15T12:00:00.000Z');
    expect(changeFiltersToQuery(filters({ since: '30d' }), now).since).toBe('2026-10-23T12:00:00.000Z');
    expect(sinceMs('all', now)).toBeUndefined();
  });

  it('find the worst severity of the counts', () => {
    expect(worstSeverity(zero, zero)).toBeUndefined();
    expect(worstSeverity({ ...zero, low: 2 }, { ...zero, high: 1 })).toBe('high');
    expect(worstSeverity({ ...zero, unknown: 1 })).toBe('unknown');
  });

  it('match a live change as the server would list it', () => {
    const c = change();
    expect(changeMatches(c, filters(), undefined)).toBe(true);
    expect(changeMatches(c, filters({ cause: 'rescan' }), undefined)).toBe(true);
    expect(changeMatches(c, filters({ cause: 'rematch' }), undefined)).toBe(false);
    expect(changeMatches(c, filters({ minSeverity: 'medium' }), undefined)).toBe(true);
    expect(changeMatches(c, filters({ minSeverity: 'high' }), undefined)).toBe(false);
    // A resolved high finding counts as much as a new one.
    expect(changeMatches(change({ resolvedCounts: { ...zero, high: 1 } }), filters({ minSeverity: 'high' }), undefined)).toBe(true);
    // A finding newly listed in CISA KEV counts too (the server's max_severity includes it).
    const kev = change({ newCounts: zero, kevAddedCount: 1, new: [], kevAdded: [finding('CVE-9', 'high')] });
    expect(changeMatches(kev, filters({ minSeverity: 'high' }), undefined)).toBe(true);
    expect(changeMatches(kev, filters({ minSeverity: 'critical' }), undefined)).toBe(false);
    expect(projectChange(kev, 'critical').kevAdded).toEqual([]);
    // A baseline's findings count; a clean baseline matches no minSeverity.
    expect(changeMatches(change({ baseline: true, newCounts: { ...zero, critical: 3 }, new: [] }), filters({ minSeverity: 'critical' }), undefined)).toBe(true);
    expect(changeMatches(change({ baseline: true, newCounts: zero, new: [] }), filters({ minSeverity: 'unknown' }), undefined)).toBe(false);
    expect(changeMatches(change({ baseline: true, newCounts: zero, new: [] }), filters(), undefined)).toBe(true);
    // The time window.
    const from = sinceMs('24h', now);
    expect(changeMatches(c, filters({ since: '24h' }), from)).toBe(true);
    expect(changeMatches(change({ changedAt: '2026-11-21T11:59:59Z' }), filters({ since: '24h' }), from)).toBe(false);
    expect(changeMatches(change({ changedAt: 'garbage' }), filters({ since: '24h' }), from)).toBe(false);
  });

  it('list only findings at or above minSeverity, keeping the counts', () => {
    const c = change({
      newCounts: { ...zero, critical: 1, low: 1 },
      resolvedCounts: { ...zero, medium: 1 },
      new: [finding('CVE-1', 'critical'), finding('CVE-2', 'low')],
      resolved: [finding('CVE-3', 'medium')],
    });
    expect(projectChange(c, '')).toBe(c);
    const p = projectChange(c, 'high');
    expect(p.new.map((f) => f.id)).toEqual(['CVE-1']);
    expect(p.resolved).toEqual([]);
    expect(p.newCounts).toEqual(c.newCounts);
    expect(projectChange(c, 'medium').resolved.map((f) => f.id)).toEqual(['CVE-3']);
  });
});
