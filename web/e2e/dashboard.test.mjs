// Browser tests: Debian's Chromium against the real results-api binary on a
// real Postgres, seeded with real Grype CycloneDX output through the API.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { launch } from './browser.mjs';
import { loadFixtures, syntheticDigest } from './fixtures.mjs';
import { buildBinaries, getJson, putReport, startPostgres, startResultsApi, until } from './harness.mjs';
import { saveScreenshot } from './screenshots.mjs';

const SEVS = ['critical', 'high', 'medium', 'low', 'negligible', 'unknown'];
const T = 15_000;
// The DB the fixtures were scanned against (results-api/testdata/grype/clean.grype.json).
const DB_HEADERS = { 'X-Crowsnest-DB-Built': '2026-11-01T00:00:00Z', 'X-Crowsnest-DB-Schema': 'v6.1.10' };

describe('dashboard against a real results-api', { timeout: 300_000 }, () => {
  let tmp, pg, api, browser, page, seeded, liveOne;

  before(async () => {
    const fixtures = await loadFixtures();
    assert.ok(fixtures.length > 0, 'no Grype fixtures in results-api/testdata/grype (run make fixtures)');
    tmp = await mkdtemp(join(tmpdir(), 'crowsnest-web-'));
    const bins = await buildBinaries(tmp);
    pg = await startPostgres(bins.pgserver);
    api = await startResultsApi(bins.resultsApi, pg.url);
    // Hold one fixture with findings back: it is uploaded while the page is open.
    if (fixtures.length > 1) {
      liveOne = fixtures.filter((f) => f.expected.findings > 0).at(-1) ?? fixtures.at(-1);
      seeded = fixtures.filter((f) => f !== liveOne);
    } else {
      seeded = fixtures;
      const digest = syntheticDigest('live');
      liveOne = { ...fixtures[0], digest, image: `${fixtures[0].image.split('@')[0]}@${digest}` };
    }
    for (const f of fixtures) {
      // What the test expects, read from the CycloneDX, agrees with the fixture generator's manifest.
      if (f.manifest) {
        assert.deepEqual(f.expected.counts, f.manifest.counts, `${f.file} counts vs manifest`);
        assert.equal(f.expected.fixable, f.manifest.fixable, `${f.file} fixable vs manifest`);
        assert.equal(f.expected.findings, f.manifest.findings, `${f.file} findings vs manifest`);
      }
    }
    for (const f of seeded) {
      // As the scan Job's uploader sends them: the DB Grype matched against.
      const summary = await putReport(api, f.digest, f.image, f.raw, DB_HEADERS);
      assert.deepEqual(summary.counts, f.expected.counts, `server counts for ${f.file}`);
    }
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

  const rowCount = () => page.locator('[data-testid=images-table] tbody tr').count();
  async function expectRows(digests, what) {
    await until(async () => (await rowCount()) === digests.length || (digests.length === 0 && (await page.locator('[data-testid=state-empty]').count()) === 1), what, T);
    for (const d of digests) assert.equal(await page.locator(`tr[data-digest="${d}"]`).count(), 1, `${what}: row ${d}`);
  }

  it('lists every seeded image with its severity counts and fixable count', async () => {
    await page.goto(`${api.base}/images`);
    await expectRows(seeded.map((f) => f.digest), 'seeded rows');
    for (const f of seeded) {
      const row = page.locator(`tr[data-digest="${f.digest}"]`);
      for (const sev of ['critical', 'high', 'medium', 'low']) {
        const text = (await row.locator(`td[data-sev=${sev}]`).innerText()).replace(/\s+/g, ' ');
        assert.match(text, new RegExp(`\\b${f.expected.counts[sev]}$`), `${f.file} ${sev}: "${text}"`);
      }
      assert.equal((await row.locator('td[data-col=fixable]').innerText()).trim(), String(f.expected.fixable), `${f.file} fixable`);
      assert.equal(await row.locator('a').getAttribute('href'), `/images/${f.digest}`);
    }
    assert.match(await page.getByTestId('images-total').innerText(), new RegExp(`Showing ${seeded.length} of ${seeded.length} image`));
    await saveScreenshot(page, 'images');
  });

  it('narrows the list with filters held in the URL', async () => {
    const worstOrAt = (f, sev) => SEVS.slice(0, SEVS.indexOf(sev) + 1).some((s) => f.expected.counts[s] > 0);
    // A severity that matches some but not all images if there is one, else the most selective that matches any.
    const levels = ['critical', 'high', 'medium', 'low'];
    const hits = (s) => seeded.filter((f) => worstOrAt(f, s)).length;
    const sev = levels.find((s) => hits(s) > 0 && hits(s) < seeded.length) ?? levels.find((s) => hits(s) > 0) ?? 'critical';
    await page.goto(`${api.base}/images`);
    await expectRows(seeded.map((f) => f.digest), 'all rows');
    await page.selectOption('select[name=minSeverity]', sev);
    await until(async () => new URL(page.url()).searchParams.get('minSeverity') === sev, 'minSeverity in URL');
    await expectRows(seeded.filter((f) => worstOrAt(f, sev)).map((f) => f.digest), `minSeverity=${sev}`);

    await page.check('input[name=fixable]');
    await until(async () => new URL(page.url()).searchParams.get('fixable') === 'true', 'fixable in URL');
    await expectRows(seeded.filter((f) => worstOrAt(f, sev) && f.expected.fixable > 0).map((f) => f.digest), 'min severity + fixable');

    // Back button restores the previous filter state.
    await page.goBack();
    await until(async () => !new URL(page.url()).searchParams.has('fixable'), 'fixable gone after back');
    assert.equal(await page.isChecked('input[name=fixable]'), false);
    await expectRows(seeded.filter((f) => worstOrAt(f, sev)).map((f) => f.digest), 'after back');

    // Free text on a CVE id, as a shared link: the id carried by the fewest images.
    const ids = seeded.flatMap((f) => f.expected.ids);
    const rare = ids.sort((a, b) => ids.filter((x) => x === a).length - ids.filter((x) => x === b).length)[0];
    if (rare) {
      await page.goto(`${api.base}/images?q=${encodeURIComponent(rare)}`);
      assert.equal(await page.inputValue('input[name=q]'), rare);
      await expectRows(seeded.filter((f) => f.expected.ids.includes(rare)).map((f) => f.digest), `q=${rare}`);
    }
    await page.goto(`${api.base}/images?q=no-such-image-anywhere`);
    await page.getByTestId('state-empty').waitFor();
    assert.match(await page.getByTestId('state-empty').innerText(), /No images match/);
  });

  it('shows an image’s findings with advisory links, a filter and the BOM', async () => {
    const f = [...seeded].sort((a, b) => b.expected.findings - a.expected.findings)[0];
    await page.goto(`${api.base}/images`);
    await page.locator(`tr[data-digest="${f.digest}"] a`).click();
    await until(async () => new URL(page.url()).pathname === `/images/${f.digest}`, 'detail URL');
    const rows = page.locator('[data-testid=findings-table] tbody tr');
    if (f.expected.findings === 0) {
      await page.getByTestId('state-empty').waitFor();
    } else {
      await until(async () => (await rows.count()) === f.expected.findings, `${f.expected.findings} findings`);
      const cve = f.expected.ids.find((id) => id.startsWith('CVE-'));
      if (cve) {
        const href = await page.locator(`a:text-is("${cve}")`).first().getAttribute('href');
        assert.equal(href, `https://nvd.nist.gov/vuln/detail/${cve}`);
      }
      const ghsa = f.expected.ids.find((id) => id.startsWith('GHSA-'));
      if (ghsa) assert.equal(await page.locator(`a:text-is("${ghsa}")`).first().getAttribute('href'), `https://github.com/advisories/${ghsa}`);
      const worst = SEVS.find((s) => f.expected.counts[s] > 0);
      await page.selectOption('main form select', worst);
      await until(async () => (await rows.count()) === f.expected.counts[worst], `only ${worst} findings`);
      await page.selectOption('main form select', '');
    }
    assert.equal(
      (await page.getByTestId('provenance').innerText()).trim(),
      'Grype 0.121.2, DB built 2026-11-01 00:00:00 UTC (schema v6.1.10)',
    );
    const bomHref = await page.getByText('Download CycloneDX BOM').getAttribute('href');
    const bom = Buffer.from(await (await fetch(`${api.base}${bomHref}`)).arrayBuffer());
    assert.ok(bom.equals(f.raw), 'BOM download is byte-for-byte the upload');
    await until(async () => (await rows.count()) === f.expected.findings || f.expected.findings === 0, 'filter cleared');
    await saveScreenshot(page, 'detail');

    const clean = seeded.find((c) => c.expected.findings === 0);
    if (clean) {
      await page.goto(`${api.base}/images/${clean.digest}`);
      await page.getByText('Grype found no vulnerabilities in this image.').waitFor();
    }
  });

  it('lists the images that carry a vulnerability', async () => {
    const ids = seeded.flatMap((f) => f.expected.ids);
    if (ids.length === 0) return;
    const common = ids.sort((a, b) => ids.filter((x) => x === b).length - ids.filter((x) => x === a).length)[0];
    const carriers = seeded.filter((f) => f.expected.ids.includes(common));
    await page.goto(`${api.base}/images/${carriers[0].digest}`);
    await page.locator(`a[href="/vulnerabilities/${encodeURIComponent(common)}"]`).first().click();
    const table = page.getByTestId('vulnerability-images');
    await table.waitFor();
    for (const f of carriers) await table.locator(`a[href="/images/${f.digest}"]`).first().waitFor();
    const shown = new Set(await table.locator('tbody a').evaluateAll((as) => as.map((a) => a.getAttribute('href'))));
    assert.deepEqual([...shown].sort(), carriers.map((f) => `/images/${f.digest}`).sort());
  });

  it('shows a report uploaded while the page is open, without a reload, highlighted', async () => {
    await page.goto(`${api.base}/images`);
    await expectRows(seeded.map((f) => f.digest), 'rows before upload');
    await until(async () => (await page.getByTestId('connection').getAttribute('data-state')) === 'open', 'live connection');
    await page.evaluate(() => (window.__sameDocument = true));
    await putReport(api, liveOne.digest, liveOne.image, liveOne.raw);
    const row = page.locator(`tr[data-digest="${liveOne.digest}"]`);
    await row.waitFor();
    assert.match((await row.getAttribute('class')) ?? '', /flash/, 'new row is highlighted');
    assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload happened');
    assert.equal((await row.locator('td[data-sev=critical]').innerText()).replace(/\D+/g, ''), String(liveOne.expected.counts.critical));
    await until(async () => !/flash/.test((await row.getAttribute('class')) ?? ''), 'highlight fades', 10_000);
  });

  it('overview totals agree with the API', async () => {
    await page.goto(`${api.base}/`);
    const stats = await getJson(api, '/api/v1/stats');
    assert.equal(stats.images, seeded.length + 1);
    await until(async () => (await page.getByTestId('stat-images').innerText()).startsWith(String(stats.images)), 'images tile');
    assert.ok((await page.getByTestId('stat-findings').innerText()).startsWith(String(stats.findings)));
    // No matcher has announced a DB here: the DB-age tile says so.
    const vulndb = await getJson(api, '/api/v1/vulndb');
    assert.equal(vulndb.served, undefined);
    assert.equal(vulndb.builds.find((b) => b.built === DB_HEADERS['X-Crowsnest-DB-Built'])?.reports, seeded.length);
    await until(async () => (await page.getByTestId('stat-db-age').innerText()).startsWith('unknown'), 'DB age tile');
    await saveScreenshot(page, 'overview');
    await page.click('button[aria-label^="Switch to dark"]');
    await saveScreenshot(page, 'overview-dark');
    await page.click('button[aria-label^="Switch to light"]');
  });

  it('deletes a report after confirmation with the write token', async () => {
    await page.goto(`${api.base}/images/${liveOne.digest}`);
    await page.getByRole('button', { name: 'Delete report…' }).click();
    const dialog = page.locator('dialog[open]');
    await dialog.waitFor();
    await dialog.locator('input[name=token]').fill('wrong-token');
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await dialog.getByText('The write token was refused.').waitFor();
    await dialog.locator('input[name=token]').fill(api.token);
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await until(async () => new URL(page.url()).pathname === '/images', 'back on the images list');
    await expectRows(seeded.map((f) => f.digest), 'rows after delete');
    const res = await fetch(`${api.base}/api/v1/reports/${liveOne.digest}`);
    assert.equal(res.status, 404);
  });

  it('shows disconnected while results-api is down and recovers when it returns', async () => {
    await page.goto(`${api.base}/images`);
    const conn = page.getByTestId('connection');
    await until(async () => (await conn.getAttribute('data-state')) === 'open', 'connected');
    await api.stop();
    await until(async () => (await conn.getAttribute('data-state')) === 'closed', 'disconnected indicator', T);
    assert.match(await conn.innerText(), /Disconnected/);
    await page.getByTestId('disconnected-banner').waitFor();
    assert.equal(await rowCount(), seeded.length, 'table stays while offline');
    // A report stored while the page was disconnected shows up after the reconnect refetch.
    await api.start();
    await putReport(api, liveOne.digest, liveOne.image, liveOne.raw);
    await until(async () => (await conn.getAttribute('data-state')) === 'open', 'reconnected indicator', 30_000);
    await page.locator(`tr[data-digest="${liveOne.digest}"]`).waitFor();
    assert.equal(await page.getByTestId('disconnected-banner').count(), 0);
  });
});
