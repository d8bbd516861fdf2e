#!/usr/bin/env node
// Headless browser test of the VIZ viewer (src/viz/web), against the library's server or a dumped folder:
//   node tests/viz/browser.js --url http://127.0.0.1:PORT/ --shots DIR
//   node tests/viz/browser.js --url file:///path/to/dump/index.html --shots DIR
// It loads the expected data itself (the /api routes, or data.js evaluated in a sandbox), drives Debian's chromium
// with puppeteer-core (from $TG_VIZ_NODE_MODULES, installed by scripts/viz_deps.sh) and compares what the page draws.
// One line per check; exit 1 on the first failure or after 150 s in all (a loaded 2-core CI machine lays out slowly).
'use strict';
const fs = require('fs');
const path = require('path');
const http = require('http');
const vm = require('vm');
const {fileURLToPath} = require('url');

const TOTAL_MS = 150000, WAIT_MS = 15000, MAX_NODES = 2000;
let browser = null;

function fail(msg) {
  console.error(`FAIL ${msg}`);
  try { if (browser && browser.process()) browser.process().kill('SIGKILL'); } catch (e) { /* exiting anyway */ }
  process.exit(1);
}
const ok = (msg) => console.log(`ok   ${msg}`);
const overall = setTimeout(() => fail(`timed out after ${TOTAL_MS / 1000} s`), TOTAL_MS);

function parseArgs() {
  const a = {};
  for (let i = 2; i < process.argv.length; i += 2) {
    const k = process.argv[i], v = process.argv[i + 1];
    if (!['--url', '--shots', '--max-steps'].includes(k) || v === undefined) fail(`bad argument ${k}; usage: browser.js --url URL --shots DIR [--max-steps N]`);
    a[k.slice(2)] = v;
  }
  a.maxSteps = Math.max(2, parseInt(a['max-steps'] || '40', 10) || 40);
  if (!a.url || !a.shots) fail('usage: browser.js --url http://127.0.0.1:PORT/ | file:///dump/index.html --shots DIR');
  return a;
}

function getJSON(url) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, {timeout: 10000}, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { body += c; });
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`GET ${url}: HTTP ${res.statusCode}`));
        try { resolve(JSON.parse(body)); } catch (e) { reject(new Error(`GET ${url}: bad JSON (${e.message})`)); }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timed out`)));
    req.on('error', (e) => reject(new Error(`GET ${url}: ${e.message}`)));
  });
}

// The expected data, read independently of the viewer.
async function loadExpected(url) {
  if (url.startsWith('file:')) {
    const file = path.join(path.dirname(fileURLToPath(url.split('#')[0])), 'data.js');
    if (!fs.existsSync(file)) fail(`${file} is missing`);
    const sandbox = {window: {}};
    vm.runInNewContext(fs.readFileSync(file, 'utf8'), sandbox, {filename: file, timeout: 10000});
    const D = sandbox.window.TG_VIZ_DATA;
    if (!D || !D.index) fail(`${file} does not define window.TG_VIZ_DATA with an index`);
    const pick = (map, id, what) => (map || {})[id] || fail(`${what} ${id} is listed but not in data.js`);
    return {index: D.index, timeline: D.timeline, kernel: async (id) => pick(D.kernels, id, 'kernel'), realize: async (id) => pick(D.realizes, id, 'realize')};
  }
  const api = (route) => getJSON(new URL('api/' + route, url).href);
  return {index: await api('index'), timeline: await api('timeline'), kernel: (id) => api(`kernel/${id}`), realize: (id) => api(`realize/${id}`)};
}

// Same rule as the viewer's: every node reachable from root through src.
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

async function main() {
  const args = parseArgs();
  const modules = path.resolve(process.env.TG_VIZ_NODE_MODULES || path.join(__dirname, '../../build/viz/node_modules'));
  let puppeteer;
  try { puppeteer = require(path.join(modules, 'puppeteer-core')); } catch (e) {
    fail(`puppeteer-core not found in ${modules} (set TG_VIZ_NODE_MODULES; scripts/viz_deps.sh installs it): ${e.message}`);
  }
  const chromium = process.env.TG_VIZ_CHROMIUM || '/usr/bin/chromium';
  if (!fs.existsSync(chromium)) fail(`${chromium} is missing (apt-get install chromium)`);
  fs.mkdirSync(args.shots, {recursive: true});
  const shot = (page, name) => page.screenshot({path: path.join(args.shots, name)});

  const E = await loadExpected(args.url);
  const index = E.index, timeline = E.timeline || {launches: [], memory: []};
  if (!index.kernels || !index.kernels.length) fail('the index lists no kernels: nothing to check');
  ok(`expected data: ${index.realizes.length} realizes, ${index.kernels.length} kernels, ${timeline.launches.length} launches`);

  browser = await puppeteer.launch({executablePath: chromium, headless: true, args: ['--no-sandbox', '--disable-gpu'], timeout: 20000});
  const page = await browser.newPage();
  await page.setViewport({width: 1440, height: 900});
  page.setDefaultTimeout(WAIT_MS);
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') console.log(`     (console) ${m.text()}`); });
  const noErrors = (what) => { if (pageErrors.length) fail(`${what}: page error: ${pageErrors.join('; ')}`); };
  const waitFor = async (sel, what) => {
    try { await page.waitForSelector(sel, {timeout: WAIT_MS}); } catch (e) {
      const msg = await page.$eval('#message', (m) => (m.hidden ? '' : m.textContent)).catch(() => '');
      fail(`${what}: ${sel} did not appear${msg ? ` (page says: ${msg})` : ''}${pageErrors.length ? ` (page errors: ${pageErrors.join('; ')})` : ''}`);
    }
  };
  const graphSel = (kind, id, rw, step) => `#graph[data-kind="${kind}"][data-id="${id}"]` +
    (rw === undefined ? '' : `[data-rewrite="${rw}"][data-step="${step}"]`);
  const drawn = () => page.evaluate(() => ({
    nodes: [...document.querySelectorAll('#graph svg g.node')].map((g) => [+g.dataset.id, g.getAttribute('class')]),
    tooBig: !!document.querySelector('#graph .too-big'),
    rule: document.querySelector('#rule').textContent,
  }));
  // the drawn graph is exactly the nodes reachable from root (or the too-big message)
  const checkGraph = (what, nodes, root, got) => {
    const want = reach(nodes, root);
    if (want.size > MAX_NODES) {
      if (!got.tooBig || got.nodes.length) fail(`${what}: ${want.size} nodes should give the too-big message, got ${got.nodes.length} drawn`);
      return want;
    }
    if (got.nodes.length !== want.size) fail(`${what}: ${got.nodes.length} nodes drawn, ${want.size} reachable from root ${root}`);
    const missing = [...want].filter((id) => !got.nodes.some(([g]) => g === id));
    if (missing.length) fail(`${what}: nodes ${missing.slice(0, 10).join(', ')} are reachable but not drawn`);
    return want;
  };

  // 1. the kernel list
  await page.goto(args.url, {waitUntil: 'load'});
  await waitFor('#realizes li.kernel', 'kernel list');
  const rows = await page.$$eval('#realizes li.kernel', (els) => els.map((e) => ({id: e.dataset.id, text: e.textContent, shown: e.offsetParent !== null})));
  for (const k of index.kernels) {
    const row = rows.find((r) => r.id === String(k.id));
    if (!row) fail(`kernel list: kernel ${k.id} (${k.name}) is not listed`);
    if (!row.text.includes(k.name) || !row.text.includes(k.device)) fail(`kernel list: row of kernel ${k.id} reads "${row.text}", not its name ${k.name} and device ${k.device}`);
    if (!row.shown) fail(`kernel list: kernel ${k.id} is listed but hidden`);
  }
  if (!await page.$('#nav-timeline')) fail('kernel list: no Timeline entry');
  await shot(page, 'kernel_list.png');
  noErrors('kernel list');
  ok(`kernel list: all ${index.kernels.length} kernels of the index shown with name and device`);

  // 2. the first kernel in the list: title and source
  const first = rows[0].id, kernel = await E.kernel(first);
  await page.click(`#realizes li.kernel[data-id="${first}"]`);
  await waitFor(graphSel('kernel', first), `open kernel ${first}`);
  const view = await page.evaluate(() => ({title: document.querySelector('#title').textContent, source: document.querySelector('#source').textContent,
    rewrites: document.querySelectorAll('#rewrites li').length}));
  const firstLine = (kernel.src || '').split('\n').map((l) => l.trim()).find((l) => l) || '';
  if (!view.source.includes(firstLine)) fail(`source: panel does not contain the first line of kernel ${first}'s src: "${firstLine}"`);
  if (kernel.src.includes(kernel.name) && !view.source.includes(kernel.name)) fail(`source: panel does not contain the name ${kernel.name}`);
  if (view.title !== kernel.name) fail(`source: title is "${view.title}", expected "${kernel.name}"`);
  if (view.rewrites !== kernel.rewrites.length) fail(`source: ${view.rewrites} rewrites listed, the kernel has ${kernel.rewrites.length}`);
  ok(`kernel ${first} (${kernel.name}): title, ${kernel.rewrites.length} rewrites listed, source shows "${firstLine.slice(0, 60)}"`);

  // 3. step through the first rewrite where at least two pattern rules fired, with the keyboard (first such kernel in
  // list order), its first MAX_STEPS steps (each is a layout; a long symbolic rewrite has hundreds)
  const fired = (rw) => rw.steps.filter((st) => st.rule && st.loc).length >= 2;
  let kid = first, kdata = kernel, r = kernel.rewrites.findIndex(fired);
  for (const row of rows.slice(1)) {
    if (r >= 0) break;
    kid = row.id; kdata = await E.kernel(kid);
    r = kdata.rewrites.findIndex(fired);
  }
  if (r < 0) fail('steps: no kernel has a rewrite where two pattern rules fired');
  if (kid !== first) {
    await page.click(`#realizes li.kernel[data-id="${kid}"]`);
    await waitFor(graphSel('kernel', kid), `open kernel ${kid}`);
  }
  for (let i = 0; i < r; i++) await page.keyboard.press('ArrowDown');
  const rw = kdata.rewrites[r], n = Math.min(rw.steps.length, args.maxSteps);
  let shotTaken = false, maxNodes = 0;
  for (let k = 0; k < n; k++) {
    if (k > 0) await page.keyboard.press('ArrowRight');
    const what = `steps: kernel ${kid} rewrite ${r} "${rw.name}" step ${k}/${n - 1}`;
    await waitFor(graphSel('kernel', kid, r, k), what);
    const st = rw.steps[k], got = await drawn();
    const want = checkGraph(what, rw.nodes, st.root, got);
    maxNodes = Math.max(maxNodes, want.size);
    if (got.rule !== (st.rule || '')) fail(`${what}: rule shown is "${got.rule}", expected "${st.rule || ''}"`);
    const cls = (id) => (got.nodes.find(([g]) => g === id) || [0, ''])[1].split(' ');
    if (!got.tooBig && st.after != null && !cls(st.after).includes('changed')) fail(`${what}: the after node ${st.after} is not highlighted (class "${cls(st.after).join(' ')}")`);
    if (!got.tooBig && st.before != null && want.has(st.before) && !cls(st.before).includes('before')) fail(`${what}: the before node ${st.before} is drawn but not marked`);
    if (!shotTaken && (st.rule || k === n - 1)) { await shot(page, 'graph.png'); shotTaken = true; }
  }
  // past the last step it stays there; where --max-steps cut the walk short there is one more step to go to
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowLeft');
  await waitFor(graphSel('kernel', kid, r, n === rw.steps.length ? n - 2 : n - 1), 'steps: ArrowRight then ArrowLeft at the walk\'s end');
  noErrors('steps');
  ok(`steps: rewrite "${rw.name}" of kernel ${kid}, ${n} of its ${rw.steps.length} steps: drawn nodes = reachable nodes (up to ${maxNodes}), rule text, after/before highlighted`);

  // 4. the realize of that kernel: its tensor graph
  const entry = index.kernels.find((k) => String(k.id) === kid);
  if (entry && index.realizes.some((x) => x.id === entry.realize)) {
    const real = await E.realize(entry.realize);
    await page.click(`#realizes li.realize[data-id="${entry.realize}"] > .realize-head .rname`);
    await waitFor(graphSel('realize', entry.realize, 0, 0), `realize ${entry.realize}`);
    const want = checkGraph(`realize ${entry.realize}`, real.graph.nodes, real.graph.steps[0].root, await drawn());
    ok(`realize ${entry.realize}: tensor graph of ${want.size} nodes drawn`);
  }

  // 5. the timeline: one bar per launch, one memory line per device with memory records
  await page.click('#nav-timeline');
  const launches = timeline.launches || [], memory = timeline.memory || [];
  await waitFor(launches.length || memory.length ? '#timeline svg.timeline' : '#timeline .note', 'timeline');
  const tl = await page.evaluate(() => ({
    bars: [...document.querySelectorAll('#timeline rect.launch')].map((b) => [b.dataset.kernel, (b.querySelector('title') || {}).textContent || '']),
    mem: [...document.querySelectorAll('#timeline path.memory')].map((p) => p.dataset.device),
    text: document.querySelector('#timeline').textContent,
  }));
  if (tl.bars.length !== launches.length) fail(`timeline: ${tl.bars.length} rect.launch drawn, ${launches.length} launches recorded`);
  launches.forEach((l, i) => { if (!tl.bars[i][1].includes(l.name)) fail(`timeline: bar ${i}'s tooltip "${tl.bars[i][1]}" lacks its name ${l.name}`); });
  const memDevices = [...new Set(memory.map((m) => m.device))].sort();
  if (JSON.stringify([...tl.mem].sort()) !== JSON.stringify(memDevices)) fail(`timeline: memory paths for [${tl.mem}], expected one for each of [${memDevices}]`);
  if (memDevices.length && !tl.text.includes('MB')) fail('timeline: no MB label on the memory chart');
  await shot(page, 'timeline.png');
  noErrors('timeline');
  ok(`timeline: ${launches.length} launch bars with tooltips, memory lines for ${memDevices.length} device(s) [${memDevices}]`);

  // 6. clicking a kernel's bar opens that kernel
  const bi = launches.findIndex((l) => l.kernel >= 0 && index.kernels.some((k) => k.id === l.kernel));
  if (bi >= 0) {
    await page.evaluate((i) => document.querySelectorAll('#timeline rect.launch')[i].dispatchEvent(new MouseEvent('click', {bubbles: true})), bi);
    await waitFor(graphSel('kernel', launches[bi].kernel), `timeline: click on bar ${bi}`);
    ok(`timeline: clicking bar ${bi} opened kernel ${launches[bi].kernel} (${launches[bi].name})`);
  }
  noErrors('end');
  await browser.close();
  clearTimeout(overall);
  console.log(`ok   all checks passed; screenshots in ${args.shots}`);
}

main().catch((e) => fail(e && e.message ? e.message : String(e)));
