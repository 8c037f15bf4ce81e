// Real Grype CycloneDX output from results-api/testdata/grype/ (made by
// `make fixtures`), and the counts a person reading each document would
// expect: one finding per (vulnerability id, affected component), severity
// from the first rating that names one (CycloneDX "none" is Negligible),
// fixable when Grype recorded an unaffected (fixed) version.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { repoRoot } from './harness.mjs';

export const fixtureDir = process.env.CROWSNEST_FIXTURE_DIR ?? join(repoRoot, 'results-api', 'testdata', 'grype');

const SEV = { critical: 'critical', high: 'high', medium: 'medium', moderate: 'medium', low: 'low', negligible: 'negligible', none: 'negligible', info: 'negligible' };

export function expectedSummary(bom) {
  const counts = { critical: 0, high: 0, medium: 0, low: 0, negligible: 0, unknown: 0 };
  const ids = new Set();
  let fixable = 0;
  let findings = 0;
  const seen = new Set();
  for (const v of bom.vulnerabilities ?? []) {
    const sev = (v.ratings ?? []).map((r) => SEV[(r.severity ?? '').toLowerCase()]).find(Boolean) ?? 'unknown';
    const affects = v.affects?.length ? v.affects : [{}];
    for (const a of affects) {
      const key = `${v.id}\u0000${a.ref ?? ''}`;
      if (seen.has(key)) continue;
      seen.add(key);
      findings++;
      counts[sev]++;
      ids.add(v.id);
      if ((a.versions ?? a.range ?? []).some((r) => r.status === 'unaffected')) fixable++;
    }
  }
  return { counts, fixable, findings, ids: [...ids] };
}

/** Digest and image reference of a fixture: from its metadata component, else derived from its bytes. */
function identity(file, bom, raw) {
  const comp = bom.metadata?.component ?? {};
  const name = typeof comp.name === 'string' ? comp.name : '';
  let digest = /^sha256:[0-9a-f]{64}$/.test(comp.version ?? '') ? comp.version : (name.match(/@(sha256:[0-9a-f]{64})$/) ?? [])[1];
  if (!digest) digest = `sha256:${createHash('sha256').update(raw).digest('hex')}`;
  const repo = name.split('@')[0] || `fixtures/${basename(file, '.json')}`;
  return { digest, image: `${repo}@${digest}` };
}

/**
 * The real (non-synthetic) fixtures. manifest.json, written with them, names
 * each file's image and digest; without it, every *.json is read and the
 * identity comes from the BOM's metadata.
 */
export async function loadFixtures() {
  let entries;
  try {
    const manifest = JSON.parse(await readFile(join(fixtureDir, 'manifest.json'), 'utf8'));
    entries = manifest.fixtures.filter((f) => !f.synthetic);
  } catch {
    try {
      entries = (await readdir(fixtureDir)).filter((n) => n.endsWith('.json') && n !== 'manifest.json').sort().map((file) => ({ file }));
    } catch {
      return [];
    }
  }
  const out = [];
  for (const e of entries) {
    const raw = await readFile(join(fixtureDir, e.file));
    const bom = JSON.parse(raw.toString());
    if (bom.bomFormat !== 'CycloneDX') continue;
    const id = e.digest && e.image ? { digest: e.digest, image: e.image } : identity(e.file, bom, raw);
    // Two fixtures of one image (e.g. different scan modes) must stay two rows.
    if (out.some((f) => f.digest === id.digest)) {
      id.digest = syntheticDigest(e.file);
      id.image = `${id.image.split('@')[0]}@${id.digest}`;
    }
    out.push({ file: e.file, raw, bom, ...id, manifest: e.counts ? e : undefined, expected: expectedSummary(bom) });
  }
  return out;
}

/** n distinct digests for copies of one fixture (load tests). */
export function syntheticDigest(i) {
  return `sha256:${createHash('sha256').update(`crowsnest-e2e-${i}`).digest('hex')}`;
}
