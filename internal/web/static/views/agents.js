// Agents: each agent's capacity against occupancy per slot, status,
// drain progress and last heartbeat; admins get cordon, uncordon and a
// drain form with a deadline. Redrawn on
// kernel events (occupancy moves with them) and every five seconds, so
// "last heartbeat" stays honest.

import { APIError, call, follow, get } from '../api.js';
import { fieldError, fill, h, labelled, select } from '../dom.js';
import { meter } from '../charts.js';
import { amount, ago, clock, isBytes, pct, quantity, time } from '../format.js';
import { badge, banner, reloader, section, timed } from './common.js';

// PAGE bounds the rows drawn at once: a thousand rows of bars take the
// browser most of a second to lay out, and nobody reads them all.
const PAGE = 200;

export function render(ctx) {
  const { main, admin } = ctx;
  let all = [];
  let shown = PAGE;
  const fGroup = select([['', 'any group']], '');
  const fText = h('input', { type: 'search', placeholder: 'agent id' });
  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter agents' },
    labelled('a-group', 'Resource group', fGroup), labelled('a-text', 'Search', fText));
  filters.addEventListener('submit', (e) => e.preventDefault());
  fGroup.addEventListener('change', () => { shown = PAGE; draw(); });
  fText.addEventListener('input', () => { shown = PAGE; draw(); });
  const more = h('button', { type: 'button', hidden: true }, 'Show more');
  more.addEventListener('click', () => { shown += PAGE; draw(); });
  const error = h('div');
  const tbody = h('tbody', { id: 'agent-rows' });
  const count = h('p', { class: 'muted', 'aria-live': 'polite' });
  // The drain form lives outside the table, which redraws every few
  // seconds and would lose what the admin is typing.
  const drain = admin ? drainForm(() => poke()) : null;
  main.append(h('h1', null, 'Agents'), error, section('Agents', filters, count, h('div', { class: 'scroll' },
    h('table', { class: 'list', id: 'agents' },
      h('thead', null, h('tr', null, ...['Agent', 'Group', 'Status', 'Placement', 'Slots (occupied / capacity)', 'Kernels',
        'Last heartbeat'].map((t) => h('th', null, t)), admin ? h('th', null, 'Actions') : null)),
      tbody)), more), drain ? section('Drain an agent', drain.form) : null);

  function draw() {
    const group = fGroup.value;
    const text = fText.value.trim().toLowerCase();
    const now = Date.now();
    const match = all.filter((a) => (!group || a.resource_group === group) && (!text || a.id.toLowerCase().includes(text)));
    fill(tbody, match.slice(0, shown).map((a) => row(a, now)));
    count.textContent = match.length > shown ? `${shown} of ${match.length} agents` : `${match.length} agents`;
    more.hidden = match.length <= shown;
  }

  function row(a, now) {
    const slots = Object.keys(a.available_slots || {}).sort().map((slot) => {
      const cap = a.available_slots[slot];
      const used = (a.occupied_slots || {})[slot] || '0';
      const b = isBytes(slot, [cap, used]);
      const uq = quantity(used);
      const cq = quantity(cap);
      return h('div', { class: 'cap-row small', dataset: { slot } }, h('span', { class: 'cap-slot' }, slot),
        meter(uq, cq, `${amount(uq, b)} / ${amount(cq, b)} (${pct(uq, cq)}%)`, `${a.id} ${slot}`));
    });
    // Devices (issue 19): one chip per device, free or held, its holders
    // in the tooltip.
    const devices = (a.devices || []).length ? h('div', { class: 'devices small', dataset: { devices: String(a.devices.length) } },
      ...a.devices.map((d) => {
        const state = d.free === '1' ? 'free' : d.free === '0' ? 'held' : `${d.free} free`;
        const holders = (d.holders || []).map((x) => `${x.kernel || 'a kernel'} (${x.share})`).join(', ');
        return h('span', { class: d.free === '1' ? 'badge ok' : 'badge warn', title: holders || `${d.model || d.slot}` },
          `${d.id} ${state}`);
      })) : null;
    const placement = a.drain ? drainText(a.drain, now)
      : a.schedulable ? h('span', { class: 'badge ok' }, 'schedulable')
        : h('span', { class: 'badge warn' }, a.kernel_count > 0 ? 'cordoned (draining)' : 'cordoned');
    const actions = admin ? h('td', { class: 'actions' },
      a.schedulable ? act('Cordon', 'cordon', a) : act('Uncordon', 'uncordon', a),
      drainButton(a)) : null;
    const ds = { id: a.id, status: a.status, schedulable: String(a.schedulable) };
    if (a.drain) Object.assign(ds, { remaining: String(a.drain.remaining_kernels), drained: String(a.drain.drained) });
    return h('tr', { dataset: ds },
      h('td', { class: 'mono' }, a.id, h('div', { class: 'muted small' }, `${a.architecture} · ${a.runtime || '—'}`)),
      h('td', null, a.resource_group), h('td', null, badge(a.status)), h('td', { class: 'placement' }, placement),
      h('td', { class: 'slots' }, slots, devices),
      h('td', null, a.max_kernels ? `${a.kernel_count} / ${a.max_kernels}` : String(a.kernel_count)),
      h('td', null, h('time', { datetime: a.last_heartbeat || '', title: time(a.last_heartbeat) }, ago(a.last_heartbeat, now))),
      actions);
  }

  // drainButton hands the agent to the drain form, whose deadline field
  // takes the focus: draining again replaces the deadline.
  function drainButton(a) {
    const b = h('button', { type: 'button', class: 'small warn', dataset: { verb: 'drain' },
      'aria-label': `${a.drain ? 'Change the drain of' : 'Drain'} ${a.id}` }, a.drain ? 'Drain again…' : 'Drain…');
    b.addEventListener('click', () => drain.choose(a.id));
    return b;
  }

  function act(label, verb, a) {
    const b = h('button', { type: 'button', class: verb === 'uncordon' ? 'small' : 'small warn', dataset: { verb },
      'aria-label': `${label} ${a.id}` }, label);
    b.addEventListener('click', async () => {
      b.disabled = true;
      try {
        await call('POST', `/v1/agents/${encodeURIComponent(a.id)}/${verb}`);
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
      await timed(main, () => get('/v1/agents'), (list) => {
        all = list.items || [];
        const groups = [...new Set(all.map((a) => a.resource_group))].sort();
        if (fGroup.options.length !== groups.length + 1) {
          const cur = fGroup.value;
          fGroup.replaceChildren(h('option', { value: '' }, 'any group'), ...groups.map((g) => h('option', { value: g }, g)));
          fGroup.value = cur;
        }
        error.replaceChildren();
        if (drain) drain.agents(all.map((a) => a.id));
        draw();
      });
    } catch (err) {
      fill(error, banner(err));
    }
  };
  const poke = reloader(load, 500);
  ctx.onLeave(poke.stop);
  load();
  const tick = setInterval(poke, 5000);
  ctx.onLeave(() => clearInterval(tick));
  ctx.onLeave(follow('', (event) => { if (event === 'kernel') poke(); }, ctx.setLive));
}

// drainText is a drain's progress: the kernels still there and when the
// manager ends them, or that the agent is empty.
function drainText(d, now) {
  if (d.drained) return h('span', { class: 'drain' }, h('span', { class: 'badge ok' }, 'drained'), ' ',
    h('span', { class: 'muted small' }, 'no kernels left'));
  const left = `${d.remaining_kernels} kernel${d.remaining_kernels === 1 ? '' : 's'} left`;
  let when = 'no deadline: waits for them to end';
  if (d.deadline) {
    const ms = new Date(d.deadline).getTime() - now;
    when = ms > 0 ? `ends at ${clock(d.deadline)} (in ${Math.ceil(ms / 1000)}s)` : 'deadline passed: ending them';
  }
  return h('span', { class: 'drain' }, h('span', { class: 'badge warn' }, 'draining'), ' ', left,
    h('div', { class: 'muted small' }, when));
}

// drainForm drains one agent with an optional deadline (a Go duration;
// empty is none, 0s ends what runs at once). The API's 400 about the
// deadline shows beside the field.
function drainForm(done) {
  const agent = select([], '');
  const deadline = h('input', { type: 'text', placeholder: 'none', size: 8, spellcheck: 'false', autocomplete: 'off' });
  const status = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const ok = h('p', { class: 'form-ok', role: 'status', hidden: true });
  const button = h('button', { type: 'submit', class: 'warn' }, 'Drain');
  const form = h('form', { id: 'drain-form', class: 'row bottom', novalidate: true },
    labelled('drain-agent', 'Agent', agent), labelled('drain-deadline', 'Deadline', deadline,
      'how long its sessions may run on, such as 10m; empty waits for them, 0s ends them now'),
    button, status, ok);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    fieldError(deadline, '');
    status.hidden = true;
    ok.hidden = true;
    if (!agent.value) { status.textContent = 'Choose an agent.'; status.hidden = false; return; }
    const q = deadline.value.trim() ? '?deadline=' + encodeURIComponent(deadline.value.trim()) : '';
    button.disabled = true;
    try {
      await call('POST', `/v1/agents/${encodeURIComponent(agent.value)}/drain${q}`);
      ok.textContent = `${agent.value} is draining.`;
      ok.hidden = false;
    } catch (err) {
      if (err instanceof APIError && err.field === 'deadline') fieldError(deadline, err.message);
      else { status.textContent = err.message; status.hidden = false; }
    }
    button.disabled = false;
    done();
  });
  return {
    form,
    agents(ids) {
      if ([...agent.options].map((o) => o.value).join('\n') === ids.join('\n')) return;
      const cur = agent.value;
      agent.replaceChildren(...ids.map((id) => h('option', { value: id }, id)));
      if (ids.includes(cur)) agent.value = cur;
    },
    choose(id) {
      agent.value = id;
      deadline.focus();
    },
  };
}
