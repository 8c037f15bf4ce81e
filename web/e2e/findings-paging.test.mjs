// An image with more findings than one page: the synthetic large fixture
// (3,000 findings, results-api/testdata/grype/large.cdx.json) through the
// real results-api on Postgres. The detail view shows the first 500 and the
// total, and "Load more findings" follows the API's cursor page by page.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { launch } from './browser.mjs';
import { fixtureDir } from './fixtures.mjs';
import { buildBinaries, getJson, putReport, startPostgres, startResultsApi, until } from './harness.mjs';

const T = 15_000;

describe('findings of a large report, page by page', { timeout: 300_000 }, () => {
  let tmp, pg, api, browser, page, large;

  before(async () => {
    const manifest = JSON.parse(await readFile(join(fixtureDir, 'manifest.json'), 'utf8'));
    large = manifest.fixtures.find((f) => f.name === 'large');
    assert.ok(large && large.findings > 1000, 'manifest.json lists the large fixture with more than 1,000 findings');
    tmp = await mkdtemp(join(tmpdir(), 'crowsnest-web-paging-'));
    const bins = await buildBinaries(tmp);
    pg = await startPostgres(bins.pgserver);
    api = await startResultsApi(bins.resultsApi, pg.url);
    await putReport(api, large.digest, large.image, await readFile(join(fixtureDir, large.file)));
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
  const more = () => page.getByRole('button', { name: 'Load more findings' });

  it('shows 500 findings and the total, then 1,000 after "Load more findings", in the API’s order', async () => {
    await page.goto(`${api.base}/images/${large.digest}`);
    await until(async () => (await rows().count()) === 500, 'the first 500 findings', T);
    const facts = page.locator('dl.facts');
    assert.match(await facts.innerText(), new RegExp(`Findings\\s+${large.findings} \\(${large.fixable} fixable\\)`));
    assert.match(await page.getByTestId('findings-count').innerText(), new RegExp(`500 of 500 findings loaded, ${large.findings} in all`));

    await more().click();
    await until(async () => (await rows().count()) === 1000, '1,000 findings after Load more', T);
    const shown = await ids();
    assert.equal(new Set(shown).size, 1000, 'no finding shown twice');
    const api1000 = await getJson(api, `/api/v1/reports/${large.digest}?sort=risk&findingsLimit=1000`);
    assert.deepEqual(shown, api1000.findings.map((f) => f.id), 'the first 1,000 findings in the API’s risk order');
    assert.match(await page.getByTestId('findings-count').innerText(), new RegExp(`1000 of 1000 findings loaded, ${large.findings} in all`));
  });

  it('loads to the last page, where the button goes away', async () => {
    for (let n = 1500; n <= large.findings; n += 500) {
      await more().click();
      await until(async () => (await rows().count()) === Math.min(n, large.findings), `${n} findings`, T);
    }
    await until(async () => (await more().count()) === 0, 'no Load more on the last page', T);
    const shown = await ids();
    assert.equal(shown.length, large.findings);
    assert.equal(new Set(shown).size, large.findings, 'every finding once');
    assert.equal((await page.getByTestId('findings-count').innerText()).trim(), `${large.findings} of ${large.findings} findings`);
  });
});
