// The page's only way to the manager: fetch calls to /v1 carrying the
// token as an Authorization header. The token lives in sessionStorage, so
// it is gone when the tab closes, and the API reads no cookie, so another
// site cannot make the browser act with it. The one exception is
// openPort's, which the session proxy alone reads.

const KEY = 'sokovan.token';

export const token = {
  get: () => sessionStorage.getItem(KEY) || '',
  set: (t) => sessionStorage.setItem(KEY, t),
  clear: () => sessionStorage.removeItem(KEY),
};

// APIError is a failed call; field names the request field at fault when
// the API said which (its 400 answers do).
export class APIError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `the manager answered ${status}`);
    this.status = status;
    this.code = e.code || '';
    this.field = e.field || '';
  }
}

let unauthorized = () => {};

// onUnauthorized sets what happens when the token stops working (it was
// revoked, or the manager's users were reset): back to the login form.
export function onUnauthorized(fn) { unauthorized = fn; }

function headers(extra) {
  const h = { ...extra };
  const t = token.get();
  if (t) h.Authorization = 'Bearer ' + t;
  return h;
}

export async function call(method, path, body, opts = {}) {
  const init = { method, headers: headers({ Accept: 'application/json' }), credentials: opts.credentials || 'omit',
    cache: 'no-store', signal: opts.signal };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  const text = await resp.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!resp.ok) {
    const err = new APIError(resp.status, data);
    if (resp.status === 401) unauthorized(err);
    throw err;
  }
  return data;
}

export const get = (path, opts) => call('GET', path, undefined, opts);

// openPort opens a session's service port in a new tab. A link cannot
// send the Authorization header, so the manager first sets a cookie with
// the token for that port's proxy path alone (HttpOnly, SameSite=Strict;
// only the session proxy reads it, and it does not pass it on to the
// kernel); the fetch must take part in cookies for the browser to keep
// it. The tab opens without an opener: the kernel's page is served from
// this origin and must not reach this tab, where the token is.
export async function openPort(sessionId, port) {
  await call('POST', `/v1/sessions/${encodeURIComponent(sessionId)}/proxy-cookie/${encodeURIComponent(port.name)}`,
    undefined, { credentials: 'same-origin' });
  window.open(port.proxy_path, '_blank', 'noopener,noreferrer');
}

// sleep waits ms, or less if signal aborts first.
export function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

// parseSSE reads a text/event-stream body and calls dispatch with each
// event ({id, event, data}). The manager ends lines with \n only; a
// trailing \r is dropped for other servers.
export async function parseSSE(body, dispatch) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let ev = { id: '', event: '', data: [] };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      let line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (ev.data.length) dispatch({ id: ev.id, event: ev.event || 'message', data: ev.data.join('\n') });
        ev = { id: ev.id, event: '', data: [] };
        continue;
      }
      if (line.startsWith(':')) continue; // the manager's keep-alive comment
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let val = colon < 0 ? '' : line.slice(colon + 1);
      if (val.startsWith(' ')) val = val.slice(1);
      if (field === 'data') ev.data.push(val);
      else if (field === 'event') ev.event = val;
      else if (field === 'id') ev.id = val;
    }
  }
}

// follow reads GET /v1/events?query until stopped, calling onEvent with
// each event's name and decoded data. It is fetch, not EventSource,
// because EventSource cannot send the Authorization header the API
// requires. A dropped stream is resumed with Last-Event-ID, so no change
// is lost across a reconnect. onState hears 'live' and 'reconnecting'.
// It returns the function that stops it.
export function follow(query, onEvent, onState = () => {}) {
  const ctl = new AbortController();
  let last = '';
  (async () => {
    let delay = 500;
    while (!ctl.signal.aborted) {
      try {
        const h = headers({ Accept: 'text/event-stream' });
        if (last) h['Last-Event-ID'] = last;
        const resp = await fetch('/v1/events' + (query ? '?' + query : ''),
          { headers: h, signal: ctl.signal, credentials: 'omit', cache: 'no-store' });
        if (resp.status === 401) { unauthorized(new APIError(401, null)); return; }
        if (!resp.ok) throw new APIError(resp.status, null);
        onState('live');
        delay = 500;
        await parseSSE(resp.body, (ev) => {
          if (ev.id) last = ev.id;
          let data = null;
          try { data = JSON.parse(ev.data); } catch { return; }
          onEvent(ev.event, data);
        });
      } catch {
        // a network error or an abort: the loop decides
      }
      if (ctl.signal.aborted) return;
      onState('reconnecting');
      await sleep(delay, ctl.signal);
      delay = Math.min(delay * 2, 10000);
    }
  })();
  return () => ctl.abort();
}
