// Screenshots from the browser tests go to web/test-results/screenshots/;
// with CROWSNEST_UPDATE_SCREENSHOTS=1 they also replace the committed set in
// docs/screenshots/.
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { repoRoot, webDir } from './harness.mjs';

const out = join(webDir, 'test-results', 'screenshots');
const docs = join(repoRoot, 'docs', 'screenshots');

export async function saveScreenshot(page, name) {
  await mkdir(out, { recursive: true });
  const file = join(out, `${name}.png`);
  // Let highlights and transitions settle so the picture is stable.
  await page.waitForTimeout(300);
  await page.screenshot({ path: file, fullPage: false });
  if (process.env.CROWSNEST_UPDATE_SCREENSHOTS === '1') {
    await mkdir(docs, { recursive: true });
    await copyFile(file, join(docs, `${name}.png`));
  }
  return file;
}
