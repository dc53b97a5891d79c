// Deployments: the list of model-serving deployments with their replicas
// wanted and serving, and one deployment's page: its spec, its routes
// with their health and sessions, its history, a replicas control, a
// rolling update, its autoscaling rule, the tokens that open its proxy,
// and destroy behind a second click. Both redraw on session events (a
// route's session moving is what changes a route) and every few seconds,
// since health checks change routes without any session event.

import { APIError, call, follow, get } from '../api.js';
import { fieldError, fill, h, labelled } from '../dom.js';
import { ago, short, slotsText, time } from '../format.js';
import { badge, banner, hint, reloader, section } from './common.js';

const TICK = 3000;

// follower redraws a page on session events and on a timer, and stops
// both when the user navigates away.
function follower(ctx, load) {
  const poke = reloader(load, 300);
  ctx.onLeave(poke.stop);
  const tick = setInterval(poke, TICK);
  ctx.onLeave(() => clearInterval(tick));
  ctx.onLeave(follow('', (event) => { if (event === 'session') poke(); }, ctx.setLive));
  load();
  return poke;
}

function healthy(d) {
  return (d.routes || []).filter((r) => r.status === 'HEALTHY').length;
}

export function render(ctx) {
  const { main, admin } = ctx;
  const error = h('div');
  const tbody = h('tbody', { id: 'deployment-rows' });
  const count = h('p', { class: 'muted', id: 'deployment-count', 'aria-live': 'polite' });
  const all = h('input', { type: 'checkbox', id: 'd-all' });
  all.addEventListener('change', () => poke());
  main.append(h('h1', null, 'Deployments'), error,
    section('Deployments', h('form', { class: 'filters', 'aria-label': 'Filter deployments' },
      h('div', { class: 'field check' }, all, h('label', { for: 'd-all' }, 'Include destroyed'))), count,
    h('div', { class: 'scroll' }, h('table', { class: 'list', id: 'deployments' },
      h('thead', null, h('tr', null, ...['Name', admin ? 'Owner' : null, 'Status', 'Replicas (healthy / desired)', 'Image',
        'Resource group', 'Status since'].filter(Boolean).map((t) => h('th', null, t)))),
      tbody))),
    section('New deployment', createForm((d) => { location.hash = '#/deployments/' + encodeURIComponent(d.id); })));

  const load = async () => {
    try {
      const out = await get('/v1/deployments' + (all.checked ? '?all=true' : ''));
      error.replaceChildren();
      const items = out.items || [];
      const now = Date.now();
      fill(tbody, items.map((d) => h('tr', { dataset: { id: d.id, name: d.name, status: d.status } },
        h('td', null, h('a', { href: '#/deployments/' + encodeURIComponent(d.id) }, d.name), ' ',
          h('span', { class: 'mono muted small' }, short(d.id))),
        admin ? h('td', { class: 'owner' }, d.owner) : null,
        h('td', null, badge(d.status)),
        h('td', { class: 'replicas' }, `${healthy(d)} / ${d.replicas}`),
        h('td', { class: 'mono' }, d.image), h('td', null, d.resource_group || '—'),
        h('td', null, h('time', { datetime: d.status_changed_at, title: time(d.status_changed_at) }, ago(d.status_changed_at, now))))));
      count.textContent = items.length ? `${items.length} deployments` : 'No deployments yet.';
    } catch (err) {
      fill(error, banner(err));
    }
  };
  const poke = follower(ctx, load);
}

// createForm is the short form of POST /v1/deployments: what most
// deployments set. Autoscaling is set on the deployment's page once it
// exists.
function createForm(created) {
  const c = {
    name: h('input', { type: 'text', required: true, autocomplete: 'off', spellcheck: 'false' }),
    image: h('input', { type: 'text', required: true, autocomplete: 'off', spellcheck: 'false' }),
    replicas: h('input', { type: 'number', min: 0, max: 64, value: 1 }),
    cpu: h('input', { type: 'text', placeholder: 'group default', size: 6 }),
    mem: h('input', { type: 'text', placeholder: 'group default', size: 6 }),
    health: h('input', { type: 'text', placeholder: '/health', spellcheck: 'false' }),
    interval: h('input', { type: 'text', placeholder: '10s', size: 6 }),
    delay: h('input', { type: 'text', placeholder: '30s', size: 6 }),
  };
  const status = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const form = h('form', { id: 'create-deployment', novalidate: true },
    h('div', { class: 'row' }, labelled('cd-name', 'Name', c.name), labelled('cd-image', 'Image', c.image),
      labelled('cd-replicas', 'Replicas', c.replicas), labelled('cd-cpu', 'cpu per replica', c.cpu),
      labelled('cd-mem', 'mem per replica', c.mem)),
    h('div', { class: 'row' }, labelled('cd-health', 'Health check path', c.health),
      labelled('cd-interval', 'Check every', c.interval), labelled('cd-delay', 'First check after', c.delay)),
    status, h('button', { type: 'submit', class: 'primary' }, 'Create deployment'));
  const fieldFor = (path) => {
    if (path === 'resources.cpu') return c.cpu;
    if (path === 'resources.mem') return c.mem;
    if (path === 'health_check.interval') return c.interval;
    if (path === 'health_check.initial_delay') return c.delay;
    if (path.startsWith('health_check')) return c.health;
    return c[path.split(/[.[]/)[0]] || null;
  };
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    for (const ctl of Object.values(c)) fieldError(ctl, '');
    status.hidden = true;
    const body = { name: c.name.value.trim(), image: c.image.value.trim() };
    const replicas = Number(c.replicas.value);
    if (!Number.isInteger(replicas)) { fieldError(c.replicas, 'must be a whole number'); return; }
    body.replicas = replicas;
    const res = {};
    if (c.cpu.value.trim()) res.cpu = c.cpu.value.trim();
    if (c.mem.value.trim()) res.mem = c.mem.value.trim();
    if (Object.keys(res).length) body.resources = res;
    const hc = {};
    if (c.health.value.trim()) hc.path = c.health.value.trim();
    if (c.interval.value.trim()) hc.interval = c.interval.value.trim();
    if (c.delay.value.trim()) hc.initial_delay = c.delay.value.trim();
    if (Object.keys(hc).length) body.health_check = hc;
    try {
      created(await call('POST', '/v1/deployments', body));
    } catch (err) {
      const ctl = err instanceof APIError && err.field ? fieldFor(err.field) : null;
      if (ctl) fieldError(ctl, err.message);
      else { status.textContent = err.message; status.hidden = false; }
    }
  });
  return form;
}

export function renderOne(ctx) {
  const { main, params } = ctx;
  const id = params[0];
  const path = '/v1/deployments/' + encodeURIComponent(id);
  const title = h('h1', null, 'Deployment ', h('span', { class: 'mono' }, short(id)));
  const error = h('div');
  const facts = h('dl', { class: 'facts', id: 'deployment-facts' });
  const controls = h('div', { id: 'deployment-controls' });
  const routes = h('div', { id: 'routes' });
  const history = h('div', { id: 'deployment-history' });
  const update = updateForm(path, () => poke());
  const auto = autoscaleForm(path, () => poke());
  const tokens = tokensPanel(path, () => poke());
  main.append(h('p', null, h('a', { href: '#/deployments' }, '← Deployments')), title, error,
    h('div', { class: 'grid' }, section('Spec', facts), section('Replicas', controls)),
    h('div', { class: 'grid' }, section('Update', update.el), section('Autoscaling', auto.el)),
    section('Routes', routes), section('Proxy tokens', tokens.el), section('History', history));

  // The replicas field keeps what the user is typing across redraws.
  const replicas = h('input', { type: 'number', min: 0, max: 64 });
  const scaleStatus = h('p', { class: 'form-ok', role: 'status', hidden: true });
  const scaleBtn = h('button', { type: 'submit', class: 'primary' }, 'Scale');
  const scale = h('form', { id: 'scale', class: 'row bottom', novalidate: true },
    labelled('d-replicas', 'Replicas', replicas, '0 to 64'), scaleBtn);
  const destroyBtn = h('button', { type: 'button', class: 'danger', id: 'destroy' }, 'Destroy…');
  const confirmBox = h('div', { id: 'destroy-confirm', class: 'confirm', role: 'group', 'aria-labelledby': 'destroy-q', hidden: true });
  const opStatus = h('p', { class: 'form-error', role: 'alert', hidden: true });
  fill(controls, scale, scaleStatus, h('div', { class: 'row' }, destroyBtn), confirmBox, opStatus);

  let last = null;
  let edited = false;
  replicas.addEventListener('input', () => { edited = true; });

  scale.addEventListener('submit', async (e) => {
    e.preventDefault();
    fieldError(replicas, '');
    scaleStatus.hidden = true;
    const n = Number(replicas.value);
    if (replicas.value === '' || !Number.isInteger(n)) { fieldError(replicas, 'must be a whole number'); return; }
    scaleBtn.disabled = true;
    try {
      await call('PATCH', path, { replicas: n });
      edited = false;
      scaleStatus.textContent = `Scaling to ${n}.`;
      scaleStatus.hidden = false;
    } catch (err) {
      if (err instanceof APIError && err.field === 'replicas') fieldError(replicas, err.message);
      else { opStatus.textContent = err.message; opStatus.hidden = false; }
    }
    scaleBtn.disabled = false;
    poke();
  });

  // Destroy asks once more, naming the deployment, before it acts; the
  // focus moves to the question so a keyboard user hears it.
  destroyBtn.addEventListener('click', () => {
    const yes = h('button', { type: 'button', class: 'danger', id: 'destroy-yes' }, 'Destroy it');
    const no = h('button', { type: 'button', id: 'destroy-no' }, 'Keep it');
    fill(confirmBox, h('p', { id: 'destroy-q' }, `Destroy ${last ? last.name : id}? Every route's session ends.`),
      h('div', { class: 'row' }, yes, no));
    confirmBox.hidden = false;
    destroyBtn.disabled = true;
    no.addEventListener('click', () => { confirmBox.hidden = true; destroyBtn.disabled = false; destroyBtn.focus(); });
    confirmBox.onkeydown = (e) => { if (e.key === 'Escape') no.click(); };
    yes.addEventListener('click', async () => {
      yes.disabled = true;
      try {
        await call('DELETE', path);
        confirmBox.hidden = true;
      } catch (err) {
        opStatus.textContent = err.message;
        opStatus.hidden = false;
      }
      poke();
    });
    yes.focus();
  });

  const load = async () => {
    let d, hist, toks;
    try {
      [d, hist, toks] = await Promise.all([get(path), get(path + '/history'), get(path + '/tokens')]);
    } catch (err) {
      fill(error, banner(err instanceof APIError && err.status === 404 ? 'No such deployment (or not yours).' : err));
      return;
    }
    error.replaceChildren();
    last = d;
    main.dataset.status = d.status;
    main.dataset.routes = String((d.routes || []).length);
    fill(title, d.name, ' ', h('span', { class: 'mono muted' }, short(d.id)), ' ', badge(d.status));
    drawFacts(d);
    const ending = d.status === 'DESTROYING' || d.status === 'DESTROYED';
    if (!edited) replicas.value = String(d.replicas);
    replicas.disabled = ending;
    scaleBtn.disabled = ending;
    destroyBtn.hidden = ending;
    update.draw(d, ending);
    auto.draw(d, ending);
    tokens.draw(d, toks.items || [], ending);
    drawRoutes(d);
    drawHistory(hist.items || []);
  };

  function drawFacts(d) {
    const row = (k, v) => [h('dt', null, k), h('dd', null, v === '' || v === null || v === undefined ? '—' : v)];
    const hc = d.health_check || {};
    const as = d.autoscale;
    fill(facts,
      row('ID', h('span', { class: 'mono' }, d.id)), row('Owner', d.owner),
      row('Image', h('span', { class: 'mono' }, d.image)), row('Per replica', slotsText(d.resources)),
      row('Resource group', d.resource_group), row('Replicas', `${healthy(d)} healthy of ${d.replicas} desired`),
      row('Revision', String(d.revision)), row('Max surge', String(d.max_surge)),
      row('Health check', `GET ${hc.path || '/health'}` + (hc.port ? ` on port ${hc.port}` : '') +
        ` every ${hc.interval || '10s'} (timeout ${hc.timeout || '5s'})`),
      as ? row('Autoscale', `${as.min}–${as.max} replicas, ${as.target} requests in flight each, ` +
        `at most one change every ${as.cooldown || '60s'}`) : null,
      d.command && d.command.length ? row('Command', h('span', { class: 'mono' }, d.command.join(' '))) : null,
      d.start_failures ? row('Start failures', `${d.start_failures} in a row` +
        (d.next_start_at ? `; next try ${time(d.next_start_at)}` : '')) : null,
      row('Created', time(d.created_at)), row('Status since', `${time(d.status_changed_at)} (${ago(d.status_changed_at)})`));
  }

  function drawRoutes(d) {
    const rs = d.routes || [];
    if (!rs.length) { fill(routes, h('p', { class: 'muted' }, 'No routes.')); return; }
    const rows = rs.map((r) => h('tr', { dataset: { route: r.id, status: r.status } },
      h('td', { class: 'mono' }, short(r.id)), h('td', null, badge(r.status)),
      h('td', null, r.session_id ? h('a', { href: '#/sessions/' + encodeURIComponent(r.session_id), class: 'mono' }, short(r.session_id)) : '—',
        r.session_status ? [' ', badge(r.session_status)] : null),
      h('td', { class: 'mono' }, r.endpoint || '—'), h('td', null, String(r.revision)),
      h('td', null, r.status_reason || '—',
        (r.blockers || []).map((b) => h('div', { class: 'blocker', dataset: { kind: b.kind } },
          h('p', null, b.message || b.kind), h('p', { class: 'hint' }, hint(b))))),
      h('td', null, h('time', { datetime: r.status_changed_at, title: time(r.status_changed_at) }, ago(r.status_changed_at)))));
    fill(routes, h('div', { class: 'scroll' }, h('table', { class: 'list' },
      h('thead', null, h('tr', null, ...['Route', 'Health', 'Session', 'Endpoint', 'Revision', 'Reason', 'Since'].map((t) => h('th', null, t)))),
      h('tbody', { id: 'route-rows' }, rows))));
  }

  function drawHistory(items) {
    if (!items.length) { fill(history, h('p', { class: 'muted' }, 'Nothing yet.')); return; }
    fill(history, h('div', { class: 'scroll' }, h('table', { class: 'list' },
      h('thead', null, h('tr', null, ...['At', 'Route', 'Handler', 'Result', 'From → to', 'Message'].map((t) => h('th', null, t)))),
      h('tbody', null, items.slice(-200).reverse().map((x) => h('tr', { dataset: { result: x.result } },
        h('td', null, time(x.at)), h('td', { class: 'mono' }, x.route ? short(x.route) : '—'), h('td', null, x.handler),
        h('td', null, h('span', { class: x.result === 'SUCCESS' ? 'badge ok' : 'badge warn' }, x.result)),
        h('td', null, `${x.from || '—'} → ${x.to || '—'}`), h('td', null, x.message || '—')))))));
  }

  const poke = follower(ctx, load);
}

// showError puts an API error beside the control it names (fieldFor maps
// the API's field path to a control), or else in the form's status line.
function showError(err, fieldFor, status) {
  const ctl = err instanceof APIError && err.field ? fieldFor(err.field) : null;
  if (ctl) fieldError(ctl, err.message);
  else { status.textContent = err.message; status.hidden = false; }
}

// updateForm is PATCH /v1/deployments/{id} with a new spec, as `sokovan
// deploy update` sends it: only the fields filled in change, and a change
// of image, command, resources or env rolls out a new revision one route
// at a time. The API replaces resources whole, so cpu or mem alone is
// sent with the other slots as they are.
function updateForm(path, changed) {
  const c = {
    image: h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' }),
    command: h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', placeholder: 'unchanged' }),
    cpu: h('input', { type: 'text', size: 6 }),
    mem: h('input', { type: 'text', size: 6 }),
    env: h('textarea', { rows: 3, spellcheck: 'false', placeholder: 'NAME=VALUE, one a line' }),
    surge: h('input', { type: 'number', min: 1, max: 64 }),
  };
  const ok = h('p', { class: 'form-ok', role: 'status', hidden: true });
  const status = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Roll out');
  let current = {};
  const form = h('form', { id: 'update-deployment', novalidate: true },
    h('div', { class: 'row' }, labelled('du-image', 'Image', c.image), labelled('du-command', 'Command', c.command)),
    h('div', { class: 'row' }, labelled('du-cpu', 'cpu per replica', c.cpu), labelled('du-mem', 'mem per replica', c.mem),
      labelled('du-surge', 'Max surge', c.surge, 'routes beyond the replicas while rolling out')),
    labelled('du-env', 'Environment', c.env, 'replaces the whole environment when given'),
    ok, status, submit);
  const fieldFor = (p) => {
    if (p === 'max_surge') return c.surge;
    if (p === 'resources.mem') return c.mem;
    if (p.startsWith('resources')) return c.cpu;
    return c[p.split(/[.[]/)[0]] || null;
  };
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    for (const ctl of Object.values(c)) fieldError(ctl, '');
    ok.hidden = true;
    status.hidden = true;
    const body = {};
    const v = (ctl) => ctl.value.trim();
    if (v(c.image)) body.image = v(c.image);
    if (v(c.command)) body.command = v(c.command).split(/\s+/);
    const res = {};
    if (v(c.cpu)) res.cpu = v(c.cpu);
    if (v(c.mem)) res.mem = v(c.mem);
    if (Object.keys(res).length) body.resources = { ...current, ...res };
    if (v(c.env)) {
      const env = {};
      for (const line of v(c.env).split('\n').map((l) => l.trim()).filter(Boolean)) {
        const eq = line.indexOf('=');
        if (eq <= 0) { fieldError(c.env, `"${line}" is not NAME=VALUE`); return; }
        env[line.slice(0, eq)] = line.slice(eq + 1);
      }
      body.env = env;
    }
    if (v(c.surge)) {
      const n = Number(v(c.surge));
      if (!Number.isInteger(n)) { fieldError(c.surge, 'must be a whole number'); return; }
      body.max_surge = n;
    }
    if (!Object.keys(body).length) { status.textContent = 'Nothing to change: fill in what should change.'; status.hidden = false; return; }
    submit.disabled = true;
    try {
      const d = await call('PATCH', path, body);
      for (const ctl of Object.values(c)) ctl.value = '';
      ok.textContent = body.image || body.command || body.resources || body.env
        ? `Rolling out revision ${d.revision}.` : 'Saved.';
      ok.hidden = false;
    } catch (err) {
      showError(err, fieldFor, status);
    }
    submit.disabled = false;
    changed();
  });
  return {
    el: form,
    // draw shows the current spec as the fields' placeholders, so an
    // empty field reads as "unchanged".
    draw(d, ending) {
      current = d.resources || {};
      c.image.placeholder = d.image;
      c.cpu.placeholder = (d.resources && d.resources.cpu) || 'unchanged';
      c.mem.placeholder = (d.resources && d.resources.mem) || 'unchanged';
      c.surge.placeholder = String(d.max_surge);
      for (const ctl of Object.values(c)) ctl.disabled = ending;
      submit.disabled = ending;
    },
  };
}

// autoscaleForm sets or turns off the deployment's autoscaling rule
// (PATCH with autoscale; max 0 turns it off, as in `sokovan deploy
// update --autoscale-max 0`).
function autoscaleForm(path, changed) {
  const c = {
    min: h('input', { type: 'number', min: 1, max: 64, value: 1 }),
    max: h('input', { type: 'number', min: 1, max: 64 }),
    target: h('input', { type: 'text', size: 6, placeholder: '2', spellcheck: 'false' }),
    cooldown: h('input', { type: 'text', size: 6, placeholder: '60s', spellcheck: 'false' }),
  };
  const state = h('p', { class: 'muted', id: 'autoscale-state' });
  const ok = h('p', { class: 'form-ok', role: 'status', hidden: true });
  const status = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const save = h('button', { type: 'submit', class: 'primary' }, 'Save autoscaling');
  const off = h('button', { type: 'button', id: 'autoscale-off', hidden: true }, 'Turn off');
  const form = h('form', { id: 'autoscale', novalidate: true }, state,
    h('div', { class: 'row' }, labelled('da-min', 'Min replicas', c.min), labelled('da-max', 'Max replicas', c.max),
      labelled('da-target', 'Target', c.target, 'requests in flight per route'),
      labelled('da-cooldown', 'Cooldown', c.cooldown, 'least time between changes')),
    ok, status, h('div', { class: 'row' }, save, off));
  let edited = false;
  for (const ctl of Object.values(c)) ctl.addEventListener('input', () => { edited = true; });
  const fieldFor = (p) => c[p.replace(/^autoscale\./, '')] || null;
  const send = async (rule, done) => {
    for (const ctl of Object.values(c)) fieldError(ctl, '');
    ok.hidden = true;
    status.hidden = true;
    save.disabled = true;
    off.disabled = true;
    try {
      await call('PATCH', path, { autoscale: rule });
      edited = false;
      ok.textContent = done;
      ok.hidden = false;
    } catch (err) {
      showError(err, fieldFor, status);
    }
    save.disabled = false;
    off.disabled = false;
    changed();
  };
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const min = Number(c.min.value), max = Number(c.max.value);
    if (!Number.isInteger(min)) { fieldError(c.min, 'must be a whole number'); return; }
    if (c.max.value === '' || !Number.isInteger(max)) { fieldError(c.max, 'must be a whole number'); return; }
    send({ min, max, target: c.target.value.trim(), cooldown: c.cooldown.value.trim() }, 'Autoscaling saved.');
  });
  off.addEventListener('click', () => send({ min: 0, max: 0, target: '' }, 'Autoscaling turned off.'));
  return {
    el: form,
    draw(d, ending) {
      const a = d.autoscale;
      state.textContent = a ? `On: ${a.min} to ${a.max} replicas, sized for ${a.target} requests in flight each.`
        : 'Off: the replicas stay as set.';
      if (!edited) {
        c.min.value = a ? String(a.min) : '1';
        c.max.value = a ? String(a.max) : '';
        c.target.value = a ? a.target : '';
        c.cooldown.value = a ? a.cooldown : '';
      }
      off.hidden = !a;
      for (const ctl of Object.values(c)) ctl.disabled = ending;
      save.disabled = ending;
    },
  };
}

// tokensPanel lists the tokens that open the deployment's proxy and
// nothing else, creates one (its value is in the answer to that call
// only, so it is shown once, here) and revokes one.
function tokensPanel(path, changed) {
  const create = h('button', { type: 'button', id: 'token-create' }, 'Create token');
  const fresh = h('div', { id: 'token-new', class: 'notice', role: 'status', hidden: true });
  const status = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const list = h('div', { id: 'tokens' });
  let ref = '';
  create.addEventListener('click', async () => {
    create.disabled = true;
    status.hidden = true;
    try {
      const t = await call('POST', path + '/tokens');
      const done = h('button', { type: 'button', id: 'token-done' }, 'I have kept it');
      fill(fresh, h('p', null, 'Keep this token now: it is not shown again.'),
        h('p', null, h('code', { class: 'mono', id: 'token-value' }, t.token)),
        h('p', { class: 'hint' }, `It opens /v1/deployments/${ref}/proxy/… and nothing else: `,
          h('code', { class: 'mono' }, `curl -H "Authorization: Bearer …" ${location.origin}/v1/deployments/${ref}/proxy/`)),
        done);
      done.addEventListener('click', () => { fresh.replaceChildren(); fresh.hidden = true; create.focus(); });
      fresh.hidden = false;
    } catch (err) {
      status.textContent = err.message;
      status.hidden = false;
    }
    create.disabled = false;
    changed();
  });
  const revoke = async (b, id) => {
    b.disabled = true;
    status.hidden = true;
    try {
      await call('DELETE', path + '/tokens/' + encodeURIComponent(id));
    } catch (err) {
      status.textContent = err.message;
      status.hidden = false;
      b.disabled = false;
    }
    changed();
  };
  return {
    el: h('div', null, h('p', { class: 'muted' }, 'A token here opens this deployment\'s proxy and nothing else, for clients of the model.'),
      h('div', { class: 'row' }, create), fresh, status, list),
    draw(d, items, ending) {
      ref = d.name;
      create.disabled = ending;
      if (!items.length) { fill(list, h('p', { class: 'muted' }, 'No tokens.')); return; }
      fill(list, h('div', { class: 'scroll' }, h('table', { class: 'list' },
        h('thead', null, h('tr', null, ...['Token', 'Status', 'Created', 'Revoked', ''].map((t) => h('th', null, t)))),
        h('tbody', { id: 'token-rows' }, items.map((t) => {
          const revoked = !!t.revoked_at;
          let cell = null;
          if (!revoked) {
            const b = h('button', { type: 'button', class: 'danger', dataset: { verb: 'revoke' }, 'aria-label': 'Revoke token ' + short(t.id) }, 'Revoke');
            b.addEventListener('click', () => revoke(b, t.id));
            cell = b;
          }
          return h('tr', { dataset: { id: t.id, status: revoked ? 'revoked' : 'valid' } },
            h('td', { class: 'mono' }, short(t.id)), h('td', null, revoked ? 'revoked' : 'valid'),
            h('td', null, time(t.created_at)), h('td', null, revoked ? time(t.revoked_at) : '—'), h('td', null, cell));
        })))));
    },
  };
}
