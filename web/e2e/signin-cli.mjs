// A sign-in in Chromium against a running dashboard, for suites outside web/
// (the chart suite, test/stack/e2echart, reaches an installed chart through
// kubectl port-forward): opens BASE/images, checks the sign-in panel names
// the token's audience, pastes the token, and waits until the images table
// lists every DIGEST given. Not a *.test.mjs file: `npm run test:browser`
// does not run it.
//
//   node e2e/signin-cli.mjs BASE AUDIENCE DIGEST... < token
//
// The token comes on stdin, so it never shows in a process listing. Prints
// one JSON line (the signed-in user and the digests seen) and exits 0, or
// says what it saw and exits 1.
import { readFileSync } from 'node:fs';
import { launch } from './browser.mjs';

const [base, audience, ...digests] = process.argv.slice(2);
if (!base || !audience || digests.length === 0) {
  console.error('usage: node e2e/signin-cli.mjs BASE AUDIENCE DIGEST... < token');
  process.exit(2);
}
const token = readFileSync(0, 'utf8').trim();
if (!token) {
  console.error('no token on stdin');
  process.exit(2);
}

const browser = await launch();
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(60_000);
  const res = await page.goto(`${base}/images`);
  if (!res || res.status() !== 200) throw new Error(`GET ${base}/images: ${res?.status()}`);
  const panel = page.getByTestId('sign-in');
  await panel.waitFor();
  const hint = await panel.innerText();
  if (!hint.includes(`--audience ${audience}`)) throw new Error(`the sign-in panel does not name audience ${audience}:\n${hint}`);

  await page.locator('textarea[name=token]').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  const rows = page.locator('[data-testid=images-table] tbody tr');
  const seen = async () => rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.digest));
  const deadline = Date.now() + 60_000;
  let got = [];
  for (;;) {
    got = await seen();
    if (digests.every((d) => got.includes(d))) break;
    if (Date.now() > deadline) {
      const reason = await page.getByTestId('sign-in-reason').allInnerTexts();
      throw new Error(`the images table lists ${JSON.stringify(got)}, want ${JSON.stringify(digests)}; sign-in says ${JSON.stringify(reason)}`);
    }
    await page.waitForTimeout(250);
  }
  const user = await page.getByTestId('signed-in-user').innerText();
  console.log(JSON.stringify({ user, digests: got }));
} catch (err) {
  console.error(String(err?.stack ?? err));
  process.exitCode = 1;
} finally {
  await browser.close();
}
