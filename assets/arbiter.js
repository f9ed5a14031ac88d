// The arbiters' console of eboard-bridge: every board from /arbiter/api/state,
// sorted by what needs an arbiter first, read again twice a second. Alerts are
// acknowledged for all arbiters; decisions go through a confirmation, then to
// the board as the same journaled call as `ctl` and D-Bus. No library, no
// network beyond the daemon. Signed out (401), it goes to the sign-in page,
// which says when the daemon restarted.
'use strict';

const GLYPHS = { k: '\u265A', q: '\u265B', r: '\u265C', b: '\u265D', n: '\u265E', p: '\u265F' };
const TEXT = '\uFE0E';
const POLL_MS = 500;
let csrf = '';
let last = null;
const seenAlerts = new Set();
let firstLoad = true;

function esc(s) {
  return String(s ?? '').replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

function clock(ms) {
  const t = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(t / 3600), m = Math.floor(t / 60) % 60, s = t % 60;
  return `${h}:${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}`;
}

function time(ms) {
  const d = new Date(ms);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map(n => String(n).padStart(2, '0')).join(':');
}

function setLink(cls, text) {
  const el = document.getElementById('link');
  el.className = 'link ' + cls;
  el.textContent = text;
}

function diagram(b) {
  const placement = (b.placement || (b.fen || '').split(' ')[0] || '8/8/8/8/8/8/8/8');
  const rows = placement.split('/');
  const lastSq = b.last_move ? [b.last_move.slice(0, 2), b.last_move.slice(2, 4)] : [];
  let html = '<div class="diagram">';
  for (let r = 0; r < 8; r++) {
    let f = 0;
    for (const ch of (rows[r] || '8')) {
      if (/\d/.test(ch)) {
        for (let i = 0; i < +ch && f < 8; i++, f++) html += square(r, f, '', lastSq);
      } else if (f < 8) {
        html += square(r, f, ch, lastSq);
        f++;
      }
    }
    for (; f < 8; f++) html += square(r, f, '', lastSq);
  }
  return html + '</div>';
}

// A square; those of the a-file carry their rank, those of the first rank
// their file (the diagram has white at the bottom, as the sensors show it).
function square(r, f, piece, lastSq) {
  const name = 'abcdefgh'[f] + (8 - r);
  const dark = (r + f) % 2 === 1 ? ' dark' : '';
  const hl = lastSq.includes(name) ? ' last' : '';
  const pc = piece
    ? `<span class="pc ${piece === piece.toUpperCase() ? 'w' : 'b'}">${GLYPHS[piece.toLowerCase()] || '?'}${TEXT}</span>`
    : '';
  const rank = f === 0 ? `<span class="coord rank">${8 - r}</span>` : '';
  const file = r === 7 ? `<span class="coord file">${name[0]}</span>` : '';
  return `<span class="sq${dark}${hl}" data-square="${name}">${rank}${file}${pc}</span>`;
}

// The last `n` moves, numbered; a move found across a gap in the line (not
// seen, `inferred`) in italics with a mark, and a note saying what the mark is.
function movesText(b, n) {
  const start = b.moves.length > n ? b.moves.length - n : 0;
  const blackFirst = (b.start_fen || '').split(' ')[1] === 'b';
  const inferred = new Set(b.inferred || []);
  const parts = [];
  let marked = false;
  for (let i = start; i < b.moves.length; i++) {
    const ply = i + (blackFirst ? 1 : 0);
    const no = Math.floor(ply / 2) + 1;
    if (ply % 2 === 0) parts.push(`<span class="no">${no}.</span>`);
    else if (i === start) parts.push(`<span class="no">${no}\u2026</span>`);
    if (inferred.has(i)) {
      marked = true;
      parts.push(`<span class="mv inferred" title="inferred: found across a gap in the line, not seen">${esc(b.moves[i])}<sup>?</sup></span>`);
    } else {
      parts.push(`<span class="mv">${esc(b.moves[i])}</span>`);
    }
  }
  const note = marked ? ' <span class="inferred-note">(<i>x</i><sup>?</sup>: inferred across a gap in the line)</span>' : '';
  return parts.join(' ') + note;
}

function alertsHtml(b) {
  if (!b.alerts.length) return '';
  return '<ul class="alerts">' + b.alerts.map(a => {
    const cls = ['alert', a.kind, a.active ? 'active' : 'past', a.acked_by ? 'acked' : 'new'].join(' ');
    const art = a.article ? `<span class="art">Art. ${esc(a.article)}</span> ` : '';
    const ack = a.acked_by
      ? `<span class="by">seen by ${esc(a.acked_by)} ${time(a.acked_ms)}</span>`
      : `<button type="button" class="ack" data-alert="${a.id}">Acknowledge</button>`;
    return `<li class="${cls}" data-alert="${a.id}"><span class="when">${time(a.t_ms)}</span> `
      + `<span class="kind">${esc(a.kind.replace(/_/g, ' '))}</span> ${art}<span class="text">${esc(a.text)}</span> ${ack}</li>`;
  }).join('') + '</ul>';
}

function decisionsHtml(b) {
  if (!b.decisions.length) return '<details class="decisions"><summary>Decisions (0)</summary></details>';
  // In words, as `ctl history` says them: what, who, through which door.
  const items = b.decisions.map(d => `<li class="${d.undone ? 'undone' : ''}"><span class="when">${time(d.t_ms)}</span> `
    + `<span class="text">${esc(d.text)}</span> `
    + `<span class="by">${esc(d.by || 'unknown')}${d.via ? ' \u00b7 ' + esc(d.via) : ''}</span>`
    + `${d.undone ? ' <span class="undone-mark">undone</span>' : ''}</li>`).join('');
  return `<details class="decisions" open><summary>Decisions (${b.decisions.length})</summary><ol>${items}</ol></details>`;
}

function viewHtml(b) {
  const running = b.running;
  const clocks = b.has_clock
    ? `<div class="clocks"><span class="clock white${running === 'white' ? ' running' : ''}"><span class="side-name">White</span> ${clock(b.white_ms)}</span>`
      + `<span class="clock black${running === 'black' ? ' running' : ''}"><span class="side-name">Black</span> ${clock(b.black_ms)}</span></div>`
    : '<div class="clocks none">no clock</div>';
  const result = b.result ? `<span class="result">${esc(b.result)}</span>` : '';
  return `<div class="head"><span class="no">Board ${esc(b.number)}</span>`
    + `<span class="urgency">${esc(b.urgency)}</span>${result}</div>`
    + `<div class="players"><span class="player white">${esc(b.white || 'White')}</span> \u2013 `
    + `<span class="player black">${esc(b.black || 'Black')}</span></div>`
    + `<div class="body">${diagram(b)}<div class="side">${clocks}`
    + `<div class="moves">${movesText(b, 12) || '<span class="none">no moves</span>'}</div>`
    + `<div class="meta">${esc(b.status)}${b.time_control ? ' \u00b7 ' + esc(b.time_control) : ''}${b.connected ? '' : ' \u00b7 <b>disconnected</b>'}</div>`
    + `</div></div>${alertsHtml(b)}${decisionsHtml(b)}`;
}

const ACTIONS = [
  ['result', 'Result'], ['reinstate', 'Reinstate to a ply'], ['position', 'Set position'],
  ['newgame', 'New game'], ['addtime', 'Add time'], ['setclock', 'Set clock'],
  ['timecontrol', 'Time control'], ['players', 'Players'], ['tags', 'Tags'], ['text', 'Text on the clock'],
];

function card(b) {
  const el = document.createElement('section');
  el.className = 'board';
  el.dataset.board = b.id;
  el.innerHTML = '<div class="view"></div><div class="actions"><select class="action">'
    + ACTIONS.map(([v, t]) => `<option value="${v}">${t}</option>`).join('')
    + '</select> <button type="button" class="act">Decide\u2026</button></div>';
  el.querySelector('.act').addEventListener('click', () => openAction(el.dataset.board, el.querySelector('.action').value));
  return el;
}

const views = new Map();

// The rounds pushed to lichess: one line each, what lichess refused in red.
function lichessHtml(rounds) {
  return rounds.map(r => {
    const when = r.last_push_ms ? `, last pushed ${new Date(r.last_push_ms).toLocaleTimeString()}` : '';
    const moves = r.games.reduce((n, g) => n + g.moves, 0);
    const games = r.last_push_ms ? `, ${r.games_accepted} game(s) accepted, ${moves} move(s)` : '';
    const refused = r.games.filter(g => g.error).map(g =>
      `<br><span class="bad">board ${esc(g.board)} (${esc(g.name)}) refused: ${esc(g.error)}</span>`).join('');
    const left = r.not_pushed.length ? `<br><span class="bad">not pushed: boards ${esc(r.not_pushed.join(', '))}</span>` : '';
    const error = r.error ? `<br><span class="bad">${esc(r.error)}</span>` : '';
    return `<p>lichess round ${esc(r.round)} (${esc(r.id)}): <span class="state ${esc(r.state)}">${esc(r.state)}</span>${esc(when)}${esc(games)}${refused}${left}${error}</p>`;
  }).join('');
}

function render(state) {
  last = state;
  csrf = state.csrf;
  document.getElementById('who').textContent = state.user;
  const lichess = document.getElementById('lichess');
  const rounds = state.lichess || [];
  lichess.hidden = !rounds.length;
  const lhtml = lichessHtml(rounds);
  if (lichess.dataset.shown !== lhtml) { lichess.innerHTML = lhtml; lichess.dataset.shown = lhtml; }
  const main = document.getElementById('boards');
  if (!state.boards.length) { main.innerHTML = '<p class="empty">No boards yet.</p>'; return; }
  main.querySelector('.empty')?.remove();
  const open = state.boards.filter(b => b.open).length;
  document.getElementById('summary').textContent = open ? `${open} board(s) need an arbiter` : 'nothing waiting';
  let fresh = false;
  const wanted = new Set();
  state.boards.forEach((b, i) => {
    wanted.add(b.id);
    let el = main.querySelector(`section.board[data-board="${CSS.escape(b.id)}"]`);
    if (!el) el = card(b);
    if (main.children[i] !== el) main.insertBefore(el, main.children[i] || null);
    el.className = `board level-${b.level}${b.open ? ' open' : ''}`;
    el.dataset.level = b.level;
    const html = viewHtml(b);
    if (views.get(b.id) !== html) {
      const details = el.querySelector('details.decisions');
      const wasOpen = details ? details.open : true;
      el.querySelector('.view').innerHTML = html;
      const now = el.querySelector('details.decisions');
      if (now) now.open = wasOpen;
      views.set(b.id, html);
    }
    for (const a of b.alerts) {
      if (!a.acked_by && a.active && !seenAlerts.has(a.id)) { fresh = true; }
      seenAlerts.add(a.id);
    }
  });
  for (const el of [...main.querySelectorAll('section.board')]) {
    if (!wanted.has(el.dataset.board)) { el.remove(); views.delete(el.dataset.board); }
  }
  if (fresh && !firstLoad && document.getElementById('sound').checked) beep();
  firstLoad = false;
}

function beep() {
  try {
    const ctx = new AudioContext();
    const o = ctx.createOscillator(), g = ctx.createGain();
    o.frequency.value = 880; g.gain.value = 0.1;
    o.connect(g); g.connect(ctx.destination);
    o.start(); o.stop(ctx.currentTime + 0.25);
  } catch (e) { /* no sound here */ }
}

// Signed out: to the sign-in page, saying whether the daemon restarted.
async function signedOut(r) {
  const body = await r.json().catch(() => ({}));
  location.href = body.restarted ? '/arbiter/login?restarted' : '/arbiter/login?ended';
}

async function post(path, body) {
  const r = await fetch(path, {
    method: 'POST', credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf },
    body: JSON.stringify(body),
  });
  if (r.status === 401) { await signedOut(r); throw new Error('signed out'); }
  const answer = await r.json().catch(() => ({}));
  if (!r.ok) {
    const e = new Error(answer.error || `refused (${r.status})`);
    // A finished game reopened, a game under way ended: `ctl`'s words, asked again.
    e.confirm = answer.confirm;
    throw e;
  }
  return answer;
}

async function poll() {
  try {
    const r = await fetch('/arbiter/api/state', { cache: 'no-store', credentials: 'same-origin' });
    if (r.status === 401) { await signedOut(r); return; }
    render(await r.json());
    setLink('live', 'live');
  } catch (e) {
    setLink('down', 'the daemon does not answer');
  }
  setTimeout(poll, POLL_MS);
}

document.getElementById('boards').addEventListener('click', async ev => {
  const btn = ev.target.closest('button.ack');
  if (!btn) return;
  btn.disabled = true;
  try {
    await post('/arbiter/api/ack', { id: +btn.dataset.alert });
    await refresh();
  } catch (e) { btn.disabled = false; alert(e.message); }
});

async function refresh() {
  const r = await fetch('/arbiter/api/state', { cache: 'no-store', credentials: 'same-origin' });
  if (r.ok) render(await r.json());
}

document.getElementById('logout').addEventListener('click', async () => {
  try { await post('/arbiter/logout', {}); } catch (e) { /* gone anyway */ }
  location.href = '/arbiter/login';
});

// The dialog: each action's fields, the sentence to confirm, and its calls.
function field(label, html) { return `<label>${label} ${html}</label>`; }
function options(list, selected) {
  return list.map(([v, t]) => `<option value="${esc(v)}"${v === selected ? ' selected' : ''}>${esc(t)}</option>`).join('');
}
function val(id) { return document.getElementById(id).value.trim(); }
function hms(text) {
  const p = text.split(':').map(Number);
  if (p.some(n => !Number.isInteger(n) || n < 0) || p.length < 1 || p.length > 3) throw new Error(`${text}: not H:MM:SS`);
  return p.reduce((acc, n) => acc * 60 + n, 0) * 1000;
}

const FORMS = {
  result: b => [`Result of board ${b.number}`,
    field('Result', `<select id="f-result">${options([['1-0', '1-0'], ['0-1', '0-1'], ['1/2-1/2', '\u00bd-\u00bd'], ['*', '* (unfinished)']])}</select>`),
    () => [[`Set the result of board ${b.number} to ${val('f-result')}`, 'SetResult', [val('f-result')]]]],
  reinstate: b => [`Reinstate board ${b.number}`,
    field('Back to', `<select id="f-ply">${options([['0', '0: the start']].concat(b.moves.map((m, i) => [String(i + 1), `${i + 1}: after ${Math.floor(i / 2) + 1}${i % 2 ? '\u2026' : '.'} ${m}`])), String(b.moves.length))}</select>`),
    () => [[`Take board ${b.number} back to ply ${val('f-ply')}`, 'Reinstate', [+val('f-ply')]]]],
  position: b => [`Set the position of board ${b.number}`,
    field('FEN', `<input id="f-fen" size="50" maxlength="100" value="${esc(b.fen)}">`),
    () => [[`Set board ${b.number} to ${val('f-fen')}`, 'SetPosition', [val('f-fen')]]]],
  newgame: b => [`New game on board ${b.number}`,
    field('From FEN (empty: the start)', `<input id="f-fen" size="50" maxlength="100">`),
    () => [[`Start a new game on board ${b.number}${val('f-fen') ? ' from ' + val('f-fen') : ''}`, 'NewGame', [val('f-fen')]]]],
  addtime: b => [`Add time on board ${b.number}`,
    field('Side', `<select id="f-side">${options([['white', 'White'], ['black', 'Black']], 'black')}</select>`)
    + field('Amount', `<input id="f-amount" type="number" value="2" step="1">`)
    + field('Unit', `<select id="f-unit">${options([['60', 'minutes'], ['1', 'seconds']], '60')}</select>`),
    () => {
      const secs = Math.round(Number(val('f-amount')) * Number(val('f-unit')));
      if (!Number.isFinite(secs) || secs === 0) throw new Error('give an amount');
      const what = secs > 0 ? `Add ${secs} s to ${val('f-side')}` : `Take ${-secs} s from ${val('f-side')}`;
      return [[`${what} on board ${b.number}`, 'AddTime', [val('f-side'), secs]]];
    }],
  setclock: b => [`Set the clock of board ${b.number}`,
    field('White', `<input id="f-white" value="${clock(b.white_ms)}" size="8">`)
    + field('Black', `<input id="f-black" value="${clock(b.black_ms)}" size="8">`),
    () => [[`Set board ${b.number}'s clock to ${val('f-white')} / ${val('f-black')}`, 'SetClock', [hms(val('f-white')), hms(val('f-black'))]]]],
  timecontrol: b => [`Time control of board ${b.number}`,
    field('Time control', `<input id="f-tc" maxlength="64" value="${esc(b.time_control)}" placeholder="5400+30">`),
    () => [[`Set board ${b.number}'s time control to ${val('f-tc')}`, 'SetTimeControl', [val('f-tc')]]]],
  players: b => [`Players of board ${b.number}`,
    field('White', `<input id="f-white" maxlength="100" value="${esc(b.white)}">`)
    + field('Black', `<input id="f-black" maxlength="100" value="${esc(b.black)}">`),
    () => [[`Name the players of board ${b.number}: ${val('f-white')} \u2013 ${val('f-black')}`, 'SetPlayers', [val('f-white'), val('f-black')]]]],
  tags: b => [`Tags of board ${b.number}`,
    field('NAME=VALUE, one a line (WhiteElo, BlackElo, WhiteFideId, \u2026)',
      `<textarea id="f-tags" rows="4" cols="40">${esc(Object.entries(b.tags || {}).filter(([k]) => k !== 'Board').map(([k, v]) => `${k}=${v}`).join('\n'))}</textarea>`),
    () => {
      const tags = {};
      for (const line of val('f-tags').split('\n').map(l => l.trim()).filter(Boolean)) {
        const i = line.indexOf('=');
        if (i < 1) throw new Error(`${line}: not NAME=VALUE`);
        tags[line.slice(0, i).trim()] = line.slice(i + 1).trim();
      }
      return [[`Set the tags of board ${b.number}: ${Object.keys(tags).join(', ')}`, 'SetTags', [tags]]];
    }],
  text: b => [`Text on the clock of board ${b.number}`,
    field('Text (8 characters)', `<input id="f-text" maxlength="8" value="ARBITER">`)
    + field('Seconds', `<input id="f-secs" type="number" min="1" max="600" value="5">`),
    () => [[`Show "${val('f-text')}" on board ${b.number}'s clock for ${val('f-secs')} s`, 'ShowText', [val('f-text'), +val('f-secs')]]]],
};

let pendingCalls = null;

function openAction(boardId, action) {
  const b = last?.boards.find(x => x.id === boardId);
  if (!b) return;
  const [title, html, calls] = FORMS[action](b);
  const dlg = document.getElementById('confirm');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-body').innerHTML = html + '<p id="confirm-what" class="what"></p>';
  document.getElementById('confirm-error').textContent = '';
  dlg.dataset.board = boardId;
  dlg.dataset.action = action;
  pendingCalls = calls;
  const ok = document.getElementById('confirm-ok');
  ok.textContent = 'Review';
  ok.dataset.stage = 'review';
  dlg.showModal();
}

document.getElementById('confirm-cancel').addEventListener('click', () => document.getElementById('confirm').close());
document.getElementById('confirm-body').addEventListener('input', () => {
  const ok = document.getElementById('confirm-ok');
  ok.textContent = 'Review';
  ok.dataset.stage = 'review';
  document.getElementById('confirm-what').textContent = '';
});

document.getElementById('confirm-form').addEventListener('submit', async ev => {
  ev.preventDefault();
  const dlg = document.getElementById('confirm');
  const ok = document.getElementById('confirm-ok');
  const err = document.getElementById('confirm-error');
  let calls;
  try { calls = pendingCalls(); } catch (e) { err.textContent = e.message; return; }
  if (ok.dataset.stage === 'review') {
    // First press: say exactly what will be done; the second press does it.
    document.getElementById('confirm-what').textContent = calls.map(c => c[0]).join('; ') + '?';
    ok.textContent = 'Confirm';
    ok.dataset.stage = 'confirm';
    return;
  }
  ok.disabled = true;
  const force = ok.dataset.stage === 'force';
  try {
    for (const [, method, args] of calls) {
      await post('/arbiter/api/decide', { board: dlg.dataset.board, method, args, force });
    }
    dlg.close();
    await refresh();
  } catch (e) {
    if (e.confirm && !force) {
      // The daemon says what it would change, as `ctl` does without --force.
      document.getElementById('confirm-what').textContent = e.confirm + '. Do it anyway?';
      ok.textContent = 'Yes, change it';
      ok.dataset.stage = 'force';
    } else {
      err.textContent = e.message;
    }
  } finally {
    ok.disabled = false;
  }
});

poll();
