// The bare-Chromium floor of scripts/bench-render.sh: one persistent headless Chromium (Debian's,
// driven by playwright-core), TABS pages at once, and for each URL only
// page.goto(url, {waitUntil: 'load'}) + page.screenshot({scale: 'css'}) at 1280x800.
// No settling, no DOM read, no clustering: what any renderer of these pages has to pay.
//
//   node scripts/bench-render-floor.mjs [--tabs 4] [--out floor.json] [--content]
//        [--chromium /usr/bin/chromium] [--node-dir target/bench-render-node] URLS.txt
//
// playwright-core comes from `npm install --prefix target/bench-render-node playwright-core`
// (no browser download: it drives /usr/bin/chromium). --content also reads page.content().
// Prints one summary line; --out writes it as JSON (bench-render.py --floor reads it).
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const opt = {
  tabs: 4,
  out: '',
  content: false,
  chromium: '/usr/bin/chromium',
  nodeDir: path.join(here, '..', 'target', 'bench-render-node'),
  timeout: 30000,
  list: '',
};
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--tabs') opt.tabs = Number(argv[++i]);
  else if (a === '--out') opt.out = argv[++i];
  else if (a === '--content') opt.content = true;
  else if (a === '--chromium') opt.chromium = argv[++i];
  else if (a === '--node-dir') opt.nodeDir = argv[++i];
  else if (a === '--timeout') opt.timeout = Number(argv[++i]);
  else if (!a.startsWith('--') && !opt.list) opt.list = a;
  else {
    console.error(`bench-render-floor: unknown argument ${a}`);
    process.exit(2);
  }
}
if (!opt.list || !(opt.tabs >= 1)) {
  console.error('usage: node scripts/bench-render-floor.mjs [--tabs N] [--out FILE] URLS.txt');
  process.exit(2);
}
const urls = readFileSync(opt.list, 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));

const require = createRequire(path.resolve(opt.nodeDir, 'package.json'));
let chromium;
try {
  ({ chromium } = require('playwright-core'));
} catch (e) {
  console.error(`bench-render-floor: playwright-core not found under ${opt.nodeDir}: ${e.message}`);
  process.exit(3);
}

const t0 = performance.now();
const browser = await chromium.launch({
  executablePath: opt.chromium,
  headless: true,
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-dev-shm-usage',
    '--mute-audio',
  ],
});
const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
const tabs = [];
for (let i = 0; i < Math.min(opt.tabs, urls.length); i++) tabs.push(await context.newPage());
const launchMs = performance.now() - t0;

let next = 0;
const perPage = [];
const errors = [];
const loop0 = performance.now();
await Promise.all(
  tabs.map(async (page) => {
    for (;;) {
      const i = next++;
      if (i >= urls.length) return;
      const s = performance.now();
      try {
        const resp = await page.goto(urls[i], { waitUntil: 'load', timeout: opt.timeout });
        await page.screenshot({ scale: 'css', timeout: opt.timeout });
        if (opt.content) await page.content();
        if (!resp || resp.status() >= 400) errors.push(`${resp ? resp.status() : 'no response'} ${urls[i]}`);
      } catch (e) {
        errors.push(`${e.message.split('\n')[0]} ${urls[i]}`);
      }
      perPage.push(performance.now() - s);
    }
  }),
);
const loopS = (performance.now() - loop0) / 1000;
await browser.close();

perPage.sort((a, b) => a - b);
const q = (p) => (perPage.length ? perPage[Math.min(perPage.length - 1, Math.floor(p * perPage.length))] : null);
const result = {
  method: 'playwright-core',
  tabs: tabs.length,
  pages: urls.length,
  errors: errors.length,
  launch_seconds: launchMs / 1000,
  loop_seconds: loopS,
  pages_per_s: urls.length / loopS,
  ms_per_page: (loopS * 1000) / urls.length,
  page_ms_median: q(0.5),
  page_ms_p90: q(0.9),
  content: opt.content,
  note: 'one persistent browser; goto(load) + 1280x800 viewport screenshot per page; CPU includes node and the browser start',
};
console.log(
  `floor: ${result.pages} pages, ${result.tabs} tabs: ${loopS.toFixed(1)} s, ` +
    `${result.pages_per_s.toFixed(2)} pages/s, ${result.ms_per_page.toFixed(0)} ms/page ` +
    `(one page alone: median ${result.page_ms_median?.toFixed(0)} ms, p90 ${result.page_ms_p90?.toFixed(0)} ms), ` +
    `browser start ${result.launch_seconds.toFixed(1)} s, ${errors.length} errors`,
);
for (const e of errors.slice(0, 5)) console.error(`  error: ${e}`);
if (opt.out) writeFileSync(opt.out, JSON.stringify(result, null, 1) + '\n');
