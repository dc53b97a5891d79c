// Charts as inline SVG, drawn with the DOM helpers: a usage bar, a bar
// list, the swimlane timeline of a session's history and a line chart of
// utilisation over time. Each is a pure
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

// lines draws each series' used fraction (0–100%) over [from, to] (ms):
// one path per series, its points at the middle of their step, broken
// where a step has no sample so a gap in sampling shows as a gap. Drawn
// at its pixel width, as swimlanes is, so labels keep their size.
// max and label let a series of absolute values (slot-hours) use it:
// points' used run 0 … max, and label writes an axis value.
export function lines(series, { from, to, step, width = 900, height = 220, title = 'line chart', max = 1,
  label = (f) => `${f * 100}%` } = {}) {
  const left = 44;
  const right = 16;
  const top = 10;
  const bottom = 26;
  const span = Math.max(1, to - from);
  const x = (t) => left + ((width - left - right) * (t - from)) / span;
  const y = (f) => top + (height - top - bottom) * (1 - Math.min(1, Math.max(0, f / max)));
  const svg = s('svg', { class: 'lines', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img',
    'aria-label': title });
  for (const f of [0, 0.25, 0.5, 0.75, 1]) {
    svg.append(s('line', { x1: left, x2: width - right, y1: y(f * max), y2: y(f * max), class: f === 0 ? 'axis-line' : 'grid-line' }));
    if (f * 4 % 2 === 0) {
      svg.append(s('text', { x: left - 6, y: y(f * max) + 4, 'text-anchor': 'end', class: 'axis' }, label(f * max)));
    }
  }
  // Five time labels; at most a day apart they are clock times, beyond
  // that days with the hour.
  const ticks = Math.max(2, Math.min(5, Math.floor((width - left - right) / 110)));
  for (let i = 0; i <= ticks; i++) {
    const t = from + (span * i) / ticks;
    const anchor = i === 0 ? 'start' : i === ticks ? 'end' : 'middle';
    svg.append(s('line', { x1: x(t), x2: x(t), y1: y(0), y2: y(0) + 4, class: 'axis-line' }),
      s('text', { x: x(t), y: height - 6, 'text-anchor': anchor, class: 'axis' }, tickLabel(t, span)));
  }
  series.forEach((se, i) => {
    let d = '';
    let prev = null;
    for (const p of se.points) {
      const t = Date.parse(p.at) + step / 2;
      // A lone point's zero-length segment draws as a dot (round caps).
      d += prev !== null && t - prev <= step * 1.5 ? `L${x(t).toFixed(1)},${y(p.used).toFixed(1)}`
        : `M${x(t).toFixed(1)},${y(p.used).toFixed(1)}l0,0`;
      prev = t;
    }
    if (d) svg.append(s('path', { d, class: 'line c-' + (i % 6), dataset: { slot: se.slot } }, s('title', null, se.slot)));
  });
  return svg;
}

function tickLabel(t, span) {
  const d = new Date(t);
  if (span <= 24 * 3600e3) return d.toLocaleTimeString(undefined, { hour12: false, hour: '2-digit', minute: '2-digit' });
  return d.toLocaleDateString(undefined, { weekday: 'short', day: 'numeric' }) + ' ' +
    d.toLocaleTimeString(undefined, { hour12: false, hour: '2-digit', minute: '2-digit' });
}
