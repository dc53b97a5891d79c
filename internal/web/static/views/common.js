// Pieces several views share: status badges, error banners, and a
// debounced reloader for views that redraw from the API when the event
// stream says something changed.

import { h } from '../dom.js';

export function badge(status) {
  return h('span', { class: 'badge st-' + status }, status || '—');
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
