import { describe, expect, it } from 'vitest';
import { decision, exceptionLabel, suppressedFilter, suppressionSummary, withSuppressed } from './suppression';

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
});
