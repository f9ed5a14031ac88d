// The arbiters' sign-in: the user and password posted as JSON to the same
// origin; the answer sets the session cookie, then the console opens. Sent
// here after a restart of the daemon (`?restarted`) or a session that ended
// (`?ended`), it says so. An attempt the throttle turns away (429) is made
// again by itself once the wait it was given has passed (twice at most).
'use strict';

const msg = document.getElementById('message');
const go = document.getElementById('go');
const why = new URLSearchParams(location.search);
if (why.has('restarted')) {
  msg.textContent = 'The daemon restarted, which signs everyone out (sessions are kept in its memory only): please sign in again.';
  msg.className = 'note';
} else if (why.has('ended')) {
  msg.textContent = 'Your session ended: please sign in again.';
  msg.className = 'note';
}

let retries = 0;

async function signIn() {
  go.disabled = true;
  msg.textContent = 'signing in\u2026';
  msg.className = '';
  try {
    const r = await fetch('/arbiter/login', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        user: document.getElementById('user').value,
        password: document.getElementById('password').value,
      }),
      credentials: 'same-origin',
    });
    if (r.ok) {
      msg.textContent = 'signed in';
      location.href = '/arbiter';
      return;
    }
    const body = await r.json().catch(() => ({}));
    msg.textContent = body.error || `refused (${r.status})`;
    msg.className = 'bad';
    const wait = Number(r.headers.get('Retry-After'));
    if (r.status === 429 && wait > 0 && wait <= 60 && retries < 2) {
      retries += 1;
      msg.textContent += ` (trying again by itself in ${wait} s)`;
      setTimeout(signIn, wait * 1000);
      return;
    }
  } catch (e) {
    msg.textContent = 'the daemon does not answer';
    msg.className = 'bad';
  }
  go.disabled = false;
}

document.getElementById('login').addEventListener('submit', ev => {
  ev.preventDefault();
  retries = 0;
  signIn();
});
document.body.dataset.ready = 'yes';
