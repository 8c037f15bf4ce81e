import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import {
  JUSTIFICATIONS,
  VEX_STATUSES,
  draftFor,
  exceptionName,
  renderExceptionYaml,
  validateDraft,
  type ExceptionDraft,
} from './exception-yaml';

const NOW = new Date('2026-11-29T10:00:00Z');
const DIGEST = 'sha256:' + 'ab'.repeat(32);
const FINDING = { id: 'CVE-2024-25062', purl: 'pkg:deb/debian/libxml2@2.9.14+dfsg-1.3?arch=amd64', digest: DIGEST, packageName: 'libxml2' };

function draft(over: Partial<ExceptionDraft> = {}): ExceptionDraft {
  return {
    ...draftFor(FINDING, 'team-a', NOW),
    justification: 'vulnerable_code_not_in_execute_path',
    statement: 'the XML reader never sees untrusted input',
    ...over,
  };
}

// The CRD as generated from operator/api/v1alpha1: the form's enums must be its enums.
const crd = load(readFileSync(new URL('../../../operator/config/crd/bases/crowsnest.dev_vulnerabilityexceptions.yaml', import.meta.url), 'utf8')) as {
  spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, { enum?: string[] }> } } } } }[] };
};
const specSchema = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties;

describe('exception form', () => {
  it('offers exactly the CRD statuses and justifications', () => {
    expect([...VEX_STATUSES].sort()).toEqual([...(specSchema.status.enum ?? [])].sort());
    expect([...JUSTIFICATIONS].sort()).toEqual([...(specSchema.justification.enum ?? [])].sort());
  });

  it('defaults to not_affected, expiring in 30 days, named after the finding', () => {
    const d = draftFor(FINDING, 'team-a', NOW);
    expect(d.expiresOn).toBe('2026-12-29');
    expect(d.status).toBe('not_affected');
    expect(d.name).toBe('cve-2024-25062-libxml2');
    expect(exceptionName('GHSA-xxxx-yyyy-zzzz', '@scope/Pkg.Name')).toBe('ghsa-xxxx-yyyy-zzzz-scope-pkg-name');
    expect(exceptionName('CVE-1-2', 'x'.repeat(100))).toHaveLength(63);
  });

  it('accepts a complete not_affected draft', () => {
    expect(validateDraft(draft(), NOW)).toEqual({});
  });

  it.each<[string, Partial<ExceptionDraft>, keyof ExceptionDraft]>([
    ['blank reason', { statement: '   ' }, 'statement'],
    ['not_affected without justification', { justification: '' }, 'justification'],
    ['justification on another status', { status: 'fixed' }, 'justification'],
    ['affected without action statement', { status: 'affected', justification: '', actionStatement: ' ' }, 'actionStatement'],
    ['past expiry', { expiresOn: '2026-11-29' }, 'expiresOn'],
    ['expiry beyond 90 days', { expiresOn: '2027-03-01' }, 'expiresOn'],
    ['no expiry', { expiresOn: '' }, 'expiresOn'],
    ['no namespace', { namespace: '' }, 'namespace'],
    ['bad namespace', { namespace: 'Team_A' }, 'namespace'],
    ['bad name', { name: '-x' }, 'name'],
    ['bad id', { vulnerability: 'not an id' }, 'vulnerability'],
    ['bad purl', { purl: 'libxml2' }, 'purl'],
    ['bad digest', { digest: 'sha256:XYZ' }, 'digest'],
  ])('refuses %s', (_, over, field) => {
    expect(Object.keys(validateDraft(draft(over), NOW))).toEqual([field]);
  });

  it('accepts affected with an action statement and under_investigation without justification', () => {
    expect(validateDraft(draft({ status: 'affected', justification: '', actionStatement: 'upgrade in sprint 12' }), NOW)).toEqual({});
    expect(validateDraft(draft({ status: 'under_investigation', justification: '' }), NOW)).toEqual({});
  });

  it('renders YAML that parses to the CRD object', () => {
    const d = draft({ expiredOnFix: true, ticket: 'https://tracker.example/SEC-1', statement: 'line one\nsays "x": yes # not a comment' });
    const obj = load(renderExceptionYaml(d));
    expect(obj).toEqual({
      apiVersion: 'crowsnest.dev/v1alpha1',
      kind: 'VulnerabilityException',
      metadata: { name: 'cve-2024-25062-libxml2', namespace: 'team-a' },
      spec: {
        vulnerabilities: ['CVE-2024-25062'],
        packages: [FINDING.purl],
        images: [DIGEST],
        status: 'not_affected',
        justification: 'vulnerable_code_not_in_execute_path',
        statement: 'line one\nsays "x": yes # not a comment',
        ticket: 'https://tracker.example/SEC-1',
        // js-yaml keeps a quoted timestamp a string, as the API server reads it.
        expiresAt: '2026-12-29T00:00:00Z',
        expiredOnFix: true,
      },
    });
  });

  it('leaves out empty optional fields and the justification of other statuses', () => {
    const obj = load(renderExceptionYaml(draft({ status: 'affected', justification: '', actionStatement: 'patch', purl: '', digest: '' }))) as {
      spec: Record<string, unknown>;
    };
    expect(Object.keys(obj.spec).sort()).toEqual(['actionStatement', 'expiresAt', 'statement', 'status', 'vulnerabilities']);
  });
});
