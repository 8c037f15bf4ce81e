// Renders a VulnerabilityException (operator/api/v1alpha1) for one finding.
// The dashboard has no write rights on Kubernetes: exceptions live in Git and
// are applied with kubectl under the team's RBAC, so the UI only writes the
// YAML. validateDraft repeats the CRD's schema and CEL rules (and the
// results-api rule CEL cannot express, expiresAt in the future) so that what
// is shown is what `kubectl apply` accepts.

/** OpenVEX statuses, as the CRD's enum. */
export const VEX_STATUSES = ['not_affected', 'affected', 'fixed', 'under_investigation'] as const;
export type VexStatus = (typeof VEX_STATUSES)[number];

/** OpenVEX justifications for not_affected, as the CRD's enum. */
export const JUSTIFICATIONS = [
  'component_not_present',
  'vulnerable_code_not_present',
  'vulnerable_code_not_in_execute_path',
  'vulnerable_code_cannot_be_controlled_by_adversary',
  'inline_mitigations_already_exist',
] as const;
export type Justification = (typeof JUSTIFICATIONS)[number];

/** results-api's default --exception-max-lifetime: a longer expiresAt does not apply there. */
export const MAX_LIFETIME_DAYS = 90;
/** The expiry the form proposes. */
export const DEFAULT_LIFETIME_DAYS = 30;

export interface ExceptionDraft {
  name: string;
  namespace: string;
  vulnerability: string;
  /** The finding's package URL; empty covers the id in every package. */
  purl: string;
  /** The image digest; empty covers every image of the namespace. */
  digest: string;
  status: VexStatus;
  justification: Justification | '';
  statement: string;
  actionStatement: string;
  /** A day, YYYY-MM-DD; the exception expires at its start (UTC). */
  expiresOn: string;
  expiredOnFix: boolean;
  owner: string;
  ticket: string;
}

export type DraftField = keyof ExceptionDraft;
export type DraftErrors = Partial<Record<DraftField, string>>;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const VULN_ID = /^[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9._:]+)+$/;
const PURL = /^pkg:[a-z][a-z0-9.+-]*\/[^\s]*$/;
const DIGEST = /^sha256:[a-f0-9]{64}$/;
const DAY = /^\d{4}-\d{2}-\d{2}$/;
const MS_PER_DAY = 86_400_000;

/** The day `days` after now, as YYYY-MM-DD (UTC). */
export function dayAfter(now: Date, days: number): string {
  return new Date(now.getTime() + days * MS_PER_DAY).toISOString().slice(0, 10);
}

/** A DNS-1123 name for the exception from the finding: "<id>-<package>", at most 63 characters. */
export function exceptionName(vulnerability: string, pkg: string): string {
  const clean = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
  const name = [clean(vulnerability), clean(pkg)].filter(Boolean).join('-').slice(0, 63);
  return name.replace(/-+$/, '') || 'exception';
}

/** A draft for one finding, with the form's defaults (not_affected, expires in 30 days). */
export function draftFor(
  finding: { id: string; purl: string; digest: string; packageName: string },
  namespace: string,
  now: Date,
): ExceptionDraft {
  return {
    name: exceptionName(finding.id, finding.packageName),
    namespace,
    vulnerability: finding.id,
    purl: finding.purl,
    digest: finding.digest,
    status: 'not_affected',
    justification: '',
    statement: '',
    actionStatement: '',
    expiresOn: dayAfter(now, DEFAULT_LIFETIME_DAYS),
    expiredOnFix: false,
    owner: '',
    ticket: '',
  };
}

/**
 * What `kubectl apply` (schema and CEL) or results-api would refuse, one
 * message per field; empty when the YAML may be shown. results-api ignores an
 * exception whose expiresAt has passed or lies more than its
 * --exception-max-lifetime (default 90 days) ahead: both are refused here.
 */
export function validateDraft(d: ExceptionDraft, now: Date): DraftErrors {
  const e: DraftErrors = {};
  if (!d.name) e.name = 'A name is required.';
  else if (d.name.length > 253 || !DNS_SUBDOMAIN.test(d.name)) e.name = 'Lower-case letters, digits, "-" and ".", starting and ending with a letter or digit.';
  if (!d.namespace) e.namespace = 'A namespace is required: the exception applies to that namespace\'s view.';
  else if (d.namespace.length > 63 || !DNS_LABEL.test(d.namespace)) e.namespace = 'Not a namespace name.';
  if (d.vulnerability.length > 128 || !VULN_ID.test(d.vulnerability)) e.vulnerability = 'Not a vulnerability id (CVE-…, GHSA-…).';
  if (d.purl && (d.purl.length > 512 || !PURL.test(d.purl))) e.purl = 'Not a package URL (pkg:type/…).';
  if (d.digest && !DIGEST.test(d.digest)) e.digest = 'Not an image digest (sha256:…).';
  if (!VEX_STATUSES.includes(d.status)) e.status = 'Pick a status.';
  if (d.status === 'not_affected' && !d.justification) e.justification = 'not_affected needs a justification.';
  if (d.status !== 'not_affected' && d.justification) e.justification = 'A justification is only for not_affected.';
  if (d.justification && !JUSTIFICATIONS.includes(d.justification)) e.justification = 'Not an OpenVEX justification.';
  if (!d.statement.trim()) e.statement = 'The reason for the decision is required.';
  else if (d.statement.length > 4096) e.statement = 'At most 4096 characters.';
  if (d.status === 'affected' && !d.actionStatement.trim()) {
    e.actionStatement = 'An accepted risk (affected) needs an action statement: what is done about it, and until when.';
  } else if (d.actionStatement.length > 4096) e.actionStatement = 'At most 4096 characters.';
  if (d.owner.length > 256) e.owner = 'At most 256 characters.';
  if (d.ticket.length > 1024) e.ticket = 'At most 1024 characters.';
  const expires = DAY.test(d.expiresOn) ? Date.parse(`${d.expiresOn}T00:00:00Z`) : NaN;
  if (Number.isNaN(expires)) e.expiresOn = 'An expiry date is required.';
  else if (expires <= now.getTime()) e.expiresOn = 'The expiry must be in the future.';
  else if (expires - now.getTime() > MAX_LIFETIME_DAYS * MS_PER_DAY) {
    e.expiresOn = `At most ${MAX_LIFETIME_DAYS} days ahead (results-api ignores longer ones).`;
  }
  return e;
}

/** A YAML scalar: JSON's double-quoted strings are YAML double-quoted scalars. */
const q = (s: string) => JSON.stringify(s);

/** The VulnerabilityException manifest of a valid draft (check validateDraft first). */
export function renderExceptionYaml(d: ExceptionDraft): string {
  const lines = [
    'apiVersion: crowsnest.dev/v1alpha1',
    'kind: VulnerabilityException',
    'metadata:',
    `  name: ${q(d.name)}`,
    `  namespace: ${q(d.namespace)}`,
    'spec:',
    `  vulnerabilities: [${q(d.vulnerability)}]`,
  ];
  if (d.purl) lines.push(`  packages: [${q(d.purl)}]`);
  if (d.digest) lines.push(`  images: [${q(d.digest)}]`);
  lines.push(`  status: ${d.status}`);
  if (d.status === 'not_affected' && d.justification) lines.push(`  justification: ${d.justification}`);
  lines.push(`  statement: ${q(d.statement.trim())}`);
  if (d.actionStatement.trim()) lines.push(`  actionStatement: ${q(d.actionStatement.trim())}`);
  if (d.owner.trim()) lines.push(`  owner: ${q(d.owner.trim())}`);
  if (d.ticket.trim()) lines.push(`  ticket: ${q(d.ticket.trim())}`);
  lines.push(`  expiresAt: "${d.expiresOn}T00:00:00Z"`);
  if (d.expiredOnFix) lines.push('  expiredOnFix: true');
  return lines.join('\n') + '\n';
}
