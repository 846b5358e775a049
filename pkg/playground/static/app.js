// sessionbox playground. Plain JavaScript over the public API: every request
// goes to this page's own origin (the API) with the key the user pasted,
// which is kept in this tab's sessionStorage only. Presigned uploads go to
// the URL the API hands out, with the headers it names and never the key.
'use strict';

const KEY_ITEM = 'sessionbox.apiKey';
const SESSION_ITEM = 'sessionbox.session';
const CELLS_ITEM = 'sessionbox.cells';
const HIDDEN_ITEM = 'sessionbox.showHidden';
const HOME = '/home/user';
// Files up to this size are written inline (PUT files/content); larger ones
// take the presigned flow (upload-url, PUT to blob storage, import), which
// has no inline limit and keeps big bodies off the API.
const INLINE_UPLOAD_MAX = 1 << 20;
const SESSION_ID = /^[A-Za-z0-9._-]{1,128}$/;

const SAMPLE_CELLS = [
  'import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.5)',
  'import matplotlib.pyplot as plt\nimport numpy as np\nx = np.linspace(0, 4 * np.pi, 200)\nplt.plot(x, np.sin(x), label="sin")\nplt.plot(x, np.cos(x), label="cos")\nplt.legend()\nplt.show()',
];

const $ = (sel, root = document) => root.querySelector(sel);

const state = {
  key: sessionStorage.getItem(KEY_ITEM) || '',
  session: sessionStorage.getItem(SESSION_ITEM) || '',
  dir: HOME,
  // Dot files and folders (caches, config) are listed only when asked.
  showHidden: sessionStorage.getItem(HIDDEN_ITEM) === '1',
  // info is the open session as the API last described it; null when the
  // session does not exist yet.
  info: null,
};

// The API lives beside the page: at the root locally, below the stage on
// API Gateway.
const apiBase = new URL('.', location.href);

// ---------------------------------------------------------------- API calls

// ApiError is a failed call, carrying the problem+json the API answered.
class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
}

function apiURL(path, query) {
  const u = new URL(path, apiBase);
  for (const [k, v] of Object.entries(query || {})) {
    if (v !== undefined && v !== null) u.searchParams.set(k, String(v));
  }
  return u;
}

function sessionPath(suffix) {
  return `v1/sessions/${encodeURIComponent(state.session)}${suffix}`;
}

// call sends one request to the API and returns the response, or throws an
// ApiError with the problem the API answered.
async function call(method, path, opts = {}) {
  if (!state.key) throw new ApiError(401, { title: 'No API key', detail: 'Paste your API key above and press Connect.' });
  const headers = { Authorization: `Bearer ${state.key}`, Accept: opts.accept || 'application/json' };
  let body = opts.body;
  if (opts.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.json);
  } else if (body !== undefined) {
    headers['Content-Type'] = 'application/octet-stream';
  }
  let res;
  try {
    res = await fetch(apiURL(path, opts.query), { method, headers, body, signal: opts.signal });
  } catch (err) {
    throw new ApiError(0, { title: 'Network error', detail: `The API did not answer: ${err.message}` });
  }
  if (!res.ok) throw await problemOf(res);
  return res;
}

async function problemOf(res) {
  let problem = null;
  try {
    const text = await res.text();
    problem = JSON.parse(text);
  } catch {
    problem = { title: res.statusText || `HTTP ${res.status}` };
  }
  if (res.status === 401) dropKey();
  return new ApiError(res.status, problem);
}

async function callJSON(method, path, opts) {
  const res = await call(method, path, opts);
  if (res.status === 204) return null;
  return res.json();
}

// readLines calls onLine with each NDJSON line of a streamed response as
// it arrives.
async function readLines(res, onLine) {
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line) onLine(JSON.parse(line));
    }
  }
  if (buf.trim()) onLine(JSON.parse(buf));
}

// ------------------------------------------------------------------ helpers

function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'class') e.className = v;
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g;
const stripAnsi = (s) => String(s || '').replace(ANSI, '');

function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB'];
  let v = n;
  let u = -1;
  do { v /= 1024; u++; } while (v >= 1024 && u < units.length - 1);
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

function formatDuration(ms) {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
}

function joinPath(dir, name) {
  return dir.endsWith('/') ? dir + name : `${dir}/${name}`;
}

function describe(err) {
  if (err instanceof ApiError) {
    const p = err.problem;
    const head = p.title && p.detail && p.title !== p.detail ? `${p.title}: ${p.detail}` : (p.detail || p.title || err.message);
    return err.status ? `${head} (${err.status})` : head;
  }
  return err && err.message ? err.message : String(err);
}

function showNotice(text, kind = 'error') {
  const n = $('#notice');
  n.textContent = text;
  n.className = kind === 'info' ? 'notice info' : 'notice';
  n.hidden = false;
  clearTimeout(showNotice.timer);
  if (kind === 'info') showNotice.timer = setTimeout(() => { n.hidden = true; }, 5000);
}

function clearNotice() { $('#notice').hidden = true; }

function setConn(kind, text) {
  const c = $('#conn');
  c.dataset.state = kind;
  c.textContent = text;
}

// -------------------------------------------------------------- HTML output

// Result HTML (pandas tables and the like) is rebuilt from an allow-list of
// elements and attributes: nothing from it can run or load anything, even
// before the page's CSP would stop it.
const HTML_TAGS = new Set(['table', 'thead', 'tbody', 'tfoot', 'tr', 'th', 'td', 'caption', 'colgroup', 'col',
  'div', 'span', 'p', 'br', 'hr', 'b', 'i', 'em', 'strong', 'code', 'pre', 'small', 'sub', 'sup', 'ul', 'ol', 'li',
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'blockquote']);
const HTML_DROP = new Set(['script', 'style', 'iframe', 'object', 'embed', 'template', 'svg', 'math', 'noscript',
  'link', 'meta', 'form', 'input', 'button', 'textarea', 'select', 'img', 'video', 'audio', 'canvas']);
const HTML_ATTRS = new Set(['colspan', 'rowspan', 'class', 'title']);

// Inline styles, scripts and event handlers are dropped as text first:
// parsing them, even into an inert document, has the page's CSP refuse them
// out loud. The allow-list below is what keeps the page safe.
const INLINE_CODE = /<(style|script)\b[\s\S]*?<\/\1\s*>|[\s/](?:style|on[a-z]+)\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)/gi;

function sanitizeInto(target, html) {
  const doc = new DOMParser().parseFromString(String(html).replace(INLINE_CODE, ''), 'text/html');
  const copy = (node, into) => {
    for (const child of node.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) {
        into.append(child.textContent);
        continue;
      }
      if (child.nodeType !== Node.ELEMENT_NODE) continue;
      const tag = child.localName;
      if (HTML_DROP.has(tag)) continue;
      if (!HTML_TAGS.has(tag)) {
        copy(child, into);
        continue;
      }
      const e = document.createElement(tag);
      for (const a of child.attributes) {
        if (HTML_ATTRS.has(a.name)) e.setAttribute(a.name, a.value);
      }
      copy(child, e);
      into.append(e);
    }
  };
  copy(doc.body, target);
}

function image(src, alt) {
  return el('img', { src, alt, loading: 'lazy', decoding: 'async' });
}

// renderResult shows a rich result in its richest form the page can show
// safely.
function renderResult(r) {
  const box = el('div', { class: 'out-result' });
  if (r.png) box.append(image(`data:image/png;base64,${r.png}`, 'PNG result'));
  else if (r.jpeg) box.append(image(`data:image/jpeg;base64,${r.jpeg}`, 'JPEG result'));
  else if (r.svg) box.append(image(`data:image/svg+xml;charset=utf-8,${encodeURIComponent(r.svg)}`, 'SVG result'));
  else if (r.html) {
    box.classList.add('out-html');
    sanitizeInto(box, r.html);
  } else if (r.json !== undefined && r.json !== null) box.append(el('pre', {}, JSON.stringify(r.json, null, 2)));
  else if (r.text !== undefined) box.append(el('pre', {}, stripAnsi(r.text)));
  else if (r.markdown) box.append(el('pre', {}, r.markdown));
  else if (r.latex) box.append(el('pre', {}, r.latex));
  else return null;
  return box;
}

function renderError(e) {
  const box = el('div', { class: 'out-error' });
  box.append(el('div', { class: 'ename' }, `${e.name}: ${stripAnsi(e.value)}`));
  const tb = stripAnsi(e.traceback);
  if (tb.trim()) box.append(el('pre', { class: 'traceback' }, tb));
  return box;
}

function renderProblem(err) {
  const box = el('div', { class: 'out-error' });
  box.append(el('div', { class: 'ename' }, describe(err)));
  return box;
}

// ---------------------------------------------------------------- sessions

async function refreshSessions() {
  const list = $('#sessions');
  if (!state.key) {
    list.replaceChildren(el('li', { class: 'empty' }, 'Connect with your API key to see your sessions.'));
    return;
  }
  try {
    const data = await callJSON('GET', 'v1/sessions');
    setConn('ok', 'connected');
    const sessions = (data.sessions || []).slice().sort((a, b) =>
      String(b.lastActivityAt || b.createdAt || '').localeCompare(String(a.lastActivityAt || a.createdAt || '')));
    state.info = sessions.find((s) => s.sessionId === state.session) || null;
    if (!state.info && state.session && data.nextCursor) state.info = await sessionInfo();
    renderSessionState();
    if (sessions.length === 0) {
      list.replaceChildren(el('li', { class: 'empty' }, 'No sessions yet: name one above, or just run a cell.'));
      return;
    }
    list.replaceChildren(...sessions.map((s) => el('li', { class: s.sessionId === state.session ? 'current' : '', title: s.lastActivityAt ? `last active ${new Date(s.lastActivityAt).toLocaleString()}` : '' },
      el('button', { type: 'button', class: 'link', onclick: () => openSession(s.sessionId) }, s.sessionId),
      el('span', { class: 'meta' }, s.state))));
  } catch (err) {
    list.replaceChildren(el('li', { class: 'empty' }, describe(err)));
    if (err.status !== 401) setConn('error', 'unreachable');
  }
}

// sessionInfo asks for the open session alone, for when the list's first
// page does not hold it.
async function sessionInfo() {
  try {
    return await callJSON('GET', sessionPath('/sandbox'));
  } catch (err) {
    if (err.status === 404) return null;
    throw err;
  }
}

function renderSessionState() {
  const badge = $('#session-state');
  if (!state.session || !state.key) {
    badge.hidden = true;
    return;
  }
  const s = state.info ? state.info.state : 'new';
  badge.textContent = s;
  badge.dataset.state = s;
  badge.hidden = false;
}

// refreshAll brings the session list, the open session's state and its
// files up to date, after anything that may have changed them.
async function refreshAll() {
  await refreshSessions();
  await refreshFiles();
}

function openSession(id) {
  id = id.trim();
  if (!SESSION_ID.test(id)) {
    showNotice(`"${id}" is not a session id: use 1 to 128 of A-Z a-z 0-9 . _ -`);
    return false;
  }
  clearNotice();
  state.session = id;
  state.dir = HOME;
  sessionStorage.setItem(SESSION_ITEM, id);
  $('#session-title').textContent = id;
  for (const li of $('#sessions').children) {
    const b = li.querySelector('button.link');
    li.classList.toggle('current', !!b && b.textContent === id);
  }
  state.info = null;
  refreshAll();
  return true;
}

// ensureSession picks a session for a call that needs one: the one open, or
// the name typed, or "playground".
function ensureSession() {
  if (state.session) return true;
  return openSession($('#session-name').value.trim() || 'playground');
}

// ------------------------------------------------------------------- files

function renderCrumbs() {
  const nav = $('#files-path');
  const parts = state.dir.split('/').filter(Boolean);
  const items = [];
  let acc = '';
  parts.forEach((p, i) => {
    acc += `/${p}`;
    const target = acc;
    items.push(el('button', { type: 'button', onclick: () => { state.dir = target; refreshFiles(); } }, p));
    if (i < parts.length - 1) items.push('/');
  });
  nav.replaceChildren('/', ...items);
}

// refreshFiles lists the current folder of a running sandbox. Without
// force it leaves a paused sandbox asleep and does not ask a session that
// has no sandbox, which would only answer 404.
async function refreshFiles(force = false) {
  const list = $('#files');
  const note = $('#files-note');
  note.className = 'note';
  note.textContent = '';
  renderCrumbs();
  if (!state.session || !state.key) {
    list.replaceChildren(el('li', { class: 'empty' }, 'Open a session to see its files.'));
    return;
  }
  const s = state.info && state.info.state;
  if (!force && s !== 'running') {
    list.replaceChildren();
    note.textContent = s === 'paused'
      ? 'The sandbox is paused: run a cell, or press ↻ to wake it and list its files.'
      : 'No sandbox is running for this session: run a cell or upload a file to start one.';
    return;
  }
  try {
    const data = await callJSON('GET', sessionPath('/files'), { query: { path: state.dir, depth: 1 } });
    // Folders first, dot files after the rest: caches and config are there
    // but rarely what a user looks for.
    const rank = (f) => (f.name.startsWith('.') ? 2 : 0) + (f.type === 'dir' ? 0 : 1);
    const all = data.entries || [];
    const entries = all.filter((f) => state.showHidden || !f.name.startsWith('.'))
      .sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name));
    const hidden = all.length - entries.length;
    const rows = [];
    if (state.dir !== '/' && state.dir !== HOME) {
      const up = state.dir.replace(/\/[^/]+\/?$/, '') || '/';
      rows.push(el('li', {}, el('span', { class: 'kind' }, '↰'),
        el('button', { type: 'button', class: 'link', onclick: () => { state.dir = up; refreshFiles(); } }, '..')));
    }
    for (const f of entries) rows.push(fileRow(f));
    if (entries.length === 0) rows.push(el('li', { class: 'empty' }, 'Empty folder. Upload a file or write one from code.'));
    if (hidden) rows.push(el('li', { class: 'empty hidden-count' }, `${hidden} hidden (dot) ${hidden === 1 ? 'entry' : 'entries'}: tick .files to show`));
    list.replaceChildren(...rows);
  } catch (err) {
    list.replaceChildren();
    note.textContent = err.status === 404 ? 'No sandbox is running for this session: run a cell (or upload a file) to start one.' : describe(err);
    if (err.status !== 404) note.className = 'note error';
  }
}

function fileRow(f) {
  const isDir = f.type === 'dir';
  const name = el('button', { type: 'button', class: 'link', title: f.path, onclick: () => (isDir ? enterDir(f.path) : download(f)) }, isDir ? `${f.name}/` : f.name);
  const actions = el('span', { class: 'row-actions' });
  if (!isDir) actions.append(el('button', { type: 'button', class: 'btn icon', title: `Download ${f.name}`, 'aria-label': `Download ${f.name}`, onclick: () => download(f) }, '↓'));
  actions.append(el('button', { type: 'button', class: 'btn icon', title: `Delete ${f.name}`, 'aria-label': `Delete ${f.name}`, onclick: () => removeFile(f) }, '×'));
  return el('li', { class: f.name.startsWith('.') ? 'dot' : '', dataset: { path: f.path, type: f.type } },
    el('span', { class: 'kind' }, isDir ? '▸' : '·'), name,
    el('span', { class: 'meta' }, isDir ? '' : formatBytes(f.size)), actions);
}

function enterDir(path) {
  state.dir = path;
  refreshFiles();
}

async function download(f) {
  const note = $('#files-note');
  try {
    let href;
    try {
      const res = await call('GET', sessionPath('/files/content'), { query: { path: f.path }, accept: '*/*' });
      href = URL.createObjectURL(await res.blob());
    } catch (err) {
      // Past the inline limit the file comes from blob storage instead.
      if (err.status !== 413) throw err;
      const t = await callJSON('POST', sessionPath('/files/download-url'), { json: { path: f.path } });
      href = t.downloadUrl;
    }
    const a = el('a', { href, download: f.name });
    document.body.append(a);
    a.click();
    a.remove();
    if (href.startsWith('blob:')) setTimeout(() => URL.revokeObjectURL(href), 10000);
  } catch (err) {
    note.className = 'note error';
    note.textContent = `Download failed: ${describe(err)}`;
  }
}

async function removeFile(f) {
  if (!confirm(`Delete ${f.path}${f.type === 'dir' ? ' and everything in it' : ''}?`)) return;
  try {
    await call('DELETE', sessionPath('/files'), { query: { path: f.path } });
  } catch (err) {
    showNotice(`Delete failed: ${describe(err)}`);
  }
  refreshFiles();
}

// upload writes one file into the current folder: inline when small, else
// through a presigned URL and an import.
async function upload(file) {
  const path = joinPath(state.dir, file.name);
  if (file.size <= INLINE_UPLOAD_MAX) {
    await call('PUT', sessionPath('/files/content'), { query: { path }, body: file });
    return;
  }
  const ticket = await callJSON('POST', sessionPath('/files/upload-url'), { json: { path, sizeBytes: file.size } });
  let res;
  try {
    res = await fetch(ticket.uploadUrl, { method: ticket.method || 'PUT', headers: ticket.headers || {}, body: file });
  } catch (err) {
    throw new ApiError(0, { title: 'Upload failed', detail: `blob storage did not answer: ${err.message}` });
  }
  if (!res.ok) throw new ApiError(res.status, { title: 'Upload failed', detail: `blob storage answered ${res.status}` });
  await callJSON('POST', sessionPath('/files/import'), { json: { transferId: ticket.transferId } });
}

async function uploadFiles(files) {
  if (!ensureSession()) return;
  const note = $('#files-note');
  note.className = 'note';
  for (const file of files) {
    note.textContent = `Uploading ${file.name} (${formatBytes(file.size)})…`;
    try {
      await upload(file);
    } catch (err) {
      note.className = 'note error';
      note.textContent = `Upload of ${file.name} failed: ${describe(err)}`;
      await refreshAll();
      note.className = 'note error';
      note.textContent = `Upload of ${file.name} failed: ${describe(err)}`;
      return;
    }
  }
  await refreshAll();
  note.textContent = `Uploaded ${files.length === 1 ? files[0].name : `${files.length} files`}.`;
}

// ------------------------------------------------------------------- cells

function saveCells() {
  const codes = [...document.querySelectorAll('.cell .editor')].map((t) => t.value);
  sessionStorage.setItem(CELLS_ITEM, JSON.stringify(codes));
}

function autosize(t) {
  t.style.height = 'auto';
  t.style.height = `${t.scrollHeight}px`;
}

function addCell(code = '', after = null, focus = true) {
  const cell = $('#cell-template').content.firstElementChild.cloneNode(true);
  const editor = $('.editor', cell);
  editor.value = code;
  editor.addEventListener('input', () => { autosize(editor); saveCells(); });
  editor.addEventListener('keydown', (ev) => onEditorKey(ev, cell));
  $('.run', cell).addEventListener('click', () => runCell(cell));
  $('.interrupt', cell).addEventListener('click', () => interruptCell(cell));
  $('.remove', cell).addEventListener('click', () => removeCell(cell));
  if (after) after.after(cell); else $('#cells').append(cell);
  autosize(editor);
  if (focus) editor.focus();
  saveCells();
  return cell;
}

function removeCell(cell) {
  const next = cell.nextElementSibling || cell.previousElementSibling;
  cell.remove();
  if (!$('#cells').children.length) addCell();
  else if (next) $('.editor', next).focus();
  saveCells();
}

function onEditorKey(ev, cell) {
  const t = ev.target;
  if (ev.key === 'Escape' && cell.dataset.state === 'running') {
    ev.preventDefault();
    interruptCell(cell);
    return;
  }
  if (ev.key === 'Enter' && (ev.shiftKey || ev.ctrlKey || ev.metaKey)) {
    ev.preventDefault();
    runCell(cell);
    if (ev.shiftKey) {
      const next = cell.nextElementSibling;
      if (next) $('.editor', next).focus(); else addCell('', cell);
    }
    return;
  }
  if (ev.key === 'Tab' && !ev.shiftKey && !ev.ctrlKey && !ev.metaKey && !ev.altKey) {
    ev.preventDefault();
    t.setRangeText('    ', t.selectionStart, t.selectionEnd, 'end');
    autosize(t);
  }
}

// CellOutput appends a cell's output as it streams in: consecutive chunks
// of one stream go to one block, so lines read as the program printed them.
class CellOutput {
  constructor(box) {
    this.box = box;
    this.last = null;
    this.lastKind = '';
    this.sawOutput = false;
    this.sawResult = false;
    this.error = null;
  }

  stream(kind, text) {
    this.sawOutput = true;
    if (this.lastKind !== kind) {
      this.last = el('pre', { class: `out-stream out-${kind}` });
      this.lastKind = kind;
      this.box.append(this.last);
    }
    const follow = this.last.scrollHeight - this.last.scrollTop - this.last.clientHeight < 24;
    this.last.append(stripAnsi(text));
    // Long output scrolls inside its block; keep the newest line in view
    // unless the reader scrolled up.
    if (follow) this.last.scrollTop = this.last.scrollHeight;
  }

  add(node) {
    if (!node) return;
    this.lastKind = '';
    this.box.append(node);
  }

  result(r) {
    this.sawResult = true;
    this.add(renderResult(r));
  }

  fail(e) {
    this.error = e;
    this.add(renderError(e));
  }

  // done fills in what the stream did not carry and notes the call's flags.
  done(res) {
    if (!this.sawOutput) {
      if (res.stdout) this.stream('stdout', res.stdout);
      if (res.stderr) this.stream('stderr', res.stderr);
    }
    if (!this.sawResult) for (const r of res.results || []) this.result(r);
    if (res.error && !this.error) this.fail(res.error);
    const flags = [];
    if (res.restarted) flags.push('a fresh sandbox was started: earlier state is gone');
    else if (res.kernelRestarted) flags.push('the kernel was restarted: variables are gone, files are kept');
    if (res.restored) flags.push(`workspace restored: ${res.restored.files} files`);
    if (res.truncated) flags.push('output was cut at the output limit');
    if (flags.length) this.add(el('div', { class: 'out-flags' }, flags.join(' · ')));
    const artifacts = res.artifacts || [];
    if (artifacts.length) {
      const line = el('div', { class: 'out-artifacts' }, 'Files written: ');
      for (const a of artifacts) {
        line.append(a.downloadUrl
          ? el('a', { href: a.downloadUrl, target: '_blank', rel: 'noopener noreferrer' }, `${a.path} (${formatBytes(a.sizeBytes)})`)
          : el('span', {}, `${a.path} (${formatBytes(a.sizeBytes)}) `));
      }
      this.add(line);
    }
  }
}

// aborts holds each running cell's AbortController.
const aborts = new WeakMap();

function interruptCell(cell) {
  const abort = aborts.get(cell);
  if (!abort) return;
  $('.cell-status', cell).textContent = 'interrupting…';
  abort.abort();
}

async function runCell(cell) {
  if (cell.dataset.state === 'running') return;
  const editor = $('.editor', cell);
  const code = editor.value;
  if (!code.trim()) return;
  if (!ensureSession()) return;
  const out = new CellOutput($('.output', cell));
  const status = $('.cell-status', cell);
  $('.output', cell).replaceChildren();
  cell.dataset.state = 'running';
  $('.count', cell).textContent = '[*]';
  status.textContent = 'starting…';
  const started = performance.now();
  let final = null;
  let failed = null;
  // Interrupting hangs up the stream: the service then interrupts the
  // cell in the kernel (KeyboardInterrupt), which keeps its variables.
  const abort = new AbortController();
  aborts.set(cell, abort);
  $('.run', cell).hidden = true;
  $('.interrupt', cell).hidden = false;
  try {
    const res = await call('POST', sessionPath('/execute/stream'), { json: { code }, accept: 'application/x-ndjson', signal: abort.signal });
    status.textContent = 'running…';
    await readLines(res, (line) => {
      switch (line.type) {
        case 'stdout':
        case 'stderr':
          out.stream(line.type, line.text);
          break;
        case 'result':
          out.result(line.result);
          break;
        case 'error': // the code raised
          out.fail(line.error);
          break;
        case 'failure': // the call failed midway
          failed = new ApiError(line.problem && line.problem.status, line.problem);
          break;
        case 'done': // the summary: the output came as lines
          final = line.summary;
          break;
        default: // start, keepalive
      }
    });
    if (final) out.done(final);
    else if (!failed) failed = new ApiError(0, { title: 'The stream ended early', detail: 'the connection closed before the result' });
  } catch (err) {
    failed = err;
  }
  aborts.delete(cell);
  $('.run', cell).hidden = false;
  $('.interrupt', cell).hidden = true;
  const ms = final && typeof final.durationMs === 'number' ? final.durationMs : Math.round(performance.now() - started);
  if (abort.signal.aborted && !final) {
    out.add(el('div', { class: 'out-flags' }, 'Interrupted: the cell was stopped; variables from before it are kept.'));
    cell.dataset.state = 'interrupted';
    $('.count', cell).textContent = '[ ]';
    status.textContent = `interrupted after ${formatDuration(ms)}`;
    refreshAll();
    return;
  }
  if (failed) out.add(renderProblem(failed));
  const errored = !!(failed || out.error || (final && final.success === false));
  cell.dataset.state = errored ? 'error' : 'done';
  $('.count', cell).textContent = final && final.executionCount ? `[${final.executionCount}]` : '[ ]';
  status.textContent = failed ? 'failed' : `${errored ? (final && final.timedOut ? 'timed out' : 'raised') : 'done'} in ${formatDuration(ms)}`;
  refreshAll();
}

// ---------------------------------------------------------- session actions

async function install(ev) {
  ev.preventDefault();
  const packages = $('#install-packages').value.split(/[\s,]+/).filter(Boolean);
  if (!packages.length || !ensureSession()) return;
  const log = $('#install-log');
  const outEl = $('#install-out');
  const statusEl = $('#install-status');
  const btn = $('#install-btn');
  log.hidden = false;
  outEl.textContent = '';
  statusEl.textContent = `Installing ${packages.join(' ')}…`;
  btn.disabled = true;
  try {
    const res = await call('POST', sessionPath('/install/stream'), { json: { packages }, accept: 'application/x-ndjson' });
    let result = null;
    let problem = null;
    await readLines(res, (line) => {
      if (line.type === 'stdout' || line.type === 'stderr') {
        outEl.append(stripAnsi(line.text));
        outEl.scrollTop = outEl.scrollHeight;
      } else if (line.type === 'done') result = line.summary;
      else if (line.type === 'failure') problem = new ApiError(line.problem.status, line.problem);
    });
    if (problem) throw problem;
    statusEl.textContent = result && result.success
      ? `Installed ${packages.join(' ')} in ${formatDuration(result.durationMs)}`
      : `pip failed${result ? ` (exit ${result.exitCode})` : ''}`;
    if (result && result.success) $('#install-packages').value = '';
  } catch (err) {
    statusEl.textContent = `Install failed: ${describe(err)}`;
  } finally {
    btn.disabled = false;
    refreshAll();
  }
}

async function sessionAction(button, method, suffix, doneText) {
  if (!state.session) {
    showNotice('Open a session first.');
    return;
  }
  button.disabled = true;
  try {
    await call(method, sessionPath(suffix));
    showNotice(doneText, 'info');
    for (const c of document.querySelectorAll('.cell .count')) c.textContent = '[ ]';
  } catch (err) {
    showNotice(describe(err));
  } finally {
    button.disabled = false;
    refreshAll();
  }
}

// ---------------------------------------------------------------- start-up

function connect(ev) {
  if (ev) ev.preventDefault();
  const input = $('#api-key');
  const key = input.value.trim();
  if (key) {
    state.key = key;
    sessionStorage.setItem(KEY_ITEM, key);
    input.value = '';
  }
  if (!state.key) {
    setConn('error', 'no key');
    input.focus();
    return;
  }
  input.placeholder = 'API key saved for this tab';
  $('#key-forget').hidden = false;
  setConn('none', 'connecting…');
  refreshAll();
}

function forget() {
  clearKey();
  setConn('none', 'not connected');
  state.info = null;
  refreshAll();
}

function clearKey() {
  state.key = '';
  sessionStorage.removeItem(KEY_ITEM);
  $('#api-key').placeholder = 'Paste your API key (sbx_…)';
  $('#key-forget').hidden = true;
}

// dropKey forgets a key the API refused (401), so that a mistyped or
// revoked key is not sent again nor kept in the tab's storage.
function dropKey() {
  clearKey();
  setConn('error', 'key rejected: paste another');
}

function init() {
  $('#key-form').addEventListener('submit', connect);
  $('#key-forget').addEventListener('click', forget);
  $('#session-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (openSession($('#session-name').value)) {
      $('#session-name').value = '';
      refreshSessions();
    }
  });
  $('#sessions-refresh').addEventListener('click', refreshSessions);
  $('#files-refresh').addEventListener('click', () => refreshFiles(true));
  $('#files-hidden').checked = state.showHidden;
  $('#files-hidden').addEventListener('change', (ev) => {
    state.showHidden = ev.target.checked;
    sessionStorage.setItem(HIDDEN_ITEM, state.showHidden ? '1' : '0');
    refreshFiles();
  });
  $('#upload-input').addEventListener('change', async (ev) => {
    const files = [...ev.target.files];
    ev.target.value = '';
    if (files.length) await uploadFiles(files);
  });
  // Files dropped on the files panel upload as the Upload button's do.
  const panel = $('#files-panel');
  panel.addEventListener('dragover', (ev) => {
    if (![...ev.dataTransfer.types].includes('Files')) return;
    ev.preventDefault();
    panel.classList.add('dropping');
  });
  panel.addEventListener('dragleave', (ev) => { if (!panel.contains(ev.relatedTarget)) panel.classList.remove('dropping'); });
  panel.addEventListener('drop', (ev) => {
    ev.preventDefault();
    panel.classList.remove('dropping');
    const files = [...ev.dataTransfer.files];
    if (files.length) uploadFiles(files);
  });
  $('#install-form').addEventListener('submit', install);
  $('#install-close').addEventListener('click', () => { $('#install-log').hidden = true; });
  $('#reset-btn').addEventListener('click', (ev) => sessionAction(ev.currentTarget, 'POST', '/reset', 'Kernel reset: variables are cleared, files are kept.'));
  $('#stop-btn').addEventListener('click', (ev) => sessionAction(ev.currentTarget, 'POST', '/sandbox/stop', 'Sandbox stopped and its workspace saved; the next call starts a fresh one.'));
  $('#add-cell').addEventListener('click', () => addCell('', null));

  let codes = SAMPLE_CELLS;
  try {
    const saved = JSON.parse(sessionStorage.getItem(CELLS_ITEM) || 'null');
    if (Array.isArray(saved) && saved.length) codes = saved;
  } catch { /* keep the samples */ }
  for (const code of codes) addCell(code, null, false);

  if (state.session) $('#session-title').textContent = state.session;
  if (state.key) connect();
  else {
    refreshAll();
    $('#api-key').focus();
  }
}

init();
