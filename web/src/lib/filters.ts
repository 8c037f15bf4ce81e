// The images view's filter state lives in the URL (shareable links, working
// back button). These pure functions convert between URLSearchParams and the
// API's list query.
import { SEVERITIES, type ReportQuery, type ReportSort, type Severity } from './api/types';

export interface ImageFilters {
  q: string;
  minSeverity: Severity | '';
  fixable: boolean;
  sort: ReportSort;
  /** Only images running now in this namespace; "" for every namespace the caller may read. */
  namespace: string;
  /** Running now (true), not running (false), or either (all, the API's default). */
  running: Running;
}

export type Running = NonNullable<ReportQuery['running']>;
const RUNNING = new Set<string>(['true', 'false', 'all']);
/** Kubernetes namespace names (RFC 1123 labels). */
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export const DEFAULT_SORT: ReportSort = '-scannedAt';

const SORTS = new Set<string>(
  ['critical', 'high', 'medium', 'low', 'scannedAt', 'image'].flatMap((f) => [f, `-${f}`]),
);

export function filtersFromParams(params: URLSearchParams): ImageFilters {
  const sev = params.get('minSeverity') ?? '';
  const sort = params.get('sort') ?? '';
  const ns = params.get('namespace') ?? '';
  const running = params.get('running') ?? '';
  return {
    q: (params.get('q') ?? '').slice(0, 200),
    minSeverity: (SEVERITIES as readonly string[]).includes(sev) ? (sev as Severity) : '',
    fixable: params.get('fixable') === 'true',
    sort: SORTS.has(sort) ? (sort as ReportSort) : DEFAULT_SORT,
    namespace: NAMESPACE.test(ns) ? ns : '',
    running: RUNNING.has(running) ? (running as Running) : 'all',
  };
}

/** Only non-default values go into the URL, so the plain /images link stays plain. */
export function filtersToParams(f: ImageFilters): URLSearchParams {
  const p = new URLSearchParams();
  if (f.q.trim()) p.set('q', f.q.trim());
  if (f.minSeverity) p.set('minSeverity', f.minSeverity);
  if (f.fixable) p.set('fixable', 'true');
  if (f.sort !== DEFAULT_SORT) p.set('sort', f.sort);
  if (f.namespace) p.set('namespace', f.namespace);
  if (f.running !== 'all') p.set('running', f.running);
  return p;
}

export function filtersToQuery(f: ImageFilters): ReportQuery {
  return {
    q: f.q.trim() || undefined,
    minSeverity: f.minSeverity || undefined,
    fixable: f.fixable || undefined,
    sort: f.sort,
    namespace: f.namespace || undefined,
    running: f.running === 'all' ? undefined : f.running,
  };
}

/** Clicking a column header: sort by it descending (worst/newest first), again toggles. */
export function nextSort(current: ReportSort, field: string): ReportSort {
  const desc = `-${field}`;
  const asc = field;
  const first = field === 'image' ? asc : desc;
  if (current === first) return (first === asc ? desc : asc) as ReportSort;
  return first as ReportSort;
}

export function sortDirection(current: ReportSort, field: string): 'ascending' | 'descending' | 'none' {
  if (current === field) return 'ascending';
  if (current === `-${field}`) return 'descending';
  return 'none';
}
