// The playground page in headless Chromium (Debian's, driven by
// puppeteer-core) against a running stack: SESSIONBOX_URL serves the page
// and the API, SESSIONBOX_API_KEY is pasted into it, CHROMIUM_PATH is the
// browser, and the screenshot goes to PLAYGROUND_SCREENSHOT.
//
// It checks what a person would see: a rejected key is not kept, output
// lines appear while the cell is still running, the chart renders, an
// exception shows its traceback, a looping cell can be interrupted with its
// variables kept, an upload (inline and through a presigned URL) shows in
// the files panel and downloads back, dot entries stay hidden until asked,
// an install streams pip's output, every control is on screen at 360 and
// 420 px, reset and stop answer, and the page's CSP refuses nothing it needs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';

const url = process.env.SESSIONBOX_URL;
const key = process.env.SESSIONBOX_API_KEY;
const chromium = process.env.CHROMIUM_PATH;
const shot = process.env.PLAYGROUND_SCREENSHOT;
const session = `pg-${process.pid}-${Date.now().toString(36)}`;

const LONG = 120_000;
let browser;
let page;
let dir;
const problems = []; // console errors, page errors, CSP refusals

before(async () => {
  assert.ok(url && key && chromium, 'SESSIONBOX_URL, SESSIONBOX_API_KEY and CHROMIUM_PATH must be set');
  dir = mkdtempSync(join(tmpdir(), 'playground-'));
  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    // The test runs as root in CI, where Chromium's own sandbox cannot start.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--font-render-hinting=none'],
  });
  page = await browser.newPage();
  page.setDefaultTimeout(LONG);
  await page.setViewport({ width: 1440, height: 900 });
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
});

after(async () => {
  if (browser) await browser.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// cell returns a handle's selector for the n-th cell (1-based).
const cell = (n) => `#cells > .cell:nth-child(${n})`;

async function setCode(n, code) {
  await page.$eval(`${cell(n)} .editor`, (t, c) => {
    t.value = c;
    t.dispatchEvent(new Event('input', { bubbles: true }));
  }, code);
}

async function waitForState(n, ...states) {
  await page.waitForFunction((sel, want) => want.includes(document.querySelector(sel)?.dataset.state),
    { timeout: LONG }, cell(n), states);
  return page.$eval(cell(n), (c) => c.dataset.state);
}

test('the page loads with its security headers', async () => {
  const res = await page.goto(`${url}/`, { waitUntil: 'networkidle0' });
  assert.equal(res.status(), 200);
  const csp = res.headers()['content-security-policy'] || '';
  assert.match(csp, /script-src 'self'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  assert.equal(await page.title(), 'sessionbox playground');
});

test('a rejected key is said so and not kept', async () => {
  const before = problems.length;
  await page.type('#api-key', 'sbx_not_a_key_0123456789abcdef');
  await page.click('#key-save');
  await page.waitForSelector('#conn[data-state="error"]');
  assert.match(await page.$eval('#conn', (c) => c.textContent), /key rejected/);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('sessionbox.apiKey')), null, 'a rejected key is not stored');
  assert.equal(await page.$eval('#key-forget', (b) => b.hidden), true);
  assert.match(await page.$eval('#api-key', (i) => i.placeholder), /Paste your API key/);
  // Chromium logs the refused request itself; that one 401 is this test's.
  const added = problems.splice(before);
  assert.deepEqual(added.filter((p) => !/status of 401/.test(p)), []);
});

test('a pasted key connects and lists sessions', async () => {
  await page.type('#api-key', key);
  await page.click('#key-save');
  await page.waitForSelector('#conn[data-state="ok"]');
  assert.equal(await page.$eval('#api-key', (i) => i.value), '', 'the key field is cleared once kept');
  const kept = await page.evaluate(() => sessionStorage.getItem('sessionbox.apiKey'));
  assert.equal(kept, key, 'the key is kept in sessionStorage');
  await page.type('#session-name', session);
  await page.keyboard.press('Enter');
  await page.waitForFunction((s) => document.querySelector('#session-title').textContent === s, {}, session);
});

test('output streams in while the cell runs, then the chart renders', async () => {
  await setCode(1, [
    'import time',
    'for i in range(3):',
    '    print(i, flush=True)',
    '    time.sleep(0.5)',
    'import matplotlib',
    'matplotlib.use("Agg")',
    'import matplotlib.pyplot as plt',
    'import numpy as np',
    'x = np.linspace(0, 4 * np.pi, 200)',
    'plt.figure(figsize=(7, 3.2))',
    'plt.plot(x, np.sin(x), label="sin")',
    'plt.plot(x, np.cos(x), label="cos")',
    'plt.legend()',
    'plt.show()',
  ].join('\n'));
  await page.focus(`${cell(1)} .editor`);
  await page.keyboard.down('Shift');
  await page.keyboard.press('Enter');
  await page.keyboard.up('Shift');

  // One evaluation in the page sees both at once: the first line is in the
  // DOM while the cell is still marked running.
  const seen = await page.waitForFunction((sel) => {
    const c = document.querySelector(sel);
    const text = c.querySelector('.output').textContent;
    return c.dataset.state === 'running' && /^0\n/.test(text)
      ? { state: c.dataset.state, text, images: c.querySelectorAll('.output img').length }
      : false;
  }, { timeout: LONG, polling: 'mutation' }, cell(1)).then((h) => h.jsonValue());
  assert.equal(seen.state, 'running');
  assert.equal(seen.images, 0, 'no chart before the lines that precede it');
  assert.doesNotMatch(seen.text, /2\n/, 'the last line is not there yet');

  assert.equal(await waitForState(1, 'done', 'error'), 'done');
  const out = await page.$eval(`${cell(1)} .output`, (o) => o.textContent);
  assert.match(out, /^0\n1\n2\n/);
  await page.waitForFunction((sel) => {
    const img = document.querySelector(`${sel} .output img`);
    return img && img.complete && img.naturalWidth > 0;
  }, {}, cell(1));
  const size = await page.$eval(`${cell(1)} .output img`, (i) => [i.naturalWidth, i.naturalHeight]);
  assert.ok(size[0] > 100 && size[1] > 50, `chart is ${size}`);
  assert.match(await page.$eval(`${cell(1)} .count`, (c) => c.textContent), /^\[\d+\]$/);
});

test('a table renders as HTML', async () => {
  await setCode(2, 'import pandas as pd\npd.DataFrame({"city": ["Oslo", "Lima"], "temp": [4.5, 19.0]})');
  await page.click(`${cell(2)} .run`);
  assert.equal(await waitForState(2, 'done', 'error'), 'done');
  const cells = await page.$$eval(`${cell(2)} .out-html table td`, (tds) => tds.map((t) => t.textContent));
  assert.deepEqual(cells, ['Oslo', '4.5', 'Lima', '19.0']);
});

test('SVG and JPEG results render as images', async () => {
  await page.click('#add-cell');
  await setCode(3, [
    'import io',
    'import matplotlib.pyplot as plt',
    'class Badge:',
    '    def _repr_svg_(self):',
    '        return \'<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40"><rect width="120" height="40" fill="#4f46e5"/></svg>\'',
    'class Photo:',
    '    def _repr_jpeg_(self):',
    '        fig = plt.figure(figsize=(2, 1))',
    '        buf = io.BytesIO()',
    '        fig.savefig(buf, format="jpeg")',
    '        plt.close(fig)',
    '        return buf.getvalue()',
    'display(Badge())',
    'Photo()',
  ].join('\n'));
  await page.click(`${cell(3)} .run`);
  assert.equal(await waitForState(3, 'done', 'error'), 'done');
  await page.waitForFunction((sel) => {
    const imgs = [...document.querySelectorAll(`${sel} .output img`)];
    return imgs.length === 2 && imgs.every((i) => i.complete && i.naturalWidth > 0);
  }, {}, cell(3));
  const kinds = await page.$$eval(`${cell(3)} .output img`, (imgs) => imgs.map((i) => [i.src.slice(0, 24), i.naturalWidth]));
  assert.deepEqual(kinds, [['data:image/svg+xml;chars', 120], ['data:image/jpeg;base64,/', 200]]);
  await page.click(`${cell(3)} .remove`);
});

test('result HTML cannot run code or load anything', async () => {
  await page.click('#add-cell');
  await setCode(3, [
    'class Evil:',
    '    def _repr_html_(self):',
    '        return (\'<b>bold</b><img src="x" onerror="window.pwned=1"><img/src="y"/onerror="window.pwned=5"><script>window.pwned=2</script>\'',
    '                \'<a href="javascript:window.pwned=3">link</a><iframe src="https://example.com"></iframe>\'',
    '                \'<td style="color:red" onclick="window.pwned=4">cell</td>\')',
    'Evil()',
  ].join('\n'));
  await page.click(`${cell(3)} .run`);
  assert.equal(await waitForState(3, 'done', 'error'), 'done');
  const got = await page.$eval(`${cell(3)} .out-html`, (box) => ({
    text: box.textContent,
    tags: [...box.querySelectorAll('*')].map((e) => e.localName),
    attrs: [...box.querySelectorAll('*')].flatMap((e) => [...e.attributes].map((a) => a.name)),
    pwned: window.pwned,
  }));
  assert.equal(got.pwned, undefined);
  assert.deepEqual(got.tags, ['b']);
  assert.deepEqual(got.attrs, []);
  assert.equal(got.text, 'boldlinkcell');
  await page.click(`${cell(3)} .remove`);
});

test('an exception shows its traceback', async () => {
  await page.click('#add-cell');
  await setCode(3, 'def divide(a, b):\n    return a / b\n\ndivide(1, 0)');
  await page.click(`${cell(3)} .run`);
  assert.equal(await waitForState(3, 'done', 'error'), 'error');
  const name = await page.$eval(`${cell(3)} .out-error .ename`, (e) => e.textContent);
  assert.match(name, /^ZeroDivisionError: division by zero/);
  const tb = await page.$eval(`${cell(3)} .out-error .traceback`, (e) => e.textContent);
  assert.match(tb, /divide\(1, 0\)/);
  assert.match(tb, /return a \/ b/);
  assert.doesNotMatch(tb, /\x1b\[/, 'ANSI colours are stripped');
});

test('a running cell can be interrupted, and the kernel keeps its variables', async () => {
  await page.click('#add-cell');
  await setCode(4, 'kept = 41\nimport time\nprint("looping", flush=True)\nwhile True:\n    time.sleep(0.05)');
  await page.click(`${cell(4)} .run`);
  // The loop runs: its first line is in, and the Run button became Interrupt.
  await page.waitForFunction((sel) => /looping/.test(document.querySelector(`${sel} .output`).textContent), {}, cell(4));
  assert.equal(await page.$eval(`${cell(4)} .run`, (b) => b.hidden), true);
  await page.click(`${cell(4)} .interrupt`);
  assert.equal(await waitForState(4, 'interrupted', 'done', 'error'), 'interrupted');
  assert.match(await page.$eval(`${cell(4)} .output`, (o) => o.textContent), /Interrupted/);
  assert.equal(await page.$eval(`${cell(4)} .interrupt`, (b) => b.hidden), true);
  // The kernel is free again (the loop would hold it forever) and kept state.
  await setCode(4, 'kept + 1');
  await page.click(`${cell(4)} .run`);
  assert.equal(await waitForState(4, 'done', 'error'), 'done');
  assert.match(await page.$eval(`${cell(4)} .output`, (o) => o.textContent), /42/);
  await page.click(`${cell(4)} .remove`);
});

test('uploads show in the files panel and read back', async () => {
  const small = join(dir, 'hello.csv');
  writeFileSync(small, 'a,b\n1,2\n');
  // Past the inline threshold: upload-url, PUT to the presigned URL, import.
  const big = join(dir, 'big.bin');
  const bigBytes = Buffer.alloc(1536 * 1024, 7);
  writeFileSync(big, bigBytes);
  const input = await page.$('#upload-input');
  await input.uploadFile(small, big);
  for (const name of ['hello.csv', 'big.bin']) {
    await page.waitForSelector(`#files li[data-path="/home/user/${name}"]`);
  }
  assert.match(await page.$eval('#files-note', (n) => n.textContent), /^Uploaded 2 files/);
  const back = await page.evaluate(async (k, s) => {
    const read = async (p) => {
      const r = await fetch(`v1/sessions/${s}/files/content?path=${encodeURIComponent(p)}`, { headers: { Authorization: `Bearer ${k}` } });
      return new Uint8Array(await r.arrayBuffer());
    };
    const a = await read('hello.csv');
    const b = await read('big.bin');
    return { small: new TextDecoder().decode(a), bigLen: b.length, bigAll7: b.every((x) => x === 7) };
  }, key, session);
  assert.deepEqual(back, { small: 'a,b\n1,2\n', bigLen: bigBytes.length, bigAll7: true });
  assert.ok(readFileSync(small).length > 0);
});

test('dot entries are hidden unless asked', async () => {
  await page.click('#add-cell');
  await setCode(4, 'import os\nos.makedirs(".cachedir", exist_ok=True)\nopen(".dotfile", "w").write("x")\nopen("plain.txt", "w").write("y")');
  await page.click(`${cell(4)} .run`);
  assert.equal(await waitForState(4, 'done', 'error'), 'done');
  await page.click('#files-refresh');
  await page.waitForSelector('#files li[data-path="/home/user/plain.txt"]');
  assert.equal(await page.$('#files li[data-path="/home/user/.dotfile"]'), null);
  assert.equal(await page.$('#files li[data-path="/home/user/.cachedir"]'), null);
  assert.match(await page.$eval('#files .hidden-count', (li) => li.textContent), /hidden \(dot\) entr/);
  await page.click('#files-hidden');
  await page.waitForSelector('#files li[data-path="/home/user/.dotfile"]');
  await page.waitForSelector('#files li[data-path="/home/user/.cachedir"]');
  await page.click('#files-hidden');
  await page.waitForFunction(() => !document.querySelector('#files li[data-path="/home/user/.dotfile"]'));
  await page.click(`${cell(4)} .remove`);
});

test('a file downloads from the files panel', async () => {
  const downloads = join(dir, 'downloads');
  mkdirSync(downloads);
  const cdp = await page.createCDPSession();
  await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloads });
  const row = '#files li[data-path="/home/user/hello.csv"]';
  // A file's name downloads it (the row's ↓ button does the same on hover).
  await page.click(`${row} button.link`);
  const file = join(downloads, 'hello.csv');
  for (let i = 0; i < 200 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(readFileSync(file, 'utf8'), 'a,b\n1,2\n');
});

test('an install streams pip\'s output', async () => {
  // Already there (Debian's numpy), so pip needs no index: the test runs offline.
  await page.type('#install-packages', 'numpy');
  await page.click('#install-btn');
  await page.waitForFunction(() => /^Installed numpy in /.test(document.querySelector('#install-status').textContent));
  assert.match(await page.$eval('#install-out', (o) => o.textContent), /Requirement already satisfied: numpy/);
  await page.click('#install-close');
});

test('screenshot after the chart cell', async () => {
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok(readFileSync(shot).length > 10_000);
});

for (const width of [360, 420]) {
  test(`at ${width} px wide every control is on screen`, async () => {
    await page.setViewport({ width, height: 800, isMobile: true, hasTouch: true });
    await page.evaluate(() => window.scrollTo(0, 0));
    const off = await page.evaluate(() => {
      const vw = document.documentElement.clientWidth;
      const sel = ['#api-key', '#key-save', '#conn', '#session-name', '#install-btn', '#reset-btn', '#stop-btn',
        '#files-refresh', '#add-cell', '#cells .cell .run'];
      const out = sel.filter((s) => {
        const r = document.querySelector(s)?.getBoundingClientRect();
        return !r || r.width === 0 || r.left < 0 || r.right > vw + 0.5;
      });
      if (document.documentElement.scrollWidth > vw) out.push(`page is ${document.documentElement.scrollWidth}px wide in ${vw}px`);
      return out;
    });
    assert.deepEqual(off, []);
    if (shot) await page.screenshot({ path: shot.replace(/\.png$/, `-${width}.png`), fullPage: false });
    await page.setViewport({ width: 1440, height: 900 });
  });
}

test('reset and stop answer', async () => {
  await page.click('#reset-btn');
  await page.waitForFunction(() => /Kernel reset/.test(document.querySelector('#notice:not([hidden])')?.textContent || ''));
  await page.click('#stop-btn');
  await page.waitForFunction(() => /Sandbox stopped/.test(document.querySelector('#notice:not([hidden])')?.textContent || ''));
  await page.waitForFunction(() => document.querySelector('#session-state').dataset.state === 'stopped'
    || document.querySelector('#session-state').textContent === 'stopped');
});

test('the browser reported no errors and the CSP refused nothing', () => {
  assert.deepEqual(problems, []);
});
