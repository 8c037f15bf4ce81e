import { describe, expect, it } from 'vitest';
import { advisoryUrl, age, dbAge, dueTitle, epss, provenance, relativeTime, repository, riskScore, shortDigest } from './format';
import { match } from './router';

describe('formatting', () => {
  it('links CVEs to NVD, GHSAs to GitHub, others to the given URL only when it is http(s)', () => {
    expect(advisoryUrl('CVE-2024-12345')).toBe('https://nvd.nist.gov/vuln/detail/CVE-2024-12345');
    expect(advisoryUrl('GHSA-xvch-5gv4-984h')).toBe('https://github.com/advisories/GHSA-xvch-5gv4-984h');
    expect(advisoryUrl('ALPINE-13661', 'https://security.alpinelinux.org/x')).toBe('https://security.alpinelinux.org/x');
    expect(advisoryUrl('ALPINE-13661', 'javascript:alert(1)')).toBeUndefined();
  });

  it('shortens digests and strips them from image references', () => {
    const d = 'sha256:' + 'ab'.repeat(32);
    expect(shortDigest(d)).toBe('abababababab');
    expect(repository(`registry.local/team/app@${d}`)).toBe('registry.local/team/app');
    expect(repository('nginx:1.27')).toBe('nginx:1.27');
  });

  it('says how long ago', () => {
    const now = Date.parse('2026-11-21T12:00:00Z');
    expect(relativeTime('2026-11-21T11:58:00Z', now)).toBe('2 minutes ago');
    expect(relativeTime('2026-11-19T12:00:00Z', now)).toBe('2 days ago');
    expect(relativeTime('not a time', now)).toBe('—');
  });
});

describe('risk', () => {
  it("shows Grype's risk score and the EPSS probability", () => {
    expect(riskScore({ risk: { kev: true, score: 78.75000000000001, epss: 0.78 } })).toBe('78.8');
    expect(riskScore({ risk: { kev: false, score: 0 } })).toBe('—');
    expect(epss({ risk: { kev: false, score: 2.16, epss: 0.024 } })).toBe('2.4%');
    expect(epss({ risk: { kev: false, score: 0, epss: 0 } })).toBe('0.0%');
    expect(epss({ risk: { kev: false, score: 0 } })).toBe('');
  });
});

describe('routes', () => {
  it('matches the four views and falls back to not found', () => {
    const d = 'sha256:' + '0'.repeat(64);
    expect(match('/').name).toBe('overview');
    expect(match('/images', '?q=x').query.get('q')).toBe('x');
    expect(match(`/images/${d}`).params).toEqual({ digest: d });
    expect(match('/vulnerabilities/CVE-2024-1').params).toEqual({ id: 'CVE-2024-1' });
    expect(match('/images/sha256:xyz').name).toBe('notfound');
    expect(match('/changes', '?since=7d&minSeverity=high').name).toBe('changes');
    expect(match('/changes/').query.toString()).toBe('');
  });
});

describe('age and SLA', () => {
  it('renders whole days and the deadline', () => {
    expect(age({ ageDays: 12 })).toBe('12 d');
    expect(age({})).toBe('—');
    expect(dueTitle({ slaDue: '2026-11-08T10:00:00Z', overdue: true })).toBe('Overdue since 2026-11-08 (SLA)');
    expect(dueTitle({ slaDue: '2026-12-01T10:00:00Z', overdue: false })).toBe('Due 2026-12-01 (SLA)');
    expect(dueTitle({ overdue: false })).toBe('No SLA deadline for this severity');
  });
});

describe('provenance', () => {
  it('names the Grype release and the DB a report was matched against', () => {
    expect(provenance({ grypeVersion: '0.121.2', dbBuilt: '2026-11-01T00:00:00Z', dbSchema: 'v6.1.10' })).toBe(
      'Grype 0.121.2, DB built 2026-11-01 00:00:00 UTC (schema v6.1.10)',
    );
    expect(provenance({ grypeVersion: '0.121.2', dbBuilt: '' })).toBe('Grype 0.121.2, DB built unknown');
    expect(provenance({ dbBuilt: 'not a time' })).toBe('Grype (version unknown), DB built unknown');
  });

  it('ages the served DB and flags it after 7 days', () => {
    expect(dbAge(undefined)).toEqual({ text: 'unknown', stale: false });
    expect(dbAge(1800)).toEqual({ text: '< 1 h', stale: false });
    expect(dbAge(5 * 3600)).toEqual({ text: '5 h', stale: false });
    expect(dbAge(86400)).toEqual({ text: '1 day', stale: false });
    expect(dbAge(7 * 86400)).toEqual({ text: '7 days', stale: false });
    expect(dbAge(7 * 86400 + 1)).toEqual({ text: '7 days', stale: true });
    expect(dbAge(30 * 86400, 40)).toEqual({ text: '30 days', stale: false });
  });
});
