/**
 * The statecharts drawn into docs/statecharts, each from its machine. `npm run statecharts` writes
 * them; test/statecharts.test.ts fails when a committed drawing no longer matches its machine.
 */
import type { AnyStateMachine } from 'xstate';
import { sessionMachine } from './session.machine.js';
import { toMarkdown } from './statechart-doc.js';

export interface Chart {
  file: string;
  title: string;
  description: string;
  machine: AnyStateMachine;
}

export const CHARTS: Chart[] = [
  {
    file: 'session.md',
    title: 'Upstream session',
    description:
      'How mcpx decides which era to speak to one upstream (era-probe.md §2–§5): spawn, route by preference and cached era, ' +
      'discover / initialize, the probe-timeout race, respawns, and the verdict guards (src/machines/verdict.ts). ' +
      'Drawn from src/machines/session.machine.ts.',
    machine: sessionMachine,
  },
];

export function renderChart(chart: Chart): string {
  return toMarkdown(chart.machine, chart.title, chart.description);
}
