import { describe, expect, it } from 'vitest';
import { annotationSummary, decision, exceptionLabel, suppressedFilter, suppressionSummary, withSuppressed } from './suppression';

describe('suppression', () => {
  it('reads and writes the filter, active by default', () => {
    expect(suppressedFilter(new URLSearchParams(''))).toBe('false');
    expect(suppressedFilter(new URLSearchParams('suppressed=all'))).toBe('all');
    expect(suppressedFilter(new URLSearchParams('suppressed=bogus'))).toBe('false');
    expect(withSuppressed(new URLSearchParams('namespace=a&suppressed=true'), 'false')).toBe('?namespace=a');
    expect(withSuppressed(new URLSearchParams(''), 'true')).toBe('?suppressed=true');
  });

  it('names the exception and its decision', () => {
    const s = {
      exception: { kind: 'VulnerabilityException' as const, namespace: 'team-a', name: 'libxml2' },
      status: 'not_affected' as const,
      justification: 'vulnerable_code_not_in_execute_path',
      statement: 'never parses untrusted XML',
      expiresAt: '2027-01-15T00:00:00Z',
    };
    expect(exceptionLabel(s.exception)).toBe('VulnerabilityException team-a/libxml2');
    expect(exceptionLabel({ kind: 'ClusterVulnerabilityException', name: 'x' })).toBe('ClusterVulnerabilityException x');
    expect(decision({ status: 'affected' })).toBe('affected');
    expect(suppressionSummary(s)).toBe(
      'Suppressed by VulnerabilityException team-a/libxml2 (not_affected: vulnerable_code_not_in_execute_path) until 2027-01-15: never parses untrusted XML',
    );
  });

  it('names the OpenVEX document an imported statement comes from', () => {
    const vex = { documentId: 'https://openvex.dev/docs/public/vex-8a4c', author: 'Demo Publisher', timestamp: '2026-10-02T10:00:00Z' };
    const s = {
      exception: { kind: 'ClusterVEXDocument' as const, name: 'publisher' },
      status: 'fixed' as const,
      statement: 'patched in the publisher build',
      vex,
    };
    expect(suppressionSummary(s)).toBe(
      'Suppressed by ClusterVEXDocument publisher (fixed), OpenVEX by Demo Publisher, 2026-10-02 (https://openvex.dev/docs/public/vex-8a4c): patched in the publisher build',
    );
    expect(
      annotationSummary({ exception: { kind: 'VEXDocument', namespace: 'team-a', name: 'p' }, status: 'affected', statement: '', actionStatement: 'upgrade', vex }),
    ).toBe('affected per VEXDocument team-a/p, OpenVEX by Demo Publisher, 2026-10-02 (https://openvex.dev/docs/public/vex-8a4c): Action: upgrade');
  });
});
