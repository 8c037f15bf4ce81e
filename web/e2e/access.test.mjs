// Read access and inventory end to end: results-api with
// --read-auth=kubernetes (every read needs credentials) and the operator's
// inventory published over a real nats-server. The browser signs in with a
// pasted token, the namespace selector and workload column filter the
// images table, and "Where it runs" shows the workloads of an image and of
// a CVE. The only credential that works here is the static admin token:
// there is no kube-apiserver for TokenReview (see harness.mjs).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect, JSONCodec } from 'nats';
import { launch } from './browser.mjs';
import { loadFixtures, syntheticDigest } from './fixtures.mjs';
import { buildBinaries, buildNatsServer, getJson, putReport, startNats, startPostgres, startResultsApi, until } from './harness.mjs';

const jc = JSONCodec();

describe('sign-in, namespaces and where images run', { timeout: 300_000 }, () => {
  let tmp, pg, nats, api, nc, browser, context, page, running, idle, cve;
  const cspViolations = [];

  before(async () => {
    const fixtures = (await loadFixtures()).filter((f) => f.expected.findings > 0);
    assert.ok(fixtures.length >= 2, 'need two Grype fixtures with findings in results-api/testdata/grype');
    [running, idle] = fixtures;
    tmp = await mkdtemp(join(tmpdir(), 'crowsnest-web-access-'));
    const [bins, natsBin] = await Promise.all([buildBinaries(tmp), buildNatsServer(tmp)]);
    pg = await startPostgres(bins.pgserver);
    nats = await startNats(natsBin, tmp);
    api = await startResultsApi(bins.resultsApi, pg.url, ['--nats-url', nats.url], { readAuth: 'kubernetes' });
    for (const f of [running, idle]) await putReport(api, f.digest, f.image, f.raw);
    nc = await connect({ servers: nats.url, timeout: 5000 });
    // The running image runs in two namespaces; the idle one nowhere.
    await publishInventory('team-a', [
      { kind: 'Deployment', name: 'web', containers: [
        { name: 'app', image: running.image, digest: running.digest, pods: 2 },
        { name: 'sidecar', image: running.image, digest: running.digest, pods: 2 },
      ] },
    ]);
    await publishInventory('team-b', [
      { kind: 'CronJob', name: 'nightly', containers: [{ name: 'job', image: running.image, digest: running.digest, pods: 1 }] },
    ]);
    await until(async () => (await getJson(api, `/api/v1/reports/${running.digest}?findingsLimit=1`)).runningIn?.length === 2,
      'the inventory in results-api', 30_000, 200);
    const detail = await getJson(api, `/api/v1/reports/${running.digest}?findingsLimit=500`);
    cve = detail.findings.find((f) => f.id.startsWith('CVE-'))?.id ?? detail.findings[0].id;

    browser = await launch();
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on('pageerror', (err) => console.error('page error:', err));
    page.on('console', (m) => /Content.Security.Policy/i.test(m.text()) && cspViolations.push(m.text()));
  });

  after(async () => {
    await browser?.close();
    await nc?.close();
    await api?.close();
    await nats?.stop();
    await pg?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  /** Publishes as the operator does: CloudEvents JSON, Nats-Msg-Id = the event id (from the content). */
  async function publish(kind, subject, data) {
    const id = createHash('sha256').update(kind + JSON.stringify(data)).digest('hex').slice(0, 32);
    const ev = {
      specversion: '1.0', id, source: 'crowsnest/operator', type: `dev.crowsnest.${kind}.v1`,
      subject, time: new Date().toISOString(), datacontenttype: 'application/json', data,
    };
    const js = nc.jetstream();
    await until(() => js.publish(`crowsnest.${kind}`, jc.encode(ev), { msgID: id }).then(() => true), `publish ${kind}`, 15_000, 200);
  }

  function publishInventory(namespace, workloads) {
    return publish('inventory.snapshot', namespace, { namespace, previous: `start:${new Date().toISOString()}`, workloads });
  }

  const panel = () => page.getByTestId('sign-in');
  const rows = () => page.locator('[data-testid=images-table] tbody tr');
  const rowDigests = async () => (await rows().evaluateAll((trs) => trs.map((tr) => tr.dataset.digest))).sort();

  async function paste(token) {
    await page.locator('textarea[name=token]').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  it('asks an anonymous visitor to sign in, with the kubectl command to get a token', async () => {
    const res = await page.goto(`${api.base}/images`);
    assert.match(res.headers()['content-security-policy'], /script-src 'self'/);
    await panel().waitFor();
    assert.match(await panel().innerText(), /kubectl create token .* --audience crowsnest-results-api/);
    assert.equal(await page.getByTestId('signed-in-user').count(), 0);
    assert.equal(await page.getByTestId('images-table').count(), 0);
  });

  it('says a wrong token was refused and asks again', async () => {
    await paste('not-a-valid-token');
    await until(async () => /refused/.test(await page.getByTestId('sign-in-reason').innerText()), 'refused message');
    assert.equal(await page.getByTestId('images-table').count(), 0);
  });

  it('loads the dashboard and the live stream with the admin token', async () => {
    await paste(api.token);
    await rows().first().waitFor();
    assert.deepEqual(await rowDigests(), [running.digest, idle.digest].sort());
    await until(async () => (await page.getByTestId('connection').getAttribute('data-state')) === 'open', 'live WebSocket');
    assert.equal(await page.getByTestId('signed-in-user').innerText(), 'static admin token');
    // The overview's chart colours its bars by class: an inline style
    // attribute would be blocked by the CSP and leave them black.
    await page.goto(`${api.base}/`);
    const bar = page.locator('svg.chart rect.sev-critical');
    await bar.waitFor();
    assert.notEqual(await bar.evaluate((el) => getComputedStyle(el).fill), 'rgb(0, 0, 0)');
    await page.goto(`${api.base}/images`);
    // The token survives a reload in the same tab (sessionStorage).
    await page.reload();
    await rows().first().waitFor();
    assert.equal(await panel().count(), 0);
  });

  it('shows the workloads in the table and filters by namespace and running state', async () => {
    const cell = page.locator(`tr[data-digest="${running.digest}"] [data-col=workload]`);
    assert.match(await cell.innerText(), /team-a\/Deployment\/web\s*\+1 more/);
    assert.match(await cell.getAttribute('title'), /team-b\/CronJob\/nightly \(1 pod\)/);
    assert.equal((await page.locator(`tr[data-digest="${idle.digest}"] [data-col=workload]`).innerText()).trim(), 'not running');

    const ns = page.locator('select[name=namespace]');
    assert.deepEqual(await ns.locator('option').allInnerTexts(), ['All namespaces', 'team-a', 'team-b']);
    await ns.selectOption('team-b');
    await until(async () => new URL(page.url()).searchParams.get('namespace') === 'team-b', 'namespace in the URL');
    await until(async () => (await rowDigests()).join() === running.digest, 'only the image running in team-b');

    await ns.selectOption('');
    await page.locator('select[name=running]').selectOption('false');
    await until(async () => (await rowDigests()).join() === idle.digest, 'only the image not running');
    await page.locator('select[name=running]').selectOption('true');
    await until(async () => (await rowDigests()).join() === running.digest, 'only the running image');
    await page.goBack();
    await until(async () => (await rowDigests()).join() === idle.digest, 'back to not running');
  });

  it('lists a running image without a report with its failed scan, live', async () => {
    const digest = syntheticDigest('access-unreported');
    await publish('job.done', digest, {
      image: `registry.local/team-b/app@${digest}`, digest, namespace: 'team-b', scanner: 'default', job: 'scan-x',
      outcome: 'failed', reason: 'ImagePullFailed', message: 'pull access denied', durationSeconds: 2, attempt: 1,
    });
    await page.locator('select[name=running]').selectOption('all');
    const row = page.locator(`tr[data-digest="${digest}"][data-pending=true]`);
    await row.waitFor();
    assert.match(await row.innerText(), /no report yet[\s\S]*failed: ImagePullFailed/);
    await page.locator('select[name=namespace]').selectOption('team-a');
    await until(async () => (await row.count()) === 0, 'the pending row filtered out by namespace');
  });

  it('lists where an image runs on its detail page, and "not running" otherwise', async () => {
    await page.goto(`${api.base}/images/${running.digest}`);
    const table = page.getByTestId('where-it-runs');
    await table.locator('tbody tr').first().waitFor();
    const got = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((c) => c.innerText.trim())));
    assert.deepEqual(got, [
      ['team-a', 'Deployment/web', 'app, sidecar', '4'],
      ['team-b', 'CronJob/nightly', 'job', '1'],
    ]);
    await page.goto(`${api.base}/images/${idle.digest}`);
    assert.match(await page.getByTestId('where-it-runs').innerText(), /Not running/);
  });

  it('lists the workloads carrying a CVE', async () => {
    await page.goto(`${api.base}/vulnerabilities/${encodeURIComponent(cve)}`);
    const table = page.getByTestId('vulnerability-workloads');
    await table.locator('tbody tr').first().waitFor();
    const text = await table.innerText();
    assert.match(text, /team-a\s+Deployment\/web/);
    assert.match(text, /team-b\s+CronJob\/nightly/);
  });

  it('signs out back to the panel, and the token is gone', async () => {
    await page.getByTestId('sign-out').click();
    await panel().waitFor();
    assert.equal(await page.getByTestId('signed-in-user').count(), 0);
    await page.reload();
    await panel().waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('crowsnest.readToken')), null);
    assert.deepEqual(cspViolations, [], 'the UI triggered Content-Security-Policy violations');
  });
});
