// Charts as inline SVG, drawn with the DOM helpers: a usage bar, a bar
// list and the swimlane timeline of a session's history. Each is a pure
// function of its data that returns a node.

import { h, s } from './dom.js';
import { duration, clock } from './format.js';

// meter is one capacity bar: used out of total, with its text beside it
// (the text is what a screen reader and a test read).
export function meter(used, total, text, label) {
  const frac = total > 0 ? Math.min(1, used / total) : 0;
  const level = frac >= 0.9 ? 'high' : frac >= 0.6 ? 'mid' : 'low';
  const fillEl = h('span', { class: 'meter-fill ' + level });
  fillEl.style.width = (frac * 100).toFixed(1) + '%';
  return h('div', { class: 'meter', role: 'img', 'aria-label': label ? `${label}: ${text}` : text },
    h('span', { class: 'meter-track' }, fillEl), h('span', { class: 'meter-text' }, text));
}

// bars draws labelled horizontal bars, one per [label, value, class]; the
// longest is full width.
export function bars(rows, { title, width = 480 } = {}) {
  const rowH = 24;
  const labelW = 120;
  const valueW = 56;
  const max = Math.max(1, ...rows.map((r) => r[1]));
  const svg = s('svg', { class: 'bars', viewBox: `0 0 ${width} ${rows.length * rowH}`, role: 'img',
    'aria-label': title || 'bar chart', preserveAspectRatio: 'xMinYMin meet' });
  rows.forEach(([label, value, cls], i) => {
    const y = i * rowH;
    const w = ((width - labelW - valueW) * value) / max;
    svg.append(
      s('text', { x: labelW - 8, y: y + 16, 'text-anchor': 'end', class: 'bar-label' }, label),
      s('rect', { x: labelW, y: y + 4, width: Math.max(value > 0 ? 2 : 0, w), height: rowH - 8, rx: 3,
        class: 'bar ' + (cls || '') }),
      s('text', { x: labelW + w + 6, y: y + 16, class: 'bar-value' }, String(value)),
    );
  });
  return svg;
}

// swimlanes draws a session's history as one lane per status it passed
// through: a bar for each stretch of time in the status, a dot for each
// handler outcome that did not move it (retries, skips).
export function swimlanes(items, { now = Date.now(), ended = false, created = '', width = 900 } = {}) {
  const spans = [];
  let cur = null;
  // The first entry leaves the status the session was created in; that
  // stretch starts at creation, which no entry records.
  const first = items.find((it) => it.from);
  if (created && first) {
    cur = { status: first.from, start: new Date(created).getTime(), end: null };
    spans.push(cur);
  }
  for (const it of items) {
    const at = new Date(it.at).getTime();
    if (it.to && it.to !== (cur && cur.status)) {
      if (cur) cur.end = at;
      cur = { status: it.to, start: at, end: null };
      spans.push(cur);
    }
  }
  const lanes = [];
  for (const sp of spans) if (!lanes.includes(sp.status)) lanes.push(sp.status);
  for (const it of items) {
    if (!it.to && it.from && !lanes.includes(it.from)) lanes.push(it.from);
  }
  if (!lanes.length) return h('p', { class: 'muted' }, 'No history yet.');
  const times = [...items.map((it) => new Date(it.at).getTime()), ...spans.map((sp) => sp.start)];
  const t0 = Math.min(...times);
  const last = spans.length ? spans[spans.length - 1] : null;
  if (last && last.end === null && ended) last.end = Math.max(...times);
  const t1 = Math.max(now, ...times, t0 + 1000);
  const laneH = 28;
  const left = 120;
  const right = 16;
  const top = 20;
  const span = t1 - t0;
  const x = (t) => left + ((width - left - right) * (t - t0)) / span;
  const height = top + lanes.length * laneH + 4;
  // Drawn at its pixel width (the caller passes the container's), so
  // labels keep their size on a phone instead of shrinking with a
  // scaled viewBox.
  const svg = s('svg', { class: 'swimlanes', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img',
    'aria-label': `Status timeline over ${duration(span)}` });
  svg.append(s('text', { x: left, y: 12, class: 'axis' }, clock(new Date(t0).toISOString())),
    s('text', { x: width - right, y: 12, class: 'axis', 'text-anchor': 'end' }, clock(new Date(t1).toISOString())));
  lanes.forEach((st, i) => {
    const y = top + i * laneH;
    svg.append(s('rect', { x: 0, y, width, height: laneH, class: i % 2 ? 'lane odd' : 'lane' }),
      s('text', { x: left - 8, y: y + 18, 'text-anchor': 'end', class: 'lane-label' }, st));
  });
  for (const sp of spans) {
    const y = top + lanes.indexOf(sp.status) * laneH;
    const end = sp.end === null ? t1 : sp.end;
    const bar = s('rect', { x: x(sp.start), y: y + 6, width: Math.max(3, x(end) - x(sp.start)), height: laneH - 12,
      rx: 3, class: 'span st-' + sp.status, dataset: { status: sp.status } },
    s('title', null, `${sp.status} for ${duration(end - sp.start)}${sp.end === null ? ' (so far)' : ''}`));
    svg.append(bar);
  }
  for (const it of items) {
    if (it.result === 'SUCCESS' && it.to) continue;
    const st = it.to || it.from;
    const i = lanes.indexOf(st);
    if (i < 0) continue;
    svg.append(s('circle', { cx: x(new Date(it.at).getTime()), cy: top + i * laneH + laneH / 2, r: 5,
      class: 'mark r-' + it.result },
    s('title', null, `${it.handler}: ${it.result}${it.attempt > 1 ? ' ×' + it.attempt : ''} — ${it.message || ''}`)));
  }
  return svg;
}
