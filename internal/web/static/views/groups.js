// Resource groups: their settings in force, as a form per group. Admins
// edit and save (PUT sends only what changed) and may add a group; users
// see the same form read-only. The group's object state moves by its own
// buttons (Start, Stop, Drain), not by the form: each is one transition
// of seed 003's table, and the API's 409 for a move the table has no row
// for is shown as it comes.

import { APIError, call, get } from '../api.js';
import { fieldError, fill, h, labelled, select } from '../dom.js';
import { slotsText } from '../format.js';
import { banner, section } from './common.js';

const TIMEOUTS = ['pending', 'scheduled', 'preparing', 'prepared', 'creating', 'terminating'];

// MOVES are the state buttons: the verb, the state it asks for, and what
// it means.
const MOVES = [['Start', 'ACTIVE', 'schedule its sessions'], ['Stop', 'STOPPED', 'stop scheduling; sessions wait'],
  ['Drain', 'DRAINING', 'refuse new sessions for good; DRAINING is final']];

export function render(ctx) {
  const { main, admin } = ctx;
  const list = h('div', { class: 'groups', id: 'groups' });
  const error = h('div');
  main.append(h('h1', null, 'Resource groups'), error, list);
  if (admin) main.append(section('New resource group', newGroupForm(() => load())));

  const load = async () => {
    try {
      const out = await get('/v1/resource-groups');
      error.replaceChildren();
      fill(list, (out.items || []).map((g) => groupForm(g, admin, load)));
    } catch (err) {
      fill(error, banner(err));
    }
  };
  load();
}

function groupForm(g, admin, reload) {
  const id = (f) => `g-${g.name}-${f}`.replace(/[^A-Za-z0-9_-]/g, '_');
  const c = {
    sequencer: select(['fifo', 'lifo', 'drf'], g.sequencer),
    selector: select(['concentrated', 'dispersed', 'round-robin'], g.selector),
    head_of_line: select(['skip', 'block', 'reserve'], g.head_of_line),
    reservation_depth: h('input', { type: 'number', min: 0, max: 100, value: g.reservation_depth ?? 1 }),
    max_retries: h('input', { type: 'number', min: 0, value: g.max_retries }),
    allowed_types: h('input', { type: 'text', value: (g.allowed_types || []).join(', '), placeholder: 'all types' }),
  };
  const t = {};
  for (const k of TIMEOUTS) t[k] = h('input', { type: 'text', value: (g.timeouts || {})[k] || '', size: 6 });
  const status = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const ok = h('p', { class: 'form-ok', role: 'status', hidden: true });
  const save = admin ? h('button', { type: 'submit', class: 'primary' }, 'Save') : null;
  const fs = h('fieldset', { disabled: !admin },
    h('legend', { class: 'sr-only' }, `Settings of ${g.name}`),
    h('div', { class: 'row' }, labelled(id('seq'), 'Sequencer', c.sequencer),
      labelled(id('sel'), 'Agent selector', c.selector), labelled(id('hol'), 'Head of line', c.head_of_line),
      labelled(id('depth'), 'Reservation depth', c.reservation_depth, 'sessions holding reservations at once (reserve)'),
      labelled(id('retries'), 'Max retries', c.max_retries)),
    labelled(id('types'), 'Allowed session types', c.allowed_types, 'comma-separated; empty is all'),
    h('p', { class: 'subhead' }, 'Timeouts (Go durations, 0s is none)'),
    h('div', { class: 'row timeouts' }, TIMEOUTS.map((k) => labelled(id('t-' + k), k, t[k]))));
  const moveStatus = h('p', { class: 'form-error state-error', role: 'alert', hidden: true });
  const moves = admin ? h('div', { class: 'row state-moves', role: 'group', 'aria-label': `State of ${g.name}` },
    MOVES.filter(([, to]) => to !== g.state).map(([verb, to, what]) => {
      const b = h('button', { type: 'button', class: to === 'DRAINING' ? 'small danger' : 'small', dataset: { to },
        title: what, 'aria-label': `${verb} ${g.name}: ${what}` }, verb);
      b.addEventListener('click', async () => {
        moveStatus.hidden = true;
        b.disabled = true;
        try {
          await call('PUT', '/v1/resource-groups/' + encodeURIComponent(g.name), { state: to });
          await reload();
        } catch (err) {
          moveStatus.textContent = err.message;
          moveStatus.hidden = false;
          b.disabled = false;
        }
      });
      return b;
    })) : null;
  const form = h('form', { class: 'card group', dataset: { group: g.name, state: g.state }, novalidate: true },
    h('h2', null, g.name, ' ', h('span', { class: 'badge st-' + g.state }, g.state)), moves, moveStatus, fs,
    h('p', { class: 'muted' }, 'Default per kernel: ', slotsText(g.default_slots), ' · minimum: ', slotsText(g.min_slots)),
    status, ok, save);
  if (!admin) return form;

  const fieldFor = (path) => {
    if (path.startsWith('timeouts.')) return t[path.slice(9)] || null;
    return c[path.split(/[.[]/)[0]] || null;
  };
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    for (const ctl of [...Object.values(c), ...Object.values(t)]) fieldError(ctl, '');
    status.hidden = true;
    ok.hidden = true;
    const body = {};
    for (const k of ['sequencer', 'selector', 'head_of_line']) if (c[k].value !== g[k]) body[k] = c[k].value;
    const depth = Number(c.reservation_depth.value);
    if (!Number.isInteger(depth)) { fieldError(c.reservation_depth, 'must be a whole number'); return; }
    if (depth !== g.reservation_depth) body.reservation_depth = depth;
    const retries = Number(c.max_retries.value);
    if (!Number.isInteger(retries)) { fieldError(c.max_retries, 'must be a whole number'); return; }
    if (retries !== g.max_retries) body.max_retries = retries;
    const types = c.allowed_types.value.split(',').map((x) => x.trim()).filter(Boolean);
    if (types.join(',') !== (g.allowed_types || []).join(',')) body.allowed_types = types;
    const timeouts = {};
    for (const k of TIMEOUTS) if (t[k].value.trim() !== ((g.timeouts || {})[k] || '')) timeouts[k] = t[k].value.trim();
    if (Object.keys(timeouts).length) body.timeouts = timeouts;
    if (!Object.keys(body).length) { ok.textContent = 'Nothing changed.'; ok.hidden = false; return; }
    save.disabled = true;
    try {
      await call('PUT', '/v1/resource-groups/' + encodeURIComponent(g.name), body);
      await reload();
    } catch (err) {
      const ctl = err instanceof APIError && err.field ? fieldFor(err.field) : null;
      if (ctl) fieldError(ctl, err.message);
      else { status.textContent = err.message; status.hidden = false; }
      save.disabled = false;
    }
  });
  return form;
}

function newGroupForm(created) {
  const name = h('input', { type: 'text', required: true, autocomplete: 'off', spellcheck: 'false' });
  const status = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const form = h('form', { class: 'row bottom', novalidate: true }, labelled('new-group', 'Name', name),
    h('button', { type: 'submit', class: 'primary' }, 'Create with defaults'), status);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    fieldError(name, '');
    status.hidden = true;
    if (!name.value.trim()) { fieldError(name, 'a name is required'); return; }
    try {
      await call('PUT', '/v1/resource-groups/' + encodeURIComponent(name.value.trim()), {});
      name.value = '';
      created();
    } catch (err) {
      status.textContent = err.message;
      status.hidden = false;
    }
  });
  return form;
}
