// The live page of eboard-bridge: the boards from /api/boards, kept up to date
// from the Server-Sent Events of /api/events. No library, no network beyond the
// daemon.
'use strict';

const boards = new Map();
const GLYPHS = { k: '\u265A', q: '\u265B', r: '\u265C', b: '\u265D', n: '\u265E', p: '\u265F' };
const TEXT = '\uFE0E'; // text presentation, never an emoji

function fromApi(b) {
  return {
    id: b.Id, number: b.BoardNumber, white: b.White, black: b.Black,
    event: b.Event, round: b.Round, status: b.Status, fen: b.Fen, placement: b.Placement,
    moves: (b.Moves || []).map((san, i) => ({ san, inferred: (b.Inferred || []).includes(i) })), last: b.LastMove,
    clock: b.HasClock ? { white: b.WhiteClockMs, black: b.BlackClockMs, running: b.ClockRunning, at: performance.now() } : null,
    result: b.Result, termination: b.Termination, irregularity: b.Irregularity, flags: [],
  };
}

// Events that arrive while the boards are read wait for the answer, then are
// applied to it: an answer can be older than an event already received, and must
// not roll the page back over it. Those the answer already holds change nothing.
let pending = null;

async function load() {
  if (pending) return; // a read under way: the events after it wait for it
  pending = [];
  try {
    const r = await fetch('/api/boards', { cache: 'no-store' });
    const list = await r.json();
    for (const b of list) {
      const old = boards.get(b.Id);
      const s = fromApi(b);
      if (old) s.flags = old.flags;
      boards.set(b.Id, s);
    }
  } catch (e) {
    setLink('down', 'cannot read the boards');
  }
  const waiting = pending;
  pending = null;
  for (const e of waiting) apply(e);
  renderAll();
}

function receive(e) {
  if (pending) pending.push(e); else apply(e);
}

function setLink(cls, text) {
  const el = document.getElementById('link');
  el.className = 'link ' + cls;
  el.textContent = text;
}

function flag(s, cls, text) {
  s.flags.push({ cls, text });
  if (s.flags.length > 8) s.flags.shift();
}

function apply(e) {
  const s = boards.get(e.board);
  if (!s) { load(); return; }
  switch (e.type) {
    case 'game_start':
      s.moves = []; s.fen = e.fen; s.last = ''; s.result = ''; s.termination = '';
      s.irregularity = ''; s.flags = []; s.status = 'playing';
      load(); // the new game's players
      break;
    case 'move':
    case 'move_amended':
      // Already there (the boards were read after it): nothing to do.
      if (s.moves.length >= e.ply && s.moves[e.ply - 1].san === e.san) return;
      s.moves.length = e.ply - 1;
      s.moves.push({ san: e.san, inferred: !!e.inferred });
      s.fen = e.fen; s.last = e.uci;
      if (e.type === 'move_amended') flag(s, 'amended', `move ${e.ply} amended: ${e.was} \u2192 ${e.san}`);
      break;
    case 'takeback':
      s.moves.length = e.to_ply; s.fen = e.fen; s.last = '';
      flag(s, 'takeback', `take-back to ply ${e.to_ply}`);
      break;
    case 'touch_move':
      flag(s, 'touch', `touch-move ${e.article}: ${e.side} touched ${e.touched.join(', ')}, played ${e.played}`);
      break;
    case 'irregular':
      s.irregularity = e.kind; s.status = 'irregular';
      flag(s, 'irregular', `${e.kind.replace(/_/g, ' ')} (${e.side}${e.squares.length ? ': ' + e.squares.join(' ') : ''})${e.completed ? ', completed' : ''}`);
      break;
    case 'resolved':
      s.irregularity = ''; s.fen = e.fen;
      if (s.status === 'irregular') s.status = 'playing';
      flag(s, 'resolved', 'position restored');
      break;
    case 'clock':
      s.clock = { white: e.white_ms, black: e.black_ms, running: e.running, at: performance.now() };
      break;
    case 'flag':
      flag(s, 'irregular', `flag: ${e.side} (ply ${e.ply})`);
      break;
    case 'draw_claimable':
      flag(s, 'claim', `draw claimable: ${e.reason.replace(/_/g, ' ')}`);
      break;
    case 'game_end':
      s.result = e.result; s.termination = e.termination; s.status = 'finished';
      if (s.clock) s.clock.running = 'none';
      break;
    default:
      return; // touches, buttons: nothing shown
  }
  render(s);
}

function clockText(ms) {
  const t = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(t / 3600), m = Math.floor(t / 60) % 60, sec = t % 60;
  const two = n => String(n).padStart(2, '0');
  return h > 0 ? `${h}:${two(m)}:${two(sec)}` : `${m}:${two(sec)}`;
}

function clockNow(s, side) {
  const c = s.clock, ms = c[side];
  // A finished game's clock is shown as it stood (nobody may have stopped it).
  return c.running === side && !s.result ? ms - (performance.now() - c.at) : ms;
}

function updateClocks(s) {
  const card = document.getElementById('board-' + s.id);
  if (!card) return;
  for (const side of ['white', 'black']) {
    const el = card.querySelector('.clock.' + side);
    if (!s.clock) { el.textContent = ''; el.className = 'clock ' + side; continue; }
    const ms = clockNow(s, side);
    el.textContent = clockText(ms);
    el.dataset.ms = Math.max(0, Math.round(ms));
    const running = s.clock.running === side && !s.result;
    el.className = 'clock ' + side + (running ? ' running' : '') + (ms < 60000 ? ' low' : '');
  }
}

function esc(t) {
  return String(t ?? '').replace(/[&<>"]/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
}

function diagram(s) {
  const fen = (s.fen || s.placement || '').split(' ')[0];
  const rows = fen ? fen.split('/') : [];
  const last = s.last ? [s.last.slice(0, 2), s.last.slice(2, 4)] : [];
  let html = '';
  for (let r = 0; r < 8; r++) {
    let file = 0;
    for (const ch of (rows[r] || '8')) {
      if (/\d/.test(ch)) {
        for (let k = 0; k < +ch; k++) { html += square(r, file, '', last); file++; }
      } else { html += square(r, file, ch, last); file++; }
    }
  }
  return html;
}

function square(r, f, piece, last) {
  const name = 'abcdefgh'[f] + (8 - r);
  const cls = ((r + f) % 2 ? 'd' : 'l') + (last.includes(name) ? ' last' : '');
  const pc = piece ? `<span class="pc ${piece === piece.toUpperCase() ? 'w' : 'b'}">${GLYPHS[piece.toLowerCase()]}${TEXT}</span>` : '';
  return `<div class="sq ${cls}" data-square="${name}">${pc}</div>`;
}

function movesHtml(moves) {
  // Numbered from the game's start; a game from a set-up position may start with Black.
  let out = '';
  moves.forEach((m, i) => {
    if (i % 2 === 0) out += `<span class="n">${i / 2 + 1}.</span> `;
    out += `<span class="mv${m.inferred ? ' inferred' : ''}">${esc(m.san)}</span> `;
  });
  return out;
}

function render(s) {
  const main = document.getElementById('boards');
  let card = document.getElementById('board-' + s.id);
  if (!card) {
    main.querySelector('.empty')?.remove();
    card = document.createElement('section');
    card.className = 'board';
    card.id = 'board-' + s.id;
    card.dataset.board = s.id;
    card.dataset.number = s.number;
    const after = [...main.children].find(c => +c.dataset.number > s.number);
    main.insertBefore(card, after || null);
  }
  const end = s.result ? `<span class="result">${esc(s.result)}</span>` : '';
  card.innerHTML = `
    <div class="head"><span class="no">Board ${esc(s.number)}</span>${end}<span class="status ${esc(s.status)}">${esc(s.status)}</span></div>
    <div class="player black"><span class="name">${esc(s.black)}</span><span class="clock black"></span></div>
    <div class="diagram">${diagram(s)}</div>
    <div class="player white"><span class="name">${esc(s.white)}</span><span class="clock white"></span></div>
    <div class="moves">${movesHtml(s.moves)}</div>
    ${s.termination ? `<div class="termination">${esc(s.result)} ${esc(s.termination.replace(/_/g, ' '))}</div>` : ''}
    <ul class="flags">${s.flags.map(f => `<li class="${f.cls}">${esc(f.text)}</li>`).join('')}</ul>`;
  const mv = card.querySelector('.moves');
  mv.scrollTop = mv.scrollHeight;
  updateClocks(s);
  const first = boards.values().next().value;
  if (first && first.event && first.event !== '?') {
    document.getElementById('title').textContent = first.event + (first.round ? `, round ${first.round.split('.')[0]}` : '');
  }
}

function renderAll() {
  for (const s of boards.values()) render(s);
}

function connect() {
  const es = new EventSource('/api/events');
  es.onopen = () => { setLink('live', 'live'); load(); };
  es.onerror = () => setLink('down', 'reconnecting');
  es.onmessage = m => { try { receive(JSON.parse(m.data)); } catch (e) { console.error(e); } };
  // The daemon restarted, or this page fell behind: read the boards afresh.
  es.addEventListener('reset', load);
  es.addEventListener('lost', load);
}

setInterval(() => { for (const s of boards.values()) updateClocks(s); }, 250);
load().then(connect);
