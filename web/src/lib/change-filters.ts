// The changes view's filters live in the URL like the images view's. These
// pure functions convert between URLSearchParams, the API's feed query, and
// the same filters applied to a change that arrives over the WebSocket, so a
// live change is shown exactly when a refetch would have listed it.
import { SEVERITIES, type Cause, type Change, type ChangeQuery, type ChangedFinding, type Severity, type SeverityCounts } from './api/types';

export type SinceWindow = '24h' | '7d' | '30d' | 'all';

export interface ChangeFilters {
  since: SinceWindow;
  minSeverity: Severity | '';
  cause: Cause | '';
}

export const SINCE_WINDOWS: readonly { value: SinceWindow; label: string }[] = [
  { value: '24h', label: 'Last 24 hours' },
  { value: '7d', label: 'Last 7 days' },
  { value: '30d', label: 'Last 30 days' },
  { value: 'all', label: 'All time' },
];

export const CAUSES: readonly Cause[] = ['scan', 'rescan', 'rematch'];

const HOUR = 3600_000;
const WINDOW_MS: Record<Exclude<SinceWindow, 'all'>, number> = { '24h': 24 * HOUR, '7d': 7 * 24 * HOUR, '30d': 30 * 24 * HOUR };

export const DEFAULT_CHANGE_FILTERS: ChangeFilters = { since: 'all', minSeverity: '', cause: '' };

export function changeFiltersFromParams(params: URLSearchParams): ChangeFilters {
  const since = params.get('since') ?? '';
  const sev = params.get('minSeverity') ?? '';
  const cause = params.get('cause') ?? '';
  return {
    since: SINCE_WINDOWS.some((w) => w.value === since) ? (since as SinceWindow) : 'all',
    minSeverity: (SEVERITIES as readonly string[]).includes(sev) ? (sev as Severity) : '',
    cause: (CAUSES as readonly string[]).includes(cause) ? (cause as Cause) : '',
  };
}

/** Only non-default values go into the URL, so the plain /changes link stays plain. */
export function changeFiltersToParams(f: ChangeFilters): URLSearchParams {
  const p = new URLSearchParams();
  if (f.since !== 'all') p.set('since', f.since);
  if (f.minSeverity) p.set('minSeverity', f.minSeverity);
  if (f.cause) p.set('cause', f.cause);
  return p;
}

/** The start of the window in ms since the epoch, or undefined for all time. */
export function sinceMs(since: SinceWindow, now: number): number | undefined {
  return since === 'all' ? undefined : now - WINDOW_MS[since];
}

/** The feed query for the filters, the window ending at now. */
export function changeFiltersToQuery(f: ChangeFilters, now: number): ChangeQuery {
  const from = sinceMs(f.since, now);
  return {
    since: from === undefined ? undefined : new Date(from).toISOString(),
    minSeverity: f.minSeverity || undefined,
    cause: f.cause || undefined,
  };
}

const rank = (s: Severity): number => SEVERITIES.indexOf(s);

/** The worst severity with a non-zero count in either count set; undefined when both are empty. */
export function worstSeverity(...counts: SeverityCounts[]): Severity | undefined {
  return SEVERITIES.find((s) => counts.some((c) => c[s] > 0));
}

/**
 * Whether the feed, queried with these filters from `from` (ms) on, lists the
 * change: the server keeps a change when its worst new, resolved or
 * KEV-added finding (a baseline's findings included) is at least minSeverity.
 */
export function changeMatches(c: Change, f: ChangeFilters, from: number | undefined): boolean {
  if (f.cause && c.cause !== f.cause) return false;
  if (from !== undefined && !(Date.parse(c.changedAt) >= from)) return false;
  const min = f.minSeverity;
  if (min) {
    const worst = worstSeverity(c.newCounts, c.resolvedCounts);
    const kevHit = c.kevAdded.some((x) => rank(x.severity) <= rank(min));
    if (!kevHit && (worst === undefined || rank(worst) > rank(min))) return false;
  }
  return true;
}

/** The change as the filtered feed lists it: with minSeverity only such findings (the counts stay complete). */
export function projectChange(c: Change, minSeverity: Severity | ''): Change {
  if (!minSeverity) return c;
  const keep = (fs: ChangedFinding[]) => fs.filter((x) => rank(x.severity) <= rank(minSeverity));
  return { ...c, new: keep(c.new), resolved: keep(c.resolved), kevAdded: keep(c.kevAdded) };
}

/** Sum of a count set. */
export function total(c: SeverityCounts): number {
  return SEVERITIES.reduce((n, s) => n + c[s], 0);
}
