/**
 * A session state as one dotted name, e.g. `connecting.racing` (parallel regions joined by commas).
 * Its own module: the pool and the live view name states without loading the session chart.
 */
export function stateName(snapshot: { value: unknown }): string {
  const walk = (v: unknown): string =>
    typeof v === 'string'
      ? v
      : Object.entries(v as Record<string, unknown>)
          .map(([k, sub]) => `${k}.${walk(sub)}`)
          .join(',');
  return walk(snapshot.value);
}
