// Resource groups: their settings in force, as a form per group. Admins
// edit and save (PUT sends only what changed) and may add a group; users
// see the same form read-only.

import { APIError, call, get } from '../api.js';
import { fieldError, fill, h, labelled, select } from '../dom.js';
import { slotsText } from '../format.js';
import { banner, section } from './common.js';

const TIMEOUTS = ['pending', 'scheduled', 'preparing', 'prepared', 'creating', 'terminating'];

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
    state: select(['ACTIVE', 'STOPPED', 'DRAINING'], g.state),
    sequencer: select(['fifo', 'lifo', 'drf'], g.sequencer),
    selector: select(['concentrated', 'dispersed', 'round-robin'], g.selector),
    head_of_line: select(['skip', 'block'], g.head_of_line),
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
    h('div', { class: 'row' }, labelled(id('state'), 'State', c.state), labelled(id('seq'), 'Sequencer', c.sequencer),
      labelled(id('sel'), 'Agent selector', c.selector), labelled(id('hol'), 'Head of line', c.head_of_line),
      labelled(id('retries'), 'Max retries', c.max_retries)),
    labelled(id('types'), 'Allowed session types', c.allowed_types, 'comma-separated; empty is all'),
    h('p', { class: 'subhead' }, 'Timeouts (Go durations, 0s is none)'),
    h('div', { class: 'row timeouts' }, TIMEOUTS.map((k) => labelled(id('t-' + k), k, t[k]))));
  const form = h('form', { class: 'card group', dataset: { group: g.name }, novalidate: true },
    h('h2', null, g.name, ' ', h('span', { class: 'badge st-' + g.state }, g.state)), fs,
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
    for (const k of ['state', 'sequencer', 'selector', 'head_of_line']) if (c[k].value !== g[k]) body[k] = c[k].value;
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
