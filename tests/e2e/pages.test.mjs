// End-to-end tests of tbserver's browser pages in real headless Chromium.
// Run through tests/e2e/run.sh, which starts the server and sets TBSERVER_URL.
// SPDX-License-Identifier: GPL-3.0-or-later
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(new URL('../../web/package.json', import.meta.url));
const { chromium } = require('playwright-core');

const BASE = process.env.TBSERVER_URL;
if (!BASE) throw new Error('TBSERVER_URL is not set (use tests/e2e/run.sh)');
const SHOTS = new URL('../../screenshots/', import.meta.url).pathname;
mkdirSync(SHOTS, { recursive: true });

const KBNK = '3k4/8/3K4/8/8/8/N7/1B6 w - - 0 1';
const CURSED = '8/8/2N5/8/3k4/7N/p2K4/8 b - - 0 1';
const ROUNDING = '1kb5/8/1KN5/3N4/8/8/8/8 b - - 0 1';
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 375, height: 812 };

let browser; // a persistent context with its own fresh profile directory
let profile;

before(async () => {
  profile = mkdtempSync(join(tmpdir(), 'tbserver-e2e-chromium-'));
  // The profile directory is passed as --user-data-dir by launchPersistentContext.
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: DESKTOP,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
});

after(async () => {
  await browser?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

async function newPage(viewport = DESKTOP) {
  const page = await browser.newPage();
  await page.setViewportSize(viewport);
  const problems = [];
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource|EventSource/.test(m.text())) problems.push('console: ' + m.text());
  });
  page.problems = problems;
  return page;
}

const urlFen = (page) => (new URL(page.url()).searchParams.get('fen') || '').replace(/_/g, ' ');

// 'pending' (values still being generated) refreshes by itself until 'ready';
// the server starts with an empty built-in cache, so the first KBNvK probe
// waits for three tables.
async function waitReady(page) {
  await page.waitForFunction(() => ['ready', 'error', 'uncovered'].includes(document.body.dataset.state), null, { timeout: 60000 });
}

async function loadFen(page, fen) {
  await page.goto(`${BASE}/?fen=${encodeURIComponent(fen)}`);
  await waitReady(page);
}

test('probe page shows the verdict and the move table for KBNvK', async () => {
  const page = await newPage();
  await loadFen(page, KBNK);
  await page.screenshot({ path: SHOTS + 'probe-desktop.png', fullPage: true });
  assert.equal(await page.getAttribute('#verdict', 'data-category'), 'win');
  assert.match(await page.textContent('#verdict'), /White wins/);
  const facts = await page.textContent('#facts');
  assert.match(facts, /WDL50\+2/);
  // Syzygy stores this DTZ rounded (24, so 24 or 25); the built-in tables
  // and chesstb know it exactly, and DTZ equals DTM here (mate converts).
  assert.match(facts, /DTZ50\+25 plies/);
  assert.match(facts, /exact \(the syzygy table stores it rounded/);
  assert.match(facts, /DTM\+25 plies/);
  const rows = await page.$$eval('#moves tbody tr', (trs) => trs.map((tr) => ({ uci: tr.dataset.uci, cat: tr.dataset.category, text: tr.textContent })));
  assert.ok(rows.length > 5, `expected many moves, got ${rows.length}`);
  assert.equal(rows[0].cat, 'win', 'best move first');
  // Colour coding follows the category.
  const bg = await page.$eval('#moves tbody tr[data-category="win"]', (tr) => getComputedStyle(tr).backgroundColor);
  assert.notEqual(bg, 'rgba(0, 0, 0, 0)');
  // Keyboard: focus the best move and press Enter to play it.
  await page.focus('#moves tbody tr:first-child button.move');
  await page.keyboard.press('Enter');
  await page.waitForFunction((fen) => document.getElementById('fen').value !== fen, KBNK);
  await waitReady(page);
  assert.match(await page.inputValue('#fen'), / b - - 1 1$/);
  // The verdict is the side to move's: Black, after White's best move, loses.
  // (The page reports 'ready' only once the new answer is in; were it
  // earlier, this would read the previous position's verdict, 'win'.)
  assert.equal(await page.getAttribute('#verdict', 'data-category'), 'loss');
  assert.match(await page.textContent('#verdict'), /Black loses/);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('DTC from chesstb, as chesstb\'s own prober reads it', async () => {
  // A KPvK win at clock 64 whose conversion needs pawn pushes first; the
  // expected values are those of chesstb's C++ prober (shared reference).
  const fen = 'k7/8/8/8/2KP4/8/8/8 w - - 64 1';
  const shared = process.env.TBSERVER_SHARED_DIR;
  const ref = readFileSync(join(shared, 'reference/chesstb-positions.jsonl'), 'utf8')
    .split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((r) => r.fen === fen);
  assert.ok(ref, 'reference position present');
  assert.equal(ref.dtc.class, 'WIN');
  const page = await newPage();
  await loadFen(page, fen);
  const facts = await page.textContent('#facts');
  assert.match(facts, new RegExp(`DTC\\+${ref.dtc.value} pl`));
  assert.match(facts, new RegExp(`${ref.dtc.order} pawn push(es)? owed first`));
  assert.match(facts, /DTC: chesstb/);
  await page.screenshot({ path: SHOTS + 'probe-dtc.png', fullPage: true });
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('entering a FEN, playing moves, back and forward', async () => {
  const page = await newPage();
  await loadFen(page, KBNK);
  await page.fill('#fen', CURSED);
  await page.click('#fen-form button[type=submit]');
  await page.waitForFunction((fen) => document.getElementById('fen').value === fen && document.body.dataset.state === 'ready', CURSED);
  await waitReady(page);
  assert.equal(urlFen(page), CURSED);
  assert.equal(await page.getAttribute('#verdict', 'data-category'), 'cursed-win');
  assert.match(await page.textContent('#facts'), /107/);
  await page.screenshot({ path: SHOTS + 'probe-cursed-desktop.png', fullPage: true });

  // Click the best move: the position changes, Black's move made, White to move.
  const first = await page.$eval('#moves tbody tr', (tr) => tr.dataset.uci);
  await page.click('#moves tbody tr:first-child button.move');
  await page.waitForFunction((old) => document.getElementById('fen').value !== old, CURSED);
  await waitReady(page);
  const afterMove = await page.inputValue('#fen');
  assert.match(afterMove, / w /, 'White to move after Black played');
  assert.equal(urlFen(page), afterMove);
  assert.ok(first.length >= 4);
  // The same result, now seen from the other side.
  assert.equal(await page.getAttribute('#verdict', 'data-category'), 'blessed-loss');

  await page.goBack();
  await page.waitForFunction((fen) => document.getElementById('fen').value === fen, CURSED);
  await waitReady(page);
  assert.equal(await page.getAttribute('#verdict', 'data-category'), 'cursed-win');
  await page.goForward();
  await page.waitForFunction((fen) => document.getElementById('fen').value === fen, afterMove);
  await waitReady(page);
  assert.equal(await page.getAttribute('#verdict', 'data-category'), 'blessed-loss');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('rounding reference position and the half-move clock', async () => {
  const page = await newPage();
  await loadFen(page, ROUNDING);
  const rows = await page.$$eval('#moves tbody tr', (trs) => trs.map((tr) => tr.dataset.uci));
  assert.deepEqual(rows, ['b8a8'], 'Ka8 is the only move');
  // Side-to-move and clock controls rewrite the FEN.
  await page.fill('#clock', '90');
  await page.waitForFunction(() => / 90 1$/.test(document.getElementById('fen').value));
  await waitReady(page);
  assert.match(urlFen(page), / 90 1$/);
  // KBNvK with DTZ 25: at clock 77 the zeroing move comes too late (25 + 77 > 100).
  await loadFen(page, KBNK);
  await page.fill('#clock', '77');
  await page.waitForFunction(() => / 77 1$/.test(document.getElementById('fen').value));
  await page.waitForFunction(() => document.getElementById('verdict').dataset.category !== 'unknown');
  assert.equal(await page.getAttribute('#verdict', 'data-category'), 'cursed-win');
  await page.close();
});

test('while built-in tables are generated the page shows progress and asks again', async () => {
  const page = await newPage();
  const generating = {
    error: {
      code: 'generating',
      message: 'the built-in tables for KBNvK are being generated',
      generating: {
        material: 'KBNvK', tables_needed: 3, tables_ready: 1, estimated_remaining_s: 12.4,
        tables: [{ material: 'KNvK', state: 'generating', elapsed_s: 0.5, estimated_s: 2 }, { material: 'KBNvK', state: 'queued', elapsed_s: null, estimated_s: 3 }],
      },
    },
  };
  let asked = 0;
  // The first answer is the server's 503 while generating; later ones are real.
  await page.route('**/api/v1/probe?**', (route) => {
    asked += 1;
    if (asked > 1) return route.continue();
    return route.fulfill({ status: 503, headers: { 'content-type': 'application/json', 'retry-after': '1' }, body: JSON.stringify(generating) });
  });
  await page.goto(`${BASE}/?fen=${encodeURIComponent(KBNK)}`);
  await page.waitForFunction(() => document.body.dataset.state === 'generating');
  assert.ok(await page.isVisible('#progress'));
  assert.equal(await page.getAttribute('#progress progress', 'value'), '1');
  assert.match(await page.textContent('#progress'), /Generating the built-in tables for KBNvK: 1 of 3 ready \(now KNvK\), about 13 s left\./);
  await page.screenshot({ path: SHOTS + 'probe-generating.png' });
  await waitReady(page);
  assert.ok(asked >= 2, 'asked again after Retry-After');
  assert.equal(await page.isVisible('#progress'), false);
  assert.equal(await page.getAttribute('#verdict', 'data-category'), 'win');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('generate this endgame: a 5-piece table made on request, then exact DTM50', async () => {
  // KNNvKN: Syzygy answers WDL and DTZ, nothing knows DTM50 exactly until
  // the server has generated the built-in table (tens of seconds, for real).
  const longestWin = '7n/8/8/8/8/8/2NK4/1kN5 w - - 0 1';
  const page = await newPage();
  await loadFen(page, longestWin);
  await page.waitForSelector('#gen-offer:not([hidden])');
  assert.match(await page.textContent('#gen-offer'), /Exact DTM and DTM50 for KNNvKN need its built-in table.*roughly \d+ min/);
  assert.doesNotMatch(await page.textContent('#facts'), /exact/);
  await page.screenshot({ path: SHOTS + 'probe-generate-offer.png' });
  await page.click('#btn-generate');
  // Generating, or whatever else the page came to (a refusal shows a
  // message): said in the failure, not left to a timeout. On a loaded
  // machine the request may take a while.
  await page.waitForFunction(
    () => document.body.dataset.state === 'generating' || !document.getElementById('message').hidden,
    null,
    { timeout: 120000, polling: 100 },
  );
  assert.equal(
    await page.evaluate(() => document.body.dataset.state),
    'generating',
    `after the click: ${await page.textContent('#message')}`,
  );
  assert.ok(await page.isVisible('#progress'));
  assert.match(await page.textContent('#progress'), /Generating the built-in tables for KNNvKN: \d+ of \d+ ready/);
  assert.equal(await page.isVisible('#gen-offer'), false);
  await page.screenshot({ path: SHOTS + 'probe-generate-progress.png' });
  await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 300000 });
  const facts = await page.textContent('#facts');
  assert.match(facts, /DTM50\+13 plies.*respects the 50-move rule, exact/);
  assert.match(facts, /DTM\+13 plies/);
  assert.equal(await page.isVisible('#progress'), false);
  assert.equal(await page.isVisible('#gen-offer'), false);
  await page.screenshot({ path: SHOTS + 'probe-generated.png', fullPage: true });
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('generating is for operators: the offer asks for the admin token, or is not made', async () => {
  // KBBvKN: Syzygy answers, no table gives DTM50 exactly. The server runs
  // without a token on loopback (access "open"); the answer's `access` is
  // rewritten here to what a guarded server tells a remote visitor, and the
  // POST is answered as such a server answers a wrong token (the server side
  // is tested with real processes in tests/operator_actions.rs).
  const fen = '7n/8/8/8/8/3B4/3K4/k1B5 w - - 0 1';
  for (const access of ['token', 'closed']) {
    const page = await newPage();
    const posted = [];
    await page.route('**/api/v1/tables/generate?material=KBBvKN', async (route) => {
      const request = route.request();
      if (request.method() === 'GET') {
        const response = await route.fetch();
        const body = await response.json();
        assert.equal(body.access, 'open', 'a loopback visitor of a server without a token');
        await route.fulfill({ response, json: { ...body, access } });
      } else {
        posted.push(request.headers().authorization);
        await route.fulfill({
          status: 403,
          json: { error: { code: 'forbidden', message: 'the admin token does not match' } },
        });
      }
    });
    const status = page.waitForResponse((r) => r.url().includes('/api/v1/tables/generate') && r.request().method() === 'GET');
    await loadFen(page, fen);
    await status;
    if (access === 'closed') {
      await page.waitForTimeout(300);
      assert.equal(await page.isVisible('#gen-offer'), false, 'no offer where generating is closed');
      assert.deepEqual(posted, []);
    } else {
      await page.waitForSelector('#gen-offer:not([hidden])');
      assert.match(await page.textContent('#gen-offer'), /enter the admin token/);
      assert.ok(await page.isVisible('#gen-token'));
      await page.fill('#gen-token', 'not-the-token-0123456789');
      await page.screenshot({ path: SHOTS + 'probe-generate-token.png' });
      await page.click('#btn-generate');
      await page.waitForSelector('#message:not([hidden])');
      assert.match(await page.textContent('#message'), /could not be generated.*admin token does not match/);
      assert.deepEqual(posted, ['Bearer not-the-token-0123456789']);
      assert.equal(await page.isEnabled('#btn-generate'), true, 'the visitor may try again');
    }
    await page.close();
  }
});

test('a position no table covers is explained in words, with what its moves reach', async () => {
  // KBNvKR: no Syzygy, Gaviota, chesstb or built-in table here. Rxd3 reaches
  // KNvKR, which the tables cover (a draw); every other move stays in KBNvKR.
  const fen = '3r3k/8/8/8/8/3B1N2/8/2K5 b - - 0 1';
  for (const [viewport, shot] of [[DESKTOP, 'probe-uncovered-desktop.png'], [PHONE, 'probe-uncovered-phone.png']]) {
    const page = await newPage(viewport);
    await loadFen(page, fen);
    assert.equal(await page.evaluate(() => document.body.dataset.state), 'uncovered');
    assert.match(await page.textContent('#verdict'), /Not in the tables here.*No table on this server covers KBNvKR/);
    const facts = await page.textContent('#facts');
    assert.match(facts, /KBNvKR \(5 pieces\), Black to move/);
    assert.match(facts, /not installed on this server/);
    assert.match(facts, /built-in table this server can generate/);
    assert.equal(await page.isVisible('#message'), false, 'no API text');
    const text = await page.textContent('main');
    assert.doesNotMatch(text, /Server:|\/api\/v1|POST|too_many_pieces/, 'no API text on the page');
    const rows = await page.$$eval('#moves tbody tr', (trs) => trs.map((tr) => [tr.dataset.uci, tr.dataset.category, tr.textContent]));
    assert.ok(rows.length >= 5, `the legal moves are listed: ${JSON.stringify(rows)}`);
    assert.deepEqual(rows[0].slice(0, 2), ['d8d3', 'draw'], 'the capture into KNvKR first, a draw');
    assert.match(rows[0][2], /Rxd3.*draws/);
    // The rest stay in KBNvKR: not in the tables, unless White can then
    // take the rook into a won KBNvK, which Syzygy's capture search sees.
    const rest = rows.slice(1);
    assert.ok(rest.some((r) => /not in the tables here/.test(r[2])), JSON.stringify(rest));
    assert.ok(rest.every((r) => /not in the tables here/.test(r[2]) || r[1] === 'loss'), JSON.stringify(rest));
    await page.screenshot({ path: SHOTS + shot, fullPage: true });
    assert.deepEqual(page.problems, []);
    await page.close();
  }
});

test('invalid FEN shows the server message', async () => {
  const page = await newPage();
  await loadFen(page, KBNK);
  await page.fill('#fen', 'this is not a fen');
  await page.press('#fen', 'Enter');
  await page.waitForFunction(() => document.body.dataset.state === 'error');
  const msg = await page.textContent('#message');
  assert.ok(await page.isVisible('#message'));
  assert.match(msg, /not a valid FEN/);
  assert.match(await page.textContent('#verdict'), /Invalid FEN/);
  await page.close();
});

test('board editing: clear, spare piece drop, flip', async () => {
  const page = await newPage();
  await loadFen(page, KBNK);
  await page.click('#btn-clear');
  await page.waitForFunction(() => document.getElementById('fen').value.startsWith('8/8/8/8/8/8/8/8 '));
  // Drop a white king from the spare pieces onto the board.
  const box = await page.locator('#board cg-board').boundingBox();
  const spare = page.locator('#spares-bottom piece.white.king');
  const s = await spare.boundingBox();
  await page.mouse.move(s.x + s.width / 2, s.y + s.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * (4.5 / 8), box.y + box.height * (7.5 / 8), { steps: 8 });
  await page.mouse.up();
  await page.waitForFunction(() => document.getElementById('fen').value.startsWith('8/8/8/8/8/8/8/4K3 '));
  await page.click('#btn-flip');
  assert.ok(await page.$('#board.orientation-black'));
  await page.close();
});

test('analysis runs against the real search and stops', async () => {
  const page = await newPage();
  await loadFen(page, KBNK);
  await page.selectOption('#movetime', '10000');
  await page.click('#btn-analyse');
  await page.waitForFunction(() => {
    const s = document.getElementById('analysis-status').textContent;
    return /not available|failed/i.test(s) || document.getElementById('an-depth').textContent !== '–';
  }, null, { timeout: 20000 });
  const status = await page.textContent('#analysis-status');
  assert.doesNotMatch(status, /not available|failed/i);
  // KBNvK with DTZ 24: the search proves a mate for White.
  assert.match(await page.textContent('#an-score'), /mate/i);
  // Stopped by the button if the search is still running, else done on
  // its own (a proven mate ends it): the check and the click happen in one
  // step in the page, or the search could end between them and leave a
  // disabled button to click (which happens on a loaded machine).
  await page.evaluate(() => {
    const stop = document.getElementById('btn-stop');
    if (!stop.disabled) stop.click();
  });
  await page.waitForFunction(() => /Stopped|Done|finished|ended/.test(document.getElementById('analysis-status').textContent), null, { timeout: 10000 });
  await page.waitForFunction(() => !document.getElementById('btn-analyse').disabled, null, { timeout: 10000 });
  await page.screenshot({ path: SHOTS + 'probe-analysis-real-desktop.png' });
  await page.close();
});

test('analysis display follows a stream of depth events (stream mocked in the browser)', async () => {
  const page = await newPage();
  const depth = (n, mate) => ({ depth: n, score: { kind: 'mate', mate_in_moves: mate, mate_in_plies: 2 * mate - 1, bound: 'exact' },
    pv: [{ uci: 'b1g6', san: 'Bg6' }, { uci: 'd8e7', san: 'Ke7' }], nodes: 1000 * n, elapsed_ms: 10 * n });
  const body = [
    `event: depth\ndata: ${JSON.stringify(depth(1, 20))}\n\n`,
    `event: depth\ndata: ${JSON.stringify(depth(2, 19))}\n\n`,
    `event: result\ndata: ${JSON.stringify({ ...depth(3, 18), best_move: { uci: 'b1g6', san: 'Bg6' }, stop: 'movetime' })}\n\n`,
  ].join('');
  await page.route('**/api/v1/analyse/stream**', (route) => route.fulfill({ status: 200, headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }, body }));
  await loadFen(page, KBNK);
  await page.click('#btn-analyse');
  await page.waitForFunction(() => document.body.dataset.analysis === 'done');
  assert.equal(await page.textContent('#an-depth'), '3');
  assert.match(await page.textContent('#an-score'), /White mates in 18 moves/);
  assert.equal(await page.textContent('#an-pv'), '1. Bg6 Ke7');
  assert.match(await page.textContent('#analysis-status'), /Done at depth 3 \(movetime\)\. Best move: Bg6\./);
  assert.equal(await page.isDisabled('#btn-analyse'), false);
  assert.equal(await page.isDisabled('#btn-stop'), true);
  await page.screenshot({ path: SHOTS + 'probe-analysis-desktop.png' });
  await page.close();
});

test('metrics page: every board image loads and links to the probe page', async () => {
  const page = await newPage();
  await page.goto(`${BASE}/metrics`);
  await page.waitForLoadState('load');
  const imgs = await page.$$eval('img', (list) => list.map((i) => ({ src: i.getAttribute('src'), w: i.naturalWidth, complete: i.complete, href: i.closest('a')?.getAttribute('href') })));
  assert.ok(imgs.length >= 3, 'three reference boards');
  for (const img of imgs) {
    assert.ok(img.complete && img.w > 0, `image did not load: ${img.src}`);
    assert.match(img.src, /^\/board\.svg\?fen=/);
    assert.match(img.href, /^\/\?fen=/);
  }
  const text = await page.textContent('main');
  for (const word of ['cursed win', 'blessed loss', 'rounded', '107', '24']) assert.ok(text.includes(word), word);
  await page.screenshot({ path: SHOTS + 'metrics-desktop.png', fullPage: true });
  // A board link opens the probe page on that position.
  await page.click(`a[href^="/?fen="] >> nth=0`);
  await waitReady(page);
  assert.ok(urlFen(page).length > 10);
  await page.close();
});

test('board.svg answers SVG, and a JSON error for a bad FEN', async () => {
  const ok = await fetch(`${BASE}/board.svg?fen=${encodeURIComponent(KBNK)}&size=100&orientation=black&lastmove=a1a2`);
  assert.equal(ok.status, 200);
  assert.match(ok.headers.get('content-type'), /image\/svg\+xml/);
  assert.match(await ok.text(), /^<svg[^>]+width="100"/);
  const bad = await fetch(`${BASE}/board.svg?fen=nonsense`);
  assert.equal(bad.status, 400);
  const body = await bad.json();
  assert.equal(body.error.code, 'invalid_fen');
  assert.ok(body.error.message.length > 0);
});

test('phone-width screenshots and layout', async () => {
  const page = await newPage(PHONE);
  await loadFen(page, KBNK);
  await page.screenshot({ path: SHOTS + 'probe-phone.png', fullPage: true });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  const wide = await page.evaluate(() => [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5).slice(0, 5).map((e) => e.tagName + '#' + e.id + '.' + e.className));
  assert.ok(overflow <= 0, `probe page scrolls sideways by ${overflow}px: ${wide.join(', ')}`);
  await page.goto(`${BASE}/metrics`);
  await page.waitForLoadState('load');
  const overflow2 = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow2 <= 0, `metrics page scrolls sideways by ${overflow2}px`);
  await page.screenshot({ path: SHOTS + 'metrics-phone.png', fullPage: true });
  await page.close();
});

// KRBvKQ, White to move, from chesstb's KQKRB: Black mates in 70 at clock 0,
// in 72 from clock 11, and the 50-move rule saves White from clock 19.
const KRBVKQ = 'k4B2/8/8/8/6q1/8/K3R3/8 w - - 0 1';

test('DTM50 clock chart: the step chart equals the API, and a step probes that clock', async () => {
  const page = await newPage();
  await loadFen(page, KRBVKQ);
  await page.waitForSelector('#clock-chart:not([hidden]) svg .step', { state: 'attached' });
  const api = await (await fetch(`${BASE}/api/v1/dtm50-by-clock?fen=${encodeURIComponent(KRBVKQ)}`)).json();
  assert.equal(api.dtm50.length, 100);
  const steps = await page.$$eval('#chart-host .step', (list) => list.map((s) => ({ clock: Number(s.dataset.clock), plies: Number(s.dataset.plies) })));
  assert.deepEqual(steps, api.dtm50.map((d) => ({ clock: d.halfmove_clock, plies: d.plies })));
  assert.deepEqual([steps[0].plies, steps[10].plies, steps[11].plies, steps[18].plies, steps[19].plies], [-140, -140, -144, -144, 0]);
  assert.equal(api.dtm50[0].mate_in_moves, -70);
  assert.equal(api.dtm50[11].mate_in_moves, -72);
  // The chart agrees with the verdict the page shows at this clock.
  assert.equal(await page.getAttribute('#chart-host .own-clock', 'data-clock'), '0');
  assert.equal(await page.getAttribute('#chart-host .own-clock', 'data-plies'), String((await page.evaluate(() => window.tbserver.state.answer.dtm50.plies))));
  const changes = await page.$$eval('#chart-host circle.change', (list) => list.map((c) => `${c.dataset.clock}:${c.dataset.kind}`));
  assert.deepEqual(changes, ['11:longer_mate', '19:loss_to_draw']);
  const listed = await page.textContent('#chart-changes');
  assert.match(listed, /This position \(clock 0: mate in 70 for Black\)/);
  assert.match(listed, /From clock 11: mate in 72 for Black/);
  assert.match(listed, /From clock 19: draw/);
  assert.match(await page.textContent('#verdict'), /Black forces mate in 70 \(DTM50\)\./, 'the winner named, the count unsigned');
  await page.locator('#clock-chart').screenshot({ path: SHOTS + 'clock-chart.png' });
  await page.screenshot({ path: SHOTS + 'probe-clock-chart-desktop.png', fullPage: true });
  // Clicking the step at clock 30 probes the position there: the 50-move
  // rule saves White (a blessed loss), no mate fits.
  await page.click('#chart-host .step[data-clock="30"]', { force: true });
  await page.waitForFunction(() => / 30 1$/.test(document.getElementById('fen').value));
  await waitReady(page);
  await page.waitForSelector('#clock-chart:not([hidden]) .own-clock[data-clock="30"]', { state: 'attached' });
  assert.equal(await page.getAttribute('#verdict', 'data-category'), 'blessed-loss');
  assert.equal(await page.getAttribute('#chart-host .own-clock', 'data-plies'), '0');
  await page.locator('#clock-chart').screenshot({ path: SHOTS + 'clock-chart-clock30.png' });
  // The shareable SVG is the same chart.
  const svg = await fetch(`${BASE}/dtm50-chart.svg?fen=${encodeURIComponent(KRBVKQ)}`);
  assert.equal(svg.status, 200);
  assert.match(svg.headers.get('content-type'), /image\/svg\+xml/);
  assert.equal(((await svg.text()).match(/class="step"/g) || []).length, 100);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('table statistics: reachable from the probe page and /api/v1/tables, figures as the API gives them', async () => {
  // Syzygy, Gaviota and chesstb answer KBNvK here: its built-in table (whose
  // statistics these are) is made on request.
  const generate = `${BASE}/api/v1/tables/generate?material=KBNvK`;
  let status = await (await fetch(generate, { method: 'POST' })).json();
  for (let i = 0; i < 120 && status.state !== 'ready'; i++) {
    await new Promise((r) => setTimeout(r, 500));
    status = await (await fetch(generate)).json();
  }
  assert.equal(status.state, 'ready');
  const page = await newPage();
  await loadFen(page, KBNK);
  await page.click('#stats-link');
  await page.waitForLoadState('load');
  assert.equal(new URL(page.url()).pathname, '/tables/KBNvK');
  const stats = await (await fetch(`${BASE}/api/v1/tables/KBNvK/stats`)).json();
  const rows = await page.$$eval('table.categories tbody tr', (list) => list.map((r) => [...r.querySelectorAll('td')].map((td) => Number(td.textContent.replace(/,/g, '')))));
  const side = (s) => [s.positions, s.wins, s.cursed_wins, s.draws, s.blessed_losses, s.losses];
  assert.deepEqual(rows, [side(stats.white_to_move), side(stats.black_to_move)]);
  assert.equal(stats.white_to_move.positions + stats.black_to_move.positions, stats.legal_positions);
  // Each longest value shows its example position, linked to the probe page.
  // The images load lazily: each is brought into view and awaited first
  // (decode() rejects if it cannot load).
  for (const img of await page.locator('figure.longest img').all()) {
    await img.scrollIntoViewIfNeeded();
    await img.evaluate((el) => el.decode());
  }
  const longest = await page.$$eval('figure.longest', (list) => list.map((f) => ({ metric: f.dataset.metric, plies: Number(f.dataset.plies), href: f.querySelector('a').getAttribute('href'), img: f.querySelector('img').naturalWidth })));
  assert.equal(longest.length, 6);
  assert.equal(longest[0].plies, stats.white_to_move.longest_dtz50.plies);
  for (const l of longest) {
    assert.match(l.href, /^\/\?fen=/);
    assert.ok(l.img > 0, 'board image loaded');
  }
  const bars = await page.$$eval('svg.stats-hist[data-metric="dtz50"] rect', (list) => list.length);
  assert.equal(bars, ['white_to_move', 'black_to_move'].reduce((n, k) => n + stats[k].dtz50_histogram.wins.length + stats[k].dtz50_histogram.losses.length, 0));
  await page.screenshot({ path: SHOTS + 'table-stats-desktop.png', fullPage: true });
  // The longest DTZ50'' example opens on the probe page with that value.
  await page.click('figure.longest[data-metric="dtz50"] a >> nth=0');
  await waitReady(page);
  assert.equal(await page.evaluate(() => window.tbserver.state.answer.dtz50.plies), stats.white_to_move.longest_dtz50.plies);
  // /api/v1/tables links the same page; /tables lists it.
  const tables = await (await fetch(`${BASE}/api/v1/tables`)).json();
  const kbnk = tables.tables.find((t) => t.material === 'KBNvK' && t.source === 'builtin');
  assert.deepEqual(kbnk.stats, { api: '/api/v1/tables/KBNvK/stats', page: '/tables/KBNvK' });
  await page.goto(`${BASE}/tables`);
  assert.ok(await page.$('a[href="/tables/KBNvK"]'));
  // Phone width: nothing scrolls sideways.
  await page.setViewportSize(PHONE);
  await page.goto(`${BASE}/tables/KBNvK`);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `statistics page scrolls sideways by ${overflow}px`);
  await page.screenshot({ path: SHOTS + 'table-stats-phone.png', fullPage: true });
  assert.deepEqual(page.problems, []);
  await page.close();
});
