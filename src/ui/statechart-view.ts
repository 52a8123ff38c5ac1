/**
 * `GET /v1/servers/:server/statechart` and the live view's charts: the session chart in Mermaid with the
 * states of a pool's instances marked. Its own module, loaded when a chart is first asked for: it needs
 * the session chart itself, which a daemon does not load before a server is called.
 */
import type { SnapshotFrom } from 'xstate';
import { sessionMachine } from '../machines/session.machine.js';
import { activeStateIds, toMermaid, withActiveStates } from '../machines/statechart-doc.js';
import type { Lane } from '../machines/preference.js';
import type { ServerPool } from '../pool/server-pool.js';

/** One pool's chart (`GET /v1/servers/:server/statechart`; its schema in src/api/schemas.ts matches it). */
export interface StatechartView {
  server: string;
  /** Mermaid stateDiagram-v2 of the session chart, live instances' states in class "active". */
  mermaid: string;
  instances: { id: string; lane: Lane; state: string; poolState: string; activeStateIds: string[] }[];
}

/** `connecting.discovering` → `{ connecting: 'discovering' }`. */
function stateValueOf(dotted: string): string | Record<string, unknown> {
  const parts = dotted.split('.');
  let value: string | Record<string, unknown> = parts[parts.length - 1]!;
  for (let i = parts.length - 2; i >= 0; i -= 1) value = { [parts[i]!]: value };
  return value;
}

/** The session chart's Mermaid ids for a session state name as `stateName` writes it. */
export function sessionStateIds(state: string): string[] {
  try {
    const snapshot = sessionMachine.resolveState({ value: stateValueOf(state) as never, context: undefined as never }) as SnapshotFrom<typeof sessionMachine>;
    return activeStateIds(snapshot);
  } catch {
    return [];
  }
}

let baseChart: string | undefined;
function sessionChart(): string {
  return (baseChart ??= toMermaid(sessionMachine));
}

/** One pool's chart: every instance's state, and the chart with those states marked. */
export function statechartView(pool: ServerPool): StatechartView {
  const instances = pool.instances().map((i) => {
    const state = i.sessionState ?? i.state;
    return { id: i.id, lane: i.lane, state, poolState: i.state, activeStateIds: i.sessionState ? sessionStateIds(i.sessionState) : [] };
  });
  const active = instances.flatMap((i) => i.activeStateIds);
  return { server: pool.name, mermaid: withActiveStates(sessionChart(), active), instances };
}
