// Pieces several views share: status badges, error banners, blocker
// hints, a debounced reloader for views that redraw from the API when the
// event stream says something changed, and the button that ends what a
// page shows.

import { call, follow } from '../api.js';
import { fill, h } from '../dom.js';

export function badge(status) {
  return h('span', { class: 'badge st-' + status }, status || '—');
}

// hint says what a user can do about a blocker.
export function hint(b) {
  if (b.exceeds_capacity || b.impossible) return 'Waiting will not help: ask for less, or for another resource group.';
  switch (b.kind) {
    case 'quota': return 'A resource policy caps this; end another session or ask an admin to raise the limit.';
    case 'concurrency': return 'Too many sessions at once for this scope; one must end first.';
    case 'capacity': return 'The agents are busy; it starts when enough is freed.';
    case 'no_agents': return 'No agent can take it now (none alive, all cordoned, or none with this slot).';
    case 'architecture': return 'No agent has this architecture.';
    case 'dependency': return 'It waits for the sessions it depends on to finish successfully.';
    case 'start_time': return 'It was asked to start later.';
    case 'queue_position': return 'Sessions ahead of it in the queue go first.';
    case 'resource_group_state': return 'The resource group is not ACTIVE; an admin must start it.';
    case 'gang': return 'All its kernels must fit at once.';
    case 'session_type': return 'The resource group does not run this type of session.';
    // A reservation blocker is on either side of one: on the session that
    // holds it (scope: the agent), or on one held back so that it cannot
    // delay a reservation (scope: the session it protects).
    case 'reservation': return b.scope && (b.scope.startsWith('session:') || b.scope === 'another session')
      ? 'It would still run when these slots are reserved for a session ahead of it; a shorter time limit may let it start now.'
      : 'It holds a reservation: it starts when these slots free, and later sessions may only use them meanwhile if they end in time.';
    default: return '';
  }
}

export function banner(err) {
  return h('p', { class: 'form-error', role: 'alert' }, err && err.message ? err.message : String(err));
}

// reloader runs load at most once per minGap ms however often it is
// poked, and never twice at once, so a burst of events (a thousand
// sessions starting) costs one reload, not a thousand.
export function reloader(load, minGap = 300) {
  let timer = null;
  let running = false;
  let again = false;
  let lastRun = 0;
  let stopped = false;
  const run = async () => {
    timer = null;
    if (stopped) return;
    if (running) { again = true; return; }
    running = true;
    lastRun = Date.now();
    try { await load(); } finally {
      running = false;
      if (again && !stopped) { again = false; poke(); }
    }
  };
  const poke = () => {
    if (timer || stopped) return;
    timer = setTimeout(run, Math.max(0, lastRun + minGap - Date.now()));
  };
  poke.stop = () => { stopped = true; clearTimeout(timer); };
  return poke;
}

export function section(title, ...children) {
  return h('section', { class: 'card' }, h('h2', null, title), children);
}

// timed runs a view's load and records in the main element's dataset how
// long the API took and how long drawing took, which the scale test reads.
export async function timed(main, fetchAll, draw) {
  const t0 = performance.now();
  const data = await fetchAll();
  const t1 = performance.now();
  draw(data);
  const t2 = performance.now();
  main.dataset.loadMs = String(Math.round(t1 - t0));
  main.dataset.drawMs = String(Math.round(t2 - t1));
}

// sessionFollower loads a view now and again whenever a session event
// arrives (a job's members and an array's elements move by those), at
// most once per 300 ms, until the view is left.
export function sessionFollower(ctx, load) {
  const poke = reloader(load, 300);
  ctx.onLeave(poke.stop);
  ctx.onLeave(follow('', (event) => { if (event === 'session') poke(); }, ctx.setLive));
  load();
  return poke;
}

// endButton is a danger button that DELETEs path when pressed. A refusal
// shows in error and enables it again; after a success it stays disabled,
// what it ended being on its way out. Either way the view reloads
// (reload is called, not kept, so it may be defined after the button).
export function endButton(id, label, path, error, reload) {
  const b = h('button', { type: 'button', class: 'danger', id }, label);
  b.addEventListener('click', async () => {
    b.disabled = true;
    try {
      await call('DELETE', path);
      error.replaceChildren();
    } catch (err) {
      fill(error, banner(err));
      b.disabled = false;
    }
    reload();
  });
  return b;
}
