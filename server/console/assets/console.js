// The pod console: renders /api/state as an SVG pod map and tables, and
// re-renders when /api/events says the state changed. No inline script or
// style (the Content-Security-Policy forbids them); data only ever reaches
// the page as text nodes and attributes, never as markup.
'use strict';

const SVG = 'http://www.w3.org/2000/svg';
const view = {
  session: null,
  state: null,
  version: 0,
  selected: null,
  fetching: false,
  again: false,
  source: null,
};

function $(id) { return document.getElementById(id); }

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

async function api(path, options) {
  const response = await fetch(path, Object.assign({credentials: 'same-origin'}, options || {}));
  let body = {};
  try { body = await response.json(); } catch (e) { body = {}; }
  if (!response.ok) {
    const error = new Error(body.error || ('HTTP ' + response.status));
    error.status = response.status;
    throw error;
  }
  return body;
}

function form(values) {
  return Object.entries(values)
      .map(([k, v]) => encodeURIComponent(k) + '=' + encodeURIComponent(v)).join('&');
}

async function post(path, values) {
  const headers = {'Content-Type': 'application/x-www-form-urlencoded'};
  if (view.session && view.session.csrf) headers['X-CSRF-Token'] = view.session.csrf;
  return api(path, {method: 'POST', headers: headers, body: form(values)});
}

// Partition colours: a stable hue per id.
function colour(id) {
  let h = 0;
  for (let i = 0; i < id.length; ++i) h = (h * 31 + id.charCodeAt(i)) % 360;
  return 'hsl(' + ((h * 47) % 360) + ', 65%, 70%)';
}

function age(ms) {
  const s = Math.max(0, Math.floor((Date.now() - ms) / 1000));
  if (s < 60) return s + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm';
  if (s < 86400) return Math.floor(s / 3600) + 'h' + Math.floor((s % 3600) / 60) + 'm';
  return Math.floor(s / 86400) + 'd';
}

function setInfo(lines) { $('info').textContent = lines.join('\n'); }

// --- Pod map -------------------------------------------------------------

const W = 230, MH = 78, TOP = 34, LEFT = 40, IPU_W = 60, IPU_H = 22, BOX_W = 200, BOX_H = 66;

// The part of the segment between two IPU centres that lies outside both
// IPUs' boxes.
function trimToIpus(x1, y1, x2, y2) {
  const dx = x2 - x1, dy = y2 - y1;
  const t = Math.min(dx ? IPU_W / 2 / Math.abs(dx) : Infinity,
                     dy ? IPU_H / 2 / Math.abs(dy) : Infinity);
  if (!(t < 0.5)) return [x1, y1, x2, y2];  // overlapping or missing IPUs
  return [x1 + t * dx, y1 + t * dy, x2 - t * dx, y2 - t * dy];
}

function drawCluster(c, y0) {
  const g = svg('g', {'class': 'cluster', 'data-cluster': c.id});
  g.appendChild(svg('text', {x: 4, y: y0 + 14},
      'cluster ' + c.id + ' (' + c.num_ilds + ' ILD' + (c.num_ilds > 1 ? 's' : '') + ', ' +
      c.topology + ', ' + c.cluster_topology + ')'));
  const centres = {};  // "agent/ipu#" -> [x, y]
  const boxes = {};    // agent -> {x, y}
  for (const m of c.machines) {
    const x = LEFT + m.ild * W;
    const y = y0 + TOP + m.position * MH;
    boxes[m.agent] = {x: x, y: y};
    for (const ipu of m.ipus) {
      const col = ipu.slot % 2, row = ipu.slot < 2 ? 0 : 1;
      centres[m.agent + '/' + ipu.ipu] = [x + 20 + col * 90 + IPU_W / 2, y + 10 + row * 32 + IPU_H / 2];
    }
  }
  // Links are drawn after (above) the machines so that one inside a machine,
  // and a fault on it, is never hidden by the machine's box. They run from
  // IPU edge to IPU edge, so that they never cover an IPU either.
  const links = svg('g', {'class': 'links'});
  const down = svg('g', {'class': 'links-down'});
  c.links.forEach((l, i) => {
    let x1, y1, x2, y2;
    const kind = l.kind === 'IPU-Link' ? 'ipulink' : l.kind === 'Sync-Link' ? 'sync' : 'gw';
    if (kind === 'ipulink') {
      [x1, y1] = centres[l.a.agent + '/' + l.a.ipu] || [0, 0];
      [x2, y2] = centres[l.b.agent + '/' + l.b.ipu] || [0, 0];
    } else if (kind === 'sync') {
      const a = boxes[l.a.agent], b = boxes[l.b.agent];
      x1 = a.x - 6 - (l.a.port % 2) * 5; y1 = a.y + 40; x2 = b.x - 6 - (l.a.port % 2) * 5; y2 = b.y + 10;
    } else {
      const a = boxes[l.a.agent], b = boxes[l.b.agent];
      x1 = a.x + BOX_W; y1 = a.y + 36; x2 = b.x + (b.x > a.x ? 0 : BOX_W); y2 = b.y + 40;
    }
    let d;
    if (l.wrap && kind === 'ipulink') {
      // Leaves and enters its IPUs sideways, round the outside of the column.
      const bend = x1 < LEFT + BOX_W / 2 + W * l.ild ? -30 : 30;
      const side = Math.sign(bend) * IPU_W / 2;
      x1 += side; x2 += side;
      d = 'M' + x1 + ',' + y1 + ' C' + (x1 + bend) + ',' + y1 + ' ' + (x2 + bend) + ',' + y2 +
          ' ' + x2 + ',' + y2;
    } else if (l.wrap) {
      d = 'M' + x1 + ',' + y1 + ' C' + (x1 - 25) + ',' + y1 + ' ' + (x2 - 25) + ',' + y2 + ' ' +
          x2 + ',' + y2;
    } else if (kind === 'gw' && x2 <= x1) {
      // The GW-Link back to the first ILD runs in the gap below its row of
      // machines rather than across their boxes and IPUs.
      const gap = boxes[l.a.agent].y + (BOX_H + MH) / 2;
      d = 'M' + x1 + ',' + y1 + ' H' + (x1 + 10) + ' V' + gap + ' H' + (x2 + 12) + ' V' + y2 +
          ' H' + x2;
    } else {
      if (kind === 'ipulink') [x1, y1, x2, y2] = trimToIpus(x1, y1, x2, y2);
      d = 'M' + x1 + ',' + y1 + ' L' + x2 + ',' + y2;
    }
    const classes = ['link', kind];
    if (l.down) classes.push('down');
    if (l.partition) classes.push('owned');
    const shape = svg('g', {'class': classes.join(' '), 'data-link': l.name,
                            'data-down': l.down ? 'true' : 'false', 'data-index': i});
    if (l.partition) shape.setAttribute('data-partition', l.partition);
    // The wide band under the line takes the pointer (a dotted line alone
    // takes it only on its dots) and, on a link that is down, sets the red
    // dots off from whatever lies beneath.
    shape.appendChild(svg('path', {'class': 'hit', d: d}));
    shape.appendChild(svg('path', {'class': 'line', d: d}));
    shape.appendChild(svg('title', {}, l.kind + ' ' + l.name + (l.down ? ' DOWN' : '')));
    shape.addEventListener('mouseenter', () => showLink(l));
    shape.addEventListener('click', () => showLink(l));
    (l.down ? down : links).appendChild(shape);
  });
  // Links that are down go last: no other link's band covers them.
  links.appendChild(down);
  for (const m of c.machines) {
    const b = boxes[m.agent];
    const mg = svg('g', {'class': 'machine' + (m.up ? '' : ' down'), 'data-agent': m.agent,
                         'data-up': m.up ? 'true' : 'false'});
    const box = svg('rect', {'class': 'box', x: b.x, y: b.y, width: BOX_W, height: BOX_H, rx: 4});
    box.addEventListener('mouseenter', () => showMachine(c, m));
    box.addEventListener('click', () => showMachine(c, m));
    mg.appendChild(box);
    mg.appendChild(svg('text', {x: b.x + 82, y: b.y + 40}, m.agent + (m.up ? '' : ' (down)')));
    for (const ipu of m.ipus) {
      const [cx, cy] = centres[m.agent + '/' + ipu.ipu];
      const classes = ['ipu'];
      if (ipu.error) classes.push('error');
      if (ipu.partition && ipu.partition === view.selected) classes.push('highlight');
      const ig = svg('g', {'class': classes.join(' '), 'data-agent': m.agent, 'data-ipu': ipu.ipu,
                           'data-topology-id': ipu.topology_id,
                           'data-partition': ipu.partition || '',
                           'data-error': ipu.error || ''});
      const fill = ipu.partition ? colour(ipu.partition) : ipu.used ? '#bbb' : '#fff';
      ig.appendChild(svg('rect', {x: cx - IPU_W / 2, y: cy - IPU_H / 2, width: IPU_W, height: IPU_H,
                                  rx: 3, fill: fill}));
      ig.appendChild(svg('text', {x: cx - IPU_W / 2 + 4, y: cy + 4},
          'IPU' + ipu.ipu + (ipu.error ? ' !' : '')));
      ig.appendChild(svg('title', {}, m.agent + ' IPU ' + ipu.ipu +
          (ipu.partition ? ' in ' + ipu.partition : ipu.used ? ' in use' : ' free')));
      ig.addEventListener('mouseenter', () => showIpu(c, m, ipu));
      ig.addEventListener('click', () => {
        showIpu(c, m, ipu);
        if (ipu.partition) select(ipu.partition);
      });
      mg.appendChild(ig);
    }
    g.appendChild(mg);
  }
  g.appendChild(links);
  for (let i = 0; i < c.num_ilds; ++i) {
    g.appendChild(svg('text', {x: LEFT + i * W + 70, y: y0 + TOP - 6}, 'ILD ' + i));
  }
  return {g: g, height: TOP + c.machines_per_ild * MH + 20,
          width: LEFT + (c.num_ilds - 1) * W + BOX_W + 20};
}

function drawMap(state) {
  const map = $('map');
  let y = 0, width = 300;
  const parts = [];
  for (const c of state.clusters) {
    const d = drawCluster(c, y);
    parts.push(d.g);
    y += d.height;
    width = Math.max(width, d.width);
  }
  const height = Math.max(y, 40);
  // The map takes the panel's width (console.css) as far as its height may
  // grow: up to three times its drawn height and 80% of the window's, but
  // at least its drawn height, so that a tall pod scrolls rather than
  // shrinks.
  const root = svg('svg', {id: 'podmap', viewBox: '0 0 ' + width + ' ' + height,
                           preserveAspectRatio: 'xMidYMin meet',
                           'data-clusters': state.clusters.length});
  root.style.maxHeight = 'max(' + height + 'px, min(80vh, ' + 3 * height + 'px))';
  if (state.clusters.length === 0) root.appendChild(svg('text', {x: 10, y: 20}, 'No cluster.'));
  parts.forEach((p) => root.appendChild(p));
  map.replaceChildren(root);
  highlight();
}

// The key from colour to partition: every partition the caller may see,
// with its state as `vipu` prints it, and what the other fills mean.
function drawKey(state) {
  const items = [];
  const swatch = (fill) => {
    const s = svg('svg', {'class': 'swatch', width: 14, height: 14, viewBox: '0 0 14 14'});
    s.appendChild(svg('rect', {x: 1, y: 1, width: 12, height: 12, rx: 2, fill: fill}));
    return s;
  };
  for (const p of state.partitions) {
    const li = el('li', {'data-partition': p.id, 'data-state': p.state});
    li.appendChild(swatch(colour(p.id)));
    li.appendChild(el('span', {'class': 'pid'}, p.id));
    li.appendChild(el('span', {'class': 'state state-' + p.state.toLowerCase()}, stateText(p)));
    if (p.errors.length) li.title = p.errors.join('; ');
    li.addEventListener('click', () => select(p.id));
    items.push(li);
  }
  const hidden = state.clusters.some((c) => c.machines.some(
      (m) => m.ipus.some((ipu) => ipu.used && !ipu.partition)));
  if (hidden) {
    const li = el('li', {'class': 'other', 'data-partition': ''});
    li.appendChild(swatch('#bbb'));
    li.appendChild(el('span', {}, 'a partition you may not see'));
    items.push(li);
  }
  const free = el('li', {'class': 'other', 'data-partition': ''});
  free.appendChild(swatch('#fff'));
  free.appendChild(el('span', {}, 'free'));
  items.push(free);
  $('partition-key').replaceChildren(...items);
}

// A partition's state in the words of `vipu list partitions` and `vipu get
// partition` (the server sends them so), with the operation in flight if any.
function stateText(p) {
  return p.operation_state && p.operation_state !== 'IDLE'
      ? p.state + ', ' + p.operation_state : p.state;
}

function showMachine(c, m) {
  setInfo(['machine ' + m.agent + (m.up ? ' (up)' : ' (DOWN)'),
           'cluster ' + c.id + ', ILD ' + m.ild + ', position ' + m.position + ' in the ladder',
           'host ' + (m.host || '-') + ', ' + m.machine_type,
           'fault: vipu-admin inject fault ' + m.agent + ' --kind agent-crash']);
}

function showIpu(c, m, ipu) {
  setInfo(['IPU ' + ipu.ipu + ' of ' + m.agent + ' (agent), ILD ' + m.ild + ', topology id ' +
               ipu.topology_id,
           ipu.partition ? 'partition ' + ipu.partition + partitionState(ipu.partition)
                         : ipu.used ? 'in use' : 'free',
           ipu.error ? 'ERROR: ' + ipu.error : 'no error',
           'fault: vipu-admin inject fault ' + m.agent + ' --kind ipu-error --ipu ' + ipu.ipu]);
}

function showLink(l) {
  setInfo([l.kind + ' ' + l.name + (l.down ? ' DOWN' : ' up') +
               (l.internal ? ' (inside the machine)' : ', ' + l.cables + ' cable(s)') +
               (l.wrap ? ', torus wrap' : ''),
           'end a: ' + l.a.agent + ' --link ' + l.a.port + ' (' + l.a.port_name + ')',
           'end b: ' + l.b.agent + ' --link ' + l.b.port + ' (' + l.b.port_name + ')',
           l.partition ? 'owned by partition ' + l.partition + partitionState(l.partition)
                       : 'owned by no partition',
           'fault: vipu-admin inject fault ' + l.a.agent + ' --kind link-down --link ' + l.a.port]);
}

// " (ACTIVE)": the state of a partition, after its name.
function partitionState(id) {
  const p = view.state && view.state.partitions.find((x) => x.id === id);
  return p ? ' (' + stateText(p) + ')' : '';
}

function highlight() {
  for (const e of document.querySelectorAll('#podmap .ipu, #podmap .link')) {
    const mine = view.selected && e.getAttribute('data-partition') === view.selected;
    e.classList.toggle('highlight', !!mine);
  }
  for (const li of document.querySelectorAll('#partition-key li')) {
    li.classList.toggle('selected', !!view.selected &&
                        li.getAttribute('data-partition') === view.selected);
  }
  for (const tr of document.querySelectorAll('#partitions tbody tr')) {
    tr.classList.toggle('selected', tr.getAttribute('data-partition') === view.selected);
  }
}

// --- Tables --------------------------------------------------------------

function drawPartitions(state) {
  const body = $('partitions').querySelector('tbody');
  const rows = [];
  const admin = view.session && view.session.admin;
  for (const p of state.partitions) {
    const tr = el('tr', {'data-partition': p.id, 'data-state': p.state,
                         'data-operation-state': p.operation_state, 'data-size': p.size});
    const swatch = el('td', {}, p.id);
    swatch.classList.add('pid');
    tr.appendChild(swatch);
    for (const v of [p.allocation, p.owner || '-', p.size, p.num_ilds, p.num_gcds, p.routing,
                     p.state, p.operation_state, p.errors.join('; ') || '-',
                     p.auto_reset_retry_count + '/' + p.max_auto_reset_retries +
                         (p.auto_reset ? '' : ' (off)')]) {
      tr.appendChild(el('td', {}, String(v)));
    }
    tr.appendChild(el('td', {'class': 'age', 'data-created': p.created_unix_ms},
                      age(p.created_unix_ms)));
    const actions = el('td');
    if (admin) {
      for (const a of ['reset', 'remove']) {
        const b = el('button', {type: 'button', 'data-action': a, 'data-id': p.id}, a);
        b.addEventListener('click', (ev) => { ev.stopPropagation(); confirmAction(a, p.id); });
        actions.appendChild(b);
      }
    }
    tr.appendChild(actions);
    tr.addEventListener('click', () => select(p.id));
    rows.push(tr);
  }
  if (rows.length === 0) rows.push(el('tr', {'class': 'empty'}, 'No partition.'));
  body.replaceChildren(...rows);
  // The detail is fetched once per selection; its state follows the server.
  for (const span of document.querySelectorAll('#detail h3 .state')) {
    span.textContent = partitionState(span.getAttribute('data-partition'));
  }
  if (view.selected && !state.partitions.some((p) => p.id === view.selected)) {
    view.selected = null;
    $('detail').hidden = true;
  }
}

function drawCapacity(state) {
  const table = $('capacity');
  let sizes = [];
  for (const c of state.capacity) for (const f of c.sizes) if (!sizes.includes(f.size)) sizes.push(f.size);
  sizes.sort((a, b) => a - b);
  const head = el('tr');
  for (const h of ['Allocation', 'Cluster', 'IPUs', 'Free', 'Largest']) head.appendChild(el('th', {}, h));
  for (const s of sizes) head.appendChild(el('th', {}, String(s)));
  table.querySelector('thead').replaceChildren(head);
  const rows = [];
  for (const c of state.capacity) {
    const tr = el('tr', {'data-allocation': c.allocation, 'data-free': c.free_ipus,
                         'data-largest': c.largest});
    for (const v of [c.allocation, c.cluster, c.ipus, c.free_ipus, c.largest || 'none']) {
      tr.appendChild(el('td', {}, String(v)));
    }
    for (const s of sizes) {
      const f = c.sizes.find((x) => x.size === s);
      const td = el('td', {'data-size': s, 'data-fits': f && f.fits ? 'true' : 'false'},
                    f ? (f.fits ? 'yes' : 'no') : '-');
      td.className = f && f.fits ? 'fits' : 'nofit';
      if (f && !f.fits) td.title = f.why;
      tr.appendChild(td);
    }
    rows.push(tr);
  }
  table.querySelector('tbody').replaceChildren(...rows);
}

async function select(id) {
  view.selected = id;
  highlight();
  const detail = $('detail');
  detail.hidden = false;
  detail.replaceChildren(el('p', {}, 'Loading ' + id + '...'));
  let d;
  try {
    d = await api('/api/partition?id=' + encodeURIComponent(id));
  } catch (e) {
    detail.replaceChildren(el('p', {'class': 'error'}, String(e.message)));
    return;
  }
  if (view.selected !== id) return;
  const heading = el('h3', {}, 'Partition ' + id);
  heading.appendChild(el('span', {'class': 'state', 'data-partition': id}, partitionState(id)));
  const parts = [heading];
  parts.push(el('h4', {}, 'Target options (POPLAR_TARGET_OPTIONS)'));
  const t = el('table', {'data-table': 'target-options'});
  for (const [k, v] of Object.entries(d.target_options)) {
    const tr = el('tr');
    tr.appendChild(el('th', {}, k));
    tr.appendChild(el('td', {}, v));
    t.appendChild(tr);
  }
  parts.push(t);
  for (const g of d.gcds) {
    parts.push(el('h4', {}, 'IPUoF configuration, GCD ' + g.gcd));
    const at = el('table');
    for (const [k, v] of Object.entries(g.attributes)) {
      const tr = el('tr');
      tr.appendChild(el('th', {}, k));
      tr.appendChild(el('td', {}, v));
      at.appendChild(tr);
    }
    parts.push(at);
    const dt = el('table', {'data-gcd': g.gcd});
    const h = el('tr');
    for (const k of ['device', 'ip', 'server port', 'rdma port', 'segment', 'routing id', 'IPU#', 'chip']) {
      h.appendChild(el('th', {}, k));
    }
    dt.appendChild(h);
    for (const dev of g.devices) {
      const tr = el('tr');
      for (const v of [dev.id, dev.ip, dev.server_port, dev.rdma_port, dev.ipulink_segment_id,
                       dev.routing_id, dev.ipu_id, dev.chip_id]) {
        tr.appendChild(el('td', {}, String(v)));
      }
      dt.appendChild(tr);
    }
    parts.push(dt);
  }
  if (d.gcds_error) parts.push(el('p', {'class': 'error'}, d.gcds_error));
  const p = d.prediction;
  parts.push(el('h4', {}, 'ipu-model predict: one BERT-Large step on this shape'));
  if (p.error) {
    parts.push(el('p', {'class': 'error', 'data-prediction': 'error'}, p.error));
  } else {
    parts.push(el('p', {'data-prediction': p.step_time_s},
        p.replicas + ' x ' + p.ipus_per_replica + '-IPU pipeline(s), micro-batch ' + p.micro_batch +
        ', gradient accumulation ' + p.grad_accum + ': step ' + p.step_time_s.toFixed(3) +
        ' s, ' + p.samples_per_sec.toFixed(1) + ' samples/s, ' +
        Math.round(p.tokens_per_sec) + ' tokens/s, communication ' +
        (100 * p.communication_fraction).toFixed(1) + '% of the step'));
  }
  // A layout that does not fit has the refusal as its error already.
  const m = p.memory;
  if (m && m.fits && m.needed_bytes !== undefined) {
    // Decimal MB, as the IPU's 900 MB is quoted.
    parts.push(el('p', {'data-memory': m.needed_bytes},
        'memory: IPU ' + m.fullest_ipu + ' of each replica, the fullest, needs at least ' +
        (m.needed_bytes / 1e6).toFixed(1) + ' of its ' + (m.capacity_bytes / 1e6).toFixed(1) +
        ' MB, before code and buffers'));
  }
  detail.replaceChildren(...parts);
}

function confirmAction(action, id) {
  const dialog = $('confirm');
  $('confirm-text').textContent = 'Really ' + action + ' partition ' + id + '?';
  const yes = $('confirm-yes'), no = $('confirm-no');
  const done = () => { yes.onclick = null; no.onclick = null; dialog.close(); };
  yes.onclick = async () => {
    done();
    try {
      await post('/api/action', {action: action, id: id});
    } catch (e) {
      setInfo([action + ' ' + id + ' failed: ' + e.message]);
    }
  };
  no.onclick = done;
  dialog.showModal();
}

// --- History -------------------------------------------------------------

async function drawHistory() {
  let h;
  try { h = await api('/api/history?minutes=60'); } catch (e) { return; }
  const w = 640, ht = 160, pad = 30;
  const root = svg('svg', {'class': 'chart', width: w, height: ht + 40,
                           'data-samples': h.samples.length});
  const now = Date.now(), from = now - 3600 * 1000;
  const series = [['ipus_in_use', 'IPUs in use'], ['partitions', 'partitions'], ['faults', 'faults']];
  let max = 1;
  for (const s of h.samples) for (const [k] of series) max = Math.max(max, s[k]);
  root.appendChild(svg('line', {'class': 'axis', x1: pad, y1: ht, x2: w, y2: ht}));
  root.appendChild(svg('line', {'class': 'axis', x1: pad, y1: 10, x2: pad, y2: ht}));
  root.appendChild(svg('text', {x: 2, y: 14}, String(max)));
  root.appendChild(svg('text', {x: pad, y: ht + 14}, '-60 min'));
  root.appendChild(svg('text', {x: w - 30, y: ht + 14}, 'now'));
  series.forEach(([k, label], i) => {
    const points = h.samples.map((s) => {
      const x = pad + (w - pad) * (s.unix_ms - from) / (now - from);
      const y = ht - (ht - 10) * s[k] / max;
      return x.toFixed(1) + ',' + y.toFixed(1);
    });
    root.appendChild(svg('polyline', {'class': 's' + i, points: points.join(' ')}));
    const last = h.samples.length ? h.samples[h.samples.length - 1][k] : 0;
    root.appendChild(svg('text', {'class': 's' + i, x: pad + 10 + i * 180, y: ht + 32},
                         label + ': ' + last));
  });
  $('history').replaceChildren(root);
}

// --- Live ----------------------------------------------------------------

// One line on which server this is: a single server, or a member of a highly
// available control plane (docs/ha.md), its role and who leads.
function controlPlaneText(cp) {
  if (!cp || cp.mode !== 'ha') return 'control plane: single server; state in SQLite';
  const leader = cp.leader === null ? 'leader unknown'
      : cp.leader === cp.member ? cp.leader + ' (this member)' : cp.leader;
  const role = cp.role === 'leader' ? 'leader ' + leader
      : cp.role + ' ' + cp.member + ', leader ' + leader;
  return 'control plane: ' + role + '; state in etcd';
}

async function refresh() {
  if (view.fetching) { view.again = true; return; }
  view.fetching = true;
  try {
    do {
      view.again = false;
      const state = await api('/api/state');
      view.state = state;
      view.version = state.version;
      drawMap(state);
      drawKey(state);
      drawPartitions(state);
      drawCapacity(state);
      $('control-plane').textContent = controlPlaneText(state.control_plane);
      highlight();
      document.body.setAttribute('data-version', String(state.version));
    } while (view.again);
  } catch (e) {
    if (e.status === 401) return showLogin();
    setInfo(['cannot read the state: ' + e.message]);
  } finally {
    view.fetching = false;
  }
  drawHistory();
}

function setLive(mode) {
  document.body.setAttribute('data-live', mode);
  $('live').textContent = mode === 'live' ? 'live (version ' + view.version + ')' : mode;
}

function connect() {
  if (view.source) view.source.close();
  const source = new EventSource('/api/events');
  view.source = source;
  source.addEventListener('open', () => setLive('live'));
  source.addEventListener('state', (ev) => {
    const version = Number(ev.data);
    if (version !== view.version) refresh().then(() => setLive('live'));
    else setLive('live');
  });
  source.addEventListener('error', () => setLive('offline'));
}

function showLogin() {
  if (view.source) view.source.close();
  $('console').hidden = true;
  $('login').hidden = false;
  $('logout').hidden = true;
  $('who').textContent = '';
}

async function start() {
  try {
    view.session = await api('/api/session');
  } catch (e) {
    if (e.status === 401) return showLogin();
    setLive('offline');
    return;
  }
  $('login').hidden = true;
  $('console').hidden = false;
  $('who').textContent = view.session.secure
      ? 'user ' + view.session.user + (view.session.admin ? ' (admin)' : '') : 'not secure: every caller sees everything';
  $('logout').hidden = !view.session.secure;
  await refresh();
  connect();
}

document.addEventListener('DOMContentLoaded', () => {
  $('login-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    $('login-error').textContent = '';
    try {
      view.session = await post('/api/login', {user: $('login-user').value, key: $('login-key').value});
      $('login-key').value = '';
      start();
    } catch (e) {
      $('login-error').textContent = e.message;
    }
  });
  $('logout').addEventListener('click', async () => {
    try { await post('/api/logout', {}); } catch (e) { /* the session is gone either way */ }
    view.session = null;
    showLogin();
  });
  // Ages tick locally; the server is asked only when something changed.
  setInterval(() => {
    for (const td of document.querySelectorAll('td.age')) td.textContent = age(Number(td.getAttribute('data-created')));
  }, 1000);
  // The chart moves with time even when nothing changes.
  setInterval(() => { if (view.state) drawHistory(); }, 10000);
  start();
});
