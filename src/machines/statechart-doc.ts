/**
 * Mermaid `stateDiagram-v2` drawings of xstate machines, made from the machine itself (its
 * `machine.root` StateNode tree), for docs/statecharts and for a live view of a running actor.
 *
 * Layout (as in the xstate v5 documentation §3.2): every state is declared inside its
 * parent's composite block, in definition order, with `[*] --> initial` and `final --> [*]`;
 * all transitions follow at the top level, in definition order (per state: `on`, `onDone`, invoke
 * `onDone`/`onError`/`onSnapshot`, `after`, then `always`). Same machine, same text.
 *
 * Targetless transitions (actions only, no state change) are left out by default — a machine that
 * routes messages has many, and self-loops on composite states make the drawing unreadable. Pass
 * `{ selfLoops: true }` to draw those that run actions or re-enter as self-loops labelled with their
 * actions. Transitions with neither target nor actions (forbidden events) are never drawn.
 */
import type { AnyMachineSnapshot, AnyStateMachine, AnyStateNode, AnyTransitionDefinition, StateValue } from 'xstate';

export interface MermaidOptions {
  /** Draw targetless transitions that run actions (or re-enter) as self-loops. Default false. */
  selfLoops?: boolean;
  /** Append ` / action, …` to every transition label (self-loops always show their actions). Default false. */
  transitionActions?: boolean;
}

/** Words Mermaid's state grammar would read as keywords if used as a bare id. */
const RESERVED = /^(state|note|end|direction|class|classDef|style|as|click|hide|left|right|of|over)$/i;

/** A Mermaid-safe id: every character other than A–Z, a–z, 0–9 becomes `_`. */
export function mermaidId(raw: string): string {
  const id = raw.replace(/[^A-Za-z0-9]/g, '_') || '_';
  return RESERVED.test(id) ? `${id}_` : id;
}

interface Ids {
  /** Node → Mermaid id, in document (pre-)order. */
  byNode: Map<AnyStateNode, string>;
  /** Invoke id → the name shown in `done(…)` / `error(…)` labels. */
  actorNames: Map<string, string>;
}

const idCache = new WeakMap<AnyStateNode, Ids>();

function idsOf(machine: AnyStateMachine): Ids {
  const root = machine.root as AnyStateNode;
  const cached = idCache.get(root);
  if (cached) return cached;
  const byNode = new Map<AnyStateNode, string>();
  const actorNames = new Map<string, string>();
  const used = new Set<string>();
  const visit = (node: AnyStateNode): void => {
    const base = mermaidId(node.id);
    let id = base;
    for (let n = 2; used.has(id); n++) id = `${base}_${n}`;
    used.add(id);
    byNode.set(node, id);
    node.invoke.forEach((inv, i) => actorNames.set(inv.id, invokeName(node, inv, i).actor));
    for (const child of Object.values(node.states)) visit(child);
  };
  visit(root);
  const ids = { byNode, actorNames };
  idCache.set(root, ids);
  return ids;
}

/** How an invoke is named: in the state's label, and in its done/error transition labels. */
function invokeName(node: AnyStateNode, inv: AnyStateNode['invoke'][number], index: number): { label: string; actor: string } {
  const generatedId = inv.id === `${index}.${node.id}`;
  const inlineSrc = typeof inv.src !== 'string' || inv.src.startsWith('xstate.invoke.');
  const src = typeof inv.src === 'string' ? inv.src : 'inline';
  if (inlineSrc) return generatedId ? { label: 'inline actor', actor: 'inline' } : { label: inv.id, actor: inv.id };
  if (generatedId || inv.id === src) return { label: src, actor: src };
  return { label: `${src} (${inv.id})`, actor: inv.id };
}

/** Text safe inside a quoted state label or after ` : ` in a transition. */
function clean(text: string): string {
  return text
    .replace(/[\r\n]+/g, ' ')
    .replace(/;/g, ',')
    .replace(/"/g, '#quot;')
    .replace(/</g, '#lt;')
    .replace(/>/g, '#gt;');
}

type Named = { type?: unknown; name?: string; event?: unknown; id?: unknown; sendId?: unknown; guards?: unknown[]; stateValue?: unknown };

const isAfterPlumbing = (a: Named): boolean =>
  (a.type === 'xstate.raise' && typeof a.id === 'string' && a.id.startsWith('xstate.after.')) ||
  (a.type === 'xstate.cancel' && typeof a.sendId === 'string' && a.sendId.startsWith('xstate.after.'));

function actionName(action: unknown): string | undefined {
  if (typeof action === 'string') return action;
  if (action === null || (typeof action !== 'object' && typeof action !== 'function')) return undefined;
  const a = action as Named;
  if (isAfterPlumbing(a)) return undefined; // the timers behind `after`, already drawn as transitions
  if (typeof a.type === 'string') {
    const name = a.type.replace(/^xstate\./, '');
    const ev = a.event as { type?: unknown } | undefined;
    if ((name === 'raise' || name === 'emit') && typeof ev === 'object' && ev !== null && typeof ev.type === 'string') return `${name} ${ev.type}`;
    return name;
  }
  return typeof action === 'function' && a.name ? a.name : 'inline';
}

const actionNames = (actions: readonly unknown[]): string[] => actions.map(actionName).filter((n): n is string => n !== undefined);

function stateValueText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    return Object.entries(value as Record<string, unknown>)
      .map(([k, v]) => (v && (typeof v !== 'object' || Object.keys(v).length > 0) ? `${k}.${stateValueText(v)}` : k))
      .join(', ');
  }
  return String(value);
}

/** A guard as text: its name, or `a and (b or not c)` for guards built with and/or/not. */
export function guardText(guard: unknown): string {
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') {
    const g = guard as Named;
    // the bundle renames xstate's and/or/not to and2, or2… where names collide (keepNames is off)
    const kind = (x: Named) => (/^(and|or|not)\d*$/.test(x.name ?? '') ? (x.name ?? '').replace(/\d+$/, '') : x.name);
    if (Array.isArray(g.guards)) {
      const parts = g.guards.map((sub) => {
        const text = guardText(sub);
        const s = sub as Named;
        const compound = typeof sub === 'function' && Array.isArray(s.guards) && (kind(s) === 'and' || kind(s) === 'or') && s.guards.length > 1;
        return compound ? `(${text})` : text;
      });
      if (kind(g) === 'not') return `not ${parts[0] ?? '?'}`;
      if (kind(g) === 'and' || kind(g) === 'or') return parts.length === 0 ? String(kind(g) === 'and') : parts.join(` ${kind(g)} `);
    }
    if ('stateValue' in g) return `in ${stateValueText(g.stateValue)}`;
    return g.name || 'inline';
  }
  if (guard && typeof guard === 'object' && typeof (guard as Named).type === 'string') return withParams(guard as { type: string; params?: unknown });
  return 'guard';
}

/** A parametrized guard: the session chart's verdict guard as its kinds and condition (`legacy and forceDiscover`); others by name. */
function withParams(guard: { type: string; params?: unknown }): string {
  const p = guard.params;
  if (!p || typeof p !== 'object') return guard.type;
  const { is, when } = p as { is?: unknown; when?: unknown };
  if (!Array.isArray(is) || is.length === 0) return guard.type;
  const kinds = is.join(' or ');
  if (typeof when !== 'string') return kinds;
  return `${is.length > 1 ? `(${kinds})` : kinds} and ${when}`;
}

function eventLabel(t: AnyTransitionDefinition, node: AnyStateNode, ids: Ids, always: boolean): string {
  if (always) return 'always';
  const delay = (t as { delay?: unknown }).delay;
  const type = String(t.eventType);
  if (delay !== undefined || type.startsWith('xstate.after.')) {
    if (typeof delay === 'string') return `after ${delay}`;
    if (typeof delay === 'number') return `after ${delay} ms`;
    if (typeof delay === 'function') return `after ${delay.name || 'delay'}`;
    return `after ${type.slice('xstate.after.'.length, type.length - node.id.length - 1)}`;
  }
  const actor = (prefix: string): string => {
    const id = type.slice(prefix.length);
    return ids.actorNames.get(id) ?? id;
  };
  if (type.startsWith('xstate.done.actor.')) return `done(${actor('xstate.done.actor.')})`;
  if (type.startsWith('xstate.error.actor.')) return `error(${actor('xstate.error.actor.')})`;
  if (type.startsWith('xstate.snapshot.')) return `snapshot(${actor('xstate.snapshot.')})`;
  if (type.startsWith('xstate.done.state.')) return 'onDone';
  return type;
}

function stateLabel(node: AnyStateNode): string {
  if (node.type === 'history') return node.history === 'deep' ? 'H*' : 'H';
  const lines = [node.key];
  const entry = actionNames(node.entry);
  if (entry.length > 0) lines.push(`entry / ${entry.join(', ')}`);
  const exit = actionNames(node.exit);
  if (exit.length > 0) lines.push(`exit / ${exit.join(', ')}`);
  node.invoke.forEach((inv, i) => lines.push(`invoke ${invokeName(node, inv, i).label}`));
  return lines.map(clean).join('<br/>');
}

function renderState(node: AnyStateNode, ids: Ids, depth: number, out: string[]): void {
  const pad = '  '.repeat(depth);
  const id = ids.byNode.get(node)!;
  const children = Object.values(node.states);
  if (children.length === 0) {
    out.push(`${pad}state "${stateLabel(node)}" as ${id}`);
    if (node.type === 'final') out.push(`${pad}${id} --> [*]`);
    return;
  }
  out.push(`${pad}state "${stateLabel(node)}" as ${id} {`);
  if (node.type === 'parallel') {
    children.forEach((child, i) => {
      if (i > 0) out.push(`${pad}  --`);
      renderState(child, ids, depth + 1, out);
    });
  } else {
    for (const target of node.initial?.target ?? []) out.push(`${pad}  [*] --> ${ids.byNode.get(target)!}`);
    for (const child of children) renderState(child, ids, depth + 1, out);
  }
  out.push(`${pad}}`);
}

function renderTransitions(node: AnyStateNode, ids: Ids, opts: MermaidOptions, out: string[]): void {
  const source = ids.byNode.get(node)!;
  const edge = (t: AnyTransitionDefinition, always: boolean): void => {
    const targets = t.target ?? [];
    const selfLoop = targets.length === 0;
    if (selfLoop && (!opts.selfLoops || (t.actions.length === 0 && !t.reenter))) return;
    let label = eventLabel(t, node, ids, always);
    if (t.guard !== undefined) label += ` [${guardText(t.guard)}]`;
    const actions = actionNames(t.actions);
    if ((selfLoop || opts.transitionActions) && actions.length > 0) label += ` / ${actions.join(', ')}`;
    const text = clean(label);
    for (const target of selfLoop ? [node] : targets) out.push(`  ${source} --> ${ids.byNode.get(target)!} : ${text}`);
  };
  for (const list of node.transitions.values()) for (const t of list) edge(t, false);
  for (const t of node.always ?? []) edge(t, true);
  for (const child of Object.values(node.states)) renderTransitions(child, ids, opts, out);
}

/** The machine as a Mermaid `stateDiagram-v2` (ends with a newline). */
export function toMermaid(machine: AnyStateMachine, opts: MermaidOptions = {}): string {
  const ids = idsOf(machine);
  const out = ['stateDiagram-v2'];
  renderState(machine.root, ids, 1, out);
  renderTransitions(machine.root, ids, opts, out);
  return `${out.join('\n')}\n`;
}

/** A Markdown page for docs/statecharts: heading, optional description, the generated-file notice, the chart. */
export function toMarkdown(machine: AnyStateMachine, title: string, description?: string, opts?: MermaidOptions): string {
  const parts = [`# ${title}`, ''];
  if (description) parts.push(description.trim(), '');
  parts.push('_generated — do not edit; run `npm run statecharts`_', '', '```mermaid', toMermaid(machine, opts).trimEnd(), '```', '');
  return parts.join('\n');
}

/** The Mermaid ids (as `toMermaid` draws them) of the snapshot's active atomic and final states, in document order. */
export function activeStateIds(snapshot: AnyMachineSnapshot): string[] {
  const ids = idsOf(snapshot.machine as AnyStateMachine);
  const active = new Set<AnyStateNode>();
  const walk = (node: AnyStateNode, value: StateValue | undefined): void => {
    if (Object.keys(node.states).length === 0) {
      active.add(node); // atomic or final (an atomic region of a parallel state has the value {})
      return;
    }
    if (typeof value === 'string') {
      const child = node.states[value];
      if (child) walk(child, undefined);
    } else if (value && typeof value === 'object') {
      for (const [key, sub] of Object.entries(value)) {
        const child = node.states[key];
        if (child) walk(child, sub);
      }
    }
  };
  walk(snapshot.machine.root as AnyStateNode, snapshot.value as StateValue);
  return [...ids.byNode].filter(([node]) => active.has(node)).map(([, id]) => id);
}

/** Appends a highlight class for the given state ids (for a live view of a running actor). */
export function withActiveStates(mermaid: string, ids: readonly string[]): string {
  const safe = [...new Set(ids.map((id) => id.replace(/[^A-Za-z0-9_]/g, '_')).filter((id) => id.length > 0))];
  const lines = [mermaid.trimEnd(), '  classDef active fill:#f9d71c'];
  if (safe.length > 0) lines.push(`  class ${safe.join(',')} active`);
  return `${lines.join('\n')}\n`;
}
