// tbserver probe page: board setup, tablebase answer, move table, DTM50 analysis.
// SPDX-License-Identifier: GPL-3.0-or-later
import { Chessground } from 'chessground';
import { Chess } from 'chessops/chess';
import { parseFen, makeFen, makeBoardFen, parseBoardFen, EMPTY_BOARD_FEN, INITIAL_FEN } from 'chessops/fen';
import { parseUci, parseSquare, makeSquare } from 'chessops/util';
import { makeSanAndPlay } from 'chessops/san';

const $ = (id) => document.getElementById(id);

const DEFAULT_FEN = '3k4/8/3K4/8/8/8/N7/1B6 w - - 0 1';

const state = {
  fen: null, // the full FEN currently shown
  orientation: 'white',
  answer: null, // last probe answer (for the current fen)
  probeSeq: 0,
  retryTimer: undefined, // the next automatic probe while tables are generated
  genTimer: undefined, // the next look at a generation started from this page
  lastMove: undefined,
  analysis: null, // { es, fen }
};

// ---------------------------------------------------------------- FEN helpers

/** Split a FEN into its fields with defaults for missing ones. */
function fenFields(fen) {
  const parts = fen.trim().split(/\s+/);
  return {
    board: parts[0] || EMPTY_BOARD_FEN,
    turn: parts[1] === 'b' ? 'b' : 'w',
    castling: parts[2] || '-',
    ep: parts[3] || '-',
    halfmove: /^\d+$/.test(parts[4] || '') ? parseInt(parts[4], 10) : 0,
    fullmove: /^\d+$/.test(parts[5] || '') ? Math.max(1, parseInt(parts[5], 10)) : 1,
  };
}

function joinFen(f) {
  return `${f.board} ${f.turn} ${f.castling} ${f.ep} ${f.halfmove} ${f.fullmove}`;
}

/** A chessops position for a FEN, or null when it is not a legal position. */
function positionOf(fen) {
  const setup = parseFen(fen);
  if (setup.isErr) return null;
  const pos = Chess.fromSetup(setup.value);
  return pos.isOk ? pos.value : null;
}

function fenFromUrl() {
  const raw = new URLSearchParams(location.search).get('fen');
  return raw ? raw.replace(/_/g, ' ').trim() : null;
}

function urlForFen(fen) {
  return '/?fen=' + encodeURIComponent(fen.replace(/ /g, '_')).replace(/%2F/g, '/');
}

// ---------------------------------------------------------------- board

const cg = Chessground($('board'), {
  fen: EMPTY_BOARD_FEN,
  orientation: 'white',
  coordinates: true,
  autoCastle: false,
  movable: { free: true, color: 'both', showDests: false },
  premovable: { enabled: false },
  draggable: { enabled: true, deleteOnDropOff: true, showGhost: true },
  selectable: { enabled: true },
  highlight: { lastMove: true, check: true },
  animation: { enabled: true, duration: 150 },
  events: {
    move: onBoardMove,
    change: onBoardChange,
  },
});

let pendingPlayed = false;

/** A piece was moved on the board: play it if it is a legal move, else it is an edit. */
function onBoardMove(orig, dest) {
  const pos = positionOf(state.fen);
  if (!pos) return;
  const from = parseSquare(orig);
  const to = parseSquare(dest);
  const piece = pos.board.get(from);
  if (!piece || piece.color !== pos.turn) return;
  let move = { from, to };
  if (piece.role === 'pawn' && (makeSquare(to)[1] === '8' || makeSquare(to)[1] === '1')) move.promotion = 'queen';
  if (piece.role === 'king' && Math.abs((from & 7) - (to & 7)) === 2) {
    // Castling dragged as king two squares: chessops wants king takes own rook.
    const rookFile = (to & 7) > (from & 7) ? 7 : 0;
    move = { from, to: (from & ~7) | rookFile };
  }
  if (!pos.isLegal(move)) return;
  pendingPlayed = true;
  playMove(move, pos, [orig, dest]);
}

/** Any change to the board (moves, drops, deletions). */
function onBoardChange() {
  if (pendingPlayed) {
    pendingPlayed = false;
    return;
  }
  const f = fenFields(state.fen || `${EMPTY_BOARD_FEN} w - - 0 1`);
  const board = cg.getFen();
  if (board === f.board) return;
  f.board = board;
  f.castling = '-';
  f.ep = '-';
  state.lastMove = undefined;
  setPosition(joinFen(f), { push: true });
}

function playMove(move, pos, lastMove) {
  const uci = uciOf(move, pos);
  const next = pos.clone();
  makeSanAndPlay(next, move);
  const fen = makeFen(next.toSetup());
  state.lastMove = lastMove || [uci.slice(0, 2), uci.slice(2, 4)];
  setPosition(fen, { push: true });
}

/** Standard (king two squares) UCI for a chessops move. */
function uciOf(move, pos) {
  let to = move.to;
  const piece = pos.board.get(move.from);
  if (piece && piece.role === 'king' && pos.board.get(move.to)?.role === 'rook' && pos.board.get(move.to)?.color === piece.color) {
    to = (move.from & ~7) | ((move.to & 7) > (move.from & 7) ? 6 : 2);
  }
  return makeSquare(move.from) + makeSquare(to) + (move.promotion ? { queen: 'q', rook: 'r', bishop: 'b', knight: 'n' }[move.promotion] : '');
}

// ---------------------------------------------------------------- spare pieces

const ROLES = ['king', 'queen', 'rook', 'bishop', 'knight', 'pawn'];
function buildSpares() {
  const top = state.orientation === 'white' ? 'black' : 'white';
  const bottom = state.orientation === 'white' ? 'white' : 'black';
  for (const [id, color] of [['spares-top', top], ['spares-bottom', bottom]]) {
    const host = $(id);
    host.textContent = '';
    const wrap = document.createElement('div');
    wrap.className = 'cg-wrap';
    for (const role of ROLES) {
      const p = document.createElement('piece');
      p.className = `${color} ${role}`;
      p.setAttribute('role', 'img');
      p.setAttribute('aria-label', `spare ${color} ${role}`);
      p.title = `Drag a ${color} ${role} onto the board`;
      const start = (e) => {
        if (e.type === 'mousedown' && e.button !== 0) return;
        e.preventDefault();
        cg.dragNewPiece({ color, role }, e, true);
      };
      p.addEventListener('mousedown', start);
      p.addEventListener('touchstart', start, { passive: false });
      wrap.appendChild(p);
    }
    host.appendChild(wrap);
  }
}

// ---------------------------------------------------------------- position state

/** Show `fen` on the board and in the form, update the URL and ask the server. */
function setPosition(fen, { push = false, replace = false } = {}) {
  fen = fen.trim().replace(/\s+/g, ' ');
  const f = fenFields(fen);
  state.fen = fen;
  stopAnalysis('Position changed; analysis stopped.', true);
  const boardOk = parseBoardFen(f.board).isOk;
  if (boardOk) {
    const pos = positionOf(fen);
    cg.set({
      fen: f.board,
      turnColor: f.turn === 'w' ? 'white' : 'black',
      lastMove: state.lastMove,
      check: pos && pos.isCheck() ? (f.turn === 'w' ? 'white' : 'black') : false,
    });
  }
  $('fen').value = fen;
  for (const r of document.querySelectorAll('input[name="turn"]')) r.checked = r.value === f.turn;
  $('clock').value = String(f.halfmove);
  const url = urlForFen(fen);
  if (push && location.pathname + location.search !== url) history.pushState({ fen, lastMove: state.lastMove }, '', url);
  else if (replace) history.replaceState({ fen, lastMove: state.lastMove }, '', url);
  probe(fen);
}

// ---------------------------------------------------------------- probing

function showMessage(text, kind = 'error') {
  const m = $('message');
  if (!text) {
    m.hidden = true;
    m.textContent = '';
    return;
  }
  m.hidden = false;
  m.className = 'message' + (kind === 'info' ? ' info' : '');
  m.textContent = text;
}

// How often a partial answer is asked for again while tables are generated.
const PENDING_REFRESH_MS = 2000;

async function probe(fen, refresh = false) {
  const seq = ++state.probeSeq;
  clearTimeout(state.retryTimer);
  if (!refresh) {
    clearTimeout(state.genTimer);
    $('gen-offer').hidden = true;
    state.answer = null;
    // Not ready until this answer is shown (the tests wait for 'ready').
    document.body.dataset.state = 'probing';
    setVerdict('unknown', 'Probing…');
    $('facts').textContent = '';
    $('clock-chart').hidden = true;
    $('moves').tBodies[0].textContent = '';
  }
  let res;
  let body;
  try {
    res = await fetch('/api/v1/probe?fen=' + encodeURIComponent(fen), { headers: { accept: 'application/json' } });
    body = await res.json().catch(() => null);
  } catch (e) {
    if (seq !== state.probeSeq) return;
    showMessage('Could not reach the server: ' + e.message);
    setVerdict('unknown', 'No answer');
    document.body.dataset.state = 'error';
    return;
  }
  if (seq !== state.probeSeq) return; // a newer position was requested meanwhile
  if (body && body.error && body.error.code === 'generating') {
    // Only built-in tables can answer, and they are being generated: show
    // how far, and ask again when the server says to.
    showProgress(body.error.generating);
    setVerdict('unknown', 'Generating tables…');
    document.body.dataset.state = 'generating';
    const seconds = Number(res.headers.get('retry-after')) || 1;
    state.retryTimer = setTimeout(() => probe(fen, true), seconds * 1000);
    return;
  }
  showProgress(null);
  if (!res.ok || !body || body.error) {
    const err = body && body.error ? body.error : { code: 'http_' + res.status, message: `The server answered with status ${res.status}.` };
    if (err.code === 'too_many_pieces' || err.code === 'missing_table') {
      await showUncovered(fen, err.code, seq);
      if (seq !== state.probeSeq) return;
      document.body.dataset.state = 'uncovered';
      if (!refresh) offerGeneration(fen, seq);
      return;
    }
    showMessage(errorText(err));
    setVerdict('unknown', errorTitle(err.code));
    document.body.dataset.state = 'error';
    if (!refresh && err.code === 'too_many_pieces') offerGeneration(fen, seq);
    return;
  }
  const pending = pendingFields(body);
  if (pending.length) {
    showMessage(`${pending.map((f) => f.toUpperCase()).join(' and ')} ${pending.length === 1 ? 'is' : 'are'} still being generated; this page updates by itself when ready.`, 'info');
    state.retryTimer = setTimeout(() => probe(fen, true), PENDING_REFRESH_MS);
  } else {
    showMessage(null);
  }
  state.answer = body;
  renderAnswer(body);
  if (!refresh || $('clock-chart').hidden) await showClockChart(fen, body, seq);
  await showStatsLink(body, seq);
  document.body.dataset.state = pending.length ? 'pending' : 'ready';
  if (!refresh && !exactDtm50(body)) offerGeneration(fen, seq);
}

// ------------------------------------------------- positions no table covers

/** Most pieces (kings included) any endgame tablebase covers. */
const TABLEBASE_MAX_PIECES = 7;

/**
 * A position no table here covers (too many pieces, or its table is not
 * installed): says so in words, what would answer it, and what the tables
 * still know about its moves: the positions after each legal move are
 * probed in one batch, and a capture often reaches a table that is there.
 * The DTM50 analysis stays on offer: it searches with the tables it reaches.
 */
async function showUncovered(fen, code, seq) {
  const material = materialOf(fen);
  const pieces = fenFields(fen).board.replace(/[^a-zA-Z]/g, '').length;
  const name = material || 'this material';
  setVerdict('unknown', 'Not in the tables here', `No table on this server covers ${name}.`);
  showMessage(null);
  const facts = $('facts');
  facts.textContent = '';
  const f = fenFields(fen);
  addFact(facts, 'Material', `${name} (${plural(pieces, 'piece')}), ${sideName(f.turn)} to move, half-move clock ${f.halfmove}`);
  addFact(
    facts,
    'Why',
    code === 'missing_table'
      ? `The table for ${name} is not installed on this server.`
      : `The tables on this server stop short of ${plural(pieces, 'piece')} for ${name}.`,
  );
  addFact(
    facts,
    'What would answer it',
    pieces <= GENERATE_MAX_PIECES
      ? `A built-in table this server can generate from scratch (exact WDL, DTZ, DTM and DTM50), or Syzygy or chesstb files the operator installs.`
      : pieces <= TABLEBASE_MAX_PIECES
        ? `Syzygy tables (win, draw or loss and DTZ, up to 7 pieces) or chesstb tables (DTM and DTM50, up to 6), installed by the operator of this server.`
        : `Nothing: no endgame tablebase covers more than ${TABLEBASE_MAX_PIECES} pieces.`,
  );
  addFact(facts, 'What still helps', 'The moves below, where they reach a covered table, and the DTM50 analysis further down, which searches for the fastest mate the 50-move rule allows.');
  await showUncoveredMoves(fen, seq);
}

/** The legal moves of an uncovered position, each with its position's values where a table covers it. */
async function showUncoveredMoves(fen, seq) {
  const pos = positionOf(fen);
  const tbody = $('moves').tBodies[0];
  tbody.textContent = '';
  if (!pos) return;
  const moves = [];
  for (const [from, tos] of pos.allDests()) {
    for (const to of tos) {
      const piece = pos.board.get(from);
      const lastRank = to >> 3 === 0 || to >> 3 === 7;
      const promotions = piece && piece.role === 'pawn' && lastRank ? ['queen', 'rook', 'bishop', 'knight'] : [undefined];
      for (const promotion of promotions) {
        const child = pos.clone();
        const move = { from, to, promotion };
        const capture = pos.board.has(to) || (piece && piece.role === 'pawn' && pos.epSquare === to);
        const san = makeSanAndPlay(child, move);
        const uci = makeSquare(from) + makeSquare(to) + (promotion ? promotion === 'knight' ? 'n' : promotion[0] : '');
        moves.push({ uci, san, fen: makeFen(child.toSetup()), zeroing: capture || piece.role === 'pawn' });
      }
    }
  }
  let results = [];
  try {
    const res = await fetch('/api/v1/probe', {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/json' },
      body: JSON.stringify({ fens: moves.map((m) => m.fen) }),
    });
    const body = await res.json().catch(() => null);
    if (body && Array.isArray(body.results)) results = body.results;
  } catch {
    results = [];
  }
  if (seq !== state.probeSeq) return;
  // A move's row holds its position's answer, as a probe answer's moves do.
  const rows = moves.map((m, i) => {
    const r = results[i];
    if (!r || r.error) return { ...m, category: 'uncovered' };
    return {
      ...m,
      category: r.category,
      wdl50: r.wdl50,
      dtz50: r.dtz50,
      dtm: r.dtm,
      dtm50: r.dtm50,
      checkmate: r.checkmate,
      stalemate: r.stalemate,
      insufficient_material: r.insufficient_material,
    };
  });
  const covered = rows.filter((m) => m.category !== 'uncovered');
  const order = { win: 0, 'cursed-win': 1, 'maybe-win': 2, draw: 3, 'maybe-loss': 4, 'blessed-loss': 5, loss: 6, unknown: 7 };
  const rank = (m) => (m.checkmate ? -1 : order[FLIP[m.category]] ?? 7);
  covered.sort((a, b) => rank(a) - rank(b));
  renderMoves({ moves: [...covered, ...rows.filter((m) => m.category === 'uncovered')] });
  if (!covered.length) {
    const tr = tbody.insertRow(0);
    const td = tr.insertCell();
    td.colSpan = 6;
    td.className = 'muted';
    td.textContent = 'No move reaches a table here either.';
  }
}

// ------------------------------------------------- DTM50 by half-move clock

/**
 * Draws the position's DTM50 at every clock 0–99 (the server's SVG chart,
 * inlined so that its steps can be clicked) when an exact DTM50 table covers
 * it; hides the chart otherwise.
 */
async function showClockChart(fen, answer, seq) {
  const section = $('clock-chart');
  if (!exactDtm50(answer) || answer.sources.dtm50 === 'rules') {
    section.hidden = true;
    return;
  }
  const query = '?fen=' + encodeURIComponent(fen);
  let svg = null;
  try {
    const res = await fetch('/dtm50-chart.svg' + query);
    if (res.ok) svg = await res.text();
  } catch (e) {
    svg = null;
  }
  if (seq !== state.probeSeq) return;
  if (!svg) {
    section.hidden = true;
    return;
  }
  $('chart-host').innerHTML = svg;
  $('chart-svg').href = '/dtm50-chart.svg' + query;
  $('chart-json').href = '/api/v1/dtm50-by-clock' + query;
  const list = $('chart-changes');
  list.textContent = '';
  const chart = $('chart-host').querySelector('svg');
  const own = chart.querySelector('.own-clock text');
  const items = [own ? `This position (${own.textContent})` : null];
  for (const c of chart.querySelectorAll('.change title')) items.push(c.textContent.replace(/^from clock/, 'From clock'));
  if (items.length === 1) items.push('The same at every clock.');
  for (const text of items.filter(Boolean)) {
    const li = document.createElement('li');
    li.textContent = text;
    list.append(li);
  }
  for (const step of chart.querySelectorAll('.step')) {
    step.addEventListener('click', () => {
      const f = fenFields(state.fen);
      f.halfmove = Number(step.dataset.clock);
      $('clock').value = f.halfmove;
      setPosition(joinFen(f), { replace: true });
    });
  }
  section.hidden = false;
}

/** Tables known to have statistics (built-in tables generated), by name. */
const statsAvailable = new Map();

/** Links the table's statistics page under the facts, when the server has them. */
async function showStatsLink(answer, seq) {
  if (answer.pieces > GENERATE_MAX_PIECES) return;
  const table = canonicalMaterial(answer.material);
  if (!statsAvailable.get(table)) {
    try {
      const res = await fetch('/api/v1/tables/' + encodeURIComponent(table) + '/stats', { method: 'HEAD' });
      statsAvailable.set(table, res.ok);
    } catch (e) {
      return;
    }
  }
  if (seq !== state.probeSeq || !statsAvailable.get(table) || $('stats-link')) return;
  const dt = document.createElement('dt');
  dt.textContent = 'Table';
  const dd = document.createElement('dd');
  const link = document.createElement('a');
  link.id = 'stats-link';
  link.href = '/tables/' + encodeURIComponent(table);
  link.textContent = `Statistics of ${table}`;
  dd.append(link);
  $('facts').append(dt, dd);
}

// ------------------------------------------------- generating a table on request

/** Pieces (kings included) up to which the server generates tables on request. */
const GENERATE_MAX_PIECES = 5;
/** Tables probes generate by themselves: no offer needed below this. */
const GENERATE_MIN_PIECES = 5;

/** Whether the answer has DTM50 from a table rather than a search bound. */
function exactDtm50(answer) {
  return Boolean(answer.dtm50 && answer.dtm50.exact);
}

/** The table name of a FEN's material, e.g. `KRBvKQ`, or null for a bad board. */
function materialOf(fen) {
  const board = fenFields(fen).board;
  const side = (isWhite) => {
    let name = '';
    for (const role of 'KQRBNP') {
      const letter = isWhite ? role : role.toLowerCase();
      name += role.repeat([...board].filter((c) => c === letter).length);
    }
    return name;
  };
  const name = side(true) + 'v' + side(false);
  return /^K[QRBNP]*vK[QRBNP]*$/.test(name) ? name : null;
}

/**
 * Generating is an operator's action: the server says, per client, whether
 * it is `open`, needs the admin `token`, or is `closed` from here. A token
 * typed once is kept for the browser tab only.
 */
const TOKEN_KEY = 'tbserver-admin-token';

async function generationStatus(material, method, token) {
  const headers = { accept: 'application/json' };
  if (token) headers.authorization = 'Bearer ' + token;
  const res = await fetch('/api/v1/tables/generate?material=' + encodeURIComponent(material), {
    method,
    headers,
  });
  const body = await res.json().catch(() => null);
  return { res, body };
}

/**
 * For a position of 5 pieces that no table answers exactly: ask the server
 * whether it can generate the built-in table, and offer it (or show how far
 * it is, if already under way). Nothing happens without a click.
 */
async function offerGeneration(fen, seq) {
  const material = materialOf(fen);
  const pieces = material ? material.length - 1 : 0;
  if (!material || pieces < GENERATE_MIN_PIECES || pieces > GENERATE_MAX_PIECES) return;
  let status;
  try {
    status = await generationStatus(material, 'GET');
  } catch {
    return; // the probe's own answer already says what is known
  }
  if (seq !== state.probeSeq || !status.res.ok || !status.body) return; // 409: built-in tables are off
  const { body } = status;
  if (body.state === 'pending') {
    watchGeneration(fen, material, body.progress);
  } else if ((body.state === 'not_started' || body.state === 'failed') && body.access !== 'closed') {
    const p = body.progress;
    const minutes = Math.max(1, Math.round(p.estimated_remaining_s / 60));
    const tables = p.tables.length;
    const uncovered = document.body.dataset.state === 'uncovered';
    $('gen-offer').querySelector('.gen-text').textContent =
      (uncovered
        ? `A built-in table for ${body.material} would answer this position exactly; this server has not generated it. `
        : `Exact DTM and DTM50 for ${body.material} need its built-in table, which this server has not generated. `) +
      `It can: ${tables} table${tables === 1 ? '' : 's'}, roughly ${minutes} min of work on the server; ` +
      'the values appear here when it is done.' +
      (body.access === 'token' ? ' Generating is for the operator: enter the admin token.' : '');
    const tokenField = $('gen-token');
    tokenField.hidden = body.access !== 'token';
    tokenField.value = sessionStorage.getItem(TOKEN_KEY) || '';
    const button = $('btn-generate');
    button.disabled = false;
    button.onclick = () => startGeneration(fen, material);
    $('gen-offer').hidden = false;
  }
}

async function startGeneration(fen, material) {
  $('btn-generate').disabled = true;
  const tokenField = $('gen-token');
  const token = tokenField.hidden ? '' : tokenField.value.trim();
  let status;
  try {
    status = await generationStatus(material, 'POST', token);
  } catch (e) {
    showMessage('Could not reach the server: ' + e.message);
    $('btn-generate').disabled = false;
    return;
  }
  if (fen !== state.fen) return;
  if (!status.res.ok || !status.body) {
    const err = status.body && status.body.error ? status.body.error : { message: `status ${status.res.status}` };
    if (err.code === 'unauthorized' || err.code === 'forbidden') sessionStorage.removeItem(TOKEN_KEY);
    showMessage('The table could not be generated. Server: ' + err.message);
    $('btn-generate').disabled = false;
    return;
  }
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  $('gen-offer').hidden = true;
  if (status.body.state === 'ready') probe(fen);
  else watchGeneration(fen, material, status.body.progress);
}

/** How often the page asks how far a generation it shows has come. */
const GENERATION_POLL_MS = 2000;

/** Show the generation's progress until it is ready, then probe again. */
async function watchGeneration(fen, material, progress) {
  clearTimeout(state.genTimer);
  if (fen !== state.fen) return;
  if (progress) {
    showProgress(progress);
    document.body.dataset.state = 'generating';
  }
  state.genTimer = setTimeout(async () => {
    let status;
    try {
      status = await generationStatus(material, 'GET');
    } catch {
      status = null;
    }
    if (fen !== state.fen) return;
    const body = status && status.res.ok ? status.body : null;
    if (body && body.state === 'ready') {
      showProgress(null);
      probe(fen);
    } else if (body && body.state === 'failed') {
      // Out of disk or memory, say: tell why; asking again retries.
      showProgress(null);
      const failed = body.progress.tables.find((t) => t.error);
      showMessage('The table could not be generated. Server: ' + (failed ? failed.error : 'failed'));
      offerGeneration(fen, state.probeSeq);
    } else if (body && body.state === 'not_started') {
      // The server restarted meanwhile: offer again.
      showProgress(null);
      offerGeneration(fen, state.probeSeq);
    } else {
      watchGeneration(fen, material, body ? body.progress : progress);
    }
  }, GENERATION_POLL_MS);
}

/** Values still being generated, of the position or any of its moves. */
function pendingFields(answer) {
  const fields = new Set(answer.pending || []);
  for (const m of answer.moves || []) for (const f of m.pending || []) fields.add(f);
  return [...fields];
}

/** The generation progress bar, or none. */
function showProgress(p) {
  const box = $('progress');
  if (!p) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  const bar = box.querySelector('progress');
  bar.max = Math.max(p.tables_needed, 1);
  bar.value = p.tables_ready;
  const running = p.tables.filter((t) => t.state === 'generating').map((t) => t.material);
  const left = Math.ceil(p.estimated_remaining_s);
  box.querySelector('.progress-text').textContent =
    `Generating the built-in tables for ${p.material}: ${p.tables_ready} of ${p.tables_needed} ready` +
    (running.length ? ` (now ${running.join(', ')})` : '') +
    (left > 0 ? `, about ${left} s left.` : '.');
}

function errorTitle(code) {
  switch (code) {
    case 'invalid_fen': return 'Invalid FEN';
    case 'illegal_position': return 'Illegal position';
    case 'castling_rights': return 'Castling not supported';
    case 'too_many_pieces': return 'Too many pieces';
    case 'missing_table': return 'Table not available';
    default: return 'No answer';
  }
}

function errorText(err) {
  const hints = {
    invalid_fen: 'This is not a valid FEN. ',
    illegal_position: 'This position cannot occur in a game. ',
    castling_rights: 'Tablebases cover positions without castling rights. ',
    too_many_pieces: 'The tablebases here do not cover this many pieces. ',
    missing_table: 'The table needed for this position is not installed. ',
  };
  return (hints[err.code] || '') + 'Server: ' + err.message;
}

// ---------------------------------------------------------------- rendering

const CATEGORY_LABEL = {
  win: 'Win',
  'cursed-win': 'Cursed win',
  'maybe-win': 'Maybe a win',
  draw: 'Draw',
  'maybe-loss': 'Maybe a loss',
  'blessed-loss': 'Blessed loss',
  loss: 'Loss',
  unknown: 'Unknown',
};

const FLIP = {
  win: 'loss', loss: 'win', 'cursed-win': 'blessed-loss', 'blessed-loss': 'cursed-win',
  'maybe-win': 'maybe-loss', 'maybe-loss': 'maybe-win', draw: 'draw', unknown: 'unknown',
};

function setVerdict(category, main, sub) {
  const v = $('verdict');
  v.className = 'verdict cat-' + category;
  v.dataset.category = category;
  v.textContent = '';
  const m = document.createElement('span');
  m.className = 'verdict-main';
  m.textContent = main;
  v.appendChild(m);
  if (sub) {
    const s = document.createElement('span');
    s.className = 'verdict-sub';
    s.textContent = sub;
    v.appendChild(s);
  }
}

const sideName = (s) => (s === 'white' || s === 'w' ? 'White' : 'Black');
const other = (s) => (s === 'white' ? 'black' : 'white');
const plural = (n, word) => `${n} ${n === 1 ? word : word === 'ply' ? 'plies' : word + 's'}`;
const mateMoves = (plies) => Math.ceil(Math.abs(plies) / 2);

function verdictSentence(a) {
  const us = sideName(a.side_to_move);
  const them = sideName(other(a.side_to_move));
  if (a.checkmate) return [`${us} is checkmated`, `${them} has won.`];
  if (a.stalemate) return ['Stalemate', 'The game is drawn.'];
  if (a.insufficient_material) return ['Draw', 'Neither side has enough material to mate.'];
  // mate_in_moves is signed (negative: the side to move is mated); the
  // sentence names the winner, so it counts without the sign.
  const moves = (d) => Math.abs(d.mate_in_moves ?? mateMoves(d.plies));
  const mate = a.dtm50 && a.dtm50.mate_in_moves !== null ? `mate in ${moves(a.dtm50)} (DTM50)`
    : a.dtm ? `mate in ${moves(a.dtm)} (DTM, ignoring the 50-move rule)` : '';
  switch (a.category) {
    case 'win': return [`${us} wins`, mate ? `${us} to move: ${mate}.` : `${us} to move can force mate within the 50-move rule.`];
    case 'cursed-win': return [`Cursed win for ${us}`, 'A win on the board, but the 50-move rule turns it into a draw.'];
    case 'maybe-win': return [`Maybe a win for ${us}`, 'Right on the 50-move edge; the tables cannot tell whether the win survives.'];
    case 'draw': return ['Draw', 'Neither side can force a win.'];
    case 'maybe-loss': return [`Maybe a loss for ${us}`, 'Right on the 50-move edge; the tables cannot tell whether the loss is saved.'];
    case 'blessed-loss': return [`Blessed loss for ${us}`, `${them} could mate, but the 50-move rule saves ${us}: a draw.`];
    case 'loss': return [`${us} loses`, mate ? `${them} forces ${mate.replace(/^mate/, 'mate')}.` : `${them} can force mate.`];
    default: return ['Unknown', 'The tables needed for this position are not available.'];
  }
}

function dtzText(d, flip = false) {
  if (!d) return '—';
  const plies = flip ? -d.plies : d.plies;
  let s = `${plies > 0 ? '+' : ''}${plies}`;
  if (d.rounding === 'maybe_rounded') s = '≈' + s;
  return s;
}

function dtzNote(d) {
  if (!d) return 'not available';
  const parts = [];
  if (d.plies === 0) parts.push('a draw: no zeroing needed');
  else parts.push(`${plural(Math.abs(d.plies), 'ply')} to the next capture, pawn move or mate`);
  if (d.rounding === 'exact') {
    parts.push(d.rounded_in
      ? `exact (the ${d.rounded_in} table stores it rounded; the source named below knows it to the ply)`
      : 'exact');
  } else {
    const [lo, hi] = (d.range_plies || [d.plies, d.plies + Math.sign(d.plies)]).map(Math.abs).sort((x, y) => x - y);
    parts.push(`possibly rounded: the table stores whole moves here, so the true distance is ${lo} or ${hi} plies`);
  }
  if (d.beyond_100) parts.push('above 100: the 50-move rule spoils the result (cursed win / blessed loss)');
  return parts.join('; ');
}

function dtcNote(c) {
  if (c.plies === 0) return `no conversion fits under the 50-move rule from half-move clock ${c.halfmove_clock}`;
  if (c.pushes_owed === 0) return `${plural(Math.abs(c.plies), 'ply')} to the next capture, promotion or mate at half-move clock ${c.halfmove_clock} (chesstb)`;
  return `${c.pushes_owed} pawn ${c.pushes_owed === 1 ? 'push' : 'pushes'} owed first, the next one ${plural(Math.abs(c.plies), 'ply')} away (chesstb)`;
}

function dtmText(d, flip = false, draw = false) {
  if (!d) return '—';
  // DTM50 of a position the 50-move rule draws at its clock.
  if (d.mate_in_moves === null) return 'draw';
  if (d.plies === 0) return draw ? 'draw' : '0';
  const plies = flip ? -d.plies : d.plies;
  return `${plies > 0 ? '+' : ''}${plies}`;
}

function addFact(dl, term, value, note) {
  const dt = document.createElement('dt');
  dt.textContent = term;
  const dd = document.createElement('dd');
  const missing = value === '—';
  dd.textContent = missing && note ? '' : value;
  if (note) {
    const n = document.createElement('span');
    n.className = 'note';
    n.textContent = missing ? note : ' — ' + note;
    dd.appendChild(n);
  }
  dl.append(dt, dd);
}

function renderAnswer(a) {
  const [main, sub] = verdictSentence(a);
  setVerdict(a.category, main, sub);
  const dl = $('facts');
  dl.textContent = '';
  addFact(dl, 'Material', `${a.material} (${plural(a.pieces, 'piece')}), ${sideName(a.side_to_move)} to move, half-move clock ${a.halfmove_clock}`);
  addFact(dl, 'Verdict', `${CATEGORY_LABEL[a.category] || a.category}`, 'at the real half-move clock');
  addFact(dl, 'WDL50', a.wdl50 == null ? '—' : `${a.wdl50 > 0 ? '+' : ''}${a.wdl50}`, a.wdl50 == null ? 'not available' : wdlWords(a.wdl50));
  addFact(dl, 'DTZ50', a.dtz50 ? `${dtzText(a.dtz50)} ${Math.abs(a.dtz50.plies) === 1 ? 'ply' : 'plies'}` : '—', dtzNote(a.dtz50));
  addFact(dl, 'DTM', a.dtm ? `${dtmText(a.dtm)} plies` : '—',
    a.dtm ? `${mateWords(a.dtm.plies, a.dtm.mate_in_moves)}; ignores the 50-move rule` : 'not available (Gaviota tables cover few endgames here)');
  if (a.dtm50 !== undefined) {
    const drawn50 = a.dtm50 && a.dtm50.mate_in_moves === null;
    addFact(dl, 'DTM50', a.dtm50 ? (drawn50 ? 'draw' : `${dtmText(a.dtm50)} plies`) : '—',
      !a.dtm50 ? 'not known; try the analysis below'
        : drawn50 ? `no mate fits under the 50-move rule from half-move clock ${a.dtm50.halfmove_clock}; exact`
        : `${mateWords(a.dtm50.plies, a.dtm50.mate_in_moves)}; respects the 50-move rule${a.dtm50.exact ? ', exact' : ', a bound'}`);
  }
  if (a.dtc) {
    const c = a.dtc;
    addFact(dl, 'DTC', c.plies === 0 ? 'draw' : `${c.plies > 0 ? '+' : ''}${c.plies} ${Math.abs(c.plies) === 1 ? 'ply' : 'plies'}`, dtcNote(c));
  }
  if (a.mate_bound) {
    const b = a.mate_bound;
    addFact(dl, 'Mate bound', `${b.min_plies}–${b.max_plies} plies`, `mate comes in ${b.min_moves}–${b.max_moves} moves; derived from ${b.derived_from.toUpperCase()}`);
  }
  if (a.sources) {
    addFact(dl, 'Sources', Object.entries(a.sources).filter(([, v]) => v).map(([k, v]) => `${k.toUpperCase()}: ${v}`).join(' · '));
  }
  renderMoves(a);
}

/** `KQvKR` for `KRvKQ` too: the stronger side first, as tables are named. */
function canonicalMaterial(material) {
  const [white, black] = material.split('v');
  const strength = (side) => [...side].map((c) => 'KQRBNP'.indexOf(c));
  const a = strength(white);
  const b = strength(black);
  // More pieces, then stronger ones, go first.
  if (a.length !== b.length) return a.length > b.length ? material : `${black}v${white}`;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] < b[i] ? material : `${black}v${white}`;
  return material;
}

function wdlWords(w) {
  return { 2: 'win', 1: 'cursed win (drawn by the 50-move rule)', 0: 'draw', '-1': 'blessed loss (saved by the 50-move rule)', '-2': 'loss' }[w] || '';
}

function mateWords(plies, mateIn) {
  if (plies === 0) return 'the game is over';
  const n = mateIn != null ? Math.abs(mateIn) : mateMoves(plies);
  return plies > 0 ? `mates in ${plural(n, 'move')}` : `gets mated in ${plural(n, 'move')}`;
}

/** The result of a move in words, from the mover's point of view. */
function moveResult(m) {
  if (m.checkmate) return 'wins: checkmate';
  if (m.stalemate) return 'draws: stalemate';
  if (m.insufficient_material) return 'draws: insufficient material';
  const cat = FLIP[m.category] || 'unknown';
  switch (cat) {
    case 'win': {
      // After our move the opponent is mated in |plies| plies: our mate is one ply longer.
      const d = m.dtm50 || m.dtm;
      return d ? `wins, mate in ${Math.ceil((Math.abs(d.plies) + 1) / 2)}${m.dtm50 ? '' : ' (DTM)'}` : 'wins';
    }
    case 'loss': {
      const d = m.dtm50 || m.dtm;
      return d ? `loses, mated in ${mateMoves(d.plies)}` : 'loses';
    }
    case 'cursed-win': return 'cursed win (draw by 50-move rule)';
    case 'blessed-loss': return 'blessed loss (saved by 50-move rule)';
    case 'maybe-win': return 'maybe wins (50-move edge)';
    case 'maybe-loss': return 'maybe loses (50-move edge)';
    case 'draw': return 'draws';
    default: return m.category === 'uncovered' ? 'not in the tables here' : 'unknown';
  }
}

function renderMoves(a) {
  const tbody = $('moves').tBodies[0];
  tbody.textContent = '';
  if (!a.moves || a.moves.length === 0) {
    const tr = tbody.insertRow();
    const td = tr.insertCell();
    td.colSpan = 6;
    td.className = 'muted';
    td.textContent = a.checkmate ? 'No moves: checkmate.' : a.stalemate ? 'No moves: stalemate.' : 'No legal moves.';
    return;
  }
  for (const m of a.moves) {
    const cat = m.checkmate ? 'win' : FLIP[m.category] || 'unknown';
    const tr = tbody.insertRow();
    tr.className = 'cat-' + cat;
    tr.dataset.uci = m.uci;
    tr.dataset.category = cat;
    const tdMove = tr.insertCell();
    const btn = document.createElement('button');
    btn.type = 'button';
    btn.className = 'move';
    btn.textContent = m.san;
    btn.title = `Play ${m.san} (${m.uci})`;
    btn.addEventListener('click', (e) => {
      e.stopPropagation();
      playUci(m.uci);
    });
    tdMove.appendChild(btn);
    const tdRes = tr.insertCell();
    tdRes.className = 'result';
    tdRes.textContent = moveResult(m) + (m.zeroing ? ' · zeroing' : '');
    const wdl = tr.insertCell();
    wdl.className = 'num';
    wdl.textContent = m.wdl50 == null ? '—' : `${-m.wdl50 > 0 ? '+' : ''}${-m.wdl50}`;
    const dtz = tr.insertCell();
    dtz.className = 'num';
    dtz.textContent = m.zeroing && m.dtz50 ? `${dtzText(m.dtz50, true)} (0 after)` : dtzText(m.dtz50, true);
    if (m.dtz50 && m.dtz50.rounding === 'maybe_rounded') dtz.title = 'Possibly rounded: the true distance may be one ply more.';
    const dtm = tr.insertCell();
    dtm.className = 'num';
    dtm.textContent = dtmText(m.dtm, true, cat === 'draw');
    const dtm50 = tr.insertCell();
    dtm50.className = 'num';
    dtm50.textContent = dtmText(m.dtm50, true, cat === 'draw');
    tr.addEventListener('click', () => playUci(m.uci));
  }
}

function playUci(uci) {
  const pos = positionOf(state.fen);
  if (!pos) return;
  let move = parseUci(uci);
  if (!move) return;
  const piece = pos.board.get(move.from);
  if (piece && piece.role === 'king' && Math.abs((move.from & 7) - (move.to & 7)) === 2) {
    move = { from: move.from, to: (move.from & ~7) | ((move.to & 7) > (move.from & 7) ? 7 : 0) };
  }
  if (!pos.isLegal(move)) {
    showMessage(`The move ${uci} is not legal here.`);
    return;
  }
  playMove(move, pos, [uci.slice(0, 2), uci.slice(2, 4)]);
}

// ---------------------------------------------------------------- analysis (SSE)

function scoreText(s) {
  if (!s) return '–';
  if (s.kind === 'mate') {
    const n = s.mate_in_moves;
    const bound = s.bound === 'at_most' ? 'at most ' : s.bound === 'at_least' ? 'at least ' : '';
    if (n >= 0) return `${sideName(state.analysis?.turn || 'white')} mates in ${bound}${plural(Math.abs(n), 'move')}`;
    return `${sideName(state.analysis?.turn || 'white')} is mated in ${bound}${plural(Math.abs(n), 'move')}`;
  }
  if (s.kind === 'draw') return 'Draw' + (s.swindle_cp ? ` (swindle score ${s.swindle_cp} cp)` : '');
  return JSON.stringify(s);
}

function pvText(pv, fen) {
  if (!pv || pv.length === 0) return '–';
  const f = fenFields(fen);
  let ply = (f.fullmove - 1) * 2 + (f.turn === 'b' ? 1 : 0);
  const out = [];
  pv.forEach((m, i) => {
    const moveNo = Math.floor(ply / 2) + 1;
    if (ply % 2 === 0) out.push(`${moveNo}.`);
    else if (i === 0) out.push(`${moveNo}…`);
    out.push(m.san || m.uci);
    ply++;
  });
  return out.join(' ');
}

function showAnalysis(ev) {
  $('analysis-out').hidden = false;
  $('an-depth').textContent = String(ev.depth ?? '–');
  $('an-score').textContent = scoreText(ev.score);
  $('an-pv').textContent = pvText(ev.pv, state.analysis ? state.analysis.fen : state.fen);
}

function startAnalysis() {
  stopAnalysis(null, true);
  const fen = state.fen;
  if (!fen) return;
  const movetime = $('movetime').value;
  const url = `/api/v1/analyse/stream?fen=${encodeURIComponent(fen)}&movetime_ms=${encodeURIComponent(movetime)}`;
  const es = new EventSource(url);
  const run = { es, fen, turn: fenFields(fen).turn, got: 0 };
  state.analysis = run;
  $('btn-analyse').disabled = true;
  $('btn-stop').disabled = false;
  $('analysis-status').textContent = 'Analysing…';
  document.body.dataset.analysis = 'running';
  // Progress: unnamed events or events named `depth`; final: `done` or `result`.
  const onProgress = (e) => {
    if (state.analysis !== run) return;
    run.got++;
    try {
      const data = JSON.parse(e.data);
      showAnalysis(data);
      $('analysis-status').textContent = `Analysing… depth ${data.depth}, ${Number(data.nodes || 0).toLocaleString('en')} nodes, ${data.elapsed_ms ?? 0} ms`;
    } catch {
      /* ignore malformed events */
    }
  };
  const onFinal = (e) => {
    if (state.analysis !== run) return;
    run.got++;
    let data = null;
    try {
      data = JSON.parse(e.data);
    } catch {
      /* ignore */
    }
    if (data) showAnalysis(data);
    finishAnalysis(run, data ? doneText(data) : 'Analysis finished.');
  };
  es.onmessage = onProgress;
  es.addEventListener('depth', onProgress);
  es.addEventListener('done', onFinal);
  es.addEventListener('result', onFinal);
  es.onerror = () => {
    if (state.analysis !== run) return;
    if (run.got > 0) {
      // The stream ended (or broke) after results: keep what we have.
      finishAnalysis(run, 'Analysis ended.');
      return;
    }
    es.close();
    explainAnalysisFailure(url, run);
  };
}

function doneText(d) {
  const best = d.best_move ? (typeof d.best_move === 'string' ? d.best_move : d.best_move.san || d.best_move.uci) : null;
  const why = d.stop_reason ?? d.stop;
  const reason = why ? ` (${String(typeof why === 'string' ? why : JSON.stringify(why)).replace(/_/g, ' ')})` : '';
  return `Done at depth ${d.depth}${reason}.` + (best ? ` Best move: ${best}.` : '');
}

/** The EventSource failed before any event: find out why with a plain request. */
async function explainAnalysisFailure(url, run) {
  let text = 'Analysis is not available.';
  try {
    const ctrl = new AbortController();
    const res = await fetch(url, { signal: ctrl.signal, headers: { accept: 'application/json' } });
    if (res.status === 404 || res.status === 405 || res.status === 501) {
      text = 'Analysis is not available on this server.';
    } else if (!res.ok) {
      const body = await res.json().catch(() => null);
      text = body && body.error ? `Analysis failed: ${body.error.message}` : `Analysis failed (status ${res.status}).`;
    }
    ctrl.abort();
  } catch {
    /* keep the generic text */
  }
  if (state.analysis === run) finishAnalysis(run, text);
}

function finishAnalysis(run, text) {
  run.es.close();
  if (state.analysis === run) state.analysis = null;
  $('btn-analyse').disabled = false;
  $('btn-stop').disabled = true;
  $('analysis-status').textContent = text;
  document.body.dataset.analysis = 'done';
}

function stopAnalysis(text, quiet = false) {
  const run = state.analysis;
  if (!run) return;
  run.es.close(); // closing the stream stops the search on the server
  state.analysis = null;
  $('btn-analyse').disabled = false;
  $('btn-stop').disabled = true;
  if (!quiet || text) $('analysis-status').textContent = text || 'Stopped.';
  if (!quiet) document.body.dataset.analysis = 'stopped';
  else if (text) {
    $('analysis-out').hidden = true;
    document.body.dataset.analysis = 'stopped';
  }
}

// ---------------------------------------------------------------- controls

$('fen-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const fen = $('fen').value.trim();
  if (!fen) {
    showMessage('Enter a FEN first.');
    return;
  }
  state.lastMove = undefined;
  setPosition(fen, { push: true });
});

for (const r of document.querySelectorAll('input[name="turn"]')) {
  r.addEventListener('change', () => {
    if (!r.checked) return;
    const f = fenFields(state.fen);
    f.turn = r.value;
    f.ep = '-';
    state.lastMove = undefined;
    setPosition(joinFen(f), { push: true });
  });
}

let clockTimer = 0;
$('clock').addEventListener('input', () => {
  clearTimeout(clockTimer);
  clockTimer = setTimeout(() => {
    const v = parseInt($('clock').value, 10);
    if (!Number.isFinite(v) || v < 0) return;
    const f = fenFields(state.fen);
    if (f.halfmove === v) return;
    f.halfmove = v;
    setPosition(joinFen(f), { replace: true });
  }, 300);
});

$('btn-start').addEventListener('click', () => {
  state.lastMove = undefined;
  setPosition(INITIAL_FEN, { push: true });
});
$('btn-clear').addEventListener('click', () => {
  state.lastMove = undefined;
  setPosition(`${EMPTY_BOARD_FEN} w - - 0 1`, { push: true });
});
$('btn-flip').addEventListener('click', () => {
  state.orientation = state.orientation === 'white' ? 'black' : 'white';
  cg.set({ orientation: state.orientation });
  buildSpares();
});
$('btn-analyse').addEventListener('click', startAnalysis);
$('btn-stop').addEventListener('click', () => stopAnalysis('Stopped.'));

window.addEventListener('popstate', (e) => {
  const fen = (e.state && e.state.fen) || fenFromUrl() || DEFAULT_FEN;
  state.lastMove = e.state ? e.state.lastMove : undefined;
  setPosition(fen);
});

// ---------------------------------------------------------------- start

buildSpares();
{
  const fen = fenFromUrl() || DEFAULT_FEN;
  setPosition(fen, { replace: true });
}
// For tests and debugging.
window.tbserver = { state, setPosition, cg };
