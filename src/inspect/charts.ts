/**
 * The statecharts drawn into docs/statecharts, each from its machine. `npm run statecharts` writes
 * them; test/statecharts.test.ts fails when a committed drawing no longer matches its machine.
 */
import type { AnyStateMachine } from 'xstate';
import { askMachine } from '../asks/ask.machine.js';
import { poolMachine } from '../pool/pool.machine.js';
import { reconcileMachine } from '../pool/reconcile.machine.js';
import { sessionMachine } from '../machines/session.machine.js';
import { toMarkdown, type MermaidOptions } from '../machines/statechart-doc.js';

export interface Chart {
  file: string;
  title: string;
  description: string;
  machine: AnyStateMachine;
  options?: MermaidOptions;
}

export const CHARTS: Chart[] = [
  {
    file: 'session.md',
    title: 'Upstream session',
    description:
      'How mcpx decides which era to speak to one upstream (docs/behaviour.md §2–§5): spawn, route by preference and cached era, ' +
      'discover / initialize, the probe-timeout race, respawns, and where each state routes each verdict kind (src/machines/verdict.ts). ' +
      'Drawn from src/machines/session.machine.ts.',
    machine: sessionMachine,
  },
  {
    file: 'pool.md',
    title: 'Server pool',
    description:
      "How one configured server's pool supervises its session instances (docs/behaviour.md §6): leases per scope key, " +
      'the own lane and the follow legacy lane (each with its start-failure cooldown), the legacy route (unused / available / refused), ' +
      'idle stop, eviction and stop. Self-loops are the instance and lease events the running pool handles in place. ' +
      'Drawn from src/pool/pool.machine.ts.',
    machine: poolMachine,
    options: { selfLoops: true },
  },
  {
    file: 'reconcile.md',
    title: 'Reconciliation',
    description:
      'When the pools are brought in line with the effective per-server configs (the config file over the settings), and who waits: ' +
      'runs one at a time, each planned from the facts of when it starts (unchanged pool fingerprint: kept; busy under deferBusy: deferred; ' +
      'else added, replaced or removed in one apply), and one catch-up run when a deferred server has nothing running any more. ' +
      'Self-loops are the requests queued while a run is under way. Drawn from src/pool/reconcile.machine.ts.',
    machine: reconcileMachine,
    options: { selfLoops: true },
  },
  {
    file: 'ask.md',
    title: 'Ask',
    description:
      'One ask (`/v1/ask`, and the asks of the MCP fronts): a call the upstream may interrupt with questions. It runs (working while nothing ' +
      'is asked, input_required while a question is open) until the call settles (completed / failed), the caller abandons it or it expires. ' +
      'The upstream asks in rounds (a legacy request is a round of one, a modern input_required a round of its inputRequests); each question ' +
      'of a round is open until answered or refused (its capability undeclared, too many, misrouted, timed out, or the ask ended), and one ' +
      'refused question refuses its round. Self-loops are the rounds, answers and timeouts taken in place; an ended ask refuses what still ' +
      'arrives. Drawn from src/asks/ask.machine.ts; src/asks/ask-store.ts is its shell.',
    machine: askMachine,
    options: { selfLoops: true },
  },
];

export function renderChart(chart: Chart): string {
  const svg = chart.file.replace(/\.md$/, '.svg');
  return toMarkdown(chart.machine, chart.title, `${chart.description} The same chart as a picture: [${svg}](${svg}).`, chart.options);
}
