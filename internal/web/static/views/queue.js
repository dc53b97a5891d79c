// Queue: one resource group's PENDING sessions in the order the next
// scheduling round tries them (GET /v1/resource-groups/{name}/queue),
// with what the round would do and what blocks each. A user sees their
// own sessions at their places in the whole queue and only a count of
// the others'. The group is in the URL (#/queue/{group}), so a link
// names it; the page reloads on session events, at most every few
// seconds, and on the Refresh button.

import { follow, get } from '../api.js';
import { fill, h, labelled, select } from '../dom.js';
import { clock, short, slotsText, time } from '../format.js';
import { banner, hint, reloader, section } from './common.js';

// GAP is the least time between two reloads the event stream causes: a
// dry round per event would cost the manager more than it tells anyone.
const GAP = 3000;

const OUTCOME = {
  start: ['ok', 'starts in the next round'],
  wait: ['warn', 'waits'],
  never: ['st-ERROR', 'can never start'],
};

const COLUMNS = ['#', 'Session', 'Owner', 'Priority', 'Per kernel', 'Next round', 'Blocked by', 'Estimated start'];

export function render(ctx) {
  const { main, admin } = ctx;
  const group = ctx.params[0] || 'default';

  const fGroup = select([group], group);
  fGroup.addEventListener('change', () => { location.hash = '#/queue/' + encodeURIComponent(fGroup.value); });
  const refresh = h('button', { type: 'button', id: 'queue-refresh' }, 'Refresh');
  refresh.addEventListener('click', () => load());
  const controls = h('form', { class: 'row controls', 'aria-label': 'Choose a resource group' },
    labelled('q-group', 'Resource group', fGroup), refresh);
  controls.addEventListener('submit', (e) => e.preventDefault());

  const summary = h('p', { id: 'queue-summary', 'aria-live': 'polite' });
  const updated = h('p', { class: 'muted small', id: 'queue-updated' });
  const error = h('div');
  const tbody = h('tbody', { id: 'queue-rows' });
  // stack: on a phone each row becomes a card, each cell headed by its
  // data-label (the stylesheet draws it), instead of eight squeezed
  // columns.
  const table = h('table', { class: 'list stack', id: 'queue', hidden: true },
    h('thead', null, h('tr', null, COLUMNS.filter((c) => admin || c !== 'Owner').map((c) => h('th', { scope: 'col' }, c)))),
    tbody);
  const empty = h('p', { class: 'muted', id: 'queue-empty', hidden: true });

  main.append(h('h1', null, 'Queue'), error,
    section('Pending sessions', controls,
      h('p', { class: 'hint', id: 'queue-order' }, 'In the order the next scheduling round tries them: higher priority first, then by the group\'s sequencer.'),
      summary, h('div', { class: 'scroll' }, table), empty, updated));

  function row(e) {
    const [cls, words] = OUTCOME[e.outcome] || ['', e.outcome];
    const who = e.name ? [h('a', { href: '#/sessions/' + encodeURIComponent(e.id) }, e.name), ' ',
      h('span', { class: 'mono muted small' }, short(e.id))]
      : [h('a', { href: '#/sessions/' + encodeURIComponent(e.id), class: 'mono' }, short(e.id))];
    const blockers = (e.blockers || []).map((b) => h('div', {
      class: 'blocker' + (b.impossible || b.exceeds_capacity ? ' impossible' : ''), dataset: { kind: b.kind } },
    h('p', null, b.message || b.kind), h('p', { class: 'hint' }, hint(b))));
    const est = e.estimated_start
      ? h('time', { datetime: e.estimated_start, title: time(e.estimated_start) }, clock(e.estimated_start))
      : h('span', { class: 'muted', title: 'The manager does not estimate start times yet' }, '—');
    // One wrapper per cell: on a phone the cell is a grid of its label
    // and this.
    const td = (label, cls2, ...children) => h('td', { class: cls2, 'data-label': label }, h('div', null, children));
    return h('tr', { dataset: { id: e.id, position: String(e.position), outcome: e.outcome } },
      td('#', 'pos', String(e.position)), td('Session', null, who), admin ? td('Owner', null, e.owner) : null,
      td('Priority', null, String(e.priority)),
      td('Per kernel', null, slotsText(e.requested_slots), e.cluster_size > 1 ? ` × ${e.cluster_size} kernels` : ''),
      td('Next round', null, h('span', { class: 'badge ' + cls, title: words }, e.outcome)),
      td('Blocked by', 'blockers', blockers.length ? blockers : h('span', { class: 'muted' }, '—')),
      td('Estimated start', 'est', est));
  }

  function draw(q) {
    const mine = q.items || [];
    const parts = [`${q.pending} pending in ${q.resource_group} (${q.sequencer})`];
    if (q.hidden > 0) {
      parts.push(`${q.hidden} of them other users' sessions, counted but not shown`);
    }
    summary.replaceChildren(parts.join('; ') + '.');
    summary.dataset.pending = String(q.pending);
    summary.dataset.hidden = String(q.hidden);
    fill(tbody, mine.map(row));
    table.hidden = mine.length === 0;
    empty.hidden = mine.length > 0;
    empty.textContent = q.pending === 0 ? 'Nothing waits in this group.' : 'None of your sessions wait in this group.';
    updated.textContent = 'Updated ' + clock(new Date().toISOString());
  }

  // latest drops an answer that a later load has overtaken (the button
  // and the stream may both ask).
  let latest = 0;
  const load = async () => {
    const n = ++latest;
    refresh.disabled = true;
    try {
      const [q, groups] = await Promise.all([
        get(`/v1/resource-groups/${encodeURIComponent(group)}/queue`),
        get('/v1/resource-groups').catch(() => ({ items: [] })),
      ]);
      if (n !== latest) return;
      const names = (groups.items || []).map((g) => g.name);
      if (!names.includes(group)) names.push(group);
      if ([...fGroup.options].map((o) => o.value).join('\n') !== names.join('\n')) {
        fGroup.replaceChildren(...names.map((name) => h('option', { value: name }, name)));
        fGroup.value = group;
      }
      error.replaceChildren();
      draw(q);
    } catch (err) {
      if (n !== latest) return;
      fill(error, banner(err));
    } finally {
      if (n === latest) refresh.disabled = false;
    }
  };
  const poke = reloader(load, GAP);
  ctx.onLeave(poke.stop);
  load();
  ctx.onLeave(follow('', (event) => { if (event === 'session') poke(); }, ctx.setLive));
}
