// Quantities and times as people read them. The API writes quantities as
// exact strings ("16g", "0.5"); sums for the charts are plain numbers,
// so a byte slot is recognised by its unit suffix (or by being "mem").

export const STATUSES = ['PENDING', 'SCHEDULED', 'PREPARING', 'PREPARED', 'CREATING', 'RUNNING',
  'TERMINATING', 'TERMINATED', 'CANCELLED', 'ERROR'];
export const LIVE = new Set(STATUSES.slice(0, 7));

const SHIFT = { k: 10, m: 20, g: 30, t: 40, p: 50 };

// quantity reads "4g", "4Gi", "0.5" as a number (bytes for byte units).
export function quantity(str) {
  if (str === undefined || str === null || str === '') return 0;
  const m = /^\s*([0-9]*\.?[0-9]+)\s*([kmgtpKMGTP])?(i|iB)?\s*$/.exec(String(str));
  if (!m) return NaN;
  const n = parseFloat(m[1]);
  return m[2] ? n * 2 ** SHIFT[m[2].toLowerCase()] : n;
}

export function isBytes(slot, values) {
  return slot === 'mem' || values.some((v) => /[kmgtp]/i.test(String(v || '')));
}

export function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n >= 100 || i === 0 ? Math.round(n) : n.toFixed(1).replace(/\.0$/, '')} ${units[i]}`;
}

export function amount(n, asBytes) {
  if (asBytes) return bytes(n);
  return Number.isInteger(n) ? String(n) : n.toFixed(2).replace(/0+$/, '').replace(/\.$/, '');
}

export function pct(used, total) {
  return total > 0 ? Math.round((used / total) * 100) : 0;
}

export function time(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return d.toLocaleString(undefined, { hour12: false });
}

export function clock(iso) {
  if (!iso) return '—';
  return new Date(iso).toLocaleTimeString(undefined, { hour12: false });
}

// ago is how long before now, coarse: "12s ago", "3m ago".
export function ago(iso, now = Date.now()) {
  if (!iso) return 'never';
  const s = Math.max(0, Math.round((now - new Date(iso).getTime()) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

export function duration(ms) {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

export function short(id) {
  return id ? String(id).slice(0, 8) : '—';
}

export function slotsText(slots) {
  return Object.entries(slots || {}).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k} ${v}`).join(', ') || '—';
}

// goDuration reads a Go duration as the API writes it ("10s", "28m1s",
// "1h0m0s") in milliseconds; 0 when it cannot.
export function goDuration(str) {
  const units = { h: 3600e3, m: 60e3, s: 1e3, ms: 1, us: 1e-3, 'µs': 1e-3, ns: 1e-6 };
  let ms = 0;
  for (const [, n, u] of String(str || '').matchAll(/(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)/g)) ms += Number(n) * units[u];
  return ms;
}
