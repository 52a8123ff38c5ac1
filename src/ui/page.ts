/**
 * The `mcpx ui` page and its script. The page is static; everything it shows comes from
 * /ui/api/state and /v1/events on the same daemon, and the charts are drawn by the Mermaid bundle the
 * daemon serves (the build's copy, dist/assets). No other address is ever asked for.
 *
 * For tests the script keeps `window.mcpxUi`: `loaded` (the first state is drawn), `renders` (charts
 * drawn so far), `mermaidRenders` (of those, the ones Mermaid laid out; the rest are copies of the same
 * text), `history` (every highlight change: server, instance states, chart ids), `events`.
 */

export const UI_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mcpx · live statecharts</title>
<link rel="icon" href="data:,">
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #fafafa; }
  header { background: #1f2937; color: #fff; padding: 10px 20px; display: flex; gap: 16px; align-items: baseline; flex-wrap: wrap; }
  header h1 { font-size: 18px; margin: 0; }
  header .muted { color: #cbd5e1; }
  main { padding: 12px 20px 40px; }
  section.server { background: #fff; border: 1px solid #e5e7eb; border-radius: 8px; margin: 0 0 18px; padding: 12px 16px; }
  section.server h2 { margin: 0 0 6px; font-size: 17px; }
  .badges span { display: inline-block; border-radius: 10px; padding: 1px 8px; margin: 2px 4px 2px 0; background: #eef2ff; font-size: 12px; }
  .badges .era-modern { background: #dcfce7; } .badges .era-legacy { background: #fef3c7; } .badges .era-none { background: #f3f4f6; }
  .stale { background: #fee2e2; border: 1px solid #fca5a5; padding: 4px 8px; border-radius: 6px; margin: 6px 0; }
  table { border-collapse: collapse; margin: 6px 0; font-size: 13px; }
  td, th { border: 1px solid #e5e7eb; padding: 3px 8px; text-align: left; vertical-align: top; }
  th { background: #f9fafb; }
  .cols { display: flex; gap: 16px; flex-wrap: wrap; }
  .cols > div { flex: 1 1 420px; min-width: 0; }
  /* A chart is drawn at its own size (labels stay >= 11 px) inside a viewport that scrolls and zooms, never the page. */
  .viewport { overflow: auto; height: 520px; border: 1px solid #e5e7eb; border-radius: 6px; background: #fff; cursor: grab; position: relative; overscroll-behavior: contain; }
  .viewport:focus { outline: 2px solid #2563eb; outline-offset: 1px; }
  .viewport.panning { cursor: grabbing; user-select: none; }
  .viewport.short { height: 360px; }
  .viewport.fitted { height: auto; max-height: 300px; }
  .path-box .toolbar .hint { display: none; }
  .chart svg { display: block; max-width: none !important; }
  .toolbar { display: flex; gap: 6px; align-items: center; flex-wrap: wrap; margin: 4px 0; font-size: 13px; }
  .toolbar button { font: inherit; padding: 1px 9px; border: 1px solid #cbd5e1; border-radius: 5px; background: #f8fafc; cursor: pointer; }
  .toolbar .zoom-level { min-width: 44px; text-align: center; color: #475569; }
  .toolbar .hint { color: #6b7280; }
  .path-summary { font-size: 13px; margin: 4px 0; }
  .path-summary .verdict { font-weight: 600; color: #047857; }
  .detail { font-size: 13px; border: 1px solid #e5e7eb; border-radius: 6px; background: #f8fafc; padding: 6px 10px; margin: 6px 0; }
  .detail:empty { display: none; }
  .detail h4 { margin: 0 0 4px; font-size: 14px; }
  .detail ul { margin: 0; padding-left: 18px; font: 12px/1.5 ui-monospace, monospace; }
  .chart g.node.visited > rect, .chart g.node.visited > path { stroke: #2563eb !important; stroke-width: 2.5px !important; }
  .chart path.taken { stroke: #2563eb !important; stroke-width: 3px !important; }
  .chart .mark circle { fill: #2563eb; stroke: #fff; stroke-width: 1.5px; }
  .chart .mark text { fill: #fff; font: 700 16px system-ui, sans-serif; text-anchor: middle; dominant-baseline: central; pointer-events: none; }
  .chart .mark.verdict-mark circle { fill: #047857; }
  .chart g.node.hl > rect, .chart g.node.hl > path { stroke: #dc2626 !important; stroke-width: 4px !important; }
  .chart path.taken.hl { stroke: #dc2626 !important; stroke-width: 5px !important; }
  .chart .mark.hl circle { fill: #dc2626; }
  .chart g.node { cursor: pointer; }
  .timeline li.hl { background: #fee2e2; }
  .timeline li[data-n]::before { content: attr(data-n); display: inline-block; min-width: 18px; padding: 0 3px; margin-right: 4px; border-radius: 9px; background: #2563eb; color: #fff; text-align: center; font-weight: 700; }
  .timeline li:not([data-n])::before { content: ''; display: inline-block; min-width: 18px; margin-right: 4px; }
  .probe h4 { cursor: pointer; }
  .probe.selected h4 { color: #1d4ed8; }
  .probe.selected h4::before { content: '▶ '; }
  .stale a { color: #991b1b; font-weight: 600; margin-left: 6px; }
  .pool-legend td, .pool-legend th { font-size: 12px; }
  .timeline ol { margin: 4px 0 10px; padding-left: 0; list-style: none; font: 12px/1.5 ui-monospace, monospace; }
  .timeline li { white-space: pre-wrap; }
  .timeline .t { color: #6b7280; display: inline-block; min-width: 70px; }
  .timeline .k { display: inline-block; min-width: 120px; font-weight: 600; }
  .k-discover-sent { color: #1d4ed8; } .k-initialize-sent { color: #b45309; } .k-timeout { color: #b91c1c; } .k-verdict { color: #047857; } .k-stale { color: #b91c1c; }
  .probe h4 { margin: 8px 0 2px; font-size: 13px; }
  h3.global { margin: 18px 0 4px; }
  section.global-chart { background: #fff; border: 1px solid #e5e7eb; border-radius: 8px; padding: 12px 16px; }
  details > summary { cursor: pointer; color: #374151; margin: 6px 0; }
  #error { color: #b91c1c; }
  #error:empty { display: none; }
  /* The top of the page, for a person at a glance: every server, then recent calls and errors. */
  .glance { background: #fff; border: 1px solid #e5e7eb; border-radius: 8px; padding: 8px 12px; margin: 0 0 12px; }
  .glance h2 { font-size: 15px; margin: 0 0 4px; }
  table.summary { width: 100%; margin: 0; }
  table.summary td, table.summary th { padding: 2px 8px; white-space: nowrap; }
  table.summary td.err { white-space: normal; max-width: 420px; overflow: hidden; text-overflow: ellipsis; color: #b91c1c; }
  table.summary td.err.none { color: #6b7280; }
  table.summary td.err span { display: block; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
  table.summary button.server-link { font: inherit; font-weight: 600; color: #1d4ed8; background: none; border: 0; padding: 0; cursor: pointer; text-decoration: underline; }
  .st-ready { color: #047857; font-weight: 600; } .st-failed, .st-needs-login, .st-authorization-failed { color: #b91c1c; font-weight: 600; } .st-idle { color: #6b7280; }
  .auth-needed code { background: #fef3c7; padding: 0 4px; border-radius: 4px; }
  .glance-cols { display: flex; gap: 12px; }
  .glance-cols > .glance { flex: 1 1 0; min-width: 0; }
  .glance .scroll { max-height: 230px; overflow: auto; }
  table.calls { width: 100%; margin: 0; }
  table.calls td, table.calls th { padding: 2px 6px; font-size: 12px; }
  table.calls td.args { font: 11px ui-monospace, monospace; max-width: 220px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  .ok { color: #047857; font-weight: 600; } .bad { color: #b91c1c; font-weight: 600; }
  ul.errors { margin: 0; padding-left: 16px; font-size: 12px; color: #7f1d1d; }
  .empty { color: #6b7280; font-size: 12px; margin: 2px 0; }
  h2.details { font-size: 15px; margin: 16px 0 8px; }
  section.server.focus { outline: 3px solid #2563eb; }
</style>
</head>
<body>
<header><h1>mcpx</h1><span class="muted">servers, calls, probe timelines and statecharts, served by this machine's daemon</span><span id="conn" class="muted">connecting…</span><span id="inspector" class="muted"></span></header>
<main>
  <p id="error"></p>
  <section class="glance" id="summary"><h2>Servers</h2><table class="summary" id="summary-table"><thead><tr><th>server</th><th>state</th><th>era</th><th>tools</th><th>last error</th><th>auth</th></tr></thead><tbody></tbody></table></section>
  <div class="glance-cols">
    <section class="glance" id="recent-calls"><h2>Recent calls</h2><div class="scroll"><table class="calls"><thead><tr><th>time</th><th>caller</th><th>server/tool</th><th>arguments</th><th>duration</th><th>outcome</th></tr></thead><tbody></tbody></table></div></section>
    <section class="glance" id="recent-errors"><h2>Errors</h2><div class="scroll"><ul class="errors"></ul></div></section>
  </div>
  <h2 class="details">Each server: probe timeline and statecharts (click a server above to go to it)</h2>
  <div id="servers"></div>
  <section class="global-chart"><h3 class="global">Reconcile statechart</h3><div class="chart-box" id="reconcile-box"></div></section>
</main>
<script src="/ui/assets/mermaid.min.js"></script>
<script src="/ui/assets/app.js"></script>
</body>
</html>
`;

export const UI_SCRIPT = String.raw`'use strict';
(function () {
  var ui = window.mcpxUi = { loaded: false, renders: 0, mermaidRenders: 0, history: [], events: [], state: null, selected: {} };
  var state = null;
  var charts = {};
  var renderSeq = 0;
  var svgCache = {}, svgCacheSize = 0;
  var SVGNS = 'http://www.w3.org/2000/svg';
  // Mermaid draws state text at 16 px; 0.75 keeps it at 12 px on screen (>= 11 px), the chart scrolls instead of shrinking.
  var DEFAULT_ZOOM = 0.75, MIN_ZOOM = 0.1, MAX_ZOOM = 3;
  mermaid.initialize({ startOnLoad: false, securityLevel: 'strict', theme: 'default', flowchart: { htmlLabels: false }, state: { useMaxWidth: false } });

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    for (var k in (attrs || {})) {
      if (k === 'text') e.textContent = attrs[k]; else if (k === 'cls') e.className = attrs[k]; else e.setAttribute(k, attrs[k]);
    }
    (children || []).forEach(function (c) { if (c) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return e;
  }
  function svgEl(tag, attrs) { var e = document.createElementNS(SVGNS, tag); for (var k in attrs) e.setAttribute(k, attrs[k]); return e; }
  function safeId(s) { return String(s).replace(/[^A-Za-z0-9_-]/g, '_'); }
  function fmtMs(ms) { return ms < 1000 ? ms + ' ms' : (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s'; }
  function time(iso) { var d = new Date(iso); return d.toLocaleTimeString([], { hour12: false }) + '.' + String(d.getMilliseconds()).padStart(3, '0'); }

  // The transitions of a chart's Mermaid text, in the order Mermaid numbers its edges (edge0, edge1, ...).
  var edgeCache = {};
  function edgesOf(text) {
    if (edgeCache[text]) return edgeCache[text];
    var out = [];
    text.split('\n').forEach(function (line) {
      var m = /^\s*(\S+) --> (\S+)(?: : (.*))?$/.exec(line);
      if (m) out.push({ i: out.length, from: m[1], to: m[2], label: m[3] || '' });
    });
    return (edgeCache[text] = out);
  }
  function stateNames(text) {
    var names = {};
    text.split('\n').forEach(function (line) { var m = /^\s*state "([^"]*)" as (\S+)/.exec(line); if (m) names[m[2]] = m[1].split('<br/>')[0]; });
    return names;
  }

  // A chart box: toolbar (zoom), a pannable viewport, a path caption and a detail panel for a clicked state.
  function chartBox(box, key, shortView, fitted) {
    if (box.firstChild) return box;
    var vp = el('div', { cls: 'viewport' + (shortView ? ' short' : '') + (fitted ? ' fitted' : ''), tabindex: '0', 'aria-label': 'chart: drag or scroll to pan, Ctrl+wheel or + / - to zoom, 0 to reset' });
    var level = el('span', { cls: 'zoom-level', text: '75%' });
    function btn(label, title, f) { var b = el('button', { type: 'button', title: title, text: label }); b.addEventListener('click', f); return b; }
    box.appendChild(el('div', { cls: 'toolbar' }, [
      el('span', { cls: 'picker' }),
      btn('−', 'zoom out (-)', function () { zoomBy(key, 1 / 1.25); }), level, btn('+', 'zoom in (+)', function () { zoomBy(key, 1.25); }),
      btn('100%', 'readable size (0)', function () { setZoom(key, DEFAULT_ZOOM); }), btn('fit', 'whole chart in view (f)', function () { fit(key); }),
      el('span', { cls: 'hint', text: 'drag or scroll to pan · Ctrl+wheel / pinch or + − to zoom · click a state for its transitions' }),
    ]));
    box.appendChild(el('div', { cls: 'path-summary' }));
    box.appendChild(vp);
    box.appendChild(el('div', { cls: 'detail' }));
    vp.addEventListener('wheel', function (ev) {
      if (!ev.ctrlKey && !ev.metaKey) return; // a plain wheel scrolls the viewport; Ctrl+wheel (and a pinch) zooms
      ev.preventDefault();
      var r = vp.getBoundingClientRect();
      zoomBy(key, Math.exp(-ev.deltaY / 300), ev.clientX - r.left, ev.clientY - r.top);
    }, { passive: false });
    var drag = null;
    vp.addEventListener('pointerdown', function (ev) {
      if (ev.button !== 0) return;
      drag = { x: ev.clientX, y: ev.clientY, l: vp.scrollLeft, t: vp.scrollTop, moved: false };
    });
    window.addEventListener('pointermove', function (ev) {
      if (!drag) return;
      var dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
      drag.moved = true; vp.classList.add('panning');
      vp.scrollLeft = drag.l - dx; vp.scrollTop = drag.t - dy;
    });
    window.addEventListener('pointerup', function () { if (drag && drag.moved) vp.setAttribute('data-dragged', '1'); drag = null; vp.classList.remove('panning'); });
    vp.addEventListener('keydown', function (ev) {
      var k = ev.key, step = 80;
      if (k === '+' || k === '=') zoomBy(key, 1.25);
      else if (k === '-' || k === '_') zoomBy(key, 1 / 1.25);
      else if (k === '0') setZoom(key, DEFAULT_ZOOM);
      else if (k === 'f') fit(key);
      else if (k === 'ArrowLeft') vp.scrollLeft -= step;
      else if (k === 'ArrowRight') vp.scrollLeft += step;
      else if (k === 'ArrowUp') vp.scrollTop -= step;
      else if (k === 'ArrowDown') vp.scrollTop += step;
      else return;
      ev.preventDefault();
    });
    return box;
  }

  // A chart: Mermaid text plus highlight classes; drawn again only when the highlighted set changes.
  function chart(key, box, text, active, opts) {
    chartBox(box, key, opts && opts.short, opts && opts.fitted);
    var container = box.querySelector('.chart') || box.querySelector('.viewport').appendChild(el('div', { cls: 'chart ' + opts.cls, id: opts.id }));
    var c = charts[key];
    if (!c) c = charts[key] = { key: key, box: box, container: container, text: text, drawn: null, want: null, busy: false, zoom: DEFAULT_ZOOM, path: null, centred: false };
    c.box = box; c.container = container; c.text = text;
    var ids = Array.from(new Set(active)).filter(function (x) { return /^[A-Za-z0-9_]+$/.test(x); });
    var want = text + '\n  classDef active fill:#f9d71c,stroke:#b45309,stroke-width:3px\n' + (ids.length ? '  class ' + ids.join(',') + ' active\n' : '');
    container.setAttribute('data-active', ids.join(' '));
    c.want = want;
    if (c.drawn === want && container.firstChild) return c;
    draw(c);
    return c;
  }
  // Every server draws the same charts, mostly with the same highlights: Mermaid lays each distinct text out
  // once (about a second for the session chart on a busy machine; ten servers' charts took the page away for
  // half a minute) and each chart gets a copy under its own id, so its id-scoped styles and node ids stay its
  // own. The cached copy's id is never in the page; ids end in 'z' so 'mcpx1z' is never part of 'mcpx12z'.
  function layout(want) {
    var hit = svgCache[want];
    if (!hit) {
      if (++svgCacheSize > 64) { svgCache = {}; svgCacheSize = 1; }
      var rid = 'mcpx' + (++renderSeq) + 'z';
      ui.mermaidRenders++;
      hit = svgCache[want] = mermaid.render(rid, want).then(function (r) { return { id: rid, svg: r.svg }; });
      hit.catch(function () { if (svgCache[want] === hit) delete svgCache[want]; });
    }
    var id = 'mcpx' + (++renderSeq) + 'z';
    return hit.then(function (h) { return { svg: h.svg.split(h.id).join(id) }; });
  }
  function draw(c) {
    if (c.busy) return;
    var want = c.want;
    if (c.drawn === want && c.container.firstChild) return;
    c.busy = true;
    layout(want).then(function (r) {
      c.container.innerHTML = r.svg;
      c.drawn = want;
      c.container.setAttribute('data-drawn', c.container.getAttribute('data-active') || '');
      if (c.box.querySelector('.viewport.fitted')) fitWidth(c);
      applyZoom(c);
      decorate(c);
      if (!c.centred) { c.centred = true; if (!c.box.querySelector('.viewport.fitted')) centre(c); }
      ui.renders++;
    }, function (err) {
      c.container.textContent = 'Mermaid could not draw this chart: ' + err;
    }).then(function () { c.busy = false; if (c.want !== c.drawn) draw(c); });
  }

  function svgOf(c) { return c.container.querySelector('svg'); }
  function applyZoom(c) {
    var svg = svgOf(c);
    if (!svg) return;
    var vb = svg.viewBox.baseVal;
    svg.style.width = (vb.width * c.zoom) + 'px';
    svg.style.height = (vb.height * c.zoom) + 'px';
    svg.removeAttribute('width'); svg.removeAttribute('height');
    c.box.querySelector('.zoom-level').textContent = Math.round(c.zoom / DEFAULT_ZOOM * 100) + '%';
    c.container.setAttribute('data-zoom', String(c.zoom));
  }
  // Zooms about a point of the viewport (its centre by default), so what is under the pointer stays there.
  function setZoom(key, z, px, py) {
    var c = charts[key];
    if (!c) return;
    var vp = c.box.querySelector('.viewport');
    z = Math.max(MIN_ZOOM, Math.min(MAX_ZOOM, z));
    if (px === undefined) { px = vp.clientWidth / 2; py = vp.clientHeight / 2; }
    var k = z / c.zoom, x = vp.scrollLeft + px, y = vp.scrollTop + py;
    c.zoom = z;
    applyZoom(c);
    vp.scrollLeft = x * k - px; vp.scrollTop = y * k - py;
  }
  // The path is short and wide: drawn no larger than its box is wide, so its last state (the verdict) is always in view.
  function fitWidth(c) {
    var svg = svgOf(c), vp = c.box.querySelector('.viewport');
    if (!svg || !vp) return;
    var w = svg.viewBox.baseVal.width;
    if (w > 0) c.zoom = Math.max(MIN_ZOOM, Math.min(DEFAULT_ZOOM, (vp.clientWidth - 16) / w));
  }
  function zoomBy(key, f, px, py) { var c = charts[key]; if (c) setZoom(key, c.zoom * f, px, py); }
  function fit(key) {
    var c = charts[key], svg = c && svgOf(c);
    if (!svg) return;
    var vp = c.box.querySelector('.viewport'), vb = svg.viewBox.baseVal;
    setZoom(key, Math.min(vp.clientWidth / vb.width, vp.clientHeight / vb.height));
  }
  // Brings a chart element into the middle of its viewport (only when it is out of view, unless forced).
  function reveal(c, node, force) {
    var vp = c.box.querySelector('.viewport');
    if (!node || !vp) return;
    var r = node.getBoundingClientRect(), v = vp.getBoundingClientRect();
    if (!force && r.left >= v.left && r.right <= v.right && r.top >= v.top && r.bottom <= v.bottom) return;
    vp.scrollLeft += (r.left + r.width / 2) - (v.left + v.width / 2);
    vp.scrollTop += (r.top + r.height / 2) - (v.top + v.height / 2);
  }
  function centre(c) {
    var first = c.path && c.path.visits.length ? nodeOf(c, c.path.visits[0].id) : null;
    var target = first || c.container.querySelector('g.node.active') || c.container.querySelector('g.node');
    reveal(c, target, true);
  }

  function nodeOf(c, id) {
    var svg = svgOf(c);
    if (!svg) return null;
    var re = new RegExp('^' + svg.id + '-state-' + id + '-\\d+$');
    var all = svg.querySelectorAll('g.node');
    for (var i = 0; i < all.length; i++) if (re.test(all[i].id)) return all[i];
    return null;
  }
  function edgeOf(c, i) { var svg = svgOf(c); return svg ? svg.querySelector('path[data-id="edge' + i + '"]') : null; }

  // The probe's path: the state after each step (from the probe timeline), each change of state as the
  // transition of the chart it took, numbered in order.
  var EVENT_OF = { answer: 'verdict.', timeout: 'after probeTimeout', 'process.ready': 'transport.ready', closed: 'transport.closed', start: 'start', respawn: 'transport.closed', stopped: 'stop' };
  function within(id, ancestor) { return id === ancestor || id.indexOf(ancestor + '_') === 0; }
  function probePath(probe, text) {
    var edges = edgesOf(text);
    var prev = 'session_idle', n = 0, steps = [], visits = [];
    probe.steps.forEach(function (st, i) {
      var id = st.state ? chartIds(st.state)[0] : prev;
      var entry = { step: i, node: id, edge: null, n: null };
      if (id !== prev) {
        var ev = EVENT_OF[st.kind];
        // nearest source and target first, then the step's event, then the unguarded fallback (which guard held is not in the timeline)
        var score = function (e, from, to) { return (e.from === from ? 0 : 2) + (e.to === to ? 0 : 1) + (ev && e.label.indexOf(ev) === 0 ? 0 : 4) + (e.label.indexOf('[') < 0 ? 0 : 0.5); };
        var pick = function (from, to) {
          return edges.filter(function (e) { return e.from !== '[*]' && e.to !== '[*]' && within(from, e.from) && within(to, e.to); })
            .sort(function (a, b) { return score(a, from, to) - score(b, from, to); })[0];
        };
        var hops = [];
        var direct = pick(prev, id);
        if (direct) hops.push({ e: direct, to: id });
        else {
          // passed through a transient state (routing: its 'always' transitions leave at once)
          var via = edges.filter(function (e) { return within(prev, e.from) && e.to !== '[*]' && pick(e.to, id) && /^always/.test(pick(e.to, id).label); })[0];
          if (via) hops.push({ e: via, to: via.to }, { e: pick(via.to, id), to: id });
          else hops.push({ e: null, to: id });
        }
        var ns = [];
        hops.forEach(function (h) {
          n++;
          ns.push(n);
          visits.push({ id: h.to, n: n, step: i, edge: h.e ? h.e.i : null, label: h.e ? h.e.label : '' });
        });
        entry.n = ns.join(',');
        entry.edge = hops[hops.length - 1].e ? hops[hops.length - 1].e.i : null;
        entry.from = prev;
        prev = id;
      }
      steps.push(entry);
    });
    var verdictStep = -1;
    probe.steps.forEach(function (st, i) { if (st.kind === 'verdict') verdictStep = i; });
    return { probe: probe, steps: steps, visits: visits, start: 'session_idle', verdictStep: verdictStep };
  }

  // The taken path alone, left to right: every state it entered and each transition numbered, so the
  // way the probe went reads at a glance; the full chart below shows where that sits among the rest.
  function pathChartText(path, text) {
    var names = stateNames(text);
    var short = function (id) { return (names[id] || id.replace(/^session_/, '')).replace(/"/g, "'"); };
    var lines = ['stateDiagram-v2', '  direction LR'];
    var seen = {};
    var decl = function (id) { if (!seen[id]) { seen[id] = 1; lines.push('  state "' + short(id) + '" as p_' + id); } };
    decl(path.start);
    var prev = path.start;
    path.visits.forEach(function (v) {
      decl(v.id);
      var label = (v.label || '?').replace(/<br\/>/g, ' ').replace(/:/g, ' ');
      lines.push('  p_' + prev + ' --> p_' + v.id + ' : ' + v.n + ' · ' + label);
      prev = v.id;
    });
    var verdict = path.probe.verdict;
    if (verdict && path.visits.length) lines.push('  note right of p_' + prev + ' : ' + (verdict.ok ? 'verdict ' + verdict.era + ' ' + (verdict.negotiated || '') : 'failed ' + (verdict.code || '')));
    return lines.join('\n');
  }

  function mark(parent, x, y, label, cls, data) {
    var g = svgEl('g', { class: 'mark ' + (cls || ''), transform: 'translate(' + x + ',' + y + ')' });
    for (var k in data) g.setAttribute(k, data[k]);
    var w = Math.max(26, 10 * String(label).length + 12);
    g.appendChild(w > 28 ? svgEl('rect', { x: -w / 2, y: -13, width: w, height: 26, rx: 13, class: 'pill' }) : svgEl('circle', { r: 13 }));
    if (w > 28) { var rr = g.firstChild; rr.setAttribute('fill', cls && cls.indexOf('verdict') >= 0 ? '#047857' : '#2563eb'); }
    var t = svgEl('text', {}); t.textContent = label; g.appendChild(t);
    parent.appendChild(g);
    return g;
  }

  // Draws the selected probe's path onto a drawn session chart: visited states outlined, taken
  // transitions thickened, a numbered mark on each (state marks carry the step numbers that entered it).
  function decorate(c) {
    var svg = svgOf(c);
    if (!svg) return;
    Array.prototype.forEach.call(svg.querySelectorAll('g.node'), function (g) {
      var m = new RegExp('^' + svg.id + '-state-(.+)-\\d+$').exec(g.id);
      if (m) g.setAttribute('data-state', m[1]);
    });
    if (!svg.getAttribute('data-wired')) wireChart(c, svg);
    Array.prototype.forEach.call(svg.querySelectorAll('.mark'), function (x) { x.remove(); });
    Array.prototype.forEach.call(svg.querySelectorAll('.visited, .taken'), function (x) { x.classList.remove('visited', 'taken'); x.removeAttribute('data-n'); });
    var p = c.path;
    if (!p) return;
    var byNode = {};
    p.visits.forEach(function (v) {
      (byNode[v.id] = byNode[v.id] || []).push(v.n);
      var path = v.edge === null ? null : edgeOf(c, v.edge);
      if (path) {
        path.classList.add('taken');
        path.setAttribute('data-n', String(v.n));
        var len = path.getTotalLength(), pt = path.getPointAtLength(len * 0.3); // off the label, which sits mid-way
        mark(path.parentNode, pt.x, pt.y, String(v.n), 'edge-mark', { 'data-n': String(v.n), 'data-edge': String(v.edge), 'data-node': v.id });
      }
    });
    var start = nodeOf(c, p.start);
    if (start) start.classList.add('visited');
    Object.keys(byNode).forEach(function (id) {
      var g = nodeOf(c, id);
      if (!g) return;
      g.classList.add('visited');
      var b = g.getBBox();
      mark(g, b.x, b.y, byNode[id].join(','), 'node-mark', { 'data-n': String(byNode[id][0]), 'data-node': id });
    });
    var v = p.probe.verdict;
    if (v && p.visits.length) {
      var last = p.visits[p.visits.length - 1], lg = nodeOf(c, last.id);
      if (lg) { var bb = lg.getBBox(); mark(lg, bb.x + bb.width, bb.y + bb.height, v.ok ? 'verdict ' + v.era : 'failed', 'verdict-mark', { 'data-node': last.id, 'data-verdict': v.ok ? v.era : 'failed' }); }
    }
  }

  // Hover on the chart highlights the timeline's steps (and back); a click on a state opens its detail.
  function wireChart(c, svg) {
    svg.setAttribute('data-wired', '1');
    svg.addEventListener('mouseover', function (ev) {
      var t = ev.target.closest && ev.target.closest('g.node, g.mark, path.taken');
      if (!t) { highlight(c, null); return; }
      var node = t.getAttribute('data-node') || t.getAttribute('data-state');
      var edge = t.getAttribute('data-edge');
      if (t.tagName === 'path') { edge = t.getAttribute('data-id').replace('edge', ''); node = null; }
      highlight(c, { node: node, edge: edge === null ? null : Number(edge) }, 'chart');
    });
    svg.addEventListener('mouseleave', function () { highlight(c, null); });
    svg.addEventListener('click', function (ev) {
      var vp = c.box.querySelector('.viewport');
      if (vp.getAttribute('data-dragged')) { vp.removeAttribute('data-dragged'); return; }
      var g = ev.target.closest && ev.target.closest('g.node');
      if (g && g.getAttribute('data-state')) detail(c, g.getAttribute('data-state'));
    });
  }

  function detail(c, id) {
    var box = c.box.querySelector('.detail');
    var names = stateNames(c.text);
    var label = function (x) { return x === '[*]' ? '(end)' : (x.replace(/^[a-z]+_/, '').replace(/_/g, '.') || x); };
    var out = edgesOf(c.text).filter(function (e) { return e.from !== '[*]' && within(id, e.from); });
    var inc = edgesOf(c.text).filter(function (e) { return e.from !== '[*]' && e.to === id; });
    box.textContent = '';
    box.setAttribute('data-state', id);
    box.appendChild(el('h4', { text: label(id) + (names[id] && names[id] !== label(id).split('.').pop() ? ' (' + names[id] + ')' : '') }));
    var line = function (e, dir) {
      var parts = e.label.split(' / ');
      var li = el('li', { 'data-edge': String(e.i), text: dir + ' ' + label(dir === '→' ? e.to : e.from) + (e.from !== id && dir === '→' ? ' (from ' + label(e.from) + ')' : '') + ' : ' + (parts[0] || '(always)') + (parts[1] ? '   emits / does: ' + parts.slice(1).join(' / ') : '') });
      return li;
    };
    box.appendChild(el('div', { text: out.length + ' transitions out, ' + inc.length + ' in (on event [guard] / actions):' }));
    box.appendChild(el('ul', {}, out.map(function (e) { return line(e, '→'); }).concat(inc.map(function (e) { return line(e, '←'); }))));
    box.appendChild(el('button', { type: 'button', text: 'close' })).addEventListener('click', function () { box.textContent = ''; box.removeAttribute('data-state'); });
  }

  function highlight(c, what, from) {
    var svg = svgOf(c);
    var sec = c.box.closest('section.server');
    if (!svg || !sec) return;
    Array.prototype.forEach.call(svg.querySelectorAll('.hl'), function (x) { x.classList.remove('hl'); });
    Array.prototype.forEach.call(sec.querySelectorAll('.timeline li.hl'), function (x) { x.classList.remove('hl'); });
    if (!what) return;
    var p = c.path;
    if (what.node) { var g = nodeOf(c, what.node); if (g) g.classList.add('hl'); }
    if (what.edge !== null && what.edge !== undefined) {
      var e = edgeOf(c, what.edge); if (e) e.classList.add('hl');
      Array.prototype.forEach.call(svg.querySelectorAll('.mark[data-edge="' + what.edge + '"]'), function (x) { x.classList.add('hl'); });
    }
    if (!p) return;
    var probeBox = sec.querySelector('.probe.selected');
    if (!probeBox) return;
    if (from !== 'chart') return;
    p.visits.forEach(function (v) {
      if ((what.node && v.id === what.node) || (what.edge !== null && what.edge !== undefined && v.edge === what.edge)) {
        var li = probeBox.querySelector('li[data-step="' + v.step + '"]');
        if (li) li.classList.add('hl');
      }
    });
  }

  function badge(text, cls) { return el('span', { cls: cls || '', text: text }); }

  function serverSection(s) {
    var id = 'server-' + safeId(s.server);
    var sec = document.getElementById(id);
    if (!sec) {
      sec = el('section', { cls: 'server', id: id, 'data-server': s.server }, [
        el('h2', { text: s.server }),
        el('div', { cls: 'badges' }), el('div', { cls: 'stale-box' }),
        el('div', { cls: 'cols' }, [
          el('div', { cls: 'tables' }),
          el('div', { cls: 'timeline' }, [el('h3', { text: 'Probe timeline' }), el('div', { cls: 'probes' })]),
        ]),
        el('h3', { text: 'The selected probe\'s path' }), el('div', { cls: 'chart-box path-box' }),
        el('h3', { text: 'Session statechart, the path drawn on it' }), el('div', { cls: 'chart-box session-box' }),
        el('details', { cls: 'pool-details', open: '' }, [el('summary', { text: 'Pool statechart: lanes, instances and who holds them' }), el('div', { cls: 'pool-legend' }), el('div', { cls: 'chart-box pool-box' })]),
      ]);
      document.getElementById('servers').appendChild(sec);
    }
    return sec;
  }

  function probeKey(p) { return p.instance + '@' + p.startedAt; }
  function selectedProbe(s) {
    if (!s.probes.length) return null;
    var want = ui.selected[s.server];
    var hit = s.probes.filter(function (p) { return probeKey(p) === want; })[0];
    return hit || s.probes[s.probes.length - 1];
  }
  function select(server, key) { ui.selected[server] = key; render(); }

  function authText(s) {
    if (!s.auth) return s.transport === 'stdio' ? el('span', { cls: 'muted', text: '—' }) : el('span', { text: 'none' });
    var a = s.auth;
    if (a.state === 'authorized') return el('span', { cls: 'ok', text: 'logged in' + (a.expiresAt ? ' until ' + time(a.expiresAt) : '') });
    if (a.state === 'needed') return el('span', { cls: 'auth-needed' }, ['not logged in: run ', el('code', { text: 'mcpx login ' + s.server })]);
    if (a.state === 'failed') return el('span', { cls: 'auth-needed bad' }, ['failed: run ', el('code', { text: 'mcpx login ' + s.server })]);
    return el('span', { text: 'none' });
  }
  function focusServer(name) {
    var sec = document.getElementById('server-' + safeId(name));
    if (!sec) return;
    Array.from(document.querySelectorAll('section.server.focus')).forEach(function (x) { x.classList.remove('focus'); });
    sec.classList.add('focus');
    sec.scrollIntoView({ block: 'start' });
  }
  function summary() {
    var body = document.querySelector('#summary-table tbody');
    body.textContent = '';
    // Grouped by config: each config's servers under its file, with its callers and a refused edit; a server
    // two configs define alike is one instance, named in both.
    var byInstance = {};
    state.servers.forEach(function (s) { byInstance[s.server] = s; });
    var groups = (state.configs || []).length > 1 || (state.configs || []).some(function (c) { return c.rejected; });
    (state.configs || []).forEach(function (c) {
      if (groups) {
        var callers = c.callers.length ? c.callers.map(function (x) { return x.kind; }).join(', ') : 'no caller attached';
        var head = [el('strong', { text: c.file || '(no config file)' }), ' ', el('span', { cls: 'muted', text: (c.home ? 'the daemon\'s own · ' : '') + callers })];
        if (c.rejected) head.push(el('div', { cls: 'bad config-rejected', text: 'edit not applied (the last good version stays): ' + c.rejected.problems.join('; ') }));
        body.appendChild(el('tr', { cls: 'config-group', 'data-config': c.file || '' }, [el('td', { colspan: '6' }, head)]));
      }
      c.servers.forEach(function (cs) {
        var s = byInstance[cs.instance];
        if (s) row(s, cs.server, cs.sharedWith.length ? 'shared with ' + cs.sharedWith.map(function (w) { return w.file + ' (' + w.server + ')'; }).join(', ') : '');
      });
    });
    if (!(state.configs || []).length) state.servers.forEach(function (s) { row(s, s.server, ''); });
    function row(s, name, shared) {
      var go = el('button', { type: 'button', cls: 'server-link', title: 'its probe timeline and statecharts' + (shared ? ' · ' + shared : ''), text: name + (name !== s.server ? ' → ' + s.server : '') });
      go.addEventListener('click', function () { focusServer(s.server); });
      var err = s.lastError ? el('span', { title: s.lastError.text, text: (s.lastError.at ? time(s.lastError.at) + ' ' : '') + s.lastError.text }) : '—';
      body.appendChild(el('tr', { 'data-server': s.server, 'data-name': name }, [
        el('td', { cls: 'name' }, [go]),
        el('td', { cls: 'state st-' + String(s.state).replace(/[^a-z]+/g, '-'), text: s.state }),
        el('td', { cls: 'era', text: s.era || '—' }),
        el('td', { cls: 'tools', text: (s.tools == null ? '—' : String(s.tools)) + ((s.changedTools || []).length ? ' (' + s.changedTools.length + ' changed)' : '') }),
        el('td', { cls: 'err' + (s.lastError ? '' : ' none') }, [err]),
        el('td', { cls: 'auth' }, [authText(s)]),
      ]));
    }
    var calls = document.querySelector('#recent-calls tbody');
    calls.textContent = '';
    (state.calls || []).slice(0, 50).forEach(function (c) {
      calls.appendChild(el('tr', { cls: 'call' }, [
        el('td', { text: time(c.at) }),
        el('td', { cls: 'caller', text: c.via === 'api' ? 'mcpx call / API' : 'MCP client' + (c.callerProtocol ? ' ' + c.callerProtocol : '') }),
        el('td', { cls: 'target', text: c.server + '/' + c.tool }),
        el('td', { cls: 'args', title: c.args || '', text: c.args || '' }),
        el('td', { cls: 'ms', text: fmtMs(c.ms) }),
        el('td', { cls: 'outcome ' + (c.ok ? 'ok' : 'bad'), title: c.message || '', text: c.ok ? 'ok' : (c.code || 'failed') }),
      ]));
    });
    if (!(state.calls || []).length) calls.appendChild(el('tr', {}, [el('td', { colspan: '6', cls: 'empty', text: 'no calls yet' })]));
    var errs = document.querySelector('#recent-errors ul');
    errs.textContent = '';
    (state.errors || []).slice(0, 30).forEach(function (e) { errs.appendChild(el('li', { text: (e.at ? time(e.at) + ' ' : '') + e.server + ': ' + e.text })); });
    if (!(state.errors || []).length) errs.appendChild(el('li', { cls: 'empty', text: 'no errors' }));
  }

  function render() {
    if (!state) return;
    summary();
    var names = state.servers.map(function (s) { return 'server-' + safeId(s.server); });
    Array.from(document.querySelectorAll('section.server[data-server]')).forEach(function (sec) { if (names.indexOf(sec.id) < 0) sec.remove(); });
    document.getElementById('inspector').textContent = state.inspector ? 'Stately inspector: ' + state.inspector.split('#')[0] : '';
    state.servers.forEach(function (s) {
      var sec = serverSection(s);
      var b = sec.querySelector('.badges');
      b.textContent = '';
      b.appendChild(badge('preference ' + s.preference + (s.pendingPreference ? ' (next: ' + s.pendingPreference + ')' : '')));
      b.appendChild(badge('era ' + (s.era || '—'), 'era era-' + (s.era || 'none')));
      b.appendChild(badge('negotiated ' + (s.negotiated || '—'), 'negotiated'));
      b.appendChild(badge('eraSource ' + (s.eraSource || '—'), 'era-source'));
      b.appendChild(badge(s.cached ? 'cached ' + s.cached.era + ' ' + s.cached.version + ' (' + s.cached.at + ')' : 'nothing cached', 'cached'));
      if (s.legacyLane) b.appendChild(badge('legacy lane ' + s.legacyLane.state));
      b.appendChild(badge(s.transport));
      if (s.auth) b.appendChild(badge(s.auth.state === 'authorized' ? 'authorized' + (s.auth.expiresAt ? ' until ' + s.auth.expiresAt : '') : s.auth.state === 'needed' ? 'needs login: mcpx login ' + s.server : s.auth.state === 'failed' ? 'authorization failed: ' + (s.auth.error || '') : 'no authorization', 'auth auth-' + s.auth.state));
      if (s.auth && s.auth.unsaved) b.appendChild(badge('credential not saved: ' + s.auth.unsaved, 'auth auth-unsaved'));
      var probe = selectedProbe(s);
      var path = probe ? probePath(probe, state.charts.session) : null;
      staleBanner(sec, s);
      var tables = sec.querySelector('.tables');
      tables.textContent = '';
      tables.appendChild(el('table', { cls: 'lanes' }, [el('tr', {}, ['lane', 'max', 'instances', 'state'].map(function (h) { return el('th', { text: h }); }))].concat(s.lanes.map(function (l) {
        return el('tr', {}, [l.lane, String(l.max), String(l.instances), (l.state || '') + (l.reason ? ' (' + l.reason + ')' : '')].map(function (x) { return el('td', { text: x }); }));
      }))));
      var rows = s.instances.length ? s.instances.map(function (i) {
        return el('tr', { 'data-instance': i.id, 'data-state': i.sessionState || '' }, [i.id, i.lane, i.pid == null ? '—' : String(i.pid), i.poolState, i.sessionState || '—', i.era || '—', i.negotiated || '—', i.eraSource || '—', fmtMs(i.uptimeMs)].map(function (x) { return el('td', { text: x }); }));
      }) : [el('tr', {}, [el('td', { colspan: '9', text: 'no live instances (the server starts on its first call)' })])];
      tables.appendChild(el('table', { cls: 'instances' }, [el('tr', {}, ['instance', 'lane', 'pid', 'pool slot', 'session state', 'era', 'negotiated', 'eraSource', 'up'].map(function (h) { return el('th', { text: h }); }))].concat(rows)));
      var active = [];
      s.instances.forEach(function (i) { active = active.concat(i.activeStateIds); });
      note(s.server, s.instances.map(function (i) { return i.id + '=' + (i.sessionState || i.poolState); }).join(' '), active);
      var sc = chart('session:' + s.server, sec.querySelector('.session-box'), state.charts.session, active, { cls: 'session-chart', id: 'chart-' + safeId(s.server) });
      sc.path = path;
      if (sc.drawn && svgOf(sc)) decorate(sc);
      var pbox = sec.querySelector('.path-box');
      if (path && path.visits.length) {
        pbox.style.display = '';
        chart('path:' + s.server, pbox, pathChartText(path, state.charts.session), ['p_' + path.visits[path.visits.length - 1].id], { cls: 'path-chart', id: 'path-' + safeId(s.server), fitted: true });
      } else pbox.style.display = 'none';
      var pk = sec.querySelector('.path-box .picker'), sum = sec.querySelector('.path-box .path-summary');
      if (pk) picker(pk, s, probe);
      if (sum) pathSummary(sum, probe, path);
      chart('pool:' + s.server, sec.querySelector('.pool-box'), state.charts.pool, s.pool.activeStateIds, { cls: 'pool-chart', id: 'pool-' + safeId(s.server), short: true });
      poolLegend(sec.querySelector('.pool-legend'), s);
      timeline(sec.querySelector('.probes'), s, probe, path);
    });
    if (state.charts.reconcile) chart('reconcile', document.getElementById('reconcile-box'), state.charts.reconcile, [], { cls: 'reconcile-chart', id: 'reconcile-chart', short: true });
  }

  function staleBanner(sec, s) {
    var st = sec.querySelector('.stale-box');
    st.textContent = '';
    // What the server listed and clients could not take: named with its reason, the rest served.
    (s.leftOut || []).forEach(function (l) { st.appendChild(el('div', { cls: 'stale left-out', text: l.text })); });
    // A tool whose definition changed since it was first seen: marked, and held ones say how to accept them.
    (s.changedTools || []).forEach(function (c) { st.appendChild(el('div', { cls: 'stale tool-changed' + (c.held ? ' held' : ''), 'data-tool': c.tool, text: c.text })); });
    if (!s.stale) return;
    var div = el('div', { cls: 'stale' }, [el('span', { text: 'server.era.stale at ' + time(s.stale.at) + ': the cached record said ' + s.stale.cached.era + ' ' + s.stale.cached.version + ', the server answered ' + s.stale.found })]);
    // the step of the probe where the era was found different
    var probe = s.probes.filter(function (p) { return p.instance === s.stale.instance && p.steps.some(function (x) { return x.kind === 'stale'; }); }).pop();
    if (probe) {
      var idx = -1;
      probe.steps.forEach(function (x, i) { if (x.kind === 'stale' && idx < 0) idx = i; });
      var a = el('a', { href: '#', cls: 'stale-link', text: '→ step ' + (idx + 1) + ' of instance ' + probe.instance + '\'s probe' });
      a.addEventListener('click', function (ev) {
        ev.preventDefault();
        select(s.server, probeKey(probe));
        var li = sec.querySelector('.probe.selected li[data-step="' + idx + '"]');
        if (li) { li.scrollIntoView({ block: 'center' }); li.classList.add('hl', 'target'); stepHover(sec, s.server, li); }
      });
      div.appendChild(a);
    }
    st.appendChild(div);
  }

  function picker(box, s, probe) {
    box.textContent = '';
    if (!s.probes.length) return;
    var sel = el('select', { cls: 'probe-picker', 'aria-label': 'which probe to draw' }, s.probes.slice().reverse().map(function (p) {
      var o = el('option', { value: probeKey(p), text: 'instance ' + p.instance + ' · ' + p.lane + ' lane · ' + time(p.startedAt) });
      if (p === probe) o.selected = true;
      return o;
    }));
    sel.addEventListener('change', function () { select(s.server, sel.value); });
    box.appendChild(el('label', {}, ['path of ', sel]));
  }

  function pathSummary(box, probe, path) {
    box.textContent = '';
    if (!probe) { box.textContent = 'no probe recorded yet'; return; }
    var names = path.visits.map(function (v) { return v.n + ' ' + v.id.replace(/^session_/, '').replace(/_/g, '.'); });
    var v = probe.verdict;
    var vText = v ? (v.ok ? 'verdict: ' + v.era + ' ' + (v.negotiated || '') + ' (eraSource ' + (v.eraSource || '—') + ') in ' + fmtMs(v.ms) : 'failed ' + (v.code || '') + ' ' + (v.message || '')) : 'in progress';
    var decided = path.visits.length ? path.visits[path.visits.length - 1] : null;
    var why = decided && decided.edge !== null ? ' — decided by ' + (path.steps[decided.step] && probe.steps[decided.step] ? probe.steps[decided.step].text : '') : '';
    box.appendChild(el('span', { text: 'idle → ' + names.join(' → ') + '  ' }));
    box.appendChild(el('span', { cls: 'verdict', text: vText }));
    box.appendChild(el('span', { text: why }));
  }

  function poolLegend(box, s) {
    box.textContent = '';
    var rows = s.instances.map(function (i) {
      return el('tr', { 'data-instance': i.id }, [i.lane + ' lane', i.id, i.poolState, i.holders === 0 ? 'no caller' : i.holders + (i.holders === 1 ? ' caller: ' : ' callers: ') + (i.holderIds || []).join(', ')].map(function (x) { return el('td', { text: x }); }));
    });
    if (!rows.length) rows = [el('tr', {}, [el('td', { colspan: '4', text: 'no live instances' })])];
    box.appendChild(el('table', {}, [el('tr', {}, ['lane', 'instance', 'pool slot', 'held by'].map(function (h) { return el('th', { text: h }); }))].concat(rows)));
    box.appendChild(el('div', { cls: 'path-summary', text: 'pool state: ' + (s.pool.state || '—') + '; lanes: ' + s.lanes.map(function (l) { return l.lane + ' ' + l.instances + '/' + l.max + (l.state ? ' ' + l.state : ''); }).join(', ') }));
  }

  function note(server, instances, active) {
    var last = null;
    for (var i = ui.history.length - 1; i >= 0; i--) if (ui.history[i].server === server) { last = ui.history[i]; break; }
    var ids = active.join(' ');
    if (last && last.instances === instances && last.active === ids) return;
    ui.history.push({ server: server, instances: instances, active: ids, at: Date.now() });
    if (ui.history.length > 500) ui.history.shift();
  }

  function stepHover(sec, server, li) {
    var c = charts['session:' + server];
    if (!c) return;
    var node = li.getAttribute('data-node'), edge = li.getAttribute('data-edge');
    highlight(c, { node: node, edge: edge === null ? null : Number(edge) }, 'timeline');
    li.classList.add('hl');
    reveal(c, nodeOf(c, node));
  }

  function timeline(box, s, selected, path) {
    var sec = box.closest('section.server');
    box.textContent = '';
    if (!s.probes.length) { box.appendChild(el('p', { text: 'no probe recorded yet' })); return; }
    s.probes.slice().reverse().forEach(function (p) {
      var v = p.verdict ? (p.verdict.ok ? p.verdict.era + ' ' + (p.verdict.negotiated || '') + ' in ' + fmtMs(p.verdict.ms) : 'failed ' + (p.verdict.code || '')) : 'in progress (' + p.state + ')';
      var isSel = p === selected;
      var h = el('h4', { title: 'draw this probe on the chart', text: 'instance ' + p.instance + ' (' + p.lane + ' lane), started ' + time(p.startedAt) + ': ' + v });
      h.addEventListener('click', function () { select(s.server, probeKey(p)); });
      box.appendChild(el('div', { cls: 'probe' + (isSel ? ' selected' : ''), 'data-instance': p.instance }, [
        h,
        el('ol', {}, p.steps.map(function (st, i) {
          var attrs = { 'data-kind': st.kind, 'data-step': String(i) };
          if (isSel && path) {
            var ps = path.steps[i];
            attrs['data-node'] = ps.node;
            if (ps.n !== null) attrs['data-n'] = String(ps.n);
            if (ps.edge !== null) attrs['data-edge'] = String(ps.edge);
          }
          var li = el('li', attrs, [el('span', { cls: 't', text: '+' + fmtMs(st.t) }), el('span', { cls: 'k k-' + st.kind.replace('.', '-'), text: st.kind }), st.text]);
          if (isSel) {
            li.addEventListener('mouseenter', function () { stepHover(sec, s.server, li); });
            li.addEventListener('mouseleave', function () { var c = charts['session:' + s.server]; if (c) highlight(c, null); });
          }
          return li;
        })),
      ]));
    });
  }

  // Live: /v1/events says what changed; a state change is highlighted at once, and the full state re-read.
  var loading = false, again = false;
  function load() {
    if (loading) { again = true; return; }
    loading = true;
    fetch('/ui/api/state', { credentials: 'same-origin', cache: 'no-store' }).then(function (r) {
      if (!r.ok) throw new Error('the daemon answered ' + r.status + (r.status === 401 ? ' (log in again: run mcpx ui)' : ''));
      return r.json();
    }).then(function (s) {
      state = s; ui.state = s;
      document.getElementById('error').textContent = '';
      render();
      ui.loaded = true;
    }).catch(function (err) {
      document.getElementById('error').textContent = String(err.message || err);
    }).then(function () {
      loading = false;
      if (again) { again = false; load(); }
    });
  }
  var timer = null;
  function soon() { if (!timer) timer = setTimeout(function () { timer = null; load(); }, 60); }

  function onSessionState(e) {
    if (!state) return;
    var s = state.servers.filter(function (x) { return x.server === e.server; })[0];
    if (!s) return;
    var i = s.instances.filter(function (x) { return x.id === e.instance; })[0];
    if (!i) { i = { id: e.instance, lane: e.lane, pid: null, poolState: 'starting', sessionState: e.state, era: null, negotiated: null, eraSource: null, holders: 0, startedAt: new Date().toISOString(), uptimeMs: 0, activeStateIds: [] }; s.instances.push(i); }
    i.sessionState = e.state;
    i.activeStateIds = chartIds(e.state);
    render();
  }
  // 'connecting.discovering' -> session_connecting_discovering (the chart ids of docs/statecharts)
  function chartIds(dotted) {
    return dotted.split(',').map(function (part) { return 'session_' + part.trim().replace(/[^A-Za-z0-9]/g, '_'); });
  }

  function follow() {
    var es = new EventSource('/v1/events');
    es.onopen = function () { document.getElementById('conn').textContent = 'live'; load(); };
    es.onerror = function () { document.getElementById('conn').textContent = 'reconnecting…'; };
    ['session.state', 'server.start', 'server.stop', 'server.era.stale', 'server.auth', 'config.reloaded', 'setting.changed', 'call.finished', 'catalog.changed'].forEach(function (type) {
      es.addEventListener(type, function (m) {
        var e = JSON.parse(m.data);
        ui.events.push(e);
        if (ui.events.length > 500) ui.events.shift();
        if (type === 'session.state') onSessionState(e);
        soon();
      });
    });
  }
  load();
  follow();
})();
`;
