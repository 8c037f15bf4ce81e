// Risk and age on the report page, from real Grype output: the Debian
// fixture, whose Grype run rated CVE-2023-4911 as listed in CISA KEV and
// gave EPSS scores to some findings, stored through the real results-api on
// Postgres with an SLA of one second for every severity and KEV, so every
// finding is overdue a moment after it is first seen. The findings table
// lists the KEV finding first (the default order is risk), with its KEV
// badge, the EPSS probability where Grype gave one, and an Overdue badge
// in the age column of every finding.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { launch } from './browser.mjs';
import { loadFixtures } from './fixtures.mjs';
import { buildBinaries, getJson, putReport, startPostgres, startResultsApi, until } from './harness.mjs';

const T = 15_000;
const SLA = 'critical=1s,high=1s,medium=1s,low=1s,negligible=1s,unknown=1s,kev=1s';

describe('risk and age on the report page', { timeout: 300_000 }, () => {
  let tmp, pg, api, browser, page, D, kevIds, epssIds;

  before(async () => {
    D = (await loadFixtures()).find((f) => f.file === 'debian.cdx.json');
    assert.ok(D, 'the debian Grype fixture is missing from results-api/testdata/grype');
    const rated = (pred) => D.bom.vulnerabilities.filter((v) => (v.ratings ?? []).some(pred)).map((v) => v.id);
    kevIds = rated((r) => /KEV/.test(r.source?.name ?? ''));
    epssIds = rated((r) => r.source?.name === 'FIRST'); // Grype writes EPSS as a rating from FIRST
    assert.deepEqual(kevIds, ['CVE-2023-4911'], "Grype's KEV rating in the fixture");
    tmp = await mkdtemp(join(tmpdir(), 'crowsnest-web-risk-'));
    const bins = await buildBinaries(tmp);
    pg = await startPostgres(bins.pgserver);
    api = await startResultsApi(bins.resultsApi, pg.url, ['--sla', SLA]);
    await putReport(api, D.digest, D.image, D.raw);
    browser = await launch();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(T);
    page.on('pageerror', (err) => console.error('page error:', err));
  });

  after(async () => {
    await browser?.close();
    await api?.close();
    await pg?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  const rows = () => page.locator('[data-testid=findings-table] tbody tr');
  const ids = () => page.locator('[data-testid=findings-table] tbody td.id > a:first-child').allInnerTexts();

  it('lists the KEV finding first with its badge, EPSS where Grype scored it, and every finding overdue', async () => {
    // Past the one-second SLA of every finding.
    await until(async () => (await getJson(api, `/api/v1/reports/${D.digest}`)).findings.every((f) => f.overdue), 'every finding overdue', T);
    const report = await getJson(api, `/api/v1/reports/${D.digest}`);
    await page.goto(`${api.base}/images/${D.digest}`);
    await until(async () => (await rows().count()) === report.findings.length, `${report.findings.length} findings`, T);

    const shown = await ids();
    assert.equal(shown[0], kevIds[0], 'the KEV finding leads the risk order');
    assert.deepEqual(shown, report.findings.map((f) => f.id), "the API's risk order");

    const risk = page.locator('[data-testid=findings-table] tbody td[data-testid=risk]');
    const kevBadges = await risk.evaluateAll((tds) => tds.map((td) => !!td.querySelector('.kev')));
    assert.deepEqual(kevBadges.map((b, i) => (b ? shown[i] : null)).filter(Boolean), kevIds, 'a KEV badge on the KEV finding only');
    const epssShown = await risk.evaluateAll((tds) => tds.map((td) => td.querySelector('.epss')?.textContent ?? ''));
    assert.deepEqual(
      [...new Set(shown.filter((_, i) => epssShown[i] !== ''))].sort(),
      [...new Set(epssIds)].sort(),
      'an EPSS probability on exactly the findings Grype scored',
    );
    for (const text of epssShown.filter(Boolean)) assert.match(text, /^EPSS \d+(\.\d+)?%$/);

    const overdue = await page.locator('[data-testid=findings-table] tbody td[data-testid=age]').evaluateAll(
      (tds) => tds.map((td) => !!td.querySelector('[data-testid=overdue]')),
    );
    assert.equal(overdue.length, report.findings.length);
    assert.ok(overdue.every(Boolean), 'an Overdue badge on every finding past its one-second SLA');
  });
});
