/**
 * `mcpx serve`'s stdout batching (src/front/turn-batched-output.ts) under the SDK's own
 * StdioServerTransport: the answers sent in one turn reach the stream in one write, in order; a message
 * to the caller (with a method) goes out at once, after what waited before it; backpressure and flush
 * behave as the stream's own.
 */
import { PassThrough, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { describe, expect, it } from 'vitest';
import { TurnBatchedOutput } from '../../src/front/turn-batched-output.js';

/** A stream that records each write it is handed (one entry per system call it would make). */
class Recorder extends Writable {
  readonly writes: string[][] = [];
  constructor(highWaterMark = 16 * 1024) {
    super({ highWaterMark, decodeStrings: false });
  }
  override _write(chunk: string | Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.writes.push([chunk.toString()]);
    cb();
  }
  override _writev(chunks: Array<{ chunk: string | Buffer }>, cb: () => void): void {
    this.writes.push(chunks.map((c) => c.chunk.toString()));
    cb();
  }
  get lines(): unknown[] {
    return this.writes
      .flat()
      .join('')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as unknown);
  }
}

const turn = () => new Promise((r) => setImmediate(r));
const answer = (id: number) => ({ jsonrpc: '2.0' as const, id, result: { content: [{ type: 'text', text: `answer ${id}` }] } });
const progress = (n: number) => ({ jsonrpc: '2.0' as const, method: 'notifications/progress', params: { progressToken: 1, progress: n } });

async function transportOver(out: Writable): Promise<{ transport: StdioServerTransport; output: TurnBatchedOutput }> {
  const output = new TurnBatchedOutput(out);
  const transport = new StdioServerTransport(new PassThrough(), output.asWritable());
  await transport.start();
  return { transport, output };
}

describe("serve's stdout, a turn at a time", () => {
  it('the answers sent in one turn leave in one write, in order', async () => {
    const out = new Recorder();
    const { transport } = await transportOver(out);
    await Promise.all([1, 2, 3, 4].map((id) => transport.send(answer(id))));
    expect(out.writes).toEqual([]); // still this turn
    await turn();
    expect(out.writes).toHaveLength(1);
    expect(out.writes[0]).toHaveLength(4);
    expect(out.lines).toEqual([1, 2, 3, 4].map(answer));
    // The next turn's answers are a write of their own.
    await transport.send(answer(5));
    await turn();
    expect(out.writes).toHaveLength(2);
    await transport.close();
  });

  it('a notification goes out at once, after the answers that waited before it; an answer after it waits again', async () => {
    const out = new Recorder();
    const { transport } = await transportOver(out);
    await transport.send(answer(1));
    await transport.send(progress(1));
    expect(out.writes).toHaveLength(1);
    expect(out.lines).toEqual([answer(1), progress(1)]);
    await transport.send(answer(2));
    expect(out.writes).toHaveLength(1);
    await turn();
    expect(out.lines).toEqual([answer(1), progress(1), answer(2)]);
    await transport.close();
  });

  it('flush writes what waits at once; a flush with nothing held writes nothing', async () => {
    const out = new Recorder();
    const { transport, output } = await transportOver(out);
    output.flush();
    expect(out.writes).toEqual([]);
    await transport.send(answer(1));
    output.flush();
    expect(out.lines).toEqual([answer(1)]);
    await turn(); // the turn's own flush finds nothing left, and leaves the stream uncorked
    expect(out.writes).toHaveLength(1);
    expect(out.writableCorked).toBe(0);
    await transport.close();
  });

  it("backpressure is the stream's: past its high-water mark a send waits for drain, and nothing is lost", async () => {
    const out = new Recorder(64);
    const { transport } = await transportOver(out);
    let settled = 0;
    const sends = [1, 2, 3].map((id) => transport.send(answer(id)).then(() => settled++));
    await Promise.resolve();
    expect(settled).toBe(0); // each answer is past 64 bytes: write() said wait
    await Promise.all(sends);
    expect(out.lines).toEqual([1, 2, 3].map(answer));
  });
});
