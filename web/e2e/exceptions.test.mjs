// Triage in the dashboard (issue 32) against the real results-api on
// Postgres with a real Grype report. This file starts no kube-apiserver, so
// results-api runs without --exceptions: nothing is suppressed, and what is
// checked is what the UI does with the answers the real server gives then —
// the active/suppressed counts and filter (URL state) on the report and CVE
// views, the VEX download's "no decisions", the audit page's
// "exceptions_off", and a finding's "Record exception…" form down to the
// YAML it copies. A suppressed finding's badge is covered only by the unit
// tests of its text and by exceptions-applied.test.mjs, which has a kube-apiserver.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { load } from 'js-yaml';
import { launch } from './browser.mjs';
import { loadFixtures } from './fixtures.mjs';
import { buildBinaries, getJson, putReport, startPostgres, startResultsApi, until } from './harness.mjs';

const T = 15_000;

describe('triage exceptions in the dashboard', { timeout: 300_000 }, () => {
  let tmp, pg, api, browser, context, page, fx;
  const cspViolations = [];

  before(async () => {
    fx = (await loadFixtures()).find((f) => f.expected.findings > 0 && f.expected.findings < 500);
    assert.ok(fx, 'a real Grype fixture with findings (make fixtures)');
    tmp = await mkdtemp(join(tmpdir(), 'crowsnest-web-exceptions-'));
    const bins = await buildBinaries(tmp);
    pg = await startPostgres(bins.pgserver);
    api = await startResultsApi(bins.resultsApi, pg.url);
    await putReport(api, fx.digest, fx.image, fx.raw);
    browser = await launch();
    context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: api.base });
    page = await context.newPage();
    page.setDefaultTimeout(T);
    page.on('pageerror', (err) => console.error('page error:', err));
    page.on('console', (m) => /Content[- ]Security[- ]Policy/i.test(m.text()) && cspViolations.push(m.text()));
  });

  after(async () => {
    await browser?.close();
    await api?.close();
    await pg?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  const rows = () => page.locator('[data-testid=findings-table] tbody tr');

  it('splits the counts active/suppressed and filters Active / Suppressed / All through the URL', async () => {
    const detail = await getJson(api, `/api/v1/reports/${fx.digest}?suppressed=all&findingsLimit=5000`);
    assert.equal(detail.activeFindings, fx.expected.findings, 'without exceptions every finding is active');
    assert.equal(detail.suppressedFindings, 0);

    await page.goto(`${api.base}/images/${fx.digest}`);
    await until(async () => (await rows().count()) === fx.expected.findings, 'every finding listed (active)', T);
    assert.equal((await page.getByTestId('finding-split').innerText()).trim(), `${fx.expected.findings} active, 0 suppressed by exceptions`);
    assert.equal(await page.getByTestId('suppressed-filter').inputValue(), 'false', 'Active by default');
    assert.equal(await page.getByTestId('suppressed-badge').count(), 0);

    await page.getByTestId('suppressed-filter').selectOption('true');
    await until(async () => new URL(page.url()).searchParams.get('suppressed') === 'true', '?suppressed=true in the URL', T);
    await page.getByText('No finding of this image is suppressed in this view.').waitFor();
    assert.equal(await rows().count(), 0);

    await page.getByTestId('suppressed-filter').selectOption('all');
    await until(async () => (await rows().count()) === fx.expected.findings, 'All lists every finding', T);

    // The state survives a reload (it lives in the URL), and back to Active drops the parameter.
    await page.reload();
    await until(async () => (await page.getByTestId('suppressed-filter').inputValue()) === 'all', 'All after reload', T);
    await page.getByTestId('suppressed-filter').selectOption('false');
    await until(async () => !new URL(page.url()).search.includes('suppressed'), 'no ?suppressed for Active', T);
  });

  it('says there is nothing to export when no exception applies (the VEX endpoint’s 404 no_decisions)', async () => {
    await page.getByTestId('vex-download').click();
    await until(async () => /No exception applies to this image/.test(await page.getByTestId('vex-message').innerText()), 'the no-decisions message', T);
  });

  it('renders a finding’s VulnerabilityException only once it passes the CRD’s rules, and copies it', async () => {
    const detail = await getJson(api, `/api/v1/reports/${fx.digest}?sort=risk&findingsLimit=1`);
    const f = detail.findings[0];
    await page.locator('[data-testid=record-exception]').first().click();
    const form = page.getByTestId('exception-form');
    await form.waitFor();
    await page.getByTestId('exception-render').click();
    const errors = await page.getByTestId('exception-errors').innerText();
    for (const field of ['namespace', 'justification', 'statement']) assert.match(errors, new RegExp(field), `${field} is refused`);
    assert.equal(await page.getByTestId('exception-yaml').count(), 0, 'no YAML while invalid');

    await page.getByTestId('exception-namespace').fill('team-a');
    await page.getByTestId('exception-justification').selectOption('vulnerable_code_not_in_execute_path');
    await page.getByTestId('exception-statement').fill('never reached: "x": # not a comment');
    const yaml = await page.getByTestId('exception-yaml').innerText();
    const obj = load(yaml);
    assert.equal(obj.kind, 'VulnerabilityException');
    assert.equal(obj.metadata.namespace, 'team-a');
    assert.deepEqual(obj.spec.vulnerabilities, [f.id]);
    assert.deepEqual(obj.spec.packages, [f.package.purl]);
    assert.deepEqual(obj.spec.images, [fx.digest]);
    assert.equal(obj.spec.status, 'not_affected');
    assert.equal(obj.spec.justification, 'vulnerable_code_not_in_execute_path');
    assert.equal(obj.spec.statement, 'never reached: "x": # not a comment');
    const days = (Date.parse(obj.spec.expiresAt) - Date.now()) / 86_400_000;
    assert.ok(days > 28 && days <= 30, `expires in about 30 days (${days.toFixed(1)})`);
    await page.getByText('kubectl apply -f -').waitFor();

    await page.getByTestId('exception-copy').click();
    await page.getByText('Copied.').waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), yaml.endsWith('\n') ? yaml : `${yaml}\n`);

    // affected needs an action statement, as the CRD's CEL says.
    await page.getByTestId('exception-status').selectOption('affected');
    await until(async () => /actionStatement/.test(await page.getByTestId('exception-errors').innerText()), 'actionStatement refused', T);
  });

  it('shows the CVE view’s split and filter', async () => {
    const id = fx.expected.ids[0];
    const v = await getJson(api, `/api/v1/vulnerabilities/${encodeURIComponent(id)}`);
    await page.goto(`${api.base}/vulnerabilities/${encodeURIComponent(id)}`);
    const split = page.getByTestId('vulnerability-split');
    await split.waitFor();
    assert.equal((await split.innerText()).replace(/\s+/g, ' ').trim(),
      `${v.activeImages} affected image${v.activeImages === 1 ? '' : 's'} active, 0 suppressed by exceptions`);
    await page.getByTestId('suppressed-filter').selectOption('true');
    await page.getByText('No affected image is suppressed in this view.').waitFor();
  });

  it('has an Exceptions page that says when results-api does not apply exceptions', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Exceptions' }).click();
    await until(async () => new URL(page.url()).pathname === '/exceptions', '/exceptions', T);
    await page.getByText('results-api runs without --exceptions').waitFor();
    assert.deepEqual(cspViolations, [], 'no CSP violation');
  });
});
