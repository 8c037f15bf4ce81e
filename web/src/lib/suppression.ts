// How the dashboard names an exception's decision about a finding, and the
// suppressed filter's URL state (?suppressed=, the API's own parameter).
import type { ExceptionRef, Suppression, SuppressedFilter, VEXAnnotation, VEXProvenance } from './api/types';

export const SUPPRESSED_FILTERS: readonly { value: SuppressedFilter; label: string }[] = [
  { value: 'false', label: 'Active' },
  { value: 'true', label: 'Suppressed' },
  { value: 'all', label: 'All' },
];

/** The filter in a query string; anything else is the default, active findings only. */
export function suppressedFilter(query: URLSearchParams): SuppressedFilter {
  const v = query.get('suppressed');
  return v === 'true' || v === 'all' ? v : 'false';
}

/** The query string with the filter set (the default leaves the parameter out). */
export function withSuppressed(query: URLSearchParams, value: SuppressedFilter): string {
  const q = new URLSearchParams(query);
  if (value === 'false') q.delete('suppressed');
  else q.set('suppressed', value);
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** "VulnerabilityException team-a/libxml2", "ClusterVulnerabilityException openssl-fp". */
export function exceptionLabel(ref: ExceptionRef): string {
  return `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;
}

/** "not_affected: vulnerable_code_not_in_execute_path", or the status alone. */
export function decision(s: Pick<Suppression, 'status' | 'justification'>): string {
  return s.justification ? `${s.status}: ${s.justification}` : s.status;
}

/** Where an imported OpenVEX statement comes from: "OpenVEX by <author>, 2026-10-02 (<@id>)". */
export function vexSource(p: VEXProvenance): string {
  return `OpenVEX by ${p.author}, ${p.timestamp.slice(0, 10)} (${p.documentId})`;
}

/** The whole reason in one line, for a tooltip. */
export function suppressionSummary(s: Suppression): string {
  const until = s.expiresAt ? ` until ${s.expiresAt.slice(0, 10)}` : '';
  const from = s.vex ? `, ${vexSource(s.vex)}` : '';
  return `Suppressed by ${exceptionLabel(s.exception)} (${decision(s)})${until}${from}: ${s.statement}`;
}

/** An imported statement that annotates an active finding, in one line. */
export function annotationSummary(a: VEXAnnotation): string {
  const why = [a.statement, a.actionStatement ? `Action: ${a.actionStatement}` : ''].filter(Boolean).join(' ');
  return `${a.status} per ${exceptionLabel(a.exception)}, ${vexSource(a.vex)}: ${why}`;
}
