// The pages' only script, served inline and allowed by its hash (CSP): sort a table by a click on its
// header, refresh the page's live part every few seconds (not while a person is typing), send the exit
// forms to POST /api/exit/:id with the token, same-origin, and then follow the exit it requested to its
// outcome (GET /api/exit/<jobId>); send the alarm forms to POST /api/alarms/:id/ack.
import { createHash } from 'node:crypto';

export const REFRESH_MS = 5000;
/** How often the page asks what became of the exit it requested, and for how long. */
export const OUTCOME_POLL_MS = 1000;
export const OUTCOME_GIVE_UP_MS = 15 * 60_000;

export const CLIENT_JS = `(() => {
  'use strict';
  const token = document.querySelector('meta[name="sunset-token"]')?.content || '';
  const live = document.getElementById('live');
  const sortKey = 'sunset-sort:' + location.pathname;
  let sort = null;
  try { sort = JSON.parse(sessionStorage.getItem(sortKey) || 'null'); } catch {}

  function applySort() {
    for (const table of document.querySelectorAll('table.sortable')) {
      const ths = table.tHead.rows[0].cells;
      for (const th of ths) th.removeAttribute('aria-sort');
      if (!sort || sort.table !== table.id || !ths[sort.col]) continue;
      const th = ths[sort.col];
      th.setAttribute('aria-sort', sort.dir > 0 ? 'ascending' : 'descending');
      const numeric = th.dataset.type === 'number';
      const key = (row) => {
        const cell = row.cells[sort.col];
        const v = cell ? (cell.dataset.sort ?? cell.textContent.trim()) : '';
        return numeric ? (v === '' ? -Infinity : Number(v)) : v.toLowerCase();
      };
      const body = table.tBodies[0];
      const rows = [...body.rows].map((r, i) => [key(r), i, r]);
      rows.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]) * (a[0] === b[0] ? 1 : sort.dir));
      for (const [, , r] of rows) body.appendChild(r);
    }
  }

  document.addEventListener('click', (e) => {
    const th = e.target.closest('table.sortable thead th');
    if (!th || th.classList.contains('nosort')) return;
    const table = th.closest('table');
    const col = th.cellIndex;
    const first = th.dataset.type === 'number' ? -1 : 1;
    sort = sort && sort.table === table.id && sort.col === col ? { table: table.id, col, dir: -sort.dir } : { table: table.id, col, dir: first };
    try { sessionStorage.setItem(sortKey, JSON.stringify(sort)); } catch {}
    applySort();
  });
  document.addEventListener('keydown', (e) => {
    if ((e.key === 'Enter' || e.key === ' ') && e.target.matches('table.sortable thead th')) { e.preventDefault(); e.target.click(); }
  });

  const stamp = document.getElementById('updated');
  function mark(ok) {
    if (!stamp || !live) return;
    const at = live.dataset.at ? new Date(live.dataset.at) : new Date();
    stamp.textContent = (ok ? 'updated ' : 'refresh failed; last ') + at.toLocaleTimeString();
    stamp.classList.toggle('stale', !ok);
  }

  function editing() {
    return [...document.querySelectorAll('#live input, #live textarea')].some((el) =>
      el === document.activeElement || (el.type === 'checkbox' ? el.checked : Boolean(el.value)));
  }

  async function refresh() {
    if (!live || document.hidden || editing()) return;
    try {
      const res = await fetch(location.href, { headers: { accept: 'text/html' }, credentials: 'same-origin', cache: 'no-store' });
      const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
      const next = doc.getElementById('live');
      if (!next) throw new Error('no live part');
      if (editing()) return;
      live.replaceChildren(...next.childNodes);
      live.dataset.at = next.dataset.at || '';
      applySort();
      mark(true);
      document.dispatchEvent(new CustomEvent('sunset:refreshed'));
    } catch { mark(false); }
  }
  setInterval(refresh, ${REFRESH_MS});

  const notices = document.getElementById('notices');
  // one notice at a time: a new one replaces the old (a stale red one never lingers under a green one);
  // a good one fades after a while, a bad one stays until the next replaces it
  function notice(text, kind) {
    if (!notices) return;
    const p = document.createElement('p');
    p.className = 'notice ' + kind;
    p.setAttribute('role', kind === 'bad' ? 'alert' : 'status');
    p.textContent = text;
    notices.replaceChildren(p);
    if (kind !== 'bad') setTimeout(() => { p.classList.add('fading'); setTimeout(() => p.remove(), 700); }, 20000);
  }

  function say(form, text, kind) {
    const out = form && form.isConnected ? form.querySelector('output') : null;
    if (out) { out.textContent = text; out.className = kind; }
    notice(text, kind);
  }

  // the exit it requested, followed to its outcome: what the exit worker wrote in the ledger, said plainly
  function follow(jobId, label, form) {
    const path = '/api/exit/' + jobId.split('/').map(encodeURIComponent).join('/');
    const until = Date.now() + ${OUTCOME_GIVE_UP_MS};
    const tick = async () => {
      try {
        const res = await fetch(path, { headers: { accept: 'application/json' }, credentials: 'same-origin', cache: 'no-store' });
        const body = await res.json().catch(() => ({}));
        if (res.ok && body.status === 'finished') {
          const good = body.outcome === 'exited' || body.outcome === 'would-exit';
          const text = body.words || ('Exit of ' + label + ': ' + body.outcome);
          say(form, text.charAt(0).toUpperCase() + text.slice(1) + '.', good ? 'ok' : 'bad');
          document.dispatchEvent(new CustomEvent('sunset:outcome', { detail: body }));
          return;
        }
      } catch {}
      if (Date.now() > until) return say(form, 'No outcome yet for the exit of ' + label + ' (job ' + jobId + '): is sunset up running its workers? sunset exited, or the audit, will say.', 'bad');
      setTimeout(tick, ${OUTCOME_POLL_MS});
    };
    setTimeout(tick, ${OUTCOME_POLL_MS});
  }

  function explain(status, body, id) {
    if (status === 202) return 'Exit of ' + (body.id || id) + ' requested (job ' + body.jobId + '): on the exit queue, at the exit rate. Waiting for its outcome…';
    if (status === 409) {
      const why = (body.reasonWords || body.reasons || []).join('; ');
      return 'Refused: ' + (body.id || id) + ' is ' + body.verdict + (why ? ' (' + why + ')' : '') + '. ' +
        (body.overridable ? 'Tick "override" to make it your decision.' : 'No override can reach it.');
    }
    if (status === 404) return 'No roster row has the id ' + id + '.';
    if (status === 503) return 'Not acting: the roster did not answer (' + (body.error || 'unknown') + ').';
    if (status === 401) return 'The server did not accept the token: reload the page.';
    if (status === 403) return 'Refused: ' + (body.error || 'forbidden') + '.';
    return 'Failed (' + status + '): ' + (body.error || 'unknown error');
  }

  function explainAck(status, body, id) {
    if (status === 200 || status === 202) return 'Alarm ' + id + ' acknowledged: it leaves the list and stays in the log (sunset alarms --all).';
    if (status === 409) return body.status === 'dry-run' ? 'Not acknowledged: ' + body.error + '.' : 'Already acknowledged: ' + (body.error || id) + '.';
    if (status === 404) return 'No alarm has the id ' + id + '.';
    if (status === 401) return 'The server did not accept the token: reload the page.';
    if (status === 403) return 'Refused: ' + (body.error || 'forbidden') + '.';
    return 'Failed (' + status + '): ' + (body.error || 'unknown error');
  }

  document.addEventListener('submit', async (e) => {
    const form = e.target.closest('form.ack-form');
    if (!form) return;
    e.preventDefault();
    const id = form.dataset.alarm || '';
    const reason = (form.elements.reason?.value || '').trim();
    const button = form.querySelector('button');
    if (button) button.disabled = true;
    try {
      const res = await fetch('/api/alarms/' + encodeURIComponent(id) + '/ack', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer ' + token },
        body: JSON.stringify({ reason }),
        credentials: 'same-origin',
      });
      const body = await res.json().catch(() => ({}));
      const ok = res.status === 200 || res.status === 202;
      say(form, explainAck(res.status, body, id), ok ? 'ok' : 'bad');
      if (ok) { form.reset(); if (document.activeElement && form.contains(document.activeElement)) document.activeElement.blur(); refresh(); }
    } catch (err) {
      notice('The request did not reach the server: ' + err.message, 'bad');
    } finally {
      if (button) button.disabled = false;
    }
  });

  document.addEventListener('submit', async (e) => {
    const form = e.target.closest('form.exit-form');
    if (!form) return;
    e.preventDefault();
    const id = (form.dataset.id || form.elements.id?.value || '').trim();
    const reason = (form.elements.reason?.value || '').trim();
    const override = Boolean(form.elements.override?.checked);
    if (!id) return notice('Which session? Give its id.', 'bad');
    const button = form.querySelector('button');
    if (button) button.disabled = true;
    try {
      const res = await fetch('/api/exit/' + encodeURIComponent(id), {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer ' + token },
        body: JSON.stringify({ reason, override }),
        credentials: 'same-origin',
      });
      const body = await res.json().catch(() => ({}));
      say(form, explain(res.status, body, id), res.status === 202 ? 'ok' : 'bad');
      if (res.status === 202) { form.reset(); follow(body.jobId, body.id || id, form); }
    } catch (err) {
      notice('The request did not reach the server: ' + err.message, 'bad');
    } finally {
      if (button) button.disabled = false;
      if (document.activeElement && form.contains(document.activeElement)) document.activeElement.blur();
    }
  });

  applySort();
  mark(true);
})();`;

/** For the Content-Security-Policy: only this exact script may run. */
export const CLIENT_JS_HASH = `'sha256-${createHash('sha256').update(CLIENT_JS).digest('base64')}'`;
