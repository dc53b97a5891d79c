// The dashboard's shell: the login form, the header and navigation, and a
// hash router that mounts one view at a time. Views are functions
// (ctx) => void that draw into ctx.main and register with ctx.onLeave
// whatever must stop when the user navigates away (streams, timers).

import { APIError, get, onUnauthorized, token } from './api.js';
import { fill, h, labelled } from './dom.js';
import * as overview from './views/overview.js';
import * as sessions from './views/sessions.js';
import * as session from './views/session.js';
import * as agents from './views/agents.js';
import * as groups from './views/groups.js';
import * as queue from './views/queue.js';
import * as usage from './views/usage.js';
import * as deployments from './views/deployments.js';
import * as jobs from './views/jobs.js';
import * as arrays from './views/arrays.js';

const root = document.getElementById('app');

const routes = [
  { re: /^#?\/?$/, view: overview, nav: 'overview' },
  { re: /^#\/sessions\/?$/, view: sessions, nav: 'sessions' },
  { re: /^#\/sessions\/([^/?]+)$/, view: session, nav: 'sessions' },
  { re: /^#\/agents\/?$/, view: agents, nav: 'agents' },
  { re: /^#\/groups\/?$/, view: groups, nav: 'groups' },
  { re: /^#\/queue\/?$/, view: queue, nav: 'queue' },
  { re: /^#\/queue\/([^/?]+)$/, view: queue, nav: 'queue' },
  { re: /^#\/usage\/?$/, view: usage, nav: 'usage' },
  { re: /^#\/deployments\/?$/, view: deployments, nav: 'deployments' },
  { re: /^#\/deployments\/([^/?]+)$/, view: { render: deployments.renderOne }, nav: 'deployments' },
  { re: /^#\/jobs\/?$/, view: jobs, nav: 'jobs' },
  { re: /^#\/jobs\/([^/?]+)$/, view: { render: jobs.renderOne }, nav: 'jobs' },
  { re: /^#\/arrays\/?$/, view: arrays, nav: 'arrays' },
  { re: /^#\/arrays\/([^/?]+)$/, view: { render: arrays.renderOne }, nav: 'arrays' },
];

let me = null;
let leaving = [];

function leave() {
  for (const fn of leaving.splice(0)) {
    try { fn(); } catch { /* a view's cleanup must not stop the others */ }
  }
}

function loginView(message) {
  leave();
  me = null;
  // Signed out, the router must not draw a view (sign-out moves the hash).
  if (routing) window.removeEventListener('hashchange', routing);
  routing = null;
  const input = h('input', { type: 'password', autocomplete: 'current-password', required: true, spellcheck: 'false',
    placeholder: 'skv_…' });
  const status = h('p', { class: 'form-error', role: 'alert', hidden: !message }, message || '');
  const button = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const form = h('form', { class: 'login card', 'aria-labelledby': 'login-title' },
    h('h1', { id: 'login-title' }, 'Sokovan'),
    h('p', { class: 'muted' }, 'Sign in with your API token. In dev mode, sokovan dev prints the admin token and saves it in its data directory as admin-token.'),
    labelled('login-token', 'Access token', input),
    status, button);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    button.disabled = true;
    token.set(input.value.trim());
    try {
      me = await get('/v1/me');
      start();
    } catch (err) {
      token.clear();
      status.hidden = false;
      status.textContent = err instanceof APIError && err.status === 401
        ? 'That token is not valid on this manager.' : `Cannot reach the manager: ${err.message}`;
      button.disabled = false;
    }
  });
  fill(root, h('main', { class: 'login-wrap' }, form));
  input.focus();
}

function shell() {
  const live = h('span', { class: 'live', id: 'live', title: 'event stream' }, 'offline');
  const link = (hash, text, key) => h('a', { href: hash, dataset: { nav: key } }, text);
  const signOut = h('button', { type: 'button', class: 'link' }, 'Sign out');
  signOut.addEventListener('click', () => {
    token.clear();
    location.hash = '#/';
    loginView();
  });
  const header = h('header', { class: 'top' },
    h('a', { class: 'brand', href: '#/' }, h('img', { src: '/ui/icon.svg', alt: '', width: 22, height: 22 }), 'Sokovan'),
    h('nav', { 'aria-label': 'Main' },
      link('#/', 'Overview', 'overview'), link('#/sessions', 'Sessions', 'sessions'),
      link('#/deployments', 'Deployments', 'deployments'), link('#/jobs', 'Jobs', 'jobs'),
      link('#/arrays', 'Arrays', 'arrays'),
      link('#/agents', 'Agents', 'agents'), link('#/groups', 'Resource groups', 'groups'),
      link('#/queue', 'Queue', 'queue'), link('#/usage', 'My usage', 'usage')),
    h('div', { class: 'who' }, live,
      h('span', { class: 'user', id: 'whoami' }, me.name, ' ', h('span', { class: 'role role-' + me.role }, me.role)),
      signOut));
  const main = h('main', { id: 'main', tabindex: '-1' });
  fill(root, header, main);
  return main;
}

function setLive(state) {
  const el = document.getElementById('live');
  if (!el) return;
  el.textContent = state;
  el.dataset.state = state;
}

function route(main) {
  leave();
  const hash = location.hash || '#/';
  let match = null;
  let rt = null;
  for (const r of routes) {
    match = r.re.exec(hash);
    if (match) { rt = r; break; }
  }
  for (const a of document.querySelectorAll('header nav a')) {
    if (rt && a.dataset.nav === rt.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  main.replaceChildren();
  for (const k of Object.keys(main.dataset)) delete main.dataset[k];
  if (!rt) {
    main.append(h('h1', null, 'Not found'), h('p', null, 'No page here. ', h('a', { href: '#/' }, 'Back to the overview.')));
    return;
  }
  const ctx = {
    me,
    admin: me.role === 'admin',
    main,
    params: match.slice(1).map(decodeURIComponent),
    onLeave: (fn) => leaving.push(fn),
    setLive,
  };
  rt.view.render(ctx);
}

let routing = null;

function start() {
  const main = shell();
  if (routing) window.removeEventListener('hashchange', routing);
  routing = () => route(main);
  window.addEventListener('hashchange', routing);
  route(main);
}

onUnauthorized(() => {
  if (me) {
    token.clear();
    loginView('Your token is no longer accepted; sign in again.');
  }
});

(async () => {
  if (!token.get()) { loginView(); return; }
  try {
    me = await get('/v1/me');
    start();
  } catch (err) {
    token.clear();
    loginView(err instanceof APIError && err.status === 401 ? '' : `Cannot reach the manager: ${err.message}`);
  }
})();
