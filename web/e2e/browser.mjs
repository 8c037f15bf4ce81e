// Debian's Chromium driven by playwright-core. Playwright never downloads a
// browser here: playwright-core has no download step and we point it at
// /usr/bin/chromium. Each launch gets a fresh temporary profile (playwright
// creates and removes its own --user-data-dir).
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CROWSNEST_CHROMIUM ?? '/usr/bin/chromium';

export function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: 60_000,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
