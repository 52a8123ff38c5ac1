/**
 * Issue 10 #4: a secret cut by the 500-character stderr tail. The scrubber blanks whole secret values;
 * `aaaa…SECRET=sentin…` no longer holds one. The stdio transport redacts its server's secrets before
 * it cuts, and the daemon's scrubber blanks the start of any known secret right before a cut mark.
 * Checked for every cut position across the secret, in `error.data.stderrTail` and the message.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Scrubber } from '../../src/core/secrets.js';
import { RpcPeer } from '../../src/transports/rpc-peer.js';
import { cutRedacted } from '../../src/transports/secret-text.js';
import { StdioChannel } from '../../src/transports/stdio.js';
import { harness, type Harness } from '../server/helpers.js';
import { tempDir } from '../support/real.js';
import { FAULTY, faultyEntry } from './helpers.js';
import type { ResolvedServer } from '../../src/config/config-file.js';

const SECRET = 'zQ9xVkW7-pL3mN8rT2';
const LINE_CHARS = 500;
const PREFIX = 'SECRET='; // what precedes the value on the stderr line

/** Every piece of the secret of at least `min` characters that `text` contains. */
function fragmentsIn(text: string, min = 3): string[] {
  const found: string[] = [];
  for (let i = 0; i < SECRET.length; i += 1) {
    for (let j = i + min; j <= SECRET.length; j += 1) if (text.includes(SECRET.slice(i, j))) found.push(SECRET.slice(i, j));
  }
  return found;
}

describe('the stdio transport: redact, then cut', () => {
  it('cutRedacted never leaves a start of a secret before the cut mark', () => {
    for (let at = LINE_CHARS - SECRET.length - 2; at <= LINE_CHARS + 2; at += 1) {
      const line = `${'a'.repeat(at)}${SECRET} and more text after it ${'b'.repeat(40)}`;
      const out = cutRedacted(line, LINE_CHARS, [SECRET]);
      expect(out.endsWith('…'), `cut at ${at}`).toBe(true);
      expect(fragmentsIn(out, 2), `cut at ${at}: ${out.slice(-30)}`).toEqual([]);
    }
  });

  it('every cut position across the secret: the tail a crashed process leaves has no piece of it', async () => {
    // The secret's first character lands on each position from where it just fits to just past the cut.
    for (let pad = LINE_CHARS - PREFIX.length - SECRET.length; pad <= LINE_CHARS - PREFIX.length + 1; pad += 1) {
      const ch = new StdioChannel({ command: process.execPath, args: [FAULTY, 'plain'], env: { SECRET, API_KEY: 'unrelated-value-1' }, stopGraceMs: 500 });
      const peer = new RpcPeer(ch);
      try {
        await ch.start();
        const err = (await peer
          .request('tools/call', { name: 'leak', arguments: { pad, name: 'SECRET', after: 100 } }, { timeoutMs: 10_000 })
          .catch((e: unknown) => e)) as { code: string; data: { stderrTail: string[] }; message: string };
        expect(err.code).toBe('MCPX_TRANSPORT_CLOSED');
        const tail = err.data.stderrTail.join('\n');
        expect(tail.endsWith('…')).toBe(true);
        expect(fragmentsIn(tail), `pad ${pad}: ${tail.slice(480)}`).toEqual([]);
        expect(fragmentsIn(err.message), `pad ${pad}`).toEqual([]);
      } finally {
        await ch.close();
      }
    }
  }, 60_000);
});

describe('the daemon scrubber: a cut it did not make', () => {
  const scrubber = new Scrubber();
  scrubber.setFromServers([
    {
      name: 's',
      transport: 'stdio',
      definition: { command: 'x', env: { OTHER_TOKEN: SECRET } },
      limits: {},
      timeouts: {},
      disabled: false,
    } satisfies ResolvedServer,
  ]);

  it('blanks the start of a known secret right before a `…`, from 3 characters', () => {
    expect(scrubber.scrub(`aaaa SECRET=${SECRET.slice(0, 8)}…`)).toBe('aaaa SECRET=<redacted>…');
    expect(scrubber.scrub(`{"stderrTail":["xx ${SECRET.slice(0, 3)}…"]}`)).toBe('{"stderrTail":["xx <redacted>…"]}');
    expect(scrubber.scrub(`whole ${SECRET} and cut ${SECRET.slice(0, 12)}… end`)).toBe('whole <redacted> and cut <redacted>… end');
    // Not before a cut mark, or shorter than 3 characters: ordinary text.
    expect(scrubber.scrub(`the word ${SECRET.slice(0, 8)} alone`)).toBe(`the word ${SECRET.slice(0, 8)} alone`);
    expect(scrubber.scrub('loading se…')).toBe('loading se…');
  });
});

describe('end to end: POST /v1/call of a server that crashes quoting its environment', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let h: Harness;
  beforeAll(async () => {
    dir = await tempDir('mcpx-stderr-');
    h = await harness(dir.path, {
      // Its own secret (a secret-looking name), and one it holds under a plain name that another server's config makes secret.
      leaky: faultyEntry('plain', { env: { SECRET, PLAIN_COPY: `${SECRET}-other` } }),
      other: { url: 'http://127.0.0.1:9/mcp', headers: { Authorization: `Bearer ${SECRET}-other` } },
    });
  });
  afterAll(async () => {
    await h?.close();
    await dir?.remove();
  });

  it('error.data.stderrTail and the message hold no piece of either secret, wherever the cut falls', async () => {
    const other = `${SECRET}-other`;
    for (const [name, value] of [
      ['SECRET', SECRET],
      ['PLAIN_COPY', other],
    ] as const) {
      for (const pad of [LINE_CHARS - name.length - 1 - 8, LINE_CHARS - name.length - 1 - 3, LINE_CHARS - name.length - 1]) {
        const res = await h.app.inject({ method: 'POST', url: '/v1/call', payload: { server: 'leaky', tool: 'leak', args: { pad, name, after: 100 } } });
        const body = res.json() as { ok: boolean; error: { code: string; data: { stderrTail: string[] } } };
        expect(body.ok).toBe(false);
        expect(body.error.code).toBe('MCPX_TRANSPORT_CLOSED');
        expect(body.error.data.stderrTail.some((l) => l.endsWith('…'))).toBe(true);
        const pieces = [];
        for (let k = 3; k <= value.length; k += 1) if (res.body.includes(value.slice(0, k))) pieces.push(value.slice(0, k));
        expect(pieces, `${name} pad ${pad}: ${res.body.slice(0, 0)}${body.error.data.stderrTail.at(-1)?.slice(480)}`).toEqual([]);
      }
    }
    expect(h.logs.text).not.toContain(SECRET.slice(0, 8));
  }, 60_000);
});
