import { describe, expect, it } from 'vitest';
import { DEFAULT_SORT, filtersFromParams, filtersToParams, filtersToQuery, nextSort, sortDirection } from './filters';

describe('image filters in the URL', () => {
  it('round-trips non-default values and leaves defaults out', () => {
    const f = filtersFromParams(new URLSearchParams('q=nginx&minSeverity=high&fixable=true&sort=-critical'));
    expect(f).toEqual({ q: 'nginx', minSeverity: 'high', fixable: true, sort: '-critical', namespace: '', running: 'all' });
    expect(filtersToParams(f).toString()).toBe('q=nginx&minSeverity=high&fixable=true&sort=-critical');
    const g = filtersFromParams(new URLSearchParams('namespace=team-a&running=false'));
    expect(g).toMatchObject({ namespace: 'team-a', running: 'false' });
    expect(filtersToParams(g).toString()).toBe('namespace=team-a&running=false');
    expect(filtersToParams(filtersFromParams(new URLSearchParams())).toString()).toBe('');
  });

  it('ignores values the API would reject', () => {
    const f = filtersFromParams(new URLSearchParams('minSeverity=awful&sort=digest&fixable=yes&namespace=Bad_NS&running=maybe'));
    expect(f).toEqual({ q: '', minSeverity: '', fixable: false, sort: DEFAULT_SORT, namespace: '', running: 'all' });
  });

  it('maps to the list query, omitting empty filters', () => {
    expect(filtersToQuery({ q: '  ', minSeverity: '', fixable: false, sort: '-high', namespace: '', running: 'all' })).toEqual({
      q: undefined,
      minSeverity: undefined,
      fixable: undefined,
      sort: '-high',
      namespace: undefined,
      running: undefined,
    });
    expect(filtersToQuery({ q: '', minSeverity: '', fixable: false, sort: '-high', namespace: 'a', running: 'true' })).toMatchObject({
      namespace: 'a',
      running: 'true',
    });
  });

  it('sorts counts worst-first on first click, image A–Z, and toggles', () => {
    expect(nextSort('-scannedAt', 'critical')).toBe('-critical');
    expect(nextSort('-critical', 'critical')).toBe('critical');
    expect(nextSort('critical', 'critical')).toBe('-critical');
    expect(nextSort('-scannedAt', 'image')).toBe('image');
    expect(nextSort('image', 'image')).toBe('-image');
    expect(sortDirection('-high', 'high')).toBe('descending');
    expect(sortDirection('-high', 'low')).toBe('none');
  });
});
