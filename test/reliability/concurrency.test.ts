/**
 * 2,000 concurrent calls through one real daemon, across four servers (two dual-era, one under `follow`;
 * two legacy-only, one shared `exclusive`)
 * and both caller eras, half by the /v1 API and half by MCP clients on /mcp (concurrency.ts): each
 * answered exactly once, by its own call; live instances per server and lane never above `max`; no
 * upstream process left after the daemon stops; the heap back near its baseline once the callers closed.
 * The long version (several bursts, memory after each) is concurrency.stress.ts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { heapAfterGc, MAX_PER_LANE, startRig, type ConcurrencyRig } from './concurrency.js';

const CALLS = 2_000;
/** Heap growth allowed after the burst, over the warmed-up baseline. */
const HEAP_SLACK = 24 * 1024 * 1024;

let rig: ConcurrencyRig | undefined;
afterAll(async () => {
  await rig?.stop();
});

describe('2,000 concurrent calls, four servers, both caller eras, /v1 and /mcp', () => {
  it('each answered exactly once by its own call; limits held; memory back near baseline; nothing left', async () => {
    rig = await startRig();
    const warm = await rig.burst(200, 'warm'); // starts every instance, compiles the hot paths
    expect(warm.wrong).toEqual([]);
    const before = await heapAfterGc();
    const b = await rig.burst(CALLS, 'burst');
    const after = await heapAfterGc();
    const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;
    console.log(
      `[concurrency] ${b.calls} calls in ${b.ms} ms, answered ${b.answered}, wrong or lost ${b.wrong.length}; by way ${JSON.stringify(b.byWay)}; max live per lane ${JSON.stringify(b.maxLive)}; heap ${mb(before)} → ${mb(after)}`,
    );
    expect(b.wrong).toEqual([]);
    expect(b.answered).toBe(CALLS);
    expect(Object.values(b.byWay)).toEqual([CALLS / 4, CALLS / 4, CALLS / 4, CALLS / 4]);
    expect(Object.keys(b.maxLive).sort(), 'every server, and the legacy lane of the one under follow').toEqual([
      'dualA/own',
      'dualFollow/legacy',
      'dualFollow/own',
      'handExclusive/own',
      'legacyA/own',
    ]);
    for (const [lane, n] of Object.entries(b.maxLive)) expect(n, lane).toBeLessThanOrEqual(MAX_PER_LANE);
    expect(b.maxLive['handExclusive/own'], 'the exclusive server is driven to its limit, and no further').toBe(MAX_PER_LANE);
    expect(after - before, `heap ${mb(before)} → ${mb(after)}`).toBeLessThan(HEAP_SLACK);
    const r = rig;
    rig = undefined;
    const { left } = await r.stop();
    expect(left).toEqual([]);
  }, 180_000);
});
