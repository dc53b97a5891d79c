// Arrays: session arrays (SLURM's job arrays), each one row with its
// elements counted by status; one array's page lists its elements, each a
// link to its session, and removes the whole array in one call. Elements
// move by session events, so both pages redraw on them.

import { APIError, get } from '../api.js';
import { fill, h } from '../dom.js';
import { ago, short, time } from '../format.js';
import { badge, banner, endButton, section, sessionFollower } from './common.js';

// counts is "2 RUNNING, 4 PENDING", most first.
function counts(statuses) {
  return Object.entries(statuses || {}).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([st, n]) => `${n} ${st}`).join(', ');
}

export function render(ctx) {
  const { main, admin } = ctx;
  const error = h('div');
  const tbody = h('tbody', { id: 'array-rows' });
  const count = h('p', { class: 'muted', id: 'array-count', 'aria-live': 'polite' });
  main.append(h('h1', null, 'Arrays'), error,
    h('p', { class: 'hint' }, 'Submit one with `sokovan session create --array 0-99%10 --name NAME …` or POST /v1/arrays.'),
    section('Arrays', count, h('div', { class: 'scroll' }, h('table', { class: 'list', id: 'arrays' },
      h('thead', null, h('tr', null, ...['Name', admin ? 'Owner' : null, 'Spec', 'Elements', 'Outcome', 'Created']
        .filter(Boolean).map((t) => h('th', null, t)))),
      tbody))));
  const load = async () => {
    try {
      const out = await get('/v1/arrays');
      error.replaceChildren();
      const items = out.items || [];
      const now = Date.now();
      fill(tbody, items.map((a) => h('tr', { dataset: { id: a.id, live: String(a.live) } },
        h('td', null, h('a', { href: '#/arrays/' + encodeURIComponent(a.id) }, a.name), ' ',
          h('span', { class: 'mono muted small' }, short(a.id))),
        admin ? h('td', null, a.owner) : null,
        h('td', { class: 'mono' }, a.spec),
        h('td', { class: 'counts' }, counts(a.statuses)),
        h('td', null, a.outcome ? badge(a.outcome) : '—'),
        h('td', null, h('time', { datetime: a.created_at, title: time(a.created_at) }, ago(a.created_at, now))))));
      count.textContent = items.length ? `${items.length} arrays` : 'No arrays yet.';
    } catch (err) {
      fill(error, banner(err));
    }
  };
  sessionFollower(ctx, load);
}

export function renderOne(ctx) {
  const { main, params } = ctx;
  const path = '/v1/arrays/' + encodeURIComponent(params[0]);
  const title = h('h1', null, 'Array ', h('span', { class: 'mono' }, short(params[0])));
  const head = h('div', { class: 'session-head' });
  const error = h('div');
  const facts = h('dl', { class: 'facts', id: 'array-facts' });
  const elements = h('div', { id: 'elements' });
  main.append(h('p', null, h('a', { href: '#/arrays' }, '← Arrays')), title, head, error,
    section('Details', facts), section('Elements', elements));
  const remove = endButton('remove-array', 'End every element', path, error, () => poke());
  const load = async () => {
    let a;
    try {
      a = await get(path);
    } catch (err) {
      fill(error, banner(err instanceof APIError && err.status === 404 ? 'No such array (or not yours).' : err));
      return;
    }
    error.replaceChildren();
    fill(title, a.name, ' ', h('span', { class: 'mono muted' }, short(a.id)));
    fill(head, a.live > 0 ? remove : null);
    const row = (k, v) => [h('dt', null, k), h('dd', null, v === '' || v === null || v === undefined ? '—' : v)];
    fill(facts, row('ID', h('span', { class: 'mono' }, a.id)), row('Owner', a.owner), row('Spec', a.spec),
      row('Elements', String(a.count)), row('At once', a.max_running ? `at most ${a.max_running}` : 'no cap'),
      row('Statuses', counts(a.statuses)), row('Outcome', a.outcome ? badge(a.outcome) : 'not ended'),
      row('Created', time(a.created_at)));
    const es = a.elements || [];
    fill(elements, h('div', { class: 'scroll' }, h('table', { class: 'list' },
      h('thead', null, h('tr', null, ...['Element', 'Session', 'Status', 'Result'].map((t) => h('th', null, t)))),
      h('tbody', { id: 'element-rows' }, es.map((e) => h('tr', { dataset: { id: e.id, status: e.status } },
        h('td', null, h('a', { href: '#/sessions/' + encodeURIComponent(e.id) }, e.name)),
        h('td', { class: 'mono' }, short(e.id)), h('td', null, badge(e.status)), h('td', null, e.outcome || '—')))))));
  };
  const poke = sessionFollower(ctx, load);
}
