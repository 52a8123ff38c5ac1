/**
 * `npm run test:stress`: BURSTS bursts of 2,000 concurrent calls through one daemon (concurrency.ts),
 * one after another: every call answered once by its own call in every burst, limits held, and the heap
 * does not grow from burst to burst (after a full GC, the last is within slack of the first).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { heapAfterGc, MAX_PER_LANE, startRig, type ConcurrencyRig } from './concurrency.js';

const BURSTS = Number(process.env['MCPX_BURSTS'] ?? 6);
const CALLS = 2_000;
const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;

let rig: ConcurrencyRig | undefined;
afterAll(async () => {
  await rig?.stop();
});

describe(`${BURSTS} bursts of ${CALLS} concurrent calls`, () => {
  it('every burst: each call answered once by itself, limits held; the heap flat from burst to burst; nothing left', async () => {
    rig = await startRig();
    expect((await rig.burst(200, 'warm')).wrong).toEqual([]);
    const baseline = await heapAfterGc();
    const heaps: number[] = [];
    let calls = 0;
    let lost = 0;
    for (let i = 0; i < BURSTS; i += 1) {
      const b = await rig.burst(CALLS, `b${i}`);
      calls += b.calls;
      lost += b.calls - b.answered;
      expect(b.wrong, `burst ${i}`).toEqual([]);
      for (const [lane, n] of Object.entries(b.maxLive)) expect(n, lane).toBeLessThanOrEqual(MAX_PER_LANE);
      heaps.push(await heapAfterGc());
      console.log(`[concurrency-stress] burst ${i}: ${b.calls} calls in ${b.ms} ms; heap ${mb(heaps.at(-1)!)}`);
    }
    const r = rig;
    rig = undefined;
    const { left } = await r.stop();
    console.log(
      `[concurrency-stress] ${calls} calls, lost ${lost}, processes left ${left.length}; heap baseline ${mb(baseline)}, after each burst ${heaps.map(mb).join(', ')}`,
    );
    expect(lost).toBe(0);
    expect(left).toEqual([]);
    expect(heaps.at(-1)! - heaps[0]!, 'no growth from the first burst to the last').toBeLessThan(16 * 1024 * 1024);
    expect(heaps.at(-1)! - baseline).toBeLessThan(32 * 1024 * 1024);
  }, 900_000);
});
