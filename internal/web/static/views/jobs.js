// Jobs: gangs of sessions that start together (seed 003's application
// states). The list shows each job's state and how much of the gang is
// placed; one job's page shows its members with links to their sessions,
// its state history and a cancel button. Members move by session events,
// so both pages redraw on them.

import { APIError, call, get } from '../api.js';
import { fieldError, fill, h, labelled, select } from '../dom.js';
import { ago, short, time } from '../format.js';
import { badge, banner, endButton, section, sessionFollower } from './common.js';

// ENDED are the final states: nothing to cancel any more.
const ENDED = new Set(['COMPLETED', 'EXPIRED', 'FAILED', 'REJECTED']);

export function render(ctx) {
  const { main, admin } = ctx;
  const error = h('div');
  const tbody = h('tbody', { id: 'job-rows' });
  const count = h('p', { class: 'muted', id: 'job-count', 'aria-live': 'polite' });
  main.append(h('h1', null, 'Jobs'), error,
    section('Jobs', count, h('div', { class: 'scroll' }, h('table', { class: 'list', id: 'jobs' },
      h('thead', null, h('tr', null, ...['Name', admin ? 'Owner' : null, 'State', 'Placed / min available', 'Members',
        'State since'].filter(Boolean).map((t) => h('th', null, t)))),
      tbody))),
    section('New job', h('p', { class: 'hint' }, 'A job gathers sessions submitted with its name or id as "job"; ' +
      'none starts until min available of them are placed together.'),
    createForm((j) => { location.hash = '#/jobs/' + encodeURIComponent(j.id); })));

  const load = async () => {
    try {
      const out = await get('/v1/jobs');
      error.replaceChildren();
      const items = out.items || [];
      const now = Date.now();
      fill(tbody, items.map((j) => h('tr', { dataset: { id: j.id, state: j.state } },
        h('td', null, h('a', { href: '#/jobs/' + encodeURIComponent(j.id) }, j.name || short(j.id)), ' ',
          h('span', { class: 'mono muted small' }, short(j.id))),
        admin ? h('td', null, j.owner) : null,
        h('td', null, badge(j.state)),
        h('td', { class: 'placed' }, `${j.placed} / ${j.min_available}`),
        h('td', null, String((j.members || []).length)),
        h('td', null, h('time', { datetime: j.state_changed_at, title: time(j.state_changed_at) }, ago(j.state_changed_at, now))))));
      count.textContent = items.length ? `${items.length} jobs` : 'No jobs yet.';
    } catch (err) {
      fill(error, banner(err));
    }
  };
  sessionFollower(ctx, load);
}

function createForm(created) {
  const c = {
    name: h('input', { type: 'text', required: true, autocomplete: 'off', spellcheck: 'false' }),
    min_available: h('input', { type: 'number', min: 1, value: 1 }),
    permit_timeout: h('input', { type: 'text', placeholder: '60s', size: 6 }),
    failure_policy: select(['wait', 'fail'], 'wait'),
  };
  const status = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const form = h('form', { id: 'create-job', novalidate: true },
    h('div', { class: 'row' }, labelled('cj-name', 'Name', c.name), labelled('cj-min', 'Min available', c.min_available),
      labelled('cj-permit', 'Permit timeout', c.permit_timeout), labelled('cj-policy', 'On failure', c.failure_policy)),
    status, h('button', { type: 'submit', class: 'primary' }, 'Create job'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    for (const ctl of Object.values(c)) fieldError(ctl, '');
    status.hidden = true;
    const n = Number(c.min_available.value);
    if (!Number.isInteger(n)) { fieldError(c.min_available, 'must be a whole number'); return; }
    const body = { name: c.name.value.trim(), min_available: n, failure_policy: c.failure_policy.value };
    if (c.permit_timeout.value.trim()) body.permit_timeout = c.permit_timeout.value.trim();
    try {
      created(await call('POST', '/v1/jobs', body));
    } catch (err) {
      const ctl = err instanceof APIError && err.field ? c[err.field] : null;
      if (ctl) fieldError(ctl, err.message);
      else { status.textContent = err.message; status.hidden = false; }
    }
  });
  return form;
}

export function renderOne(ctx) {
  const { main, params } = ctx;
  const id = params[0];
  const path = '/v1/jobs/' + encodeURIComponent(id);
  const title = h('h1', null, 'Job ', h('span', { class: 'mono' }, short(id)));
  const head = h('div', { class: 'session-head' });
  const error = h('div');
  const facts = h('dl', { class: 'facts', id: 'job-facts' });
  const members = h('div', { id: 'members' });
  const history = h('div', { id: 'job-history' });
  main.append(h('p', null, h('a', { href: '#/jobs' }, '← Jobs')), title, head, error,
    section('Details', facts), section('Members', members), section('History', history));

  const cancel = endButton('cancel-job', 'Cancel job', path, error, () => poke());

  const load = async () => {
    let j;
    try {
      j = await get(path);
    } catch (err) {
      fill(error, banner(err instanceof APIError && err.status === 404 ? 'No such job (or not yours).' : err));
      return;
    }
    error.replaceChildren();
    main.dataset.state = j.state;
    fill(title, j.name || 'Job', ' ', h('span', { class: 'mono muted' }, short(j.id)), ' ', badge(j.state));
    // A failing job is already being cancelled; a second DELETE is a 409.
    fill(head, ENDED.has(j.state) || j.state === 'FAILING' ? null : cancel);
    const row = (k, v) => [h('dt', null, k), h('dd', null, v === '' || v === null || v === undefined ? '—' : v)];
    fill(facts,
      row('ID', h('span', { class: 'mono' }, j.id)), row('Owner', j.owner),
      row('State', [badge(j.state), j.state_reason ? ` ${j.state_reason}` : '']),
      row('Gang', `${j.placed} placed of ${j.min_available} needed (${j.submitted} submitted)`),
      row('Permit timeout', j.permit_timeout), row('On failure', j.failure_policy),
      row('Created', time(j.created_at)), row('State since', `${time(j.state_changed_at)} (${ago(j.state_changed_at)})`));
    const ms = j.members || [];
    fill(members, ms.length ? h('div', { class: 'scroll' }, h('table', { class: 'list' },
      h('thead', null, h('tr', null, ...['Session', 'Name', 'Status'].map((t) => h('th', null, t)))),
      h('tbody', { id: 'member-rows' }, ms.map((m) => h('tr', { dataset: { id: m.id, status: m.status } },
        h('td', null, h('a', { href: '#/sessions/' + encodeURIComponent(m.id), class: 'mono' }, short(m.id))),
        h('td', null, m.name || '—'), h('td', null, badge(m.status)))))))
      : h('p', { class: 'muted' }, `No members yet: submit sessions with "job": "${j.name || j.id}".`));
    const hs = j.history || [];
    fill(history, hs.length ? h('div', { class: 'scroll' }, h('table', { class: 'list' },
      h('thead', null, h('tr', null, ...['At', 'Event', 'From → to', 'Message'].map((t) => h('th', null, t)))),
      h('tbody', { id: 'job-history-rows' }, hs.slice().reverse().map((x) => h('tr', null,
        h('td', null, time(x.at)), h('td', null, x.event), h('td', null, `${x.from || '—'} → ${x.to}`),
        h('td', null, x.message || '—'))))))
      : h('p', { class: 'muted' }, 'Nothing yet.'));
  };
  const poke = sessionFollower(ctx, load);
}
