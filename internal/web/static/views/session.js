// One session: its facts and kernels, why it waits, the timeline of its
// status history as swimlanes, and its logs. It follows the session's own
// event stream (?session=) and redraws from the API when it changes.

import { APIError, call, follow, get, openPort, sleep, token } from '../api.js';
import { fill, h, labelled, select } from '../dom.js';
import { swimlanes } from '../charts.js';
import { LIVE, ago, short, slotsText, time } from '../format.js';
import { badge, banner, hint, reloader, section } from './common.js';

const LOG_MAX = 256 * 1024;
// LOG_POLL is how long a follower waits after an ask that brought nothing.
const LOG_POLL = 500;

export function render(ctx) {
  const { main, params } = ctx;
  const id = params[0];
  const path = '/v1/sessions/' + encodeURIComponent(id);
  const title = h('h1', null, 'Session ', h('span', { class: 'mono' }, short(id)));
  const head = h('div', { class: 'session-head' });
  const error = h('div');
  const facts = h('dl', { class: 'facts', id: 'facts' });
  const kernels = h('div', { id: 'kernels' });
  const ports = h('div', { id: 'ports' });
  const why = h('div', { id: 'why' });
  const timeline = h('div', { id: 'timeline', class: 'scroll' });
  const history = h('div', { id: 'history' });
  const logs = logsPanel(path);
  main.append(h('p', null, h('a', { href: '#/sessions' }, '← Sessions')), title, head, error,
    h('div', { class: 'grid' }, section('Details', facts), section('Why', why)),
    section('Kernels', kernels), section('Service ports', ports),
    section('Timeline', timeline, h('details', null, h('summary', null, 'History entries'), history)),
    section('Logs', logs.el));
  ctx.onLeave(logs.stop);

  let last = null;
  const load = async () => {
    let se, hist, w;
    try {
      [se, hist, w] = await Promise.all([get(path), get(path + '/history'), get(path + '/why').catch(() => null)]);
    } catch (err) {
      fill(error, banner(err instanceof APIError && err.status === 404 ? 'No such session (or not yours).' : err));
      return;
    }
    error.replaceChildren();
    last = se;
    fill(title, se.name || 'Session', ' ', h('span', { class: 'mono muted' }, short(se.id)), ' ', badge(se.status));
    main.dataset.status = se.status;
    drawHead(se);
    drawFacts(se);
    drawKernels(se);
    drawPorts(se);
    drawWhy(w, se);
    const ended = !LIVE.has(se.status);
    fill(timeline, swimlanes(hist.items || [], { ended, created: se.created_at, width: Math.max(560, timeline.clientWidth || 900) }));
    drawHistory(hist.items || []);
    logs.setKernels(se.kernels || []);
  };

  function drawHead(se) {
    const out = [];
    if (LIVE.has(se.status)) {
      if (se.status !== 'TERMINATING') out.push(button('Cancel', false));
      out.push(button('Force', true));
    }
    fill(head, out);
  }

  function button(label, force) {
    const b = h('button', { type: 'button', class: force ? 'danger' : '', id: force ? 'force' : 'cancel' },
      force ? 'Force terminate' : 'Cancel session');
    b.addEventListener('click', async () => {
      b.disabled = true;
      try { await call('DELETE', path + (force ? '?force=true' : '')); } catch (err) { fill(error, banner(err)); }
      poke();
    });
    return b;
  }

  function drawFacts(se) {
    const row = (k, v) => [h('dt', null, k), h('dd', null, v === '' || v === null || v === undefined ? '—' : v)];
    fill(facts,
      row('ID', h('span', { class: 'mono' }, se.id)), row('Owner', `${se.owner} (${se.project} / ${se.domain})`),
      row('Type', se.type), row('Image', h('span', { class: 'mono' }, se.image)),
      row('Resource group', se.resource_group), row('Priority', String(se.priority)),
      row('Per kernel', slotsText(se.requested_slots)), row('Cluster', `${se.cluster_size} × ${se.cluster_mode}`),
      row('Created', time(se.created_at)), row('Status since', `${time(se.status_changed_at)} (${ago(se.status_changed_at)})`),
      row('Reason', se.status_reason), row('Outcome', se.outcome),
      se.job ? row('Job', h('a', { href: '#/jobs/' + encodeURIComponent(se.job), class: 'mono', id: 'session-job' }, short(se.job))) : null,
      se.array ? row('Array', [h('a', { href: '#/arrays/' + encodeURIComponent(se.array), id: 'session-array' },
        (se.name || '').replace(/\[\d+\]$/, '')), ` element ${se.array_index}`]) : null,
      se.depends_on && se.depends_on.length ? row('Depends on', se.depends_on.map((d) =>
        h('a', { href: '#/sessions/' + encodeURIComponent(d), class: 'mono' }, short(d) + ' '))) : null,
      se.command && se.command.length ? row('Command', h('span', { class: 'mono' }, se.command.join(' '))) : null);
  }

  function drawKernels(se) {
    const rows = (se.kernels || []).map((k) => h('tr', { dataset: { kernel: k.id } },
      h('td', null, String(k.cluster_idx)), h('td', null, k.cluster_role), h('td', { class: 'mono' }, short(k.id)),
      h('td', { class: 'mono' }, k.agent || '—'), h('td', null, badge(k.status)),
      h('td', { class: 'exit' }, k.exit_code === null || k.exit_code === undefined ? '—' : String(k.exit_code)),
      h('td', null, k.status_reason || '—')));
    fill(kernels, h('div', { class: 'scroll' }, h('table', { class: 'list' },
      h('thead', null, h('tr', null, ...['#', 'Role', 'Kernel', 'Agent', 'Status', 'Exit code', 'Reason'].map((t) => h('th', null, t)))),
      h('tbody', null, rows))));
  }

  // drawPorts lists what the running kernels serve. An http port opens
  // through the manager's proxy in a new tab; a tcp one has no page to
  // open, and the CLI's port-forward reaches it.
  function drawPorts(se) {
    const ps = se.service_ports || [];
    if (!ps.length) {
      fill(ports, h('p', { class: 'muted' }, LIVE.has(se.status) ? 'No kernel serves a port (yet).' : 'Its ports ended with it.'));
      return;
    }
    const portError = h('p', { class: 'form-error', role: 'alert', hidden: true });
    const rows = ps.map((p) => {
      let open = h('span', { class: 'muted' }, `sokovan session port-forward ${short(se.id)} ${p.name}`);
      if (p.protocol === 'http') {
        open = h('a', { href: p.proxy_path, target: '_blank', rel: 'noopener noreferrer', class: 'port-open',
          'aria-label': `Open port ${p.name} in a new tab` }, 'Open ↗');
        open.addEventListener('click', async (e) => {
          e.preventDefault();
          portError.hidden = true;
          try { await openPort(se.id, p); } catch (err) { portError.textContent = err.message; portError.hidden = false; }
        });
      }
      return h('tr', { dataset: { port: p.name } }, h('td', null, p.name), h('td', null, p.protocol),
        h('td', { class: 'mono' }, short(p.kernel)), h('td', { class: 'mono' }, `${p.host}:${p.port}`),
        h('td', { class: 'mono' }, p.proxy_path), h('td', null, open));
    });
    fill(ports, h('div', { class: 'scroll' }, h('table', { class: 'list' },
      h('thead', null, h('tr', null, ...['Name', 'Protocol', 'Kernel', 'Host:port', 'Proxy path', ''].map((t) => h('th', null, t)))),
      h('tbody', { id: 'port-rows' }, rows))), portError);
  }

  function drawWhy(w, se) {
    if (!w) { fill(why, h('p', { class: 'muted' }, 'Not available.')); return; }
    const out = [];
    if (se.status === 'PENDING') {
      if (!w.blockers || !w.blockers.length) out.push(h('p', null, 'Nothing blocks it: it should be placed in the next scheduling round.'));
      for (const b of w.blockers || []) {
        out.push(h('div', { class: 'blocker' + (b.impossible || b.exceeds_capacity ? ' impossible' : ''), dataset: { kind: b.kind } },
          h('p', null, h('strong', null, b.kind), b.scope ? [' (', scopeText(b.scope), ')'] : '', ': ', b.message),
          b.slot ? h('p', { class: 'muted' }, `${b.slot}: requested ${b.requested || '—'}, available ${b.available || '—'}` +
            (b.capacity ? `, capacity ${b.capacity}` : '')) : null,
          h('p', { class: 'hint' }, hint(b))));
      }
    } else if (w.progress) {
      const p = w.progress;
      out.push(h('p', null, `${w.status} since ${time(p.since)}` + (p.deadline ? `; moved on at ${time(p.deadline)} (bound ${p.bound})` : '')));
      if (p.waiting_for && p.waiting_for.length) out.push(h('ul', null, p.waiting_for.map((x) => h('li', null, x))));
      if (p.last_failure) out.push(h('p', { class: 'form-error' }, 'Last failure: ', p.last_failure));
    } else {
      out.push(h('p', { class: 'muted' }, LIVE.has(se.status) ? `${se.status}: nothing holds it back.` : `Ended: ${se.status}.`));
    }
    fill(why, out);
  }

  function drawHistory(items) {
    fill(history, h('table', { class: 'list compact' },
      h('thead', null, h('tr', null, ...['At', 'Handler', 'Result', 'From → to', 'Message'].map((t) => h('th', null, t)))),
      h('tbody', null, items.map((it) => h('tr', null, h('td', null, time(it.at)), h('td', null, it.handler),
        h('td', null, it.result + (it.attempt > 1 ? ` ×${it.attempt}` : '')),
        h('td', null, it.from || it.to ? `${it.from || '·'} → ${it.to || '·'}` : '—'), h('td', null, it.message || ''))))));
  }

  const poke = reloader(load, 250);
  ctx.onLeave(poke.stop);
  load();
  ctx.onLeave(follow('session=' + encodeURIComponent(id), () => poke(), ctx.setLive));
}

// logsPanel shows a kernel's log. Following asks GET …/logs again with
// ?offset= for what is new, as `sokovan session logs -f` does
// (cmd/sokovan/cli_logs.go): the session's status is read before each
// ask, so once it says the session has ended, the ask after it has all
// the kernel wrote and the log is over. One long read would end with
// whatever the agent had written when it was asked, since the API serves
// the log so far, not a stream of what comes later.
function logsPanel(path) {
  const kernel = select([['0', 'main kernel']], '0');
  const followBox = h('input', { type: 'checkbox', id: 'log-follow', checked: true });
  const refresh = h('button', { type: 'button', id: 'log-refresh' }, 'Refresh');
  const pre = h('pre', { class: 'logs', id: 'logs', tabindex: '0', 'aria-label': 'Kernel output' });
  const state = h('p', { class: 'muted', id: 'log-state', 'aria-live': 'polite' }, 'No kernel is on an agent yet.');
  let ctl = null;
  let kernelsKey = '';

  const show = (text) => {
    if (!text) return;
    const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    let all = pre.textContent + text;
    if (all.length > LOG_MAX) all = all.slice(all.length - LOG_MAX);
    pre.textContent = all;
    if (atBottom) pre.scrollTop = pre.scrollHeight;
  };

  // read appends the log from offset on and returns how many bytes came.
  // The offset counts bytes, so the body is read as bytes and decoded
  // with one decoder kept across reads: a character split between two
  // reads is joined again.
  const read = async (offset, decoder, signal) => {
    const q = `kernel=${encodeURIComponent(kernel.value)}` + (offset ? `&offset=${offset}` : '');
    const resp = await fetch(`${path}/logs?${q}`, {
      headers: { Authorization: 'Bearer ' + token.get() }, signal, credentials: 'omit', cache: 'no-store' });
    if (!resp.ok) {
      let body = null;
      try { body = await resp.json(); } catch { /* not JSON */ }
      throw new APIError(resp.status, body);
    }
    const reader = resp.body.getReader();
    let n = 0;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return n;
      n += value.byteLength;
      show(decoder.decode(value, { stream: true }));
    }
  };

  const stop = () => { if (ctl) ctl.abort(); ctl = null; };
  const start = async () => {
    stop();
    const mine = new AbortController();
    ctl = mine;
    const following = followBox.checked;
    pre.textContent = '';
    state.textContent = 'Loading…';
    const decoder = new TextDecoder();
    let offset = 0;
    try {
      for (;;) {
        const se = await get(path, { signal: mine.signal });
        const ended = !LIVE.has(se.status);
        let n = 0;
        try {
          n = await read(offset, decoder, mine.signal);
          offset += n;
        } catch (err) {
          if (!(err instanceof APIError)) throw err;
          if (err.status === 404 && ended && offset > 0) {
            // The kernel's agent forgot it after it ended: all was read.
          } else if (err.status === 409 && !ended && following) {
            state.textContent = err.message;
          } else {
            state.textContent = err.message;
            return;
          }
        }
        if (ended) {
          show(decoder.decode());
          state.textContent = 'End of output.';
          return;
        }
        if (!following) {
          state.textContent = 'The output so far; the kernel still runs.';
          return;
        }
        if (offset > 0 || n > 0) state.textContent = 'Following…';
        if (n > 0) continue; // more may be waiting: ask again at once
        await sleep(LOG_POLL, mine.signal);
        if (mine.signal.aborted) return;
      }
    } catch {
      if (ctl === mine || ctl === null) state.textContent = pre.textContent ? 'Stopped.' : 'No output.';
    } finally {
      if (ctl === mine) ctl = null;
    }
  };
  refresh.addEventListener('click', start);
  kernel.addEventListener('change', start);
  followBox.addEventListener('change', () => { if (followBox.checked) start(); else stop(); });

  const el = h('div', { class: 'logs-panel' },
    h('div', { class: 'row controls' }, labelled('log-kernel', 'Kernel', kernel),
      h('div', { class: 'field check' }, followBox, h('label', { for: 'log-follow' }, 'Follow (tail)')), refresh),
    state, pre);
  return {
    el,
    stop,
    setKernels(ks) {
      // Start reading once a kernel is on an agent; a kernel list that
      // did not change leaves a running stream alone.
      const placed = ks.filter((k) => k.agent);
      const key = placed.map((k) => k.id).join(',');
      if (key === kernelsKey) return;
      const first = kernelsKey === '';
      kernelsKey = key;
      kernel.replaceChildren(...ks.map((k) => h('option', { value: String(k.cluster_idx) },
        `#${k.cluster_idx} ${k.cluster_role} ${short(k.id)}`)));
      if (placed.length && (first || !ctl)) start();
      else if (!placed.length) state.textContent = 'No kernel is on an agent yet.';
    },
  };
}

// scopeText links a blocker's scope when it names a session the caller
// may open (the API writes "another session" for any other).
function scopeText(scope) {
  const id = scope.startsWith('session:') ? scope.slice(8) : '';
  return id ? h('a', { href: '#/sessions/' + encodeURIComponent(id), class: 'mono' }, 'session ' + short(id)) : scope;
}
