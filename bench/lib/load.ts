/** A closed-loop load generator: `concurrency` workers, each issuing the next call when its last one answered. */

export interface LoadRun {
  latencies: number[];
  wallMs: number;
  errors: number;
  firstError?: string;
}

export async function drive(call: () => Promise<void>, concurrency: number, total: number): Promise<LoadRun> {
  const latencies: number[] = [];
  let issued = 0;
  let errors = 0;
  let firstError: string | undefined;
  const t0 = performance.now();
  const worker = async () => {
    while (issued < total) {
      issued += 1;
      const t = performance.now();
      try {
        await call();
        latencies.push(performance.now() - t);
      } catch (err) {
        errors += 1;
        firstError ??= err instanceof Error ? err.message : String(err);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { latencies, wallMs: performance.now() - t0, errors, ...(firstError ? { firstError } : {}) };
}
