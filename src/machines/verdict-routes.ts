/**
 * Verdict routing tables: what a state of the session chart does with each verdict kind, compiled into
 * xstate transitions. A table is a `Record` over the kinds, so a state that leaves a kind out (or names
 * one that does not exist) does not compile; adding a kind to ./verdict.ts fails the build until every
 * state that routes that request's verdicts says what it does with it.
 */

/** The verdict guard's params: the answer is to the pending request, its kind is one of `is`, and `when` (a context guard) holds. */
export interface VerdictGuardParams<K extends string = string, C extends string = string> {
  is: readonly K[];
  when?: C;
}

/** One way a state goes for a kind: a transition, with `when` a further condition (a guard's name); one kind's rows are tried in order. */
export interface RouteRow<C extends string = string> {
  when?: C;
  target?: string;
  reenter?: boolean;
  actions?: unknown;
}

/** The rows of a route (one row, or a list of them). */
type RowOf<V> = V extends readonly (infer E)[] ? E : V;
/** A row as an xstate transition (its `when` moves into the verdict guard). */
type Transition<R> = R extends unknown ? Omit<R, 'when'> : never;

/**
 * A compiler for tables over the kinds `K` whose rows may name the conditions `C`. The table names every
 * kind with a row or rows; a row shared by several kinds (the same object) becomes one transition guarded
 * by all of them, so the drawing shows each way out once. Transitions come in the table's order, each
 * kind's rows kept in theirs.
 * @throws Error when two kinds share rows in opposite orders (no order keeps both).
 */
export function verdictRoutes<K extends string, C extends string>() {
  return <const T extends Record<K, RouteRow<C> | readonly RouteRow<C>[]>>(table: T & Record<Exclude<keyof T, K>, never>) => {
    type Row = RowOf<T[K]>;
    const lists = (Object.values(table) as Array<Row | readonly Row[]>).map((route): readonly Row[] => (Array.isArray(route) ? route : [route as Row]));
    const kinds = new Map<Row, K[]>();
    (Object.keys(table) as K[]).forEach((kind, i) => {
      for (const row of lists[i]!) kinds.set(row, [...(kinds.get(row) ?? []), kind]);
    });
    const placed: Row[] = [];
    const ready = (row: Row) => lists.every((list) => !list.includes(row) || list.slice(0, list.indexOf(row)).every((r) => placed.includes(r)));
    while (placed.length < kinds.size) {
      const next = [...kinds.keys()].find((row) => !placed.includes(row) && ready(row));
      if (!next) throw new Error('verdict routes: two kinds share rows in opposite orders');
      placed.push(next);
    }
    return placed.map((row) => {
      const { when, ...transition } = row as RouteRow<C>;
      const params: VerdictGuardParams<K, C> = when === undefined ? { is: kinds.get(row)! } : { is: kinds.get(row)!, when };
      return { ...(transition as Transition<Row>), guard: { type: 'verdict' as const, params } };
    });
  };
}
