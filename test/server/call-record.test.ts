/**
 * Call records (the `call finished` log line and `call.finished` on /v1/events) are written after the
 * answers, together once per turn: every call gets its record, in the order the calls finished, and the
 * records of answered calls are written when the daemon stops, not left to a turn that may never come.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolCall } from '../../src/call/call.js';
import type { DaemonEvent } from '../../src/core/events.js';
import { tempDir } from '../support/real.js';
import { harness, type Harness } from './helpers.js';

const SECRET = 'rec0rd-s3cret-value';

describe('call records', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let h: Harness | undefined;
  let closed = false;

  beforeAll(async () => {
    dir = await tempDir('mcpx-records-');
    h = await harness(dir.path, { tools: { fixture: 'serve-tools', env: { API_TOKEN: SECRET } } });
  }, 60_000);
  afterAll(async () => {
    if (!closed) await h?.close();
    await dir?.remove();
  });

  const records = () => h!.logs.lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['msg'] === 'call finished');

  it('every call is recorded once, in the order the calls finished; the log and the event stream agree', async () => {
    const events: DaemonEvent[] = [];
    const unsubscribe = h!.controller.hub.subscribe((e) => {
      if (e.type === 'call.finished') events.push(e);
    });
    const before = records().length;
    const finished: string[] = [];
    // Many calls at once, some failing (an unknown tool), so the order of their records can be told apart.
    const tools = Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? 'no-such-tool' : 'echo'));
    await Promise.all(tools.map((tool, i) => h!.controller.call(toolCall('tools', tool, { text: `n${i}` })).then(() => finished.push(tool))));
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    unsubscribe();
    const lines = records().slice(before);
    expect(lines.map((l) => l['tool'])).toEqual(finished);
    expect(lines.map((l) => l['ok'])).toEqual(finished.map((t) => t === 'echo'));
    expect(events.map((e) => ('tool' in e ? e.tool : undefined))).toEqual(finished);
    for (const l of lines) expect(l).toMatchObject({ server: 'tools', component: 'daemon', level: 30 });
  }, 60_000);

  it('a known secret never appears in a record, even where no redaction path names it', async () => {
    const before = records().length;
    await h!.controller.call(toolCall('tools', `tool-${SECRET}`, {}));
    await new Promise((r) => setImmediate(r));
    const lines = h!.logs.lines.slice(-5).join('\n');
    expect(records().length).toBe(before + 1);
    expect(lines).toContain('tool-<redacted>');
    expect(h!.logs.text).not.toContain(SECRET);
  }, 60_000);

  it("the page's recent calls keep a scrubbed preview: a known secret and a secret-named argument read <redacted>, at most 50 calls", async () => {
    await h!.controller.call(toolCall('tools', 'echo', { text: `say ${SECRET}`, password: 'hunter2-not-known', nested: { apiKey: 'k-123' } }));
    const last = h!.controller.recentCalls().at(-1)!;
    expect(last).toMatchObject({ via: 'api', server: 'tools', tool: 'echo', ok: true });
    expect(last.args).toBe('{"text":"say <redacted>","password":"<redacted>","nested":{"apiKey":"<redacted>"}}');
    expect(JSON.stringify(h!.controller.recentCalls())).not.toMatch(new RegExp(`${SECRET}|hunter2|k-123`));
    await Promise.all(Array.from({ length: 60 }, (_, i) => h!.controller.call(toolCall('tools', 'echo', { text: `m${i}` }))));
    expect(h!.controller.recentCalls()).toHaveLength(50);
    // their records written before the next test counts them
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
  }, 60_000);

  it('the records of answered calls are written when the daemon stops', async () => {
    const before = records().length;
    const finished: string[] = [];
    await Promise.all(
      ['echo', 'no-such-tool', 'echo'].map((tool) => h!.controller.call(toolCall('tools', tool, { text: 'x' })).then(() => finished.push(tool))),
    );
    // No turn has passed since the answers: stopping writes them (in its synchronous start).
    const closing = h!.close();
    closed = true;
    expect(
      records()
        .slice(before)
        .map((l) => l['tool']),
    ).toEqual(finished);
    await closing;
  }, 60_000);
});
