/**
 * The `mcpx ui` page and its script. The page is static; everything it shows comes from
 * /ui/api/state and /v1/events on the same daemon, and the charts are drawn by the Mermaid bundle the
 * daemon serves (the build's copy, dist/assets). No other address is ever asked for.
 *
 * For tests the script keeps `window.mcpxUi`: `loaded` (the first state is drawn), `renders` (charts
 * drawn so far), `history` (every highlight change: server, instance states, chart ids), `events`.
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
  .chart { overflow: auto; border: 1px solid #f1f5f9; border-radius: 6px; padding: 4px; background: #fff; }
  .session-chart svg { min-width: 1300px; height: auto; }
  .timeline ol { margin: 4px 0 10px; padding-left: 0; list-style: none; font: 12px/1.5 ui-monospace, monospace; }
  .timeline li { white-space: pre-wrap; }
  .timeline .t { color: #6b7280; display: inline-block; min-width: 70px; }
  .timeline .k { display: inline-block; min-width: 120px; font-weight: 600; }
  .k-discover-sent { color: #1d4ed8; } .k-initialize-sent { color: #b45309; } .k-timeout { color: #b91c1c; } .k-verdict { color: #047857; } .k-stale { color: #b91c1c; }
  .probe h4 { margin: 8px 0 2px; font-size: 13px; }
  details > summary { cursor: pointer; color: #374151; margin: 6px 0; }
  #error { color: #b91c1c; }
</style>
</head>
<body>
<header><h1>mcpx</h1><span class="muted">live statecharts and probe timelines, served by this machine's daemon</span><span id="conn" class="muted">connecting…</span><span id="inspector" class="muted"></span></header>
<main>
  <p id="error"></p>
  <div id="servers"></div>
</main>
<script src="/ui/assets/mermaid.min.js"></script>
<script src="/ui/assets/app.js"></script>
</body>
</html>
`;

export const UI_SCRIPT = String.raw`'use strict';
(function () {
  var ui = window.mcpxUi = { loaded: false, renders: 0, history: [], events: [], state: null };
  var state = null;
  var charts = {};
  var renderSeq = 0;
  mermaid.initialize({ startOnLoad: false, securityLevel: 'strict', theme: 'default', flowchart: { htmlLabels: false }, state: { useMaxWidth: true } });

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    for (var k in (attrs || {})) {
      if (k === 'text') e.textContent = attrs[k]; else if (k === 'cls') e.className = attrs[k]; else e.setAttribute(k, attrs[k]);
    }
    (children || []).forEach(function (c) { if (c) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return e;
  }
  function safeId(s) { return String(s).replace(/[^A-Za-z0-9_-]/g, '_'); }
  function fmtMs(ms) { return ms < 1000 ? ms + ' ms' : (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s'; }
  function time(iso) { var d = new Date(iso); return d.toLocaleTimeString([], { hour12: false }) + '.' + String(d.getMilliseconds()).padStart(3, '0'); }

  // A chart: Mermaid text plus highlight classes; drawn again only when the highlighted set changes.
  function chart(key, container, text, active) {
    var c = charts[key];
    if (!c) c = charts[key] = { container: container, drawn: null, want: null, busy: false };
    c.container = container;
    var ids = Array.from(new Set(active)).filter(function (x) { return /^[A-Za-z0-9_]+$/.test(x); });
    var want = text + '\n  classDef active fill:#f9d71c,stroke:#b45309,stroke-width:3px\n' + (ids.length ? '  class ' + ids.join(',') + ' active\n' : '');
    container.setAttribute('data-active', ids.join(' '));
    c.want = want;
    if (c.drawn === want && container.firstChild) return;
    draw(c);
  }
  function draw(c) {
    if (c.busy) return;
    var want = c.want;
    if (c.drawn === want && c.container.firstChild) return;
    c.busy = true;
    mermaid.render('m' + (++renderSeq), want).then(function (r) {
      c.container.innerHTML = r.svg;
      c.drawn = want;
      c.container.setAttribute('data-drawn', c.container.getAttribute('data-active') || '');
      ui.renders++;
    }, function (err) {
      c.container.textContent = 'Mermaid could not draw this chart: ' + err;
    }).then(function () { c.busy = false; if (c.want !== c.drawn) draw(c); });
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
        el('h3', { text: 'Session statechart' }), el('div', { cls: 'chart session-chart', id: 'chart-' + safeId(s.server) }),
        el('details', { cls: 'pool-details', open: '' }, [el('summary', { text: 'Pool statechart' }), el('div', { cls: 'chart pool-chart', id: 'pool-' + safeId(s.server) })]),
      ]);
      document.getElementById('servers').appendChild(sec);
    }
    return sec;
  }

  function render() {
    if (!state) return;
    var names = state.servers.map(function (s) { return 'server-' + safeId(s.server); });
    Array.from(document.querySelectorAll('section.server')).forEach(function (sec) { if (names.indexOf(sec.id) < 0) sec.remove(); });
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
      var st = sec.querySelector('.stale-box');
      st.textContent = '';
      if (s.stale) st.appendChild(el('div', { cls: 'stale', text: 'server.era.stale at ' + time(s.stale.at) + ': the cached record said ' + s.stale.cached.era + ' ' + s.stale.cached.version + ', the server answered ' + s.stale.found }));
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
      chart('session:' + s.server, sec.querySelector('.session-chart'), state.charts.session, active);
      chart('pool:' + s.server, sec.querySelector('.pool-chart'), state.charts.pool, s.pool.activeStateIds);
      timeline(sec.querySelector('.probes'), s.probes);
    });
  }

  function note(server, instances, active) {
    var last = null;
    for (var i = ui.history.length - 1; i >= 0; i--) if (ui.history[i].server === server) { last = ui.history[i]; break; }
    var ids = active.join(' ');
    if (last && last.instances === instances && last.active === ids) return;
    ui.history.push({ server: server, instances: instances, active: ids, at: Date.now() });
    if (ui.history.length > 500) ui.history.shift();
  }

  function timeline(box, probes) {
    box.textContent = '';
    if (!probes.length) { box.appendChild(el('p', { text: 'no probe recorded yet' })); return; }
    probes.slice().reverse().forEach(function (p) {
      var v = p.verdict ? (p.verdict.ok ? p.verdict.era + ' ' + (p.verdict.negotiated || '') + ' in ' + fmtMs(p.verdict.ms) : 'failed ' + (p.verdict.code || '')) : 'in progress (' + p.state + ')';
      box.appendChild(el('div', { cls: 'probe', 'data-instance': p.instance }, [
        el('h4', { text: 'instance ' + p.instance + ' (' + p.lane + ' lane), started ' + time(p.startedAt) + ': ' + v }),
        el('ol', {}, p.steps.map(function (st) {
          return el('li', { 'data-kind': st.kind }, [el('span', { cls: 't', text: '+' + fmtMs(st.t) }), el('span', { cls: 'k k-' + st.kind.replace('.', '-'), text: st.kind }), st.text]);
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
    ['session.state', 'server.start', 'server.stop', 'server.era.stale', 'config.reloaded', 'setting.changed'].forEach(function (type) {
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
