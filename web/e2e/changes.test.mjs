// New and resolved findings, end to end: reports of one digest with
// different findings go through the real PUT into a real results-api on a
// real Postgres, which records the changes; Debian's Chromium shows them in
// the Changes view, the image's history and the overview, and a report
// uploaded while the page is open arrives over the WebSocket.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { launch } from './browser.mjs';
import { loadFixtures, syntheticDigest } from './fixtures.mjs';
import { buildBinaries, getJson, putReport, startPostgres, startResultsApi, until } from './harness.mjs';
import { saveScreenshot } from './screenshots.mjs';

const T = 15_000;
const SEV = { critical: 'critical', high: 'high', medium: 'medium', low: 'low', none: 'negligible', negligible: 'negligible' };

/** The BOM's findings: one per (id, affected component), with the component's name and version. */
function findingsOf(bom) {
  const comps = new Map((bom.components ?? []).map((c) => [c['bom-ref'], c]));
  return (bom.vulnerabilities ?? []).flatMap((v) => {
    const severity = (v.ratings ?? []).map((r) => SEV[(r.severity ?? '').toLowerCase()]).find(Boolean) ?? 'unknown';
    return (v.affects ?? []).map((a) => ({ id: v.id, severity, name: comps.get(a.ref)?.name, version: comps.get(a.ref)?.version }));
  });
}

/** The fixture's CycloneDX without the vulnerabilities of the given ids. */
function without(f, ids) {
  const bom = structuredClone(f.bom);
  bom.vulnerabilities = bom.vulnerabilities.filter((v) => !ids.includes(v.id));
  return Buffer.from(JSON.stringify(bom));
}

/** An id of the given severity carried by exactly one finding of the fixture. */
function pick(f, severity, not = []) {
  const all = findingsOf(f.bom);
  const id = all.find((x) => x.severity === severity && !not.includes(x.id) && all.filter((y) => y.id === x.id).length === 1)?.id;
  assert.ok(id, `${f.file} has no single-finding ${severity} vulnerability`);
  return id;
}

describe('changes against a real results-api', { timeout: 300_000 }, () => {
  let tmp, pg, api, browser, page;
  let A, B, C, hi, med, bMed1, bMed2, aHi2;

  const history = (digest) => getJson(api, `/api/v1/reports/${digest}/changes?limit=100`).then((l) => l.items);
  const card = (id) => page.locator(`article[data-change-id="${id}"]`);
  const rowIds = (loc) => loc.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => tr.dataset.id));

  before(async () => {
    const fixtures = await loadFixtures();
    A = fixtures.find((f) => f.file === 'node.cdx.json');
    B = fixtures.find((f) => f.file === 'gobinary.cdx.json');
    assert.ok(A && B, 'the node and gobinary Grype fixtures are missing from results-api/testdata/grype');
    hi = pick(A, 'high');
    aHi2 = pick(A, 'high', [hi]);
    med = pick(A, 'medium');
    bMed1 = pick(B, 'medium');
    bMed2 = pick(B, 'medium', [bMed1]);
    const digest = syntheticDigest('changes-paging');
    C = { ...B, digest, image: `crowsnest.dev/demo/paging@${digest}` };

    tmp = await mkdtemp(join(tmpdir(), 'crowsnest-web-changes-'));
    const bins = await buildBinaries(tmp);
    pg = await startPostgres(bins.pgserver);
    api = await startResultsApi(bins.resultsApi, pg.url);

    // C first (so its changes are the oldest): a medium finding that comes and
    // goes, 22 changes in all, more than one page of the feed.
    for (let i = 0; i < 22; i++) await putReport(api, C.digest, C.image, i % 2 ? without(C, [bMed1]) : C.raw);
    // A: a baseline without `hi`, then `hi` new and `med` resolved (a high change).
    await putReport(api, A.digest, A.image, without(A, [hi]));
    await putReport(api, A.digest, A.image, without(A, [med]));
    // B: a baseline, then `bMed1` resolved (a medium-only change).
    await putReport(api, B.digest, B.image, B.raw);
    await putReport(api, B.digest, B.image, without(B, [bMed1]));

    browser = await launch();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(T);
    page.on('pageerror', (err) => console.error('page error:', err));
  });

  after(async () => {
    await browser?.close();
    await api?.close();
    await pg?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('lists the exact new and resolved findings of a change, and a first scan compactly', async () => {
    const [a2, a1] = await history(A.digest);
    assert.equal(a1.baseline, true);
    assert.equal(a2.baseline, false);
    await page.goto(`${api.base}/changes`);
    await card(a2.id).waitFor();

    const c = card(a2.id);
    assert.equal(await c.locator('h2 a').getAttribute('href'), `/images/${A.digest}`);
    assert.equal((await c.locator('h2 a').innerText()).trim(), A.image.split('@')[0]);
    assert.equal((await c.getByTestId('cause').innerText()).trim(), 'Rescan');
    assert.deepEqual(await rowIds(c.getByTestId('new-findings')), [hi]);
    assert.deepEqual(await rowIds(c.getByTestId('resolved-findings')), [med]);
    const want = findingsOf(A.bom).find((f) => f.id === hi);
    const row = c.locator(`[data-testid=new-findings] tr[data-id="${hi}"]`);
    const cells = await row.locator('td').allInnerTexts();
    assert.match(cells[1], /high/i);
    assert.match(cells[2], new RegExp(`^${want.name}\\b`));
    assert.equal(cells[3].trim(), want.version);
    assert.equal(cells[4].trim(), a2.new[0].fixedIn?.length ? a2.new[0].fixedIn.join(', ') : '—');
    assert.equal(await row.locator('a').getAttribute('href'), `/vulnerabilities/${encodeURIComponent(hi)}`);
    assert.match(await c.getByTestId('new-counts').innerText(), /high\s*1/i);
    assert.match(await c.getByTestId('resolved-counts').innerText(), /medium\s*1/i);

    // The baseline: counts only, not "new".
    const base = card(a1.id);
    assert.equal(await base.getAttribute('data-baseline'), 'true');
    const n = A.expected.findings - 1;
    assert.match(await base.getByTestId('baseline').innerText(), new RegExp(`First scan: ${n} findings`));
    assert.equal(await base.locator('table').count(), 0);
    await saveScreenshot(page, 'changes');

    // The id links to the vulnerability view, which lists the image.
    await row.locator('a').click();
    await until(async () => new URL(page.url()).pathname === `/vulnerabilities/${hi}`, 'vulnerability view');
    await page.getByTestId('vulnerability-images').locator(`a[href="/images/${A.digest}"]`).first().waitFor();
  });

  it('filters by severity and cause through the URL', async () => {
    const [a2] = await history(A.digest);
    const [b2, b1] = await history(B.digest);
    assert.deepEqual(b2.resolved.map((f) => f.id), [bMed1]);
    await page.goto(`${api.base}/changes`);
    await card(b2.id).waitFor();
    await card(a2.id).waitFor();

    await page.selectOption('select[name=minSeverity]', 'high');
    await until(async () => new URL(page.url()).searchParams.get('minSeverity') === 'high', 'minSeverity in URL');
    await until(async () => (await card(b2.id).count()) === 0, 'the medium-only change hidden');
    await card(a2.id).waitFor();
    // Only the high finding is listed; the counts stay complete.
    assert.deepEqual(await rowIds(card(a2.id).getByTestId('new-findings')), [hi]);
    assert.equal(await card(a2.id).getByTestId('resolved-findings').count(), 0);
    assert.match(await card(a2.id).getByTestId('resolved-counts').innerText(), /medium\s*1/i);
    await card(a2.id).getByText('1 finding below high not listed.').waitFor();
    // B's baseline has a critical finding: listed.
    await card(b1.id).waitFor();

    await page.selectOption('select[name=cause]', 'rescan');
    await until(async () => new URL(page.url()).searchParams.get('cause') === 'rescan', 'cause in URL');
    await until(async () => (await page.locator('article[data-baseline=true]').count()) === 0, 'baselines hidden');
    await card(a2.id).waitFor();

    await page.goBack();
    await until(async () => !new URL(page.url()).searchParams.has('cause'), 'cause gone after back');
    await card(b1.id).waitFor();
    assert.equal(await card(b2.id).count(), 0);
  });

  it('pages older changes with load more', async () => {
    const all = await getJson(api, '/api/v1/changes?limit=100');
    assert.ok(all.items.length > 20 && !all.nextCursor, `${all.items.length} changes`);
    await page.goto(`${api.base}/changes`);
    const cards = page.locator('article[data-change-id]');
    await until(async () => (await cards.count()) === 20, 'first page of 20');
    await page.getByRole('button', { name: 'Load more' }).click();
    await until(async () => (await cards.count()) === all.items.length, `all ${all.items.length} changes`);
    const shown = await cards.evaluateAll((as) => as.map((a) => Number(a.dataset.changeId)));
    assert.deepEqual(shown, all.items.map((c) => c.id), 'newest first, no duplicates');
    assert.equal(await page.getByRole('button', { name: 'Load more' }).count(), 0);
  });

  it('shows an image’s change history, newest first, on its detail page', async () => {
    const items = await history(A.digest);
    await page.goto(`${api.base}/images/${A.digest}`);
    const hist = page.getByTestId('change-history');
    const cards = hist.locator('article[data-change-id]');
    await until(async () => (await cards.count()) === items.length, `${items.length} changes in the history`);
    assert.deepEqual(await cards.evaluateAll((as) => as.map((a) => Number(a.dataset.changeId))), items.map((c) => c.id));
    const first = cards.first();
    assert.equal(await first.locator('h2').count(), 0, 'the history does not repeat the image');
    await first.getByText(/New findings \(1\)/).click();
    assert.deepEqual(await rowIds(first.getByTestId('new-findings')), [hi]);
    await cards.last().getByTestId('baseline').waitFor();
    assert.equal((await page.getByTestId('report-cause').innerText()).trim(), 'rescan');
    await hist.scrollIntoViewIfNeeded();
    await saveScreenshot(page, 'change-history');

    // C has more history than one page.
    await page.goto(`${api.base}/images/${C.digest}`);
    const cCards = page.getByTestId('change-history').locator('article[data-change-id]');
    await until(async () => (await cCards.count()) === 10, 'first page of the history');
    await page.getByRole('button', { name: 'Load older changes' }).click();
    await until(async () => (await cCards.count()) === 20, 'second page of the history');
    await page.getByRole('button', { name: 'Load older changes' }).click();
    await until(async () => (await cCards.count()) === 22, 'the whole history');
    await cCards.last().getByTestId('baseline').waitFor();
  });

  it('prepends a change uploaded while the page is open, without a reload', async () => {
    await page.goto(`${api.base}/changes`);
    await page.locator('article[data-change-id]').first().waitFor();
    await until(async () => (await page.getByTestId('connection').getAttribute('data-state')) === 'open', 'live connection');
    await page.evaluate(() => (window.__sameDocument = true));
    const before = (await history(A.digest))[0].id;
    await putReport(api, A.digest, A.image, A.raw); // med comes back
    const [a3] = await history(A.digest);
    assert.notEqual(a3.id, before);
    const c = card(a3.id);
    await c.waitFor();
    assert.equal(await page.locator('article[data-change-id]').first().getAttribute('data-change-id'), String(a3.id), 'prepended');
    assert.deepEqual(await rowIds(c.getByTestId('new-findings')), [med]);
    assert.equal(await c.getByTestId('resolved-findings').count(), 0);
    assert.match((await c.getAttribute('class')) ?? '', /flash/, 'highlighted');
    assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload happened');
    assert.equal(await card(a3.id).count(), 1, 'one card although a frame and a refetch may both carry it');
  });

  it('applies the active filters to live changes', async () => {
    await page.goto(`${api.base}/changes?minSeverity=high&since=24h`);
    await page.locator('article[data-change-id]').first().waitFor();
    await until(async () => (await page.getByTestId('connection').getAttribute('data-state')) === 'open', 'live connection');
    await page.evaluate(() => (window.__sameDocument = true));
    await putReport(api, B.digest, B.image, without(B, [bMed1, bMed2])); // bMed2 resolved: medium only
    const [b3] = await history(B.digest);
    assert.deepEqual(b3.resolved.map((f) => f.id), [bMed2]);
    await putReport(api, A.digest, A.image, without(A, [aHi2])); // aHi2 resolved: high
    const [a4] = await history(A.digest);
    await card(a4.id).waitFor();
    assert.deepEqual(await rowIds(card(a4.id).getByTestId('resolved-findings')), [aHi2]);
    // Frames arrive in order: the medium change came first and was left out.
    assert.equal(await card(b3.id).count(), 0, 'the medium-only change is not shown');
    assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload happened');
  });

  it('counts new critical and high findings of the last week on the overview and links to them', async () => {
    const week = new Date(Date.now() - 7 * 86400_000).toISOString();
    const feed = await getJson(api, `/api/v1/changes?limit=100&minSeverity=high&since=${encodeURIComponent(week)}`);
    const want = feed.items.filter((c) => !c.baseline).reduce((n, c) => n + c.newCounts.critical + c.newCounts.high, 0);
    assert.equal(want, 1, 'only A2 brought a new high finding');
    await page.goto(`${api.base}/`);
    const tile = page.getByTestId('stat-new-severe');
    await until(async () => (await tile.innerText()).startsWith(String(want)), `tile shows ${want}`);
    await tile.click();
    await until(async () => new URL(page.url()).pathname === '/changes', 'changes view');
    const q = new URL(page.url()).searchParams;
    assert.equal(q.get('since'), '7d');
    assert.equal(q.get('minSeverity'), 'high');
    assert.equal(await page.inputValue('select[name=since]'), '7d');
    const cards = page.locator('article[data-change-id]');
    await until(async () => (await cards.count()) === feed.items.length, `${feed.items.length} changes`);
  });

  it('shows a finding newly listed in CISA KEV as a change of its own, once', async () => {
    const digest = syntheticDigest('changes-kev');
    const image = `crowsnest.dev/demo/kev@${digest}`;
    const listed = structuredClone(B.bom);
    const v = listed.vulnerabilities.find((x) => x.id === bMed1);
    v.ratings = [...(v.ratings ?? []), { source: { name: 'CISA KEV Catalog' }, method: 'other', justification: 'Listed in CISA KEV' }];
    const body = Buffer.from(JSON.stringify(listed));
    await putReport(api, digest, image, B.raw);
    await putReport(api, digest, image, body);
    await putReport(api, digest, image, Buffer.from(JSON.stringify(listed, null, 1))); // the same findings again
    const items = await history(digest);
    assert.equal(items.length, 2, 'a baseline and one KEV change');
    const [k] = items;
    assert.equal(k.kevAddedCount, 1);
    assert.deepEqual(k.kevAdded.map((f) => [f.id, f.kev]), [[bMed1, true]]);
    assert.deepEqual([k.new, k.resolved], [[], []]);

    await page.goto(`${api.base}/changes`);
    const c = card(k.id);
    await c.waitFor();
    assert.match(await c.getByTestId('kev-added-count').innerText(), /Newly in CISA KEV\s*1/);
    assert.deepEqual(await rowIds(c.getByTestId('kev-added-findings')), [bMed1]);
    assert.equal(await c.getByTestId('new-findings').count(), 0);
  });
});
