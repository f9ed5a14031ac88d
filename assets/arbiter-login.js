// The arbiters' sign-in: the user and password posted as JSON to the same
// origin; the answer sets the session cookie, then the console opens.
'use strict';

document.getElementById('login').addEventListener('submit', async ev => {
  ev.preventDefault();
  const msg = document.getElementById('message');
  const go = document.getElementById('go');
  go.disabled = true;
  msg.textContent = 'signing in\u2026';
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
  } catch (e) {
    msg.textContent = 'the daemon does not answer';
    msg.className = 'bad';
  } finally {
    go.disabled = false;
  }
});
document.body.dataset.ready = 'yes';
