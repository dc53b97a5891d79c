// DOM helpers. Everything the page shows is built here: attributes go
// through setAttribute and children become text nodes, so no string from
// the API ever passes through an HTML parser.

const SVG = 'http://www.w3.org/2000/svg';

function set(el, attrs) {
  if (!attrs) return;
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v);
    } else if (k === 'dataset') {
      Object.assign(el.dataset, v);
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
}

// append adds children: nodes as they are, anything else as text.
export function append(el, ...children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// h builds an HTML element: h('a', {href: '#/'}, 'text', child).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  set(el, attrs);
  return append(el, children);
}

// s builds an SVG element.
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  set(el, attrs);
  return append(el, children);
}

// fill replaces an element's children.
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// labelled is a form control with its label and a slot for the API's
// error about that field, tied together by ids so a screen reader reads
// the error with the control.
export function labelled(id, text, control, hint) {
  control.id = id;
  const err = h('p', { class: 'field-error', id: id + '-error', role: 'alert', hidden: true });
  const described = [err.id];
  let hintEl = null;
  if (hint) {
    hintEl = h('p', { class: 'hint', id: id + '-hint' }, hint);
    described.push(hintEl.id);
  }
  control.setAttribute('aria-describedby', described.join(' '));
  return h('div', { class: 'field' }, h('label', { for: id }, text), control, hintEl, err);
}

// fieldError shows (or with msg empty, clears) the error beside a control
// made by labelled.
export function fieldError(control, msg) {
  const err = document.getElementById(control.id + '-error');
  if (!err) return;
  err.textContent = msg || '';
  err.hidden = !msg;
  if (msg) control.setAttribute('aria-invalid', 'true');
  else control.removeAttribute('aria-invalid');
}

export function select(options, value, attrs) {
  const el = h('select', attrs);
  for (const o of options) {
    const [v, text] = Array.isArray(o) ? o : [o, o];
    el.append(h('option', { value: v, selected: v === value }, text));
  }
  return el;
}
