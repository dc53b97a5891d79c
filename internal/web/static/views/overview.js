// Overview: cluster capacity against occupancy per slot type, sessions by
// status, the queue of each resource group, a live feed of status
// changes, and a group's utilisation over the last hour, day or week. Everything is computed from three listings in one pass, so
// 1,000 agents and 10,000 sessions draw in a few milliseconds; the
// listings are fetched again, at most every two seconds, when the event
// stream reports changes.

import { follow, get } from '../api.js';
import { fill, h } from '../dom.js';
import { bars, lines, meter } from '../charts.js';
import { STATUSES, amount, clock, goDuration, isBytes, pct, quantity, short } from '../format.js';
import { badge, banner, reloader, section } from './common.js';

const FEED_MAX = 50;
const RANGES = { '1h': 3600e3, '24h': 24 * 3600e3, '7d': 7 * 24 * 3600e3 };
// The manager samples every 10 s; a minute keeps the chart current
// without a request per sample.
const UTIL_REFRESH_MS = 60e3;

export function render(ctx) {
  const { main } = ctx;
  const capacity = h('div', { class: 'capacity', id: 'capacity' }, h('p', { class: 'muted' }, 'Loading…'));
  const byStatus = h('div', { id: 'by-status' });
  const queues = h('div', { id: 'queues' });
  const tiles = h('div', { class: 'tiles', id: 'tiles' });
  const feed = h('ol', { class: 'feed', id: 'feed', 'aria-live': 'polite' });
  const error = h('div');
  const util = utilisation(ctx);
  main.append(h('h1', null, 'Overview'), error, tiles,
    h('div', { class: 'grid' },
      section('Capacity and occupancy', capacity),
      section(ctx.admin ? 'Sessions by status' : 'Your sessions by status', byStatus),
      section('Queue per resource group', queues),
      section('Live status changes', feed, h('p', { class: 'muted', id: 'feed-empty' }, 'Waiting for changes…'))),
    util.node);

  const load = async () => {
    const t0 = performance.now();
    let agents, sessions, groups;
    try {
      [agents, sessions, groups] = await Promise.all([get('/v1/agents'), get('/v1/sessions?limit=10000&order=newest'),
        get('/v1/resource-groups')]);
    } catch (err) {
      fill(error, banner(err));
      return;
    }
    const t1 = performance.now();
    error.replaceChildren();
    draw(agents.items || [], sessions.items || [], groups.items || []);
    util.groups((groups.items || []).map((g) => g.name));
    const t2 = performance.now();
    main.dataset.loadMs = String(Math.round(t1 - t0));
    main.dataset.drawMs = String(Math.round(t2 - t1));
    main.dataset.agents = String((agents.items || []).length);
    main.dataset.sessions = String((sessions.items || []).length);
  };

  function draw(agents, sessions, groups) {
    // Capacity counts ALIVE agents only: a lost agent's slots cannot be
    // used, and showing them as free would mislead.
    const sums = new Map();
    let alive = 0;
    let schedulable = 0;
    for (const a of agents) {
      if (a.status !== 'ALIVE') continue;
      alive++;
      if (a.schedulable) schedulable++;
      for (const [slot, v] of Object.entries(a.available_slots || {})) {
        const e = sums.get(slot) || { cap: 0, used: 0, raw: [] };
        e.cap += quantity(v);
        e.used += quantity((a.occupied_slots || {})[slot]);
        if (e.raw.length < 4) e.raw.push(v);
        sums.set(slot, e);
      }
    }
    const rows = [...sums.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([slot, e]) => {
      const b = isBytes(slot, e.raw);
      const text = `${amount(e.used, b)} / ${amount(e.cap, b)} (${pct(e.used, e.cap)}%)`;
      return h('div', { class: 'cap-row', dataset: { slot } }, h('span', { class: 'cap-slot' }, slot),
        meter(e.used, e.cap, text, slot));
    });
    fill(capacity, rows.length ? rows : h('p', { class: 'muted' }, 'No live agents.'));

    const counts = Object.fromEntries(STATUSES.map((st) => [st, 0]));
    const pending = new Map(groups.map((g) => [g.name, 0]));
    for (const se of sessions) {
      counts[se.status] = (counts[se.status] || 0) + 1;
      if (se.status === 'PENDING') pending.set(se.resource_group, (pending.get(se.resource_group) || 0) + 1);
    }
    fill(byStatus, bars(STATUSES.map((st) => [st, counts[st], 'st-' + st]), { title: 'Sessions by status' }));
    fill(queues, pending.size
      ? bars([...pending.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([g, n]) => [g, n, 'st-PENDING']),
        { title: 'Pending sessions per resource group' })
      : h('p', { class: 'muted' }, 'No resource groups.'));

    const running = counts.RUNNING;
    const live = sessions.length - counts.TERMINATED - counts.CANCELLED - counts.ERROR;
    fill(tiles,
      tile('Agents alive', `${alive} / ${agents.length}`, 'tile-agents'),
      tile('Schedulable', String(schedulable), 'tile-schedulable'),
      tile('Running sessions', String(running), 'tile-running'),
      tile('Pending sessions', String(counts.PENDING), 'tile-pending'),
      tile('Live sessions', String(live), 'tile-live'));
  }

  const poke = reloader(load, 2000);
  ctx.onLeave(poke.stop);
  load();

  const stop = follow('', (event, c) => {
    if (event !== 'session' && event !== 'kernel') return;
    document.getElementById('feed-empty')?.remove();
    feed.prepend(feedItem(event, c));
    while (feed.children.length > FEED_MAX) feed.lastChild.remove();
    poke();
  }, ctx.setLive);
  ctx.onLeave(stop);
}

// utilisation is the chart of one group's used fraction per slot over a
// chosen range, with its controls. groups() offers the group names the
// overview listed; the chart loads once it knows them.
function utilisation(ctx) {
  const group = h('select', { id: 'util-group' });
  const range = h('select', { id: 'util-range' },
    h('option', { value: '1h' }, 'Last hour'), h('option', { value: '24h' }, 'Last 24 hours'),
    h('option', { value: '7d' }, 'Last 7 days'));
  const chart = h('div', { id: 'utilisation', class: 'utilisation', 'aria-live': 'polite' });
  const legend = h('ul', { class: 'legend', id: 'util-legend' });
  const node = h('section', { class: 'card' }, h('h2', null, 'Utilisation over time'),
    h('div', { class: 'util-controls' },
      h('span', { class: 'util-control' }, h('label', { for: 'util-group' }, 'Resource group'), group),
      h('span', { class: 'util-control' }, h('label', { for: 'util-range' }, 'Range'), range)),
    chart, legend);
  let seq = 0;
  const load = async () => {
    if (!group.value) return;
    const mine = ++seq;
    const to = Date.now();
    const from = to - RANGES[range.value];
    const q = new URLSearchParams({ from: new Date(from).toISOString(), to: new Date(to).toISOString() });
    let u;
    try {
      u = await get(`/v1/resource-groups/${encodeURIComponent(group.value)}/utilisation?${q}`);
    } catch (err) {
      if (mine === seq) { fill(chart, banner(err)); legend.replaceChildren(); }
      return;
    }
    if (mine !== seq) return; // a later choice answered first
    const series = u.series || [];
    chart.dataset.range = range.value;
    chart.dataset.group = u.resource_group;
    chart.dataset.points = String(series.reduce((n, se) => n + se.points.length, 0));
    if (!series.length) {
      fill(chart, h('p', { class: 'muted' }, 'No samples in this range yet: the manager samples every 10 seconds.'));
      legend.replaceChildren();
      return;
    }
    const width = Math.max(320, chart.clientWidth || 900);
    fill(chart, lines(series, { from, to, step: goDuration(u.step), width,
      title: `Used share of capacity per slot in ${u.resource_group}, ${range.selectedOptions[0].textContent.toLowerCase()}` }));
    fill(legend, series.map((se, i) => {
      const last = se.points[se.points.length - 1];
      return h('li', { dataset: { slot: se.slot } }, h('span', { class: 'swatch c-' + (i % 6), 'aria-hidden': 'true' }),
        `${se.slot} ${pct(last.occupied, last.capacity)}%`, h('span', { class: 'muted' }, ` at ${clock(last.at)}`));
    }));
  };
  group.addEventListener('change', load);
  range.addEventListener('change', load);
  const timer = setInterval(load, UTIL_REFRESH_MS);
  ctx.onLeave(() => clearInterval(timer));
  return {
    node,
    groups(names) {
      const have = [...group.options].map((o) => o.value);
      if (names.length === have.length && names.every((n, i) => n === have[i])) return;
      const keep = group.value || (names.includes('default') ? 'default' : names[0]);
      fill(group, names.map((n) => h('option', { value: n }, n)));
      if (names.includes(keep)) group.value = keep;
      load();
    },
  };
}

function tile(label, value, id) {
  return h('div', { class: 'tile', id }, h('span', { class: 'tile-value' }, value), h('span', { class: 'tile-label' }, label));
}

function feedItem(kind, c) {
  return h('li', { class: 'feed-item' },
    h('time', { datetime: c.at }, clock(c.at)), ' ',
    h('span', { class: 'kind' }, kind === 'kernel' ? 'kernel ' + short(c.kernel_id) : 'session'), ' ',
    h('a', { href: '#/sessions/' + encodeURIComponent(c.session_id) }, short(c.session_id)), ' ',
    c.from ? badge(c.from) : null, c.from ? ' → ' : '', badge(c.to),
    c.reason ? h('span', { class: 'muted reason' }, ' ' + c.reason) : null);
}
