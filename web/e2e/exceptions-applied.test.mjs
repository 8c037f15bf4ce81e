// Triage end to end: the exception YAML the dashboard renders for a finding
// is applied with kubectl to a real kube-apiserver (the CRDs' schema and CEL
// admit it), results-api (--exceptions) watches it, and the dashboard then
// shows the finding suppressed — badge, filter, counts, VEX download and the
// audit page — in the exception's namespace view, and not outside it. The
// image runs in two namespaces (inventory published over a real
// nats-server, as the operator does): a namespaced exception covers only
// its own namespace's view.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { load } from 'js-yaml';
import { connect, JSONCodec } from 'nats';
import { launch } from './browser.mjs';
import { loadFixtures } from './fixtures.mjs';
import { buildBinaries, buildNatsServer, getJson, putReport, repoRoot, startNats, startPostgres, startResultsApi, until } from './harness.mjs';
import { startKube } from './kube.mjs';

const T = 15_000;
const NS = 'team-a';
const CRDS = join(repoRoot, 'operator', 'config', 'crd', 'bases');

describe('an exception recorded in the dashboard, applied with kubectl', { timeout: 300_000 }, () => {
  let tmp, kube, pg, nats, nc, api, browser, page, fx, finding, name, total;
  const jc = JSONCodec();

  before(async () => {
    fx = (await loadFixtures()).find((f) => f.expected.findings > 1 && f.expected.findings < 500);
    assert.ok(fx, 'a real Grype fixture with findings (make fixtures)');
    total = fx.expected.findings;
    tmp = await mkdtemp(join(tmpdir(), 'crowsnest-web-exc-applied-'));
    const [bins, natsBin, k] = await Promise.all([buildBinaries(tmp), buildNatsServer(tmp), startKube()]);
    kube = k;
    // results-api --exceptions watches the exceptions and the imported OpenVEX documents.
    const kinds = ['vulnerabilityexceptions', 'clustervulnerabilityexceptions', 'vexdocuments', 'clustervexdocuments'];
    await kube.kubectl(['apply', ...kinds.flatMap((k) => ['-f', join(CRDS, `crowsnest.dev_${k}.yaml`)])]);
    await kube.kubectl(['wait', '--for=condition=Established', '--timeout=30s', ...kinds.map((k) => `crd/${k}.crowsnest.dev`)]);
    await kube.kubectl(['create', 'namespace', NS]);
    pg = await startPostgres(bins.pgserver);
    nats = await startNats(natsBin, tmp);
    api = await startResultsApi(bins.resultsApi, pg.url, ['--exceptions', '--kubeconfig', kube.kubeconfig, '--nats-url', nats.url]);
    await putReport(api, fx.digest, fx.image, fx.raw);
    nc = await connect({ servers: nats.url, timeout: 5000 });
    for (const ns of [NS, 'team-b']) {
      await publishInventory(ns, [{ kind: 'Deployment', name: 'web', containers: [{ name: 'app', image: fx.image, digest: fx.digest, pods: 1 }] }]);
    }
    await until(async () => (await getJson(api, `/api/v1/reports/${fx.digest}?findingsLimit=1`)).runningIn?.length === 2,
      'the inventory in results-api', 30_000, 200);
    finding = (await getJson(api, `/api/v1/reports/${fx.digest}?sort=risk&findingsLimit=1`)).findings[0];
    browser = await launch();
    page = await browser.newPage({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
    page.setDefaultTimeout(T);
    page.on('pageerror', (err) => console.error('page error:', err));
  });

  after(async () => {
    await browser?.close();
    await nc?.close();
    await api?.close();
    await nats?.stop();
    await pg?.stop();
    await kube?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  /** Publishes as the operator does: CloudEvents JSON, Nats-Msg-Id = the event id. */
  async function publishInventory(namespace, workloads) {
    const data = { namespace, previous: `start:${new Date().toISOString()}`, workloads };
    const id = createHash('sha256').update(JSON.stringify(data)).digest('hex').slice(0, 32);
    const ev = {
      specversion: '1.0', id, source: 'crowsnest/operator', type: 'dev.crowsnest.inventory.snapshot.v1',
      subject: namespace, time: new Date().toISOString(), datacontenttype: 'application/json', data,
    };
    const js = nc.jetstream();
    await until(() => js.publish('crowsnest.inventory.snapshot', jc.encode(ev), { msgID: id }).then(() => true), 'publish inventory', 15_000, 200);
  }

  const rows = () => page.locator('[data-testid=findings-table] tbody tr');
  const split = async () => (await page.getByTestId('finding-split').innerText()).trim();

  it('renders YAML for the finding that kubectl applies (admission accepts it)', async () => {
    await page.goto(`${api.base}/images/${fx.digest}?namespace=${NS}`);
    await until(async () => (await rows().count()) === total, 'every finding active', T);
    assert.equal(await split(), `${total} active, 0 suppressed by exceptions`);
    await page.locator('[data-testid=record-exception]').first().click();
    assert.equal(await page.getByTestId('exception-namespace').inputValue(), NS, 'the view’s namespace');
    await page.getByTestId('exception-justification').selectOption('vulnerable_code_not_in_execute_path');
    await page.getByTestId('exception-statement').fill('only reached with trusted input');
    await page.getByTestId('exception-render').click();
    const yaml = await page.getByTestId('exception-yaml').innerText();
    name = load(yaml).metadata.name;
    assert.match(await kube.kubectl(['apply', '-f', '-'], yaml), /vulnerabilityexception\.crowsnest\.dev\/\S+ created/);
  });

  it('then shows the finding suppressed in that namespace’s view, with badge, counts and filter', async () => {
    const expected = `${total - 1} active, 1 suppressed by exceptions`;
    await until(async () => {
      await page.reload();
      await page.getByTestId('finding-split').waitFor();
      return (await split()) === expected;
    }, 'the exception applied (results-api watches it)', 30_000, 500);
    await until(async () => (await rows().count()) === total - 1, 'the suppressed finding left out (Active)', T);

    await page.getByTestId('suppressed-filter').selectOption('true');
    await until(async () => (await rows().count()) === 1, 'only the suppressed finding', T);
    assert.equal(await page.locator('[data-testid=findings-table] td.id > a:first-child').innerText(), finding.id);
    assert.equal(await page.getByTestId('suppressed-by').innerText(), `VulnerabilityException ${NS}/${name}`);
    assert.equal(await page.getByTestId('suppressed-decision').innerText(), 'not_affected: vulnerable_code_not_in_execute_path');
    assert.match(await page.getByTestId('suppressed-badge').innerText(), /suppressed[\s\S]*until \d{4}-\d{2}-\d{2}/);
    assert.match(await page.getByTestId('suppressed-badge').getAttribute('title'), /only reached with trusted input/);

    await page.getByTestId('suppressed-filter').selectOption('all');
    await until(async () => (await rows().count()) === total, 'All', T);
    assert.equal(await page.getByTestId('suppressed-badge').count(), 1);
    assert.equal(await page.locator('[data-testid=findings-table] tr[data-suppressed=true]').count(), 1);
  });

  it('downloads the view’s OpenVEX document', async () => {
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('vex-download').click()]);
    const vex = JSON.parse(await readFile(await download.path(), 'utf8'));
    assert.equal(vex.statements.length, 1);
    assert.equal(vex.statements[0].vulnerability.name, finding.id);
    assert.equal(vex.statements[0].status, 'not_affected');
  });

  it('does not suppress it in the other namespace’s view, nor in the view of both', async () => {
    await page.getByTestId('view-namespace').selectOption('team-b');
    await until(async () => new URL(page.url()).searchParams.get('namespace') === 'team-b', 'namespace=team-b in the URL', T);
    await until(async () => (await split()) === `${total} active, 0 suppressed by exceptions`, 'nothing suppressed for team-b', T);
    assert.equal(await page.getByTestId('suppressed-badge').count(), 0);
    await page.getByTestId('view-namespace').selectOption('');
    await until(async () => !new URL(page.url()).searchParams.has('namespace'), 'namespace left the URL', T);
    await until(async () => (await split()) === `${total} active, 0 suppressed by exceptions`, 'nothing suppressed in both', T);
  });

  it('lists it as active on the Exceptions page', async () => {
    await page.goto(`${api.base}/exceptions?namespace=${NS}`);
    const active = page.getByTestId('audit-active');
    await active.waitFor();
    const text = await active.innerText();
    assert.match(text, new RegExp(`VulnerabilityException ${NS}/${name}`));
    assert.match(text, new RegExp(finding.id));
    assert.match(await page.getByTestId('audit-counts').innerText(), /Active: 1/);
  });
});
