// The images view with 5,000 reports in the database: seeds them through the
// API (copies of the smallest real fixture with findings under generated digests), then
// measures the first render in Chromium. The number is reported, not asserted.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { launch } from './browser.mjs';
import { loadFixtures, syntheticDigest } from './fixtures.mjs';
import { buildBinaries, getJson, pool, putReport, startPostgres, startResultsApi, until, webDir } from './harness.mjs';

const N = Number(process.env.CROWSNEST_SCALE_REPORTS ?? 5000);

describe(`images view with ${N} reports`, { timeout: 600_000 }, () => {
  let tmp, pg, api, browser;
  const numbers = {};

  before(async () => {
    const fixtures = await loadFixtures();
    assert.ok(fixtures.length > 0, 'no Grype fixtures in results-api/testdata/grype');
    // The smallest fixture that has findings (a clean image would make the table trivially light).
    const bySize = [...fixtures].sort((a, b) => a.raw.length - b.raw.length);
    const small = bySize.find((f) => f.expected.findings > 0) ?? bySize[0];
    tmp = await mkdtemp(join(tmpdir(), 'crowsnest-web-scale-'));
    const bins = await buildBinaries(tmp);
    pg = await startPostgres(bins.pgserver);
    api = await startResultsApi(bins.resultsApi, pg.url);
    const repo = small.image.split('@')[0];
    const t0 = performance.now();
    const indexes = Array.from({ length: N }, (_, i) => i);
    await pool(indexes, 8, (i) => {
      const d = syntheticDigest(i);
      return putReport(api, d, `${repo}-${i % 250}@${d}`, small.raw);
    });
    numbers.seedSeconds = +((performance.now() - t0) / 1000).toFixed(1);
    numbers.fixture = small.file;
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await api?.close();
    await pg?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('renders the first rows and pages through the rest', async () => {
    const stats = await getJson(api, '/api/v1/stats');
    assert.equal(stats.images, N);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    // A warm-up visit loads the scripts into the cache, as for a returning user;
    // the measured visit is a fresh document load of /images.
    await page.goto(`${api.base}/`);
    await page.getByTestId('connection').waitFor();
    const samples = [];
    for (let i = 0; i < 3; i++) {
      await page.goto(`${api.base}/images`, { waitUntil: 'commit' });
      await page.locator('[data-testid=images-table] tbody tr').first().waitFor({ timeout: 30_000 });
      samples.push(
        await page.evaluate(() => {
          const list = performance.getEntriesByType('resource').find((e) => e.name.includes('/api/v1/reports?'));
          return { render: performance.now(), api: list ? list.responseEnd - list.startTime : NaN };
        }),
      );
    }
    samples.sort((a, b) => a.render - b.render);
    numbers.firstRenderMs = Math.round(samples[1].render);
    numbers.firstRenderSamplesMs = samples.map((s) => Math.round(s.render));
    // How much of it is the server answering GET /api/v1/reports?limit=100.
    numbers.listRequestMs = Math.round(samples[1].api);
    assert.match(await page.getByTestId('images-total').innerText(), new RegExp(`of ${N} images`));

    // Scrolling to the end of the table loads the next page by cursor.
    const rows = page.locator('[data-testid=images-table] tbody tr');
    const first = await rows.count();
    await page.getByRole('button', { name: 'Load more' }).scrollIntoViewIfNeeded();
    await until(async () => (await rows.count()) > first, 'second page', 15_000);
    numbers.rowsAfterScroll = await rows.count();

    console.log(
      `# first render of /images with ${N} reports: ${numbers.firstRenderMs} ms (samples ${numbers.firstRenderSamplesMs.join(', ')} ms; ` +
        `of which the list request ${numbers.listRequestMs} ms); seeding took ${numbers.seedSeconds} s`,
    );
    await mkdir(join(webDir, 'test-results'), { recursive: true });
    await writeFile(join(webDir, 'test-results', 'scale.json'), JSON.stringify({ reports: N, ...numbers }, null, 2) + '\n');
  });
});
