/**
 * `GET /v1/statecharts/:server?format=html`: a self-contained page showing the session chart with the
 * live instances' states. The Mermaid text and the instance table are embedded in the page (no
 * network needed to see the data). When the build's copy of mermaid is there (dist/assets), the page
 * loads it from the daemon and draws the chart; otherwise it shows the text, which pastes into any
 * Mermaid viewer.
 */
import { existsSync } from 'node:fs';
import { mermaidAssetPath } from '../package-info.js';
import type { StatechartView } from './statechart-view.js';

export const MERMAID_ASSET_URL = '/v1/statecharts/assets/mermaid.min.js';

let mermaidFile: string | null | undefined;

/** The build's copy of mermaid (dist/assets), when it exists: the page then draws the chart. */
export function localMermaid(): string | null {
  if (mermaidFile !== undefined) return mermaidFile;
  const file = mermaidAssetPath();
  return (mermaidFile = existsSync(file) ? file : null);
}

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

export function statechartPage(view: StatechartView, opts: { mermaidUrl: string | null }): string {
  const rows =
    view.instances.length === 0
      ? '<tr><td colspan="5">no live instances (the server starts on its first call)</td></tr>'
      : view.instances
          .map(
            (i) =>
              `<tr><td>${esc(i.id)}</td><td>${esc(i.lane)}</td><td>${esc(i.state)}</td><td>${esc(i.poolState)}</td><td>${esc(i.activeStateIds.join(', '))}</td></tr>`,
          )
          .join('\n');
  const draw = opts.mermaidUrl
    ? `<div class="mermaid" id="chart">${esc(view.mermaid)}</div>
<script src="${esc(opts.mermaidUrl)}"></script>
<script>mermaid.initialize({ startOnLoad: true, securityLevel: 'strict' });</script>`
    : '<p class="note">No local copy of mermaid is installed, so the chart is shown as text: paste it into any Mermaid viewer. States with class <code>active</code> are where live instances are now.</p>';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>mcpx · ${esc(view.server)} · session statechart</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
  table { border-collapse: collapse; margin: 1em 0; }
  td, th { border: 1px solid #ccc; padding: 4px 8px; text-align: left; }
  pre { background: #f6f6f6; padding: 1em; overflow: auto; }
  .note { color: #666; }
</style>
</head>
<body>
<h1>${esc(view.server)}: session statechart</h1>
<h2>Live instances</h2>
<table>
<thead><tr><th>instance</th><th>lane</th><th>session state</th><th>pool slot</th><th>chart ids</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>
${draw}
<h2>Mermaid</h2>
<pre id="mermaid-text">${esc(view.mermaid)}</pre>
<script type="application/json" id="statechart-data">${JSON.stringify(view).replace(/</g, '\\u003c')}</script>
</body>
</html>
`;
}
