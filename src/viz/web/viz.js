// libtinygrad VIZ viewer: realizes and kernels in the sidebar, a graph-rewrite stepper, a timeline of launches and memory.
// A plain script (no modules, no build step) so that it also runs from a dumped folder opened over file://; ASCII only,
// since the server may send it without a charset.
'use strict';
(function () {
const SVGNS = 'http://www.w3.org/2000/svg';
const MAX_NODES = 2000;          // dagre takes seconds to minutes above this: draw a message instead
const DUMP = window.TG_VIZ_DATA; // set by data.js in a dumped folder; from the server data.js is empty
const $ = (sel) => document.querySelector(sel);

function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of kids) if (c != null) e.append(c);
  return e;
}
function svg(tag, attrs, parent) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}
const clamp = (x, lo, hi) => Math.max(lo, Math.min(hi, x));
const fmtUs = (us) => us < 1e3 ? `${us.toFixed(us < 10 ? 2 : 1)} us` : us < 1e6 ? `${(us / 1e3).toFixed(2)} ms` : `${(us / 1e6).toFixed(2)} s`;
const fmtBytes = (b) => b < 1024 ? `${b} B` : b < 1 << 20 ? `${(b / 1024).toFixed(1)} KB` :
  b < 1 << 30 ? `${(b / (1 << 20)).toFixed(1)} MB` : `${(b / (1 << 30)).toFixed(2)} GB`;
const fmtRate = (x, unit) => x ? `${x < 10 ? x.toFixed(2) : x.toFixed(1)} ${unit}` : `\u2013 ${unit}`;

// Graph labels are monospace, so one measured character width sizes every node for dagre.
const CHAR_W = (() => {
  const ctx = document.createElement('canvas').getContext('2d');
  ctx.font = '11px monospace';
  return ctx.measureText('0123456789').width / 10 || 6.6;
})();

// ---- data: the dump when there is one, else the server's /api routes (kernels and realizes never change: cached)
const cache = new Map();
function api(route, fresh) {
  if (DUMP) {
    const [kind, id] = route.split('/');
    const v = id === undefined ? DUMP[kind] : (DUMP[kind + 's'] || {})[id];
    return v ? Promise.resolve(v) : Promise.reject(new Error(`${route} is not in this dump`));
  }
  if (fresh || !cache.has(route)) {
    const p = fetch('api/' + route, {cache: 'no-store'}).then((r) => {
      if (!r.ok) throw new Error(`api/${route}: HTTP ${r.status}` + (r.status === 404 ? ' (no longer recorded?)' : ''));
      return r.json();
    });
    p.catch(() => cache.delete(route));
    cache.set(route, p);
  }
  return cache.get(route);
}

const state = {
  index: null, indexText: '', view: {kind: null},
  item: null, rw: 0, step: 0, fit: true, // the kernel or realize shown in the graph view
  collapsed: new Set(),                  // realize ids folded in the sidebar (new ones arrive unfolded)
  tl: null, tlView: null,                // timeline data and the visible time range
};

// ---- sidebar
function renderSidebar() {
  const idx = state.index, byRealize = new Map();
  for (const k of idx.kernels) {
    if (!byRealize.has(k.realize)) byRealize.set(k.realize, []);
    byRealize.get(k.realize).push(k);
  }
  const groups = idx.realizes.map((r) => [r, byRealize.get(r.id) || []]);
  // kernels whose realize already left the ring buffer are still listed
  const known = new Set(idx.realizes.map((r) => r.id));
  const orphans = idx.kernels.filter((k) => !known.has(k.realize));
  if (orphans.length) groups.push([{id: null, name: 'other kernels'}, orphans]);

  const ul = $('#realizes');
  ul.replaceChildren(...groups.map(([r, ks]) => {
    const key = String(r.id);
    const li = h('li', {class: 'realize' + (state.collapsed.has(key) ? ' collapsed' : '')});
    const caret = h('span', {class: 'caret', title: 'fold'});
    const name = h('span', {class: 'rname'}, r.name);
    const stats = r.id == null ? '' : `${ks.length} kernel${ks.length === 1 ? '' : 's'} \u00b7 ${fmtUs(r.time_us || 0)}`;
    const head = h('div', {class: 'realize-head'}, caret, name, h('span', {class: 'rstats'}, stats));
    if (r.id != null) li.dataset.id = r.id;
    caret.onclick = (e) => {
      e.stopPropagation();
      li.classList.toggle('collapsed');
      state.collapsed[li.classList.contains('collapsed') ? 'add' : 'delete'](key);
    };
    head.onclick = () => {
      li.classList.remove('collapsed');
      state.collapsed.delete(key);
      if (r.id != null) go(`realize/${r.id}`);
    };
    const kl = h('ul', {class: 'kernels'}, ...ks.map((k) => {
      const row = h('li', {class: 'kernel', 'data-id': k.id, title: `${k.name}\n${k.launches} launches, ${k.flops} FLOPs, ${fmtBytes(k.bytes)}`},
        h('div', {class: 'kname'}, k.name),
        h('div', {class: 'kstats'}, h('span', {class: 'device'}, k.device),
          h('span', {class: 'time'}, k.launches ? fmtUs(k.time_us) : 'not run'),
          h('span', {class: 'gflops'}, fmtRate(k.gflops, 'GFLOP/s')), h('span', {class: 'gbs'}, fmtRate(k.gbs, 'GB/s'))));
      row.onclick = () => go(`kernel/${k.id}`);
      return row;
    }));
    li.append(head, kl);
    return li;
  }));
  $('#status').textContent = `${idx.realizes.length} realizes, ${idx.kernels.length} kernels` +
    (idx.capacity ? ` (keeps the last ${idx.capacity} realizes)` : '') + (DUMP ? ' \u00b7 dump' : ' \u00b7 live');
  markActive();
}

function markActive() {
  const v = state.view;
  for (const e of document.querySelectorAll('#sidebar .active')) e.classList.remove('active');
  let el = null;
  if (v.kind === 'timeline') el = $('#nav-timeline');
  else if (v.kind === 'kernel') el = $(`#realizes li.kernel[data-id="${v.id}"]`);
  else if (v.kind === 'realize') el = $(`#realizes li.realize[data-id="${v.id}"] > .realize-head`);
  if (!el) return;
  el.classList.add('active');
  const folded = el.closest('li.realize.collapsed');
  if (folded && v.kind === 'kernel') { folded.classList.remove('collapsed'); state.collapsed.delete(folded.dataset.id); }
  el.scrollIntoView({block: 'nearest'});
}

// ---- routing: the hash names the view (#timeline, #kernel/7, #realize/3) so reloads and links keep it
function go(route) {
  if (location.hash.slice(1) === route) routeTo(); // same view again: show it afresh (e.g. after a failed load)
  else location.hash = route;
}
function routeTo() {
  const [kind, id] = location.hash.slice(1).split('/');
  if ((kind === 'kernel' || kind === 'realize') && id) return showItem(kind, id);
  return showTimeline();
}
function showSection(name) {
  $('#graph-view').hidden = name !== 'graph';
  $('#timeline-view').hidden = name !== 'timeline';
  $('#message').hidden = name !== 'message';
}
function showMessage(text) {
  $('#message').textContent = text;
  showSection('message');
}

// ---- graph view (a kernel's rewrites, or a realize's tensor graph as a one-rewrite item)
async function showItem(kind, id) {
  state.view = {kind, id};
  markActive();
  let data;
  try { data = await api(`${kind}/${id}`); } catch (e) { return showMessage(e.message); }
  if (state.view.kind !== kind || state.view.id !== id) return; // another view was picked while this loaded
  const list = kind === 'kernel' ? state.index.kernels : state.index.realizes;
  const entry = list.find((x) => String(x.id) === id);
  state.item = {kind, id, title: data.name, entry, layouts: new Map(), view: null,
    rewrites: kind === 'kernel' ? data.rewrites || [] : [data.graph], src: data.src, opts: data.opts, kernels: data.kernels};
  state.rw = 0; state.step = 0; state.fit = true;
  showSection('graph');
  renderDetails();
  $('#rewrites').replaceChildren(...state.item.rewrites.map((r, i) => {
    const li = h('li', {'data-index': i}, r.name, h('span', {class: 'n'}, String(r.steps.length)));
    li.onclick = () => setStep(i, 0);
    return li;
  }));
  renderStep();
}

function renderDetails() {
  const it = state.item, e = it.entry, isKernel = it.kind === 'kernel';
  $('#title').textContent = it.title;
  $('#subtitle').textContent = !e ? '' : isKernel
    ? [e.device, `${e.launches} launch${e.launches === 1 ? '' : 'es'}`, fmtUs(e.time_us), fmtRate(e.gflops, 'GFLOP/s'), fmtRate(e.gbs, 'GB/s')].join(' \u00b7 ')
    : `${e.kernels.length} kernel${e.kernels.length === 1 ? '' : 's'} \u00b7 ${e.launches} launches \u00b7 ${fmtUs(e.time_us)}`;
  const meta = $('#meta');
  meta.textContent = '';
  if (isKernel && e) {
    meta.append(h('div', {}, `${e.flops} FLOPs and ${fmtBytes(e.bytes)} over all launches`));
    const link = h('a', {}, `realize ${e.realize}`);
    link.onclick = () => go(`realize/${e.realize}`);
    if (state.index.realizes.some((r) => r.id === e.realize)) meta.append(h('div', {}, 'from ', link));
  } else if (!isKernel) {
    meta.append(h('h3', {}, 'Kernels'), h('ul', {class: 'links'}, ...(it.kernels || []).map((kid) => {
      const k = state.index.kernels.find((x) => x.id === kid);
      const a = h('a', {}, k ? `${k.name} (${k.device})` : `kernel ${kid}`);
      a.onclick = () => go(`kernel/${kid}`);
      return h('li', {}, a);
    })));
  }
  const opts = it.opts || [];
  $('#opts').replaceChildren(...(opts.length ? opts.map((o) => h('li', {}, o)) : [h('li', {class: 'none'}, 'none')]));
  $('#source').textContent = it.src || '';
  for (const sel of ['#opts-head', '#opts', '#source-head', '#source']) $(sel).hidden = !isKernel;
  $('#node-info').textContent = '';
}

function setStep(rw, step) {
  const rws = state.item.rewrites;
  rw = clamp(rw, 0, rws.length - 1);
  step = clamp(step, 0, Math.max(0, rws[rw].steps.length - 1));
  if (rw === state.rw && step === state.step) return;
  if (rw !== state.rw) { state.fit = true; $('#node-info').textContent = ''; }
  state.rw = rw; state.step = step;
  renderStep();
}

function renderStep() {
  const it = state.item, box = $('#graph');
  for (const li of $('#rewrites').children) li.classList.toggle('active', +li.dataset.index === state.rw);
  const rw = it.rewrites[state.rw], n = rw ? rw.steps.length : 0, k = state.step;
  const range = $('#step-range');
  range.max = Math.max(0, n - 1); range.value = k; range.disabled = n < 2;
  $('#step-label').textContent = n ? `step ${k}/${n - 1}` + (rw.truncated ? ` (${rw.truncated} more not recorded)` : '') : '';
  const st = n ? rw.steps[k] : {};
  $('#rule').textContent = st.rule || '';
  $('#loc').textContent = st.loc || '';
  // linearize's root lists the program in order: also show it as numbered lines, src given by line number
  const prog = n && rw.name === 'linearize' ? rw.nodes[rw.steps[0].root] : null;
  $('#program-head').hidden = $('#program').hidden = !prog;
  if (prog) {
    const line = new Map(prog.src.map((id, i) => [id, i]));
    $('#program').textContent = prog.src.map((id, i) => {
      const u = rw.nodes[id] || {op: '?', dtype: '', arg: '', src: []};
      const srcs = u.src.map((s) => (line.has(s) ? line.get(s) : '#' + s)).join(', ');
      return `${String(i).padStart(4)} ${u.op.padEnd(14)} ${String(u.dtype).padEnd(10)} [${srcs}] ${u.arg || ''}`;
    }).join('\n');
  }
  if (!n) {
    box.replaceChildren(h('div', {class: 'note'}, 'Nothing recorded for this item.'));
    return Object.assign(box.dataset, {kind: it.kind, id: it.id, rewrite: state.rw, step: k});
  }
  const size = reach(rw.nodes, st.root).size;
  const busy = box.querySelector('.busy');
  if (busy) busy.remove();
  if (size > 150 && size <= MAX_NODES && !it.layouts.has(`${state.rw}/${k}`)) {
    box.append(h('div', {class: 'busy'}, `laying out ${size} nodes\u2026`));
  }
  scheduleDraw();
}

// Draw after a frame: the header shows the new step (and the note above) before a slow layout, and a held arrow key
// skips the steps it passed while one was being laid out.
let drawPending = false;
function scheduleDraw() {
  if (drawPending) return;
  drawPending = true;
  requestAnimationFrame(() => setTimeout(() => {
    drawPending = false;
    const it = state.item, box = $('#graph');
    if (!it || !it.rewrites[state.rw]) return;
    drawGraph(it.rewrites[state.rw], state.step);
    // set last, once drawn: the browser test waits for these
    Object.assign(box.dataset, {kind: it.kind, id: it.id, rewrite: state.rw, step: state.step});
  }));
}

// Every node reachable from root through src: the graph at one step.
function reach(nodes, root) {
  const seen = new Set(), stack = [root];
  while (stack.length) {
    const id = stack.pop();
    if (seen.has(id) || !nodes[id]) continue;
    seen.add(id);
    for (const s of nodes[id].src) if (!seen.has(s)) stack.push(s);
  }
  return seen;
}

const FAMILIES = {
  struct: 'NOOP SINK UNIQUE DEVICE KERNEL GROUP AFTER CUSTOM CUSTOMI',
  buffer: 'BUFFER BUFFER_VIEW PARAM DEFINE_GLOBAL DEFINE_LOCAL DEFINE_REG DEFINE_VAR BIND',
  tensor: 'CONTIGUOUS CONTIGUOUS_BACKWARD DETACH COPY ASSIGN CUSTOM_BACKWARD MSELECT MSTACK MULTI ALLREDUCE SCATTER',
  movement: 'RESHAPE PERMUTE EXPAND PAD SHRINK FLIP',
  const: 'CONST VCONST',
  memory: 'INDEX LOAD STORE',
  control: 'RANGE END SPECIAL BARRIER IF ENDIF',
  reduce: 'REDUCE_AXIS REDUCE WMMA MULACC',
  vector: 'VECTORIZE GEP CAST BITCAST UNROLL CONTRACT',
};
const FAMILY = {};
for (const [f, ops] of Object.entries(FAMILIES)) for (const op of ops.split(' ')) FAMILY[op] = f;

function label(n) {
  const lines = [n.op];
  if (n.dtype) lines.push(n.dtype);
  const arg = n.arg == null ? '' : String(n.arg).replace(/\s+/g, ' ');
  if (arg) lines.push(arg.length > 32 ? arg.slice(0, 31) + '\u2026' : arg);
  return lines;
}

// dagre layout of one step, kept per item: stepping back and forth doesn't lay out again
function layout(rw, k, ids) {
  const key = `${state.rw}/${k}`, memo = state.item.layouts;
  if (memo.has(key)) return memo.get(key);
  const g = new dagre.graphlib.Graph({multigraph: true});
  g.setGraph({rankdir: 'TB', nodesep: 14, ranksep: 30, edgesep: 6, marginx: 16, marginy: 16});
  g.setDefaultEdgeLabel(() => ({}));
  for (const id of ids) {
    const lines = label(rw.nodes[id]);
    g.setNode(String(id), {id, lines, width: Math.max(...lines.map((l) => l.length)) * CHAR_W + 16, height: lines.length * 14 + 10});
  }
  // edges point from a source to its user, so the inputs sit on top and the root at the bottom
  for (const id of ids) rw.nodes[id].src.forEach((s, i) => { if (ids.has(s)) g.setEdge(String(s), String(id), {}, String(i)); });
  dagre.layout(g);
  const out = {w: g.graph().width, h: g.graph().height, nodes: g.nodes().map((v) => g.node(v)), edges: g.edges().map((e) => g.edge(e).points)};
  memo.set(key, out);
  return out;
}

function drawGraph(rw, k) {
  const box = $('#graph'), st = rw.steps[k], ids = reach(rw.nodes, st.root);
  if (typeof dagre === 'undefined') return box.replaceChildren(h('div', {class: 'note'}, 'dagre.min.js did not load: graphs cannot be laid out.'));
  if (ids.size > MAX_NODES) {
    return box.replaceChildren(h('div', {class: 'note too-big'},
      `This graph has ${ids.size} nodes, more than the ${MAX_NODES} the viewer draws. Step to another graph, or see the source.`));
  }
  const lay = layout(rw, k, ids);
  // highlighted: what the rule produced and every node that is new since the previous step
  const changed = new Set();
  if (k > 0) { const prev = reach(rw.nodes, rw.steps[k - 1].root); for (const id of ids) if (!prev.has(id)) changed.add(id); }
  if (st.after != null) changed.add(st.after);

  const root = svg('svg', {'aria-label': 'graph'});
  const marker = svg('marker', {id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto'}, svg('defs', {}, root));
  svg('path', {d: 'M0,0 L10,5 L0,10 z', class: 'arrow'}, marker);
  const vp = svg('g', {class: 'viewport'}, root), eg = svg('g', {class: 'edges'}, vp), ng = svg('g', {class: 'nodes'}, vp);
  for (const pts of lay.edges) svg('path', {class: 'edge', d: 'M' + pts.map((p) => `${p.x},${p.y}`).join(' L'), 'marker-end': 'url(#arrow)'}, eg);
  for (const n of lay.nodes) {
    const node = rw.nodes[n.id];
    const cls = ['node', 'f-' + (FAMILY[node.op] || (/^[A-Z0-9_]+$/.test(node.op) ? 'alu' : 'other'))];
    if (changed.has(n.id)) cls.push('changed');
    if (n.id === st.after) cls.push('after');
    if (n.id === st.before) cls.push('before');
    const g = svg('g', {class: cls.join(' '), 'data-id': n.id, transform: `translate(${n.x - n.width / 2},${n.y - n.height / 2})`}, ng);
    svg('rect', {width: n.width, height: n.height, rx: 5}, g);
    const text = svg('text', {x: n.width / 2, y: 5}, g);
    n.lines.forEach((l, i) => { svg('tspan', {x: n.width / 2, dy: 14, class: i ? '' : 'op'}, text).textContent = l; });
    svg('title', {}, g).textContent = `#${n.id} ${node.op} ${node.dtype}\n${node.arg || ''}`;
  }
  box.replaceChildren(root);
  placeView(lay, st.after);
}

// Fit on a new rewrite; while stepping keep the user's pan and zoom, but bring the changed node into view.
function placeView(lay, focus) {
  const box = $('#graph'), W = box.clientWidth || 800, H = box.clientHeight || 600, it = state.item;
  if (state.fit || !it.view) {
    const s = clamp(Math.min((W - 20) / lay.w, (H - 20) / lay.h), 0.25, 1);
    it.view = {s, x: (W - lay.w * s) / 2, y: lay.h * s < H ? (H - lay.h * s) / 2 : 10};
    state.fit = false;
  } else if (focus != null) {
    const n = lay.nodes.find((x) => x.id === focus), v = it.view;
    if (n) {
      const sx = v.x + n.x * v.s, sy = v.y + n.y * v.s;
      if (sx < 0 || sx > W || sy < 0 || sy > H) { v.x = W / 2 - n.x * v.s; v.y = H / 2 - n.y * v.s; }
    }
  }
  applyView();
}
function applyView() {
  const vp = document.querySelector('#graph g.viewport'), v = state.item && state.item.view;
  if (vp && v) vp.setAttribute('transform', `translate(${v.x},${v.y}) scale(${v.s})`);
}

function showNode(id) {
  const rw = state.item.rewrites[state.rw], n = rw.nodes[id];
  if (!n) return;
  const users = Object.keys(rw.nodes).filter((u) => rw.nodes[u].src.includes(id)).length;
  $('#node-info').replaceChildren(h('h3', {}, `Node #${id}`),
    h('pre', {}, `${n.op} ${n.dtype}\narg: ${n.arg || '(none)'}\nsrc: ${n.src.map((s) => '#' + s).join(' ') || '(none)'}\nused by ${users} recorded node(s)`));
}

// ---- timeline
async function showTimeline(keepView) {
  state.view = {kind: 'timeline'};
  markActive();
  let tl;
  try { tl = await api('timeline', true); } catch (e) { return showMessage(e.message); }
  if (state.view.kind !== 'timeline') return;
  state.tl = tl;
  if (!keepView) state.tlView = null;
  showSection('timeline');
  drawTimeline();
}

// A tick step of 1, 2 or 5 times a power of ten, about `count` ticks over span.
function tickStep(span, count) {
  const raw = span / Math.max(1, count), p = Math.pow(10, Math.floor(Math.log10(raw)));
  return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw);
}
const hue = (name) => { let x = 0; for (const c of name) x = (x * 31 + c.charCodeAt(0)) >>> 0; return x % 360; };

const TL = {left: 120, right: 16, axis: 22, lane: 28, mem: 80, gap: 18};
function drawTimeline() {
  const tl = state.tl, box = $('#timeline');
  const launches = tl.launches || [], memory = tl.memory || [];
  if (!launches.length && !memory.length) return box.replaceChildren(h('div', {class: 'note'}, 'Nothing launched yet.'));
  const devices = [...new Set([...(tl.devices || []), ...launches.map((l) => l.device), ...memory.map((m) => m.device)])];
  const memDevices = devices.filter((d) => memory.some((m) => m.device === d));
  let lo = Infinity, hi = -Infinity;
  for (const l of launches) { lo = Math.min(lo, l.st_us); hi = Math.max(hi, l.en_us); }
  for (const m of memory) { lo = Math.min(lo, m.t_us); hi = Math.max(hi, m.t_us); }
  if (!(hi > lo)) hi = lo + 1;
  if (!state.tlView || !state.tlView.zoomed) state.tlView = {lo, hi, end: hi};
  const v = state.tlView, W = Math.max(400, box.clientWidth - 4), PW = W - TL.left - TL.right;
  const lanesH = devices.length * TL.lane, memTop = TL.axis + lanesH + TL.gap;
  const H = memTop + memDevices.length * (TL.mem + TL.gap) + 4;
  const X = (t) => TL.left + (t - v.lo) / (v.hi - v.lo) * PW;
  const root = svg('svg', {width: W, height: H, class: 'timeline'});
  svg('rect', {x: TL.left, y: 0, width: PW, height: H}, svg('clipPath', {id: 'tl-clip'}, svg('defs', {}, root)));

  const axis = svg('g', {class: 'axis'}, root), step = tickStep(v.hi - v.lo, PW / 100), t0 = tl.t0_us || 0;
  for (let t = Math.ceil((v.lo - t0) / step) * step + t0; t <= v.hi; t += step) {
    svg('line', {class: 'grid', x1: X(t), x2: X(t), y1: TL.axis - 4, y2: H}, axis);
    svg('text', {x: X(t), y: TL.axis - 8, 'text-anchor': 'middle'}, axis).textContent = fmtUs(t - t0);
  }
  devices.forEach((d, i) => {
    const y = TL.axis + i * TL.lane;
    svg('rect', {class: 'lane', x: TL.left, y, width: PW, height: TL.lane - 2}, root);
    svg('text', {class: 'lane-label', x: 8, y: y + TL.lane / 2 + 4}, root).textContent = d;
  });
  memDevices.forEach((d, i) => svg('rect', {class: 'lane', x: TL.left, y: memTop + i * (TL.mem + TL.gap), width: PW, height: TL.mem}, root));

  const plot = svg('g', {'clip-path': 'url(#tl-clip)'}, root); // after the backgrounds, so drawn over them
  for (const l of launches) {
    const x = X(l.st_us), w = Math.max(1, X(l.en_us) - x), y = TL.axis + devices.indexOf(l.device) * TL.lane + 3;
    const copy = l.kernel == null || l.kernel < 0;
    const r = svg('rect', {class: 'launch' + (copy ? ' copy' : ''), x, y, width: w, height: TL.lane - 8, 'data-kernel': copy ? -1 : l.kernel,
      fill: copy ? '#8b90a8' : `hsl(${hue(l.name)},55%,62%)`}, plot);
    svg('title', {}, r).textContent = `${l.name}\n${fmtUs(l.en_us - l.st_us)}, ${fmtBytes(l.bytes || 0)}` +
      (l.flops ? `, ${l.flops} FLOPs` : '') + (copy ? '' : '\nclick to open the kernel');
    if (w > l.name.length * CHAR_W + 8 && x + w > TL.left && x < W) {
      svg('text', {class: 'bar-label', x: Math.max(x, TL.left) + 4, y: y + (TL.lane - 8) / 2}, plot).textContent = l.name;
    }
  }

  // memory in use: a step function per device, from each allocation or free to the next
  memDevices.forEach((d, i) => {
    const y0 = memTop + i * (TL.mem + TL.gap), recs = memory.filter((m) => m.device === d).sort((a, b) => a.t_us - b.t_us);
    const max = recs.reduce((m, r) => Math.max(m, r.bytes), 1), Y = (b) => y0 + TL.mem - b / max * TL.mem;
    svg('text', {class: 'lane-label', x: 8, y: y0 + 14}, root).textContent = d;
    svg('text', {class: 'mem-label', x: 8, y: y0 + 30}, root).textContent = 'memory, MB';
    svg('text', {class: 'mem-tick', x: TL.left - 6, y: y0 + 10, 'text-anchor': 'end'}, root).textContent = (max / 1048576).toFixed(max < 10485760 ? 2 : 0);
    svg('text', {class: 'mem-tick', x: TL.left - 6, y: y0 + TL.mem, 'text-anchor': 'end'}, root).textContent = '0';
    let line = `M${X(recs[0].t_us)},${Y(recs[0].bytes)}`;
    for (const r of recs.slice(1)) line += ` H${X(r.t_us)} V${Y(r.bytes)}`;
    line += ` H${X(v.end)}`;
    svg('path', {class: 'memory-area', d: `${line} V${Y(0)} H${X(recs[0].t_us)} z`}, plot);
    const p = svg('path', {class: 'memory', 'data-device': d, d: line}, plot);
    svg('title', {}, p).textContent = `${d}: up to ${fmtBytes(max)} in use`;
  });
  box.replaceChildren(root);
}

// ---- input: pan and zoom for the graph and the timeline, clicks that were not drags, keyboard
function dragger(el, onMove, onClick) {
  let drag = null;
  el.addEventListener('mousedown', (e) => { if (e.button === 0) drag = {x: e.clientX, y: e.clientY, moved: false}; });
  window.addEventListener('mousemove', (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
    drag.moved = true; drag.x = e.clientX; drag.y = e.clientY;
    onMove(dx, dy);
  });
  window.addEventListener('mouseup', () => { setTimeout(() => { drag = null; }); });
  el.addEventListener('click', (e) => { if (!drag || !drag.moved) onClick(e); });
}

function setupInput() {
  const graph = $('#graph'), timeline = $('#timeline');
  dragger(graph, (dx, dy) => {
    const v = state.item && state.item.view;
    if (v) { v.x += dx; v.y += dy; applyView(); }
  }, (e) => {
    const g = e.target.closest && e.target.closest('g.node');
    if (g) showNode(+g.dataset.id);
  });
  graph.addEventListener('wheel', (e) => {
    const v = state.item && state.item.view;
    if (!v) return;
    e.preventDefault();
    const r = graph.getBoundingClientRect(), mx = e.clientX - r.left, my = e.clientY - r.top;
    const f = clamp(Math.exp(-e.deltaY * 0.0015), 0.05 / v.s, 4 / v.s);
    v.x = mx - (mx - v.x) * f; v.y = my - (my - v.y) * f; v.s *= f;
    applyView();
  }, {passive: false});

  dragger(timeline, (dx) => {
    const v = state.tlView;
    if (!v) return;
    const dt = dx / (timeline.clientWidth - TL.left - TL.right) * (v.hi - v.lo);
    v.lo -= dt; v.hi -= dt; v.zoomed = true;
    drawTimeline();
  }, (e) => {
    const k = e.target.dataset && e.target.dataset.kernel;
    if (k != null && +k >= 0) go(`kernel/${k}`);
  });
  timeline.addEventListener('wheel', (e) => {
    const v = state.tlView;
    if (!v) return;
    e.preventDefault();
    const r = timeline.getBoundingClientRect(), PW = timeline.clientWidth - TL.left - TL.right;
    const t = v.lo + clamp((e.clientX - r.left - TL.left) / PW, 0, 1) * (v.hi - v.lo);
    const f = Math.exp(e.deltaY * 0.0015), span = Math.max(1e-3, (v.hi - v.lo) * f);
    v.lo = t - (t - v.lo) * span / (v.hi - v.lo); v.hi = v.lo + span; v.zoomed = true;
    drawTimeline();
  }, {passive: false});
  timeline.addEventListener('dblclick', () => { state.tlView = null; drawTimeline(); });

  $('#nav-timeline').onclick = () => go('timeline');
  $('#rw-prev').onclick = () => setStep(state.rw - 1, 0);
  $('#rw-next').onclick = () => setStep(state.rw + 1, 0);
  $('#step-prev').onclick = () => setStep(state.rw, state.step - 1);
  $('#step-next').onclick = () => setStep(state.rw, state.step + 1);
  $('#step-range').oninput = (e) => setStep(state.rw, +e.target.value);

  document.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || $('#graph-view').hidden || !state.item) return;
    const move = {ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0]}[e.key];
    if (e.key === ' ') { // space fits the graph to the window again
      e.preventDefault(); state.fit = true; renderStep();
    } else if (move) {
      e.preventDefault(); // also keeps the focused range input from moving a second time
      if (move[0]) setStep(state.rw + move[0], 0); else setStep(state.rw, state.step + move[1]);
    }
  });
  window.addEventListener('resize', () => { if (!$('#timeline-view').hidden && state.tl) drawTimeline(); });
  window.addEventListener('hashchange', routeTo);
}

// ---- start; from the server, poll the index so a running program's new kernels show up
async function loadIndex() {
  const idx = await api('index', true), text = JSON.stringify(idx);
  if (text === state.indexText) return false;
  state.index = idx; state.indexText = text;
  renderSidebar();
  return true;
}

async function init() {
  setupInput();
  try { await loadIndex(); } catch (e) { return showMessage(`Cannot load the VIZ index: ${e.message}`); }
  routeTo();
  if (DUMP) return;
  setInterval(async () => {
    try {
      if (await loadIndex() && state.view.kind === 'timeline') showTimeline(true);
    } catch (e) {
      $('#status').textContent = `server not reachable (${e.message})`;
      state.indexText = ''; // redraw once it answers again
    }
  }, 2000);
}
init();
})();
