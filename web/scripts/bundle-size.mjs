// Measures the JavaScript the dashboard ships (gzip -9 of every .js file in
// dist/) and fails over the 200 KB budget.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

const BUDGET = 200 * 1024;
const dist = new URL('../dist/', import.meta.url).pathname;

async function files(dir) {
  const out = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await files(p)));
    else out.push(p);
  }
  return out;
}

let js = 0;
let css = 0;
for (const f of await files(dist)) {
  const gz = gzipSync(await readFile(f), { level: 9 }).length;
  if (f.endsWith('.js')) js += gz;
  if (f.endsWith('.css')) css += gz;
}
const kb = (n) => (n / 1024).toFixed(1);
console.log(`bundle: ${kb(js)} KB JavaScript gzipped (budget ${kb(BUDGET)} KB), ${kb(css)} KB CSS gzipped`);
if (js > BUDGET) {
  console.error('bundle: over budget');
  process.exit(1);
}
