// Sessions: the caller's sessions (everyone's for an admin), filtered in
// the page, kept current by the event stream, with the create form and
// the cancel and force buttons.

import { APIError, call, follow, get } from '../api.js';
import { fieldError, fill, h, labelled, select } from '../dom.js';
import { LIVE, STATUSES, ago, short, slotsText, time } from '../format.js';
import { badge, banner, reloader, section, timed } from './common.js';

// PAGE bounds the rows drawn at once: the filter narrows 10,000 sessions
// faster than a browser lays out 10,000 table rows.
const PAGE = 200;

export function render(ctx) {
  const { main, admin } = ctx;
  let all = [];
  let shown = PAGE;

  const fStatus = select([['', 'any status'], ['live', 'live (not ended)'], ...STATUSES.map((s) => [s, s])], 'live');
  const fGroup = select([['', 'any group']], '');
  const fText = h('input', { type: 'search', placeholder: 'name, id, image' + (admin ? ', owner' : '') });
  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter sessions' },
    labelled('f-status', 'Status', fStatus), labelled('f-group', 'Resource group', fGroup),
    labelled('f-text', 'Search', fText));
  filters.addEventListener('submit', (e) => e.preventDefault());
  for (const el of [fStatus, fGroup]) el.addEventListener('change', () => { shown = PAGE; draw(); });
  fText.addEventListener('input', () => { shown = PAGE; draw(); });

  const tbody = h('tbody', { id: 'session-rows' });
  const count = h('p', { class: 'muted', id: 'session-count', 'aria-live': 'polite' });
  const more = h('button', { type: 'button', hidden: true }, 'Show more');
  more.addEventListener('click', () => { shown += PAGE; draw(); });
  const error = h('div');
  const table = h('table', { class: 'list', id: 'sessions' },
    h('thead', null, h('tr', null, h('th', null, 'Session'), h('th', null, 'Name'), admin ? h('th', null, 'Owner') : null,
      h('th', null, 'Status'), h('th', null, 'Type'), h('th', null, 'Image'), h('th', null, 'Group'),
      h('th', null, 'Per kernel'), h('th', null, 'Created'), h('th', null, h('span', { class: 'sr-only' }, 'Actions')))),
    tbody);

  const form = createForm(ctx, () => poke());
  main.append(h('h1', null, admin ? 'Sessions' : 'My sessions'), error,
    h('div', { class: 'split' },
      section('Sessions', filters, count, h('div', { class: 'scroll' }, table), more),
      section('New session', form.el)));

  function matches(se, st, group, text) {
    if (st === 'live' ? !LIVE.has(se.status) : st && se.status !== st) return false;
    if (group && se.resource_group !== group) return false;
    if (text) {
      const hay = `${se.id} ${se.name} ${se.image} ${se.owner}`.toLowerCase();
      if (!hay.includes(text)) return false;
    }
    return true;
  }

  function draw() {
    const st = fStatus.value;
    const group = fGroup.value;
    const text = fText.value.trim().toLowerCase();
    const rows = [];
    let n = 0;
    // Newest first: the API lists oldest first.
    for (let i = all.length - 1; i >= 0; i--) {
      const se = all[i];
      if (!matches(se, st, group, text)) continue;
      n++;
      if (rows.length < shown) rows.push(row(se));
    }
    fill(tbody, rows);
    count.textContent = n === rows.length ? `${n} session${n === 1 ? '' : 's'}` : `${rows.length} of ${n} sessions`;
    more.hidden = n <= rows.length;
  }

  function row(se) {
    const actions = h('td', { class: 'actions' });
    if (LIVE.has(se.status)) {
      if (se.status !== 'TERMINATING') actions.append(actionButton('Cancel', se, false));
      actions.append(actionButton('Force', se, true));
    }
    return h('tr', { dataset: { id: se.id, status: se.status } },
      h('td', null, h('a', { href: '#/sessions/' + encodeURIComponent(se.id), class: 'mono' }, short(se.id))),
      h('td', null, se.name || '—'), admin ? h('td', null, se.owner) : null,
      h('td', null, badge(se.status)), h('td', null, se.type), h('td', { class: 'mono' }, se.image),
      h('td', null, se.resource_group), h('td', null, slotsText(se.requested_slots)),
      h('td', null, h('time', { datetime: se.created_at, title: time(se.created_at) }, ago(se.created_at))), actions);
  }

  function actionButton(label, se, force) {
    const b = h('button', { type: 'button', class: force ? 'danger small' : 'small',
      'aria-label': `${label} session ${se.name || short(se.id)}` }, label);
    b.addEventListener('click', async () => {
      b.disabled = true;
      try {
        await call('DELETE', `/v1/sessions/${encodeURIComponent(se.id)}${force ? '?force=true' : ''}`);
        error.replaceChildren();
      } catch (err) {
        fill(error, banner(err));
      }
      poke();
    });
    return b;
  }

  const load = async () => {
    try {
      await timed(main, () => Promise.all([get('/v1/sessions?limit=10000&order=newest'), get('/v1/resource-groups')]), ([list, groups]) => {
        all = list.items || [];
        const names = (groups.items || []).map((g) => g.name);
        if (fGroup.options.length !== names.length + 1) {
          const cur = fGroup.value;
          fGroup.replaceChildren(h('option', { value: '' }, 'any group'), ...names.map((n) => h('option', { value: n }, n)));
          fGroup.value = cur;
          form.setGroups(names);
        }
        error.replaceChildren();
        draw();
      });
    } catch (err) {
      fill(error, banner(err));
    }
  };
  const poke = reloader(load, 300);
  ctx.onLeave(poke.stop);
  load();
  ctx.onLeave(follow('', (event) => { if (event === 'session') poke(); }, ctx.setLive));
}

// createForm is POST /v1/sessions as a form. The API checks the request;
// the form only shapes it, and shows each error the API names a field
// for beside that field.
function createForm(ctx, created) {
  const c = {
    name: h('input', { type: 'text', autocomplete: 'off', maxlength: 128 }),
    image: h('input', { type: 'text', required: true, list: 'images', autocomplete: 'off', spellcheck: 'false' }),
    type: select(['interactive', 'batch', 'inference'], 'interactive'),
    resource_group: select(['default'], 'default'),
    cpu: h('input', { type: 'text', inputmode: 'decimal', placeholder: 'group default', autocomplete: 'off' }),
    mem: h('input', { type: 'text', placeholder: 'group default, e.g. 1g', autocomplete: 'off' }),
    slots: h('input', { type: 'text', placeholder: 'cuda.device=1', autocomplete: 'off' }),
    cluster_size: h('input', { type: 'number', min: 1, max: 64, value: 1 }),
    cluster_mode: select(['single-node', 'multi-node'], 'single-node'),
    priority: h('input', { type: 'number', min: 0, max: 100, value: 10 }),
    command: h('input', { type: 'text', placeholder: 'image default', autocomplete: 'off' }),
  };
  const images = h('datalist', { id: 'images' }, ['sleep', 'exit:0', 'exit:1', 'http-echo'].map((v) => h('option', { value: v })));
  const status = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const ok = h('p', { class: 'form-ok', role: 'status', hidden: true });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Create session');
  const el = h('form', { class: 'create', id: 'create-session', novalidate: true },
    labelled('cs-name', 'Name', c.name), labelled('cs-image', 'Image', c.image, 'dev mode: sleep, exit:N, http-echo'), images,
    h('div', { class: 'row' }, labelled('cs-type', 'Type', c.type), labelled('cs-group', 'Resource group', c.resource_group)),
    h('div', { class: 'row' }, labelled('cs-cpu', 'CPU per kernel', c.cpu), labelled('cs-mem', 'Memory per kernel', c.mem)),
    labelled('cs-slots', 'Other slots', c.slots, 'name=quantity, separated by commas'),
    h('div', { class: 'row' }, labelled('cs-size', 'Kernels', c.cluster_size), labelled('cs-mode', 'Cluster mode', c.cluster_mode)),
    h('div', { class: 'row' }, labelled('cs-priority', 'Priority', c.priority), labelled('cs-command', 'Command', c.command)),
    status, ok, submit);

  // fieldFor maps the API's field path to the control that holds it.
  const fieldFor = (path) => {
    if (path === 'resources.cpu') return c.cpu;
    if (path === 'resources.mem') return c.mem;
    if (path.startsWith('resources')) return c.slots;
    if (path.startsWith('command')) return c.command;
    const top = path.split(/[.[]/)[0];
    return c[top] || null;
  };

  el.addEventListener('submit', async (e) => {
    e.preventDefault();
    for (const ctl of Object.values(c)) fieldError(ctl, '');
    status.hidden = true;
    ok.hidden = true;
    const body = { image: c.image.value.trim(), type: c.type.value, resource_group: c.resource_group.value,
      cluster_mode: c.cluster_mode.value };
    if (c.name.value.trim()) body.name = c.name.value.trim();
    const resources = {};
    if (c.cpu.value.trim()) resources.cpu = c.cpu.value.trim();
    if (c.mem.value.trim()) resources.mem = c.mem.value.trim();
    for (const part of c.slots.value.split(',')) {
      if (!part.trim()) continue;
      const [k, v = ''] = part.split('=');
      resources[k.trim()] = v.trim();
    }
    if (Object.keys(resources).length) body.resources = resources;
    for (const k of ['cluster_size', 'priority']) {
      const v = c[k].value.trim();
      if (v === '') continue;
      const n = Number(v);
      if (!Number.isInteger(n)) { fieldError(c[k], 'must be a whole number'); return; }
      body[k] = n;
    }
    if (c.command.value.trim()) body.command = c.command.value.trim().split(/\s+/);
    submit.disabled = true;
    try {
      const se = await call('POST', '/v1/sessions', body);
      ok.replaceChildren('Created ', h('a', { href: '#/sessions/' + encodeURIComponent(se.id) }, se.name || short(se.id)), '.');
      ok.hidden = false;
      created(se);
    } catch (err) {
      const ctl = err instanceof APIError && err.field ? fieldFor(err.field) : null;
      if (ctl) {
        fieldError(ctl, err.message);
        ctl.focus();
      } else {
        status.textContent = err.field ? `${err.message} (field: ${err.field})` : err.message;
        status.hidden = false;
      }
    } finally {
      submit.disabled = false;
    }
  });
  return {
    el,
    setGroups(names) {
      const cur = c.resource_group.value;
      c.resource_group.replaceChildren(...names.map((n) => h('option', { value: n }, n)));
      if (names.includes(cur)) c.resource_group.value = cur;
    },
  };
}
