// My usage: what the caller's sessions hold and ask for (GET
// /v1/me/usage), and each user, project and domain policy over the
// caller as bars, what the policy's whole scope holds against its limit
// per slot. Reloaded on session events, at most every few seconds. Below,
// past use over time (GET /v1/usage): one line per user, project or
// group of the chosen slot's hours per step; a user's is their own only.

import { follow, get } from '../api.js';
import { fill, h } from '../dom.js';
import { lines, meter } from '../charts.js';
import { amount, isBytes, pct, quantity, slotsText } from '../format.js';
import { banner, reloader, section } from './common.js';

const GAP = 3000;

export function render(ctx) {
  const { main } = ctx;
  const error = h('div');
  const tiles = h('div', { class: 'tiles', id: 'usage-tiles' });
  const limits = h('div', { id: 'usage-limits' });
  const hist = history();
  main.append(h('h1', null, 'My usage'), error, tiles, limits, hist.node);

  const tile = (id, value, label) => h('div', { class: 'tile', id },
    h('span', { class: 'tile-value' }, value), h('span', { class: 'tile-label' }, label));

  // bar is one limit: used out of max, with what the caller's PENDING
  // sessions would add when the slot is one they ask for.
  function bar(key, usedStr, maxStr, label, asking) {
    const b = isBytes(key, [usedStr, maxStr]);
    const used = quantity(usedStr);
    const max = quantity(maxStr);
    const text = `${amount(used, b)} / ${amount(max, b)} (${pct(used, max)}%)`;
    return h('div', { class: 'cap-row', dataset: { slot: key } }, h('span', { class: 'cap-slot', title: key }, key),
      h('div', null, meter(used, max, text, label),
        asking ? h('p', { class: 'hint' }, `your pending sessions ask for ${amount(quantity(asking), b)} more`) : null));
  }

  function limitCard(l, u) {
    const scope = `${l.scope}: ${l.name}`;
    const rows = Object.keys(l.max_slots || {}).sort().map((slot) =>
      bar(slot, (l.used || {})[slot] || '0', l.max_slots[slot], `${scope} ${slot}`, (u.pending || {})[slot]));
    if (l.max_concurrent_sessions > 0) {
      rows.push(bar('sessions', String(l.concurrent_sessions), String(l.max_concurrent_sessions),
        `${scope} running sessions`, u.pending_sessions ? String(u.pending_sessions) : ''));
    }
    if (l.max_pending_sessions > 0) {
      rows.push(bar('pending', String(l.pending_sessions), String(l.max_pending_sessions), `${scope} pending sessions`));
    }
    const what = l.scope === 'user' ? 'your own sessions' : `every session of ${l.scope} ${l.name}`;
    return h('section', { class: 'card usage-limit', dataset: { scope: l.scope, name: l.name } },
      h('h2', null, scope),
      h('p', { class: 'muted small' }, `Held by ${what} against the policy's limit.`),
      rows.length ? rows : h('p', { class: 'muted' }, 'This policy sets no limit.'));
  }

  function draw(u) {
    fill(tiles,
      tile('usage-running', String(u.running_sessions), 'sessions holding resources'),
      tile('usage-pending', String(u.pending_sessions), 'sessions pending'),
      tile('usage-occupied', slotsText(u.occupied), 'held'),
      tile('usage-asking', slotsText(u.pending), 'asked for by pending sessions'));
    const cards = (u.limits || []).map((l) => limitCard(l, u));
    fill(limits, cards.length ? h('div', { class: 'grid' }, cards)
      : section('Policies', h('p', { class: 'muted' }, 'No user, project or domain policy limits you.')));
  }

  const load = async () => {
    try {
      const u = await get('/v1/me/usage');
      error.replaceChildren();
      draw(u);
    } catch (err) {
      fill(error, banner(err));
    }
  };
  const poke = reloader(load, GAP);
  ctx.onLeave(poke.stop);
  load();
  ctx.onLeave(follow('', (event) => { if (event === 'session') poke(); }, ctx.setLive));
}

// The ranges the history offers, each with the step its points sum.
const HISTORY = {
  '7d': { ms: 7 * 24 * 3600e3, step: '1h', stepMs: 3600e3 },
  '30d': { ms: 30 * 24 * 3600e3, step: '1d', stepMs: 24 * 3600e3 },
  '90d': { ms: 90 * 24 * 3600e3, step: '1d', stepMs: 24 * 3600e3 },
};

// history is the usage-over-time card: range, key and slot controls and
// a line per key.
function history() {
  const range = h('select', { id: 'hist-range' }, h('option', { value: '7d' }, 'Last 7 days'),
    h('option', { value: '30d' }, 'Last 30 days'), h('option', { value: '90d' }, 'Last 90 days'));
  const by = h('select', { id: 'hist-by' }, ['user', 'project', 'group'].map((k) => h('option', { value: k }, k)));
  const slot = h('select', { id: 'hist-slot' }, ['cpu', 'mem', 'cuda.device', 'cuda.shares'].map((k) => h('option', { value: k }, k)));
  const chart = h('div', { id: 'usage-history', class: 'utilisation', 'aria-live': 'polite' });
  const legend = h('ul', { class: 'legend', id: 'hist-legend' });
  const control = (id, text, el) => h('span', { class: 'util-control' }, h('label', { for: id }, text), el);
  const node = h('section', { class: 'card' }, h('h2', null, 'Usage over time'),
    h('p', { class: 'muted small' }, 'Slot-hours per step from the hourly accounting history (cpu-hours, GiB-hours, device-hours).'),
    h('div', { class: 'util-controls' }, control('hist-range', 'Range', range), control('hist-by', 'By', by),
      control('hist-slot', 'Slot', slot)),
    chart, legend);
  let seq = 0;
  const load = async () => {
    const mine = ++seq;
    const r = HISTORY[range.value];
    const q = new URLSearchParams({ since: range.value, by: by.value, slot: slot.value, step: r.step });
    let u;
    try {
      u = await get(`/v1/usage?${q}`);
    } catch (err) {
      if (mine === seq) { fill(chart, banner(err)); legend.replaceChildren(); }
      return;
    }
    if (mine !== seq) return;
    const byKey = new Map();
    for (const p of u.items || []) {
      if (!byKey.has(p.key)) byKey.set(p.key, []);
      byKey.get(p.key).push({ at: p.at, used: p.hours });
    }
    const series = [...byKey.entries()].sort((a, b) => a[0].localeCompare(b[0])).map(([key, points]) => ({ slot: key, points }));
    chart.dataset.points = String((u.items || []).length);
    if (!series.length) {
      fill(chart, h('p', { class: 'muted' }, 'No use recorded in this range.'));
      legend.replaceChildren();
      return;
    }
    const to = Date.now();
    const from = Date.parse(u.since);
    const max = Math.max(1e-9, ...series.flatMap((se) => se.points.map((p) => p.used)));
    const width = Math.max(320, chart.clientWidth || 900);
    fill(chart, lines(series, { from, to, step: r.stepMs, width, max, label: (v) => v.toPrecision(3),
      title: `${slot.value} hours per ${r.step} by ${u.by}, ${range.selectedOptions[0].textContent.toLowerCase()}` }));
    fill(legend, series.map((se, i) => {
      const total = se.points.reduce((n, p) => n + p.used, 0);
      return h('li', { dataset: { key: se.slot } }, h('span', { class: 'swatch c-' + (i % 6), 'aria-hidden': 'true' }),
        `${se.slot} ${total.toFixed(1)} ${slot.value}-hours`);
    }));
  };
  for (const el of [range, by, slot]) el.addEventListener('change', load);
  load();
  return { node };
}
