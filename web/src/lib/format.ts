// Small pure formatters shared by the components.
import type { Finding } from './api/types';

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
