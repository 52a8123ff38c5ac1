/**
 * Transition coverage for model-based tests: every transition a machine defines, and the ones an actor's
 * inspection shows it took (from `@xstate.microstep` events, so eventless and internal steps count too).
 */
import type { AnyStateNode, InspectionEvent } from 'xstate';

/** Every transition definition of the chart, with a readable label. */
export function allTransitions(node: AnyStateNode, out = new Map<object, string>()): Map<object, string> {
  for (const [event, defs] of node.transitions) {
    defs.forEach((d, i) =>
      out.set(
        d,
        `${node.id} --${event}[${i}]${d.guard ? ` [${JSON.stringify((d.guard as { type?: string }).type ?? 'fn')}]` : ''}--> ${(d.target ?? []).map((t) => t.id).join(',') || '(self)'}`,
      ),
    );
  }
  (node.always ?? []).forEach((d, i) => out.set(d, `${node.id} --always[${i}]--> ${(d.target ?? []).map((t) => t.id).join(',')}`));
  for (const child of Object.values(node.states)) allTransitions(child as AnyStateNode, out);
  return out;
}

/** An inspect callback adding each transition taken to `into` (only those in `universe`, when given). */
export function transitionRecorder(into: Set<object>, universe?: Map<object, string>) {
  return (ev: InspectionEvent): void => {
    if (ev.type !== '@xstate.microstep') return;
    for (const t of (ev as unknown as { _transitions: object[] })._transitions) if (!universe || universe.has(t)) into.add(t);
  };
}
