/**
 * The call-record log (src/core/record-log.ts): lines wait in a buffer and reach the log stream in one
 * write, at most RECORD_FLUSH_MS after the first (or at once on flush), whole, in order, scrubbed, at
 * the level in force. Time is the simulated clock's.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { makeRecordLog, RECORD_FLUSH_MS } from '../../src/core/record-log.js';

const SECRET = 'r3cord-log-s3cret';

function sink(): { writes: string[]; write(chunk: string): void } {
  const writes: string[] = [];
  return { writes, write: (chunk: string) => void writes.push(chunk) };
}

const scrub = { streamWrite: (s: string) => s.split(SECRET).join('<redacted>') };

describe('the call-record log', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('writes the lines of a burst together, once, when the first has waited RECORD_FLUSH_MS', () => {
    const out = sink();
    const r = makeRecordLog('info', { daemon: 42 }, scrub, out);
    for (let i = 0; i < 5; i++) r.logger.info({ server: 's', tool: `t${i}`, ok: true, ms: i }, 'call finished');
    expect(out.writes).toEqual([]);
    vi.advanceTimersByTime(RECORD_FLUSH_MS - 1);
    r.logger.info({ server: 's', tool: 't5', ok: false, ms: 5 }, 'call finished'); // joins the same write
    expect(out.writes).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(out.writes).toHaveLength(1);
    const lines = out.writes[0]!.split('\n');
    expect(lines.pop()).toBe(''); // ends with a whole line
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed.map((p) => p['tool'])).toEqual(['t0', 't1', 't2', 't3', 't4', 't5']);
    for (const p of parsed) expect(p).toMatchObject({ level: 30, daemon: 42, component: 'daemon', msg: 'call finished', server: 's' });
    // Nothing more is written until another line comes.
    vi.advanceTimersByTime(10 * RECORD_FLUSH_MS);
    expect(out.writes).toHaveLength(1);
    r.logger.info({ tool: 'later' }, 'call finished');
    vi.advanceTimersByTime(RECORD_FLUSH_MS);
    expect(out.writes).toHaveLength(2);
    expect(JSON.parse(out.writes[1]!)).toMatchObject({ tool: 'later' });
  });

  it('flush writes what waits at once, and nothing when nothing waits', () => {
    const out = sink();
    const r = makeRecordLog('info', {}, scrub, out);
    r.flush();
    expect(out.writes).toEqual([]);
    r.logger.info({ tool: 'a' }, 'call finished');
    r.logger.info({ tool: 'b' }, 'call finished');
    r.flush();
    expect(out.writes).toHaveLength(1);
    expect(
      out.writes[0]!.trimEnd()
        .split('\n')
        .map((l) => (JSON.parse(l) as { tool: string }).tool),
    ).toEqual(['a', 'b']);
    // The timer the first line set is gone with the flush: no empty or repeated write later.
    vi.advanceTimersByTime(10 * RECORD_FLUSH_MS);
    expect(out.writes).toHaveLength(1);
  });

  it('every line goes through the scrubber before it waits', () => {
    const out = sink();
    const r = makeRecordLog('info', {}, scrub, out);
    r.logger.info({ tool: `tool-${SECRET}` }, 'call finished');
    r.flush();
    expect(out.writes.join('')).toContain('tool-<redacted>');
    expect(out.writes.join('')).not.toContain(SECRET);
  });

  it('follows the level it is given: records are info lines', () => {
    const out = sink();
    const r = makeRecordLog('warn', {}, scrub, out);
    r.logger.info({ tool: 'hidden' }, 'call finished');
    r.flush();
    expect(out.writes).toEqual([]);
    r.setLevel('info');
    r.logger.info({ tool: 'shown' }, 'call finished');
    r.flush();
    expect(out.writes).toHaveLength(1);
    r.setLevel('error');
    r.logger.info({ tool: 'hidden again' }, 'call finished');
    r.flush();
    expect(out.writes).toHaveLength(1);
  });
});
