// My usage: what the caller's sessions hold and ask for (GET
// /v1/me/usage), and each user, project and domain policy over the
// caller as bars, what the policy's whole scope holds against its limit
// per slot. Reloaded on session events, at most every few seconds.

import { follow, get } from '../api.js';
import { fill, h } from '../dom.js';
import { meter } from '../charts.js';
import { amount, isBytes, pct, quantity, slotsText } from '../format.js';
import { banner, reloader, section } from './common.js';

const GAP = 3000;

export function render(ctx) {
  const { main } = ctx;
  const error = h('div');
  const tiles = h('div', { class: 'tiles', id: 'usage-tiles' });
  const limits = h('div', { id: 'usage-limits' });
  main.append(h('h1', null, 'My usage'), error, tiles, limits);

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
