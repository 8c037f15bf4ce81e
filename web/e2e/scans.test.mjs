// Scan status end to end: operator events (CloudEvents on JetStream, as the
// operator publishes them) reach a real results-api through a real
// nats-server, and the dashboard shows them live: the images table's scan
// column and the overview's failed scans with their reason.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect, JSONCodec } from 'nats';
import { launch } from './browser.mjs';
import { loadFixtures, syntheticDigest } from './fixtures.mjs';
import { buildBinaries, buildNatsServer, putReport, startNats, startPostgres, startResultsApi, until } from './harness.mjs';

const jc = JSONCodec();

describe('scan status from operator events', { timeout: 300_000 }, () => {
  let tmp, pg, nats, api, nc, browser, page, fixture;

  before(async () => {
    [fixture] = await loadFixtures();
    assert.ok(fixture, 'no Grype fixtures in results-api/testdata/grype');
    tmp = await mkdtemp(join(tmpdir(), 'crowsnest-web-scans-'));
    const [bins, natsBin] = await Promise.all([buildBinaries(tmp), buildNatsServer(tmp)]);
    pg = await startPostgres(bins.pgserver);
    nats = await startNats(natsBin, tmp);
    api = await startResultsApi(bins.resultsApi, pg.url, ['--nats-url', nats.url]);
    await putReport(api, fixture.digest, fixture.image, fixture.raw);
    nc = await connect({ servers: nats.url, timeout: 5000 });
    browser = await launch();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(15_000);
  });

  after(async () => {
    await browser?.close();
    await nc?.close();
    await api?.close();
    await nats?.stop();
    await pg?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  /** Publishes like the operator: CloudEvents JSON, Nats-Msg-Id = event id. results-api creates the stream. */
  async function publish(kind, data) {
    const ev = {
      specversion: '1.0',
      id: randomUUID().replaceAll('-', ''),
      source: 'crowsnest/operator',
      type: `dev.crowsnest.${kind}.v1`,
      subject: data.digest,
      time: new Date().toISOString(),
      datacontenttype: 'application/json',
      data,
    };
    const js = nc.jetstream();
    await until(() => js.publish(`crowsnest.${kind}`, jc.encode(ev), { msgID: ev.id }).then(() => true), `publish ${kind}`, 15_000, 200);
  }

  const scanCell = () => page.locator(`tr[data-digest="${fixture.digest}"] td`).last();
  const base = () => ({ image: fixture.image, namespace: 'apps', scanner: 'default', job: 'scan-abc123' });

  it('shows a rescan in progress and then its failure reason, live', async () => {
    await page.goto(`${api.base}/images`);
    await scanCell().waitFor();
    await until(async () => (await page.getByTestId('connection').getAttribute('data-state')) === 'open', 'live');
    await publish('image.needed', { ...base(), digest: fixture.digest, pods: ['web-0'], reason: 'rescan', attempt: 2 });
    await until(async () => /scanning/.test(await scanCell().innerText()), 'scanning status', 15_000);
    assert.match(await scanCell().innerText(), /attempt 2/);
    await publish('job.done', {
      ...base(), digest: fixture.digest, outcome: 'failed', reason: 'ImagePullFailed',
      message: 'pull access denied', durationSeconds: 3.5, attempt: 2,
    });
    await until(async () => /failed: ImagePullFailed/.test(await scanCell().innerText()), 'failed status', 15_000);
  });

  it('lists failed scans with their reason on the overview', async () => {
    const other = syntheticDigest('never-scanned');
    await publish('job.done', {
      ...base(), image: `registry.local/private/app@${other}`, digest: other, outcome: 'failed',
      reason: 'ScanTimeout', message: 'deadline exceeded', durationSeconds: 600, attempt: 1,
    });
    await page.goto(`${api.base}/`);
    await until(async () => (await page.getByTestId('stat-failed').innerText()).startsWith('2'), 'two failed scans', 15_000);
    const failed = page.locator('section', { has: page.getByRole('heading', { name: 'Failed scans' }) });
    await failed.getByText('failed: ScanTimeout').waitFor();
    await failed.getByText('deadline exceeded').waitFor();
    await failed.getByText('failed: ImagePullFailed').waitFor();
  });
});
