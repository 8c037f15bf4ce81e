import { describe, expect, it } from 'vitest';
import { DEFAULT_SORT, filtersFromParams, filtersToParams, filtersToQuery, nextSort, sortDirection } from './filters';

describe('image filters in the URL', () => {
  it('round-trips non-default values and leaves defaults out', () => {
    const f = filtersFromParams(new URLSearchParams('q=nginx&minSeverity=high&fixable=true&sort=-critical'));
    expect(f).toEqual({ q: 'nginx', minSeverity: 'high', fixable: true, sort: '-critical' });
    expect(filtersToParams(f).toString()).toBe('q=nginx&minSeverity=high&fixable=true&sort=-critical');
    expect(filtersToParams(filtersFromParams(new URLSearchParams())).toString()).toBe('');
  });

  it('ignores values the API would reject', () => {
    const f = filtersFromParams(new URLSearchParams('minSeverity=awful&sort=digest&fixable=yes'));
    expect(f).toEqual({ q: '', minSeverity: '', fixable: false, sort: DEFAULT_SORT });
  });

  it('maps to the list query, omitting empty filters', () => {
    expect(filtersToQuery({ q: '  ', minSeverity: '', fixable: false, sort: '-high' })).toEqual({
      q: undefined,
      minSeverity: undefined,
      fixable: undefined,
      sort: '-high',
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
