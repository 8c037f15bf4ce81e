// Small pure formatters shared by the components.
import type { Finding, RunningWorkload } from './api/types';

export function shortDigest(digest: string): string {
  const hex = digest.startsWith('sha256:') ? digest.slice(7) : digest;
  return hex.slice(0, 12);
}

/** "registry/repo" of "registry/repo@sha256:…" (the digest is shown separately). */
export function repository(image: string): string {
  const at = image.indexOf('@');
  return at < 0 ? image : image.slice(0, at);
}

const rtf = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });

export function relativeTime(iso: string, now: number = Date.now()): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '—';
  const s = Math.round((t - now) / 1000);
  const abs = Math.abs(s);
  if (abs < 60) return rtf.format(s, 'second');
  if (abs < 3600) return rtf.format(Math.round(s / 60), 'minute');
  if (abs < 86400) return rtf.format(Math.round(s / 3600), 'hour');
  return rtf.format(Math.round(s / 86400), 'day');
}

export function absoluteTime(iso: string): string {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? '' : new Date(t).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

/** What a report's findings were matched with: the Grype release and the vulnerability DB's build and schema. */
export function provenance(r: { grypeVersion?: string; dbBuilt?: string; dbSchema?: string }): string {
  const grype = r.grypeVersion ? `Grype ${r.grypeVersion}` : 'Grype (version unknown)';
  const built = r.dbBuilt ? absoluteTime(r.dbBuilt) : '';
  if (!built) return `${grype}, DB built unknown`;
  return `${grype}, DB built ${built}${r.dbSchema ? ` (schema ${r.dbSchema})` : ''}`;
}

/** A served DB older than this many days is flagged on the overview. */
export const DB_STALE_DAYS = 7;

/** The served vulnerability DB's age as a tile shows it, and whether it is older than staleDays. */
export function dbAge(ageSeconds: number | undefined, staleDays: number = DB_STALE_DAYS): { text: string; stale: boolean } {
  if (ageSeconds === undefined || ageSeconds < 0) return { text: 'unknown', stale: false };
  const days = ageSeconds / 86400;
  const text = days >= 1 ? `${Math.floor(days)} ${Math.floor(days) === 1 ? 'day' : 'days'}` : ageSeconds >= 3600 ? `${Math.floor(ageSeconds / 3600)} h` : '< 1 h';
  return { text, stale: days > staleDays };
}

/** Where a finding's advisory lives: NVD for CVE ids, GitHub for GHSA ids, else what Grype gave. */
export function advisoryUrl(id: string, fallback?: string): string | undefined {
  if (/^CVE-\d{4}-\d{4,}$/i.test(id)) return `https://nvd.nist.gov/vuln/detail/${id.toUpperCase()}`;
  if (/^GHSA(-[0-9a-z]{4}){3}$/i.test(id)) return `https://github.com/advisories/${id}`;
  if (fallback && /^https?:\/\//.test(fallback)) return fallback;
  return undefined;
}

export function cvss(f: Pick<Finding, 'cvssScore'>): string {
  return typeof f.cvssScore === 'number' ? f.cvssScore.toFixed(1) : '—';
}

/** Grype's risk score (0–100) with one decimal; "—" when Grype rated nothing. */
export function riskScore(f: Pick<Finding, 'risk'>): string {
  return f.risk.score > 0 ? f.risk.score.toFixed(1) : '—';
}

/** The EPSS probability as a percentage ("12.3%"); "" without a score. */
export function epss(f: Pick<Finding, 'risk'>): string {
  const e = f.risk.epss;
  return typeof e === 'number' ? `${(e * 100).toFixed(e < 0.001 && e > 0 ? 3 : 1)}%` : '';
}

/** "Deployment/web": a workload as kubectl names it. */
export function workloadName(w: Pick<RunningWorkload, 'kind' | 'name'>): string {
  return `${w.kind}/${w.name}`;
}

/**
 * The images table's workload cell: the first workload (namespace and
 * kind/name) and "+N more"; "not running" when nothing runs the digest, ""
 * when the server did not say (no inventory data in the response).
 */
export function runningSummary(runningIn: readonly RunningWorkload[] | undefined): { text: string; more: number; title: string } {
  if (runningIn === undefined) return { text: '', more: 0, title: '' };
  if (runningIn.length === 0) return { text: 'not running', more: 0, title: 'No workload runs this image now' };
  const [first] = runningIn;
  return {
    text: `${first.namespace}/${workloadName(first)}`,
    more: runningIn.length - 1,
    title: runningIn.map((w) => `${w.namespace}/${workloadName(w)} (${pods(w.pods)})`).join('\n'),
  };
}

export function pods(n: number): string {
  return `${n} pod${n === 1 ? '' : 's'}`;
}

/** The distinct namespaces of some runningIn lists, sorted. */
export function namespacesOf(lists: Iterable<readonly RunningWorkload[] | undefined>, into = new Set<string>()): Set<string> {
  for (const l of lists) for (const w of l ?? []) into.add(w.namespace);
  return into;
}

/** A workload carrying an image: one row of the CVE view's "workloads" table. */
export interface WorkloadImageRow extends RunningWorkload {
  digest: string;
  image: string;
}

/** Flattens images' runningIn into rows sorted by namespace, kind, name and image, one per (workload, digest). */
export function workloadRows(images: readonly { digest: string; image: string; runningIn?: readonly RunningWorkload[] }[]): WorkloadImageRow[] {
  const seen = new Map<string, WorkloadImageRow>();
  for (const img of images) {
    for (const w of img.runningIn ?? []) {
      const key = `${w.namespace}\u0000${w.kind}\u0000${w.name}\u0000${img.digest}`;
      if (!seen.has(key)) seen.set(key, { ...w, digest: img.digest, image: img.image });
    }
  }
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return [...seen.values()].sort(
    (a, b) => cmp(a.namespace, b.namespace) || cmp(a.kind, b.kind) || cmp(a.name, b.name) || cmp(a.image, b.image),
  );
}

/** A finding's age ("12 d", "—" when the API gave none). */
export function age(f: Pick<Finding, 'ageDays'>): string {
  return typeof f.ageDays === 'number' ? `${f.ageDays} d` : '—';
}

/** The title of an overdue badge: when the SLA deadline passed. */
export function dueTitle(f: Pick<Finding, 'slaDue' | 'overdue'>): string {
  if (!f.slaDue) return 'No SLA deadline for this severity';
  return `${f.overdue ? 'Overdue since' : 'Due'} ${f.slaDue.slice(0, 10)} (SLA)`;
}
